"""The knowledge-graph and vector half of :class:`~.writer.MindWriter` (see its module for the
merge rules): entities, relations and mentions with their ids remapped, vectors of the store's
own model stored for the frames this import inserted."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy.orm import Session

from waggle_store.knowledge.aliases import resolved_key
from waggle_store.pipeline.transfer.problems import Problems
from waggle_store.pipeline.transfer.validate import Plan
from waggle_store.repositories.aliases import AliasRepository
from waggle_store.repositories.knowledge_common import name_key
from waggle_store.repositories.mentions import MentionRepository
from waggle_store.repositories.mind_import import ImportRows
from waggle_store.repositories.vectors import ModelKey, register_model, store_vectors

__all__ = ["GraphWriter"]


def _first_of_each(rows: list[dict[str, Any]], key: Callable[[dict[str, Any]], Any],
                   existing: dict[Any, int]) -> tuple[list[dict[str, Any]], list[tuple[int, int]]]:
    """The rows to write, and (row id, id of the earlier row it is one with) for the active rows
    that repeat an earlier row's key in this batch (one active row per key: a unique index)."""
    first: dict[Any, int] = {}
    kept: list[dict[str, Any]] = []
    same: list[tuple[int, int]] = []
    for r in rows:
        k = key(r)
        if k is not None and k not in existing:
            if k in first:
                same.append((r["id"], first[k]))
                continue
            first[k] = r["id"]
        kept.append(r)
    return kept, same


class GraphWriter:
    """Base of MindWriter (through FrameWriter): the attributes below are set by its
    constructor."""

    s: Session
    mind_id: int
    plan: Plan
    problems: Problems
    adapter: Any
    vector_model: ModelKey | None
    ids: dict[str, dict[int, int]]
    #: The file's ids of the entities and relations this import inserted (not merged).
    fresh: dict[str, set[int]]
    pre: dict[str, int]
    held: ImportRows
    inserted_frames: set[int]
    _model_id: int | None

    def _count(self, kind: str, n: int = 1) -> None:
        raise NotImplementedError

    # -- knowledge graph ----------------------------------------------------------------------

    def _write_entity(self, rows: list[dict[str, Any]]) -> None:
        """Entities matched by (type, resolved name) when active, as the unique index requires
        (against every active entity of the mind, those of this import included); retired ones
        by their exact window among the rows that existed before the import."""
        aliases = AliasRepository(self.s, self.mind_id).mapping()
        rkey = {r["id"]: resolved_key(r["name"], aliases) for r in rows}
        keys = {(r["entity_type"], rkey[r["id"]]) for r in rows}
        active: dict[tuple[str, str], int] = {}
        retired: dict[tuple[Any, ...], int] = {}
        for eid, etype, key, vf, vt in self.held.entities_held(self.pre["entity"], keys):
            if vt is None:
                active.setdefault((etype, key or ""), int(eid))
            else:
                retired.setdefault((etype, key, vf, vt), int(eid))
        kept, same = _first_of_each(rows, lambda r: (r["entity_type"], rkey[r["id"]])
                                    if r["valid_to"] is None else None, active)
        self._merge_insert("entity", kept, [
            (active.get((r["entity_type"], rkey[r["id"]]))
             if r["valid_to"] is None else
             retired.get((r["entity_type"], rkey[r["id"]], r["valid_from"], r["valid_to"])))
            for r in kept], lambda r: {**{k: r[k] for k in (
                "entity_type", "name", "properties", "valid_from", "valid_to", "recorded_at",
                "version")},
                "name_key": name_key(r["name"]), "resolved_key": rkey[r["id"]]})
        for old, first in same:
            self.ids["entity"][old] = self.ids["entity"][first]

    def _write_relation(self, rows: list[dict[str, Any]]) -> None:
        ents = self.ids["entity"]
        ends = [(ents[r["source_id"]], ents[r["target_id"]], r["relation_type"]) for r in rows]
        have: dict[tuple[Any, ...], int] = {}
        for rid, src, tgt, rtype, vf, vt in self.held.relations_held(self.pre["relation"],
                                                                      set(ends)):
            have.setdefault(
                (src, tgt, rtype) if vt is None else (src, tgt, rtype, vf, vt), int(rid)
            )
        end_of = {r["id"]: end for r, end in zip(rows, ends, strict=True)}
        rows, same = _first_of_each(rows, lambda r: end_of[r["id"]] if r["valid_to"] is None
                                    else None, have)
        matches = [
            have.get(end_of[r["id"]] if r["valid_to"] is None
                     else (*end_of[r["id"]], r["valid_from"], r["valid_to"]))
            for r in rows
        ]
        self._merge_insert(
            "relation",
            rows,
            matches,
            lambda r: {
                "source_id": ents[r["source_id"]],
                "target_id": ents[r["target_id"]],
                **{
                    k: r[k]
                    for k in (
                        "relation_type",
                        "confidence",
                        "properties",
                        "valid_from",
                        "valid_to",
                        "recorded_at",
                        "version",
                    )
                },
            },
        )
        self._after_relations(same)

    def _after_relations(self, same: list[tuple[int, int]]) -> None:
        for old, first in same:
            self.ids["relation"][old] = self.ids["relation"][first]

    def _merge_insert(
        self,
        kind: str,
        rows: list[dict[str, Any]],
        matches: Sequence[int | None],
        values: Callable[[dict[str, Any]], dict[str, Any]],
    ) -> None:
        ids = self.ids[kind]
        fresh, olds = [], []
        for r, match in zip(rows, matches, strict=True):
            if match is not None:
                ids[r["id"]] = match
            else:
                fresh.append(values(r))
                olds.append(r["id"])
        for old, new in zip(olds, self.held.insert_returning(kind, fresh), strict=True):
            ids[old] = new
            self.fresh[kind].add(old)
        self._count(kind, len(fresh))

    def _write_mention(self, rows: list[dict[str, Any]]) -> None:
        pairs = {
            (self.ids["entity"][r["entity_id"]], self.ids["frame"][r["frame_id"]]) for r in rows
        }
        added = MentionRepository(self.s, self.mind_id).add_missing(
            sorted((f, e) for e, f in pairs))
        self._count("mentions", added)

    # -- vectors ------------------------------------------------------------------------------

    def _write_embedding_model(self, rows: list[dict[str, Any]]) -> None:
        """Models are known from pass 1 (``plan.models``); nothing to write until a vector."""

    def _write_vector(self, rows: list[dict[str, Any]]) -> None:
        usable: dict[str, list[tuple[int, str, list[float]]]] = {}  # by text form
        for r in rows:
            key = ModelKey(*self.plan.models[r["model_id"]])
            if key != self.vector_model:
                self.problems.add(
                    "vector of another embedding model",
                    f"{key.provider}/{key.model}",
                    "not imported; reconcile embeds the frame with the store's model",
                )
                continue
            new = self.ids["frame"][r["frame_id"]]
            if new in self.inserted_frames:
                usable.setdefault(r["text_form"], []).append(
                    (new, r["content_hash"], r["vector"]))
        if not usable or self.vector_model is None:
            return
        if self._model_id is None:
            if self.adapter.vector_off(self.s) is not None:
                return
            self._model_id = register_model(self.s, self.adapter, self.vector_model)
        for form, vectors in usable.items():
            stored = store_vectors(self.s, self.adapter, self._model_id, vectors, text_form=form)
            self._count("vectors", stored)
