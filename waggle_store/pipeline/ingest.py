"""Cognify's write: a chunk of prepared items in a fixed number of statements.

Whatever its size, a chunk costs one lookup of the content hashes the mind holds already, one read
of the session's latest I-frame and next ``t`` (under the session lock), one insert of the new
frames (two when the session has no I-frame yet), one of their manifests, one vector upsert, one
entity upsert, one mention insert and one edge insert, plus the touches of dedup hits. The frame
rules (dedup, frame types, gapless ``t``) are the frame writer's
(:meth:`~waggle_store.repositories.frame_writer.FrameWriter.write_memories`).

When one item fails on its own, :func:`write_one_by_one` writes the chunk again one item at a
time, each in its own savepoint, through the same :func:`write_chunk`.

The caller holds the lock order of every write path: the mind row (``lock_graph``) before the
frame writer locks the session row.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from sqlalchemy import exc as sa_exc
from sqlalchemy.orm import Session

from waggle_store.context import MindContext
from waggle_store.embeddings.sentences import text_form_of
from waggle_store.errors import WaggleStoreError
from waggle_store.models.knowledge import EntityRow
from waggle_store.pipeline.cognify_vectors import write_vectors
from waggle_store.records import (
    ExtractedEntity,
    ExtractedRelation,
    ExtractionUsage,
    ValidationSchema,
)
from waggle_store.repositories.common import content_hash
from waggle_store.repositories.frame_writer import FrameWriter, Memory
from waggle_store.repositories.knowledge import (
    EdgeSpec,
    EntityRepository,
    EntitySpec,
    MentionRepository,
    RelationRepository,
)
from waggle_store.timeutil import utcnow

__all__ = ["Item", "Written", "item_graph", "write_chunk", "write_graph", "write_one_by_one"]

log = logging.getLogger(__name__)

CO_OCCURRENCE: Final = "co_occurs_with"
CO_OCCURRENCE_CONFIDENCE: Final = 0.8


@dataclass
class Item:
    """One prepared (checked, extracted) memory; ``index`` is its position in the call."""

    index: int
    content: str
    importance: str
    source: str
    created_at: datetime | None
    entities: list[ExtractedEntity]
    relations: list[ExtractedRelation]
    #: Why extraction failed (the memory is stored and marked pending), if it did.
    extract_error: str | None = None
    #: What the extraction cost, for the usage log.
    usage: ExtractionUsage | None = None
    #: Checked metadata (``textinput.check_metadata``): None for none.
    metadata: dict[str, Any] | None = None


@dataclass
class Written:
    """One item's outcome. ``relations`` counts the edges its write created: for a chunk of
    several items, the chunk's total (edges are ensured set-at-a-time; only single cognify
    reports the number)."""

    frame_id: int
    entities: int
    relations: int
    vector_ready: bool
    vector_error: str | None = None
    #: True where this write stored the item as a new frame; False where the mind already held
    #: its content (a dedup hit, also an earlier item of the same chunk with the same content).
    created: bool = False


def item_graph(item: Item, rows: Sequence[EntityRow | None],
               types: dict[int, str]) -> tuple[list[int], list[EdgeSpec]]:
    """One item's part of the graph, from its entities' upsert results (``rows``, in the item's
    entity order; None where the schema refused one): the distinct entity ids it mentions (their
    types recorded in ``types``), and its edges — co-occurrence between every pair, and the
    extracted relations whose two ends were both found. Shared by the set-based write and the
    item-by-item fallback of cognify."""
    ids: list[int] = []
    by_name: dict[str, int] = {}
    for entity, row in zip(item.entities, rows, strict=True):
        if row is None:
            continue
        if row.id not in ids:
            ids.append(row.id)
            types[row.id] = row.entity_type
        by_name.setdefault(entity.name.casefold(), row.id)
    edges = [EdgeSpec(a, b, CO_OCCURRENCE, CO_OCCURRENCE_CONFIDENCE, {"source": "cognify"},
                      unordered=True)
             for i, a in enumerate(ids) for b in ids[i + 1:]]
    for rel in item.relations:
        source_id = by_name.get(rel.source.casefold())
        target_id = by_name.get(rel.target.casefold())
        if source_id is not None and target_id is not None and source_id != target_id:
            edges.append(EdgeSpec(source_id, target_id, rel.relation_type, rel.confidence,
                                  {"source": "semantic"}))
    return ids, edges


def write_graph(session: Session, mind_id: int, items: Sequence[Item], frame_ids: Sequence[int],
                new_ids: set[int], schema: ValidationSchema | None,
                by: str = "cognify") -> tuple[list[int], int]:
    """Entities, mentions and edges of the items stored as ``frame_ids`` (``new_ids``: those this
    transaction inserted, which hold no mention yet); returns (entities per item, new edges).
    The write of cognify and of extraction run again on a stored frame (``by`` names it in the
    log).

    What the mind's ValidationSchema refuses is skipped and logged, not fatal: the memory itself
    is still stored, and a schema too strict for the rule-based extractor shows in the log.
    """
    specs = [EntitySpec(e.type, e.name, {**(e.properties or {}), "confidence": e.confidence,
                                         "source": "cognify"})
             for item in items for e in item.entities]
    rows, refused = EntityRepository(session, mind_id).upsert_many(specs, schema)
    pairs: list[tuple[int, int]] = []  # (frame, entity), in order
    edges: list[EdgeSpec] = []
    types: dict[int, str] = {}
    counts: list[int] = []
    offset = 0
    for item, frame_id in zip(items, frame_ids, strict=True):
        ids, item_edges = item_graph(item, rows[offset:offset + len(item.entities)], types)
        offset += len(item.entities)
        counts.append(len(ids))
        pairs.extend((frame_id, e) for e in ids)
        edges.extend(item_edges)
    MentionRepository(session, mind_id).add_missing(pairs, new_ids)
    created, edge_refused = RelationRepository(session, mind_id).ensure_many(edges, types, schema)
    for why in refused + edge_refused:
        log.info("%s skipped a graph write the mind's schema refuses: %s", by, why)
    return counts, created


def write_chunk(session: Session, mind: MindContext, gop_id: str, items: Sequence[Item],
                schema: ValidationSchema | None, vectors: Sequence[list[float]] | None,
                model_id: int | None, embed_error: str | None) -> dict[int, Written]:
    """Store the items (see the module docstring); item index → what was written.

    ``vectors`` are the items' embeddings in item order (None: not embedded, ``embed_error``
    says why); ``model_id`` is the mind's claimed model, None when no vector may be stored."""
    now = utcnow()
    hashes = [content_hash(item.content) for item in items]
    writer = FrameWriter(session, mind.id)
    frame_ids, new_list, touches = writer.write_memories(gop_id, [
        Memory(item.content, digest, item.importance, item.source, item.created_at,
               item.metadata)
        for item, digest in zip(items, hashes, strict=True)], now)
    new_ids = set(new_list)
    writer.add_accesses(touches, now)
    first: dict[int, int] = {}  # frame id -> position of its first item
    for position, frame_id in enumerate(frame_ids):
        first.setdefault(frame_id, position)
    embedded = vectors is not None and model_id is not None
    error = embed_error[:2000] if embed_error else None
    form = text_form_of(mind.embedder)
    manifests: list[dict[str, Any]] = []
    new_vectors: list[tuple[int, datetime, list[float]]] = []
    for frame_id in new_list:
        position = first[frame_id]
        manifests.append({"frame_id": frame_id, "model_id": model_id if embedded else None,
                          "content_hash": hashes[position],
                          "status": "ready" if embedded else "pending",
                          "error": None if embedded else error, "updated_at": now,
                          "text_form": form})
        if vectors is not None and embedded:
            new_vectors.append((frame_id, items[position].created_at or now, vectors[position]))
    if new_vectors and model_id is not None:
        writer.store_new_vectors(mind.adapter, model_id, gop_id, new_vectors)
    writer.add_manifests(manifests)
    # Dedup hits on frames stored before: their vector may be current already (or not).
    hits = {fid: (vectors[pos] if vectors is not None else None)
            for fid, pos in first.items() if fid not in new_ids}
    ready_ids = write_vectors(session, mind, hits, model_id, embed_error) if hits else set()
    if embedded:
        ready_ids |= new_ids
    counts, relations = write_graph(session, mind.id, items, frame_ids, new_ids, schema)
    written: dict[int, Written] = {}
    for position, (item, frame_id, n_entities) in enumerate(
            zip(items, frame_ids, counts, strict=True)):
        ok = frame_id in ready_ids
        written[item.index] = Written(frame_id, n_entities, relations, ok,
                                      None if ok else embed_error,
                                      created=frame_id in new_ids and first[frame_id] == position)
    return written


def write_one_by_one(session: Session, mind: MindContext, gop_id: str, items: Sequence[Item],
                     schema: ValidationSchema | None, vectors: Sequence[list[float]] | None,
                     model_id: int | None, embed_error: str | None,
                     on_error: Callable[[Item, Exception], None]) -> dict[int, Written]:
    """The item-at-a-time write, each item in a savepoint: the fallback that isolates the
    item that fails from the others (its failure is reported through ``on_error``)."""
    written: dict[int, Written] = {}
    for position, item in enumerate(items):
        vector = None if vectors is None else [vectors[position]]
        try:
            with session.begin_nested():
                written.update(write_chunk(session, mind, gop_id, [item], schema, vector,
                                           model_id, embed_error))
        except (WaggleStoreError, sa_exc.IntegrityError) as exc:
            on_error(item, exc)
    return written
