"""The version 3 records' half of :class:`~.writer.MindWriter`: aliases, the recorded-time
history of entities and relations, pending extractions, harvest tombstones and the exclusive
relation types, merged into a mind that may hold data already:

* an alias the mind has is kept (reported when the file's names another canonical); one that
  would chain with the mind's aliases is skipped and reported; a new alias re-keys the mind's
  own entities as ``add_alias`` does (imported entities come after it in the file and are keyed
  through it);
* versions are imported for the entities and relations this import inserted; one merged into
  the mind's own keeps the mind's history (reported);
* a pending extraction is imported for a frame this import inserted;
* tombstones the mind has are skipped; exclusive choices the mind made are kept (reported when
  the file's differ).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from waggle_store.knowledge.aliases import fold
from waggle_store.pipeline.transfer.problems import Problems
from waggle_store.repositories.aliases import AliasRepository
from waggle_store.repositories.exclusive import ExclusiveRepository
from waggle_store.repositories.merge import rekey
from waggle_store.repositories.mind_import import ImportRows

__all__ = ["KnowledgeWriter"]

_STATE = ("properties", "valid_from", "valid_to", "recorded_from", "recorded_to")


class KnowledgeWriter:
    """Base of MindWriter: the attributes below are set by its constructor."""

    s: Session
    mind_id: int
    problems: Problems
    ids: dict[str, dict[int, int]]
    fresh: dict[str, set[int]]
    pre: dict[str, int]
    held: ImportRows
    inserted_frames: set[int]

    def _count(self, kind: str, n: int = 1) -> None:
        raise NotImplementedError

    def _write_alias(self, rows: list[dict[str, Any]]) -> None:
        mapping = AliasRepository(self.s, self.mind_id).mapping()
        fresh: list[dict[str, Any]] = []
        for r in rows:
            key, canonical = fold(r["alias"]), r["canonical_key"]
            if key in mapping:
                if mapping[key] != canonical:
                    self.problems.add("alias already set in this mind", repr(r["alias"]),
                                      "kept the mind's own alias")
                continue
            if key in mapping.values() or canonical in mapping:
                self.problems.add("alias would chain with the mind's aliases", repr(r["alias"]),
                                  "not imported")
                continue
            mapping[key] = canonical
            fresh.append({"alias_key": key, "alias": r["alias"], "canonical_key": canonical,
                          "canonical_name": r["canonical_name"], "created_at": r["created_at"]})
        self.held.insert("alias", fresh)
        self.s.flush()
        # The mind's own entities named by a new alias take its canonical key (add_alias).
        keyed = self.held.keyed_before(self.pre["entity"], (a["alias_key"] for a in fresh))
        for a in fresh:
            if a["alias_key"] in keyed:
                rekey(self.s, self.mind_id, a["alias_key"], a["canonical_key"])
        self._count("aliases", len(fresh))

    def _versions(self, of: str, rows: list[dict[str, Any]]) -> list[tuple[int, dict[str, Any]]]:
        """(new id, row) of the versions of the entities or relations this import inserted;
        the others are reported."""
        kept = [(self.ids[of][r[f"{of}_id"]], r) for r in rows if r[f"{of}_id"] in self.fresh[of]]
        if len(kept) < len(rows):
            first = next(r for r in rows if r[f"{of}_id"] not in self.fresh[of])
            self.problems.add(f"history of {'an' if of == 'entity' else 'a'} {of} the mind "
                              "already has",
                              f"{of} {first[f'{of}_id']}", "kept the mind's own history",
                              len(rows) - len(kept))
        return kept

    def _write_entity_version(self, rows: list[dict[str, Any]]) -> None:
        kept = self._versions("entity", rows)
        self.held.insert("entity_version", [
            {"entity_id": new, "version": r["version"], "entity_type": r["entity_type"],
             "name": r["name"], **{k: r[k] for k in _STATE}} for new, r in kept])
        self._count("entity_versions", len(kept))

    def _write_relation_version(self, rows: list[dict[str, Any]]) -> None:
        kept = self._versions("relation", rows)
        ents = self.ids["entity"]
        self.held.insert("relation_version", [
            {"relation_id": new, "version": r["version"], "source_id": ents[r["source_id"]],
             "target_id": ents[r["target_id"]], "relation_type": r["relation_type"],
             "confidence": r["confidence"], **{k: r[k] for k in _STATE}} for new, r in kept])
        self._count("relation_versions", len(kept))

    def _write_extraction_pending(self, rows: list[dict[str, Any]]) -> None:
        frames = self.ids["frame"]
        fresh = [{"frame_id": frames[r["frame_id"]], "error": r["error"],
                  "attempts": r["attempts"], "updated_at": r["updated_at"]}
                 for r in rows if frames[r["frame_id"]] in self.inserted_frames]
        self.held.insert("extraction_pending", fresh)
        self._count("extractions_pending", len(fresh))

    def _write_harvest_tombstone(self, rows: list[dict[str, Any]]) -> None:
        have = self.held.tombstones_held(r["source"] for r in rows)
        fresh = []
        for r in rows:
            key = (r["source"], r["content_hash"])
            if key not in have:
                have.add(key)
                fresh.append({k: r[k] for k in ("source", "content_hash", "forgotten_at")})
        self.held.insert("harvest_tombstone", fresh)
        self._count("harvest_tombstones", len(fresh))

    def _write_exclusive_relations(self, rows: list[dict[str, Any]]) -> None:
        repo = ExclusiveRepository(self.s, self.mind_id)
        own = repo.choices()
        for relation_type, exclusive in sorted(rows[0]["relation_types"].items()):
            if relation_type not in own:
                repo.set(relation_type, exclusive)
            elif own[relation_type] != exclusive:
                self.problems.add("exclusive relation type chosen otherwise in this mind",
                                  repr(relation_type), "kept the mind's own choice")
