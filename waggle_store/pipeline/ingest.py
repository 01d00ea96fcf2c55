"""Cognify's set-based write: a chunk of prepared items in a fixed number of statements.

Writing one item at a time cost ~9 ORM statements, a savepoint and the unit of work's
bookkeeping per memory: ``cognify_batch`` ran ~26x above the storage floor on SQLite
(issue 15). Here a chunk costs, whatever its size: one lookup of the content hashes that exist
already, one read of the session's latest I-frame and highest ``t`` (under the session lock),
one insert of the new frames (two when the session has no I-frame yet: the first new frame
becomes it, and the others are P-frames on it), one of their manifests, one vector upsert, one
entity upsert, one mention insert and one edge insert, plus the touches of dedup hits.

The outcome is the one the item-at-a-time path had (:func:`waggle_store.pipeline.cognify`
keeps it as the fallback when an item fails on its own):

- an item whose memory exists in the mind (any frame type, the oldest such frame) or earlier in
  the chunk is not stored again: that frame is touched once per such item;
- new frames get gapless ``t`` in item order; the first frame of an empty session is the
  I-frame, every other is a P-frame on the session's latest I-frame;
- an item's ``created_at`` is the frame's ``created_at`` and first ``last_accessed``.

The caller holds the lock order of every write path: the mind row (``lock_graph``) before
this module locks the session row.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, cast

from sqlalchemy import Table, bindparam, func, insert, select, update
from sqlalchemy.orm import Session

from waggle_store.context import MindContext
from waggle_store.dialects.base import VectorRow
from waggle_store.embeddings.base import validate_vector
from waggle_store.embeddings.sentences import text_form_of
from waggle_store.models import EmbeddingModelRow, FrameEmbeddingRow, FrameRow
from waggle_store.models.knowledge import EntityMentionRow, EntityRow
from waggle_store.pipeline.cognify_vectors import write_vectors
from waggle_store.records import ExtractedEntity, ExtractedRelation, ValidationSchema
from waggle_store.repositories.common import content_hash
from waggle_store.repositories.knowledge import (
    EdgeSpec,
    EntityRepository,
    EntitySpec,
    RelationRepository,
)
from waggle_store.repositories.sessions import SessionRepository
from waggle_store.timeutil import utcnow

__all__ = ["Item", "Written", "write_chunk"]

log = logging.getLogger(__name__)

CO_OCCURRENCE: Final = "co_occurs_with"
CO_OCCURRENCE_CONFIDENCE: Final = 0.8
_IN_CHUNK: Final = 500  # values per IN (...) list, far below SQLite's bound-parameter limit
# Core tables, not the ORM classes: plain executemany inserts, no unit of work on the hot path.
_FRAMES: Final = cast(Table, FrameRow.__table__)
_MANIFESTS: Final = cast(Table, FrameEmbeddingRow.__table__)
_MENTIONS: Final = cast(Table, EntityMentionRow.__table__)


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


def _in_chunks(values: Sequence[Any]) -> list[Sequence[Any]]:
    return [values[i:i + _IN_CHUNK] for i in range(0, len(values), _IN_CHUNK)]


def _existing(session: Session, mind_id: int, hashes: Sequence[str]) -> dict[str, int]:
    """Content hash → the oldest frame of the mind holding it (the dedup of every frame type)."""
    found: dict[str, int] = {}
    for part in _in_chunks(sorted(set(hashes))):
        found.update((h, int(i)) for h, i in session.execute(
            select(FrameRow.content_hash, func.min(FrameRow.id))
            .where(FrameRow.mind_id == mind_id, FrameRow.content_hash.in_(part))
            .group_by(FrameRow.content_hash)))
    return found


def _session_head(session: Session, mind_id: int, gop_id: str) -> tuple[int | None, int]:
    """(latest I-frame id, next ``t``) of the session: two index seeks in one statement (the
    (mind, gop, frame_type, t) index, migration 0004, so no walk over the P-frames)."""
    in_session = (FrameRow.mind_id == mind_id, FrameRow.gop_id == gop_id)
    latest = (select(FrameRow.id).where(*in_session, FrameRow.frame_type == "I")
              .order_by(FrameRow.t.desc()).limit(1).scalar_subquery())
    top = select(func.max(FrameRow.t)).where(*in_session).scalar_subquery()
    base, high = session.execute(select(latest, top)).one()
    return (None if base is None else int(base)), (0 if high is None else int(high) + 1)


def _insert_frames(session: Session, mind_id: int, gop_id: str,
                   rows: list[dict[str, Any]]) -> list[int]:
    """Insert the rows (consecutive ``t`` of one session) and return their ids, in row order.

    A plain executemany, then one range read of the ids by ``t``: with RETURNING, SQLAlchemy
    sends SQLite one INSERT per row to keep the ids in parameter order. ``(mind, gop, t)`` is
    unique and the session row is locked, so the read finds exactly these rows."""
    if not rows:
        return []
    session.execute(insert(_FRAMES), rows)
    first, last = rows[0]["t"], rows[-1]["t"]
    ids = {int(t): int(i) for t, i in session.execute(
        select(FrameRow.t, FrameRow.id).where(FrameRow.mind_id == mind_id,
                                              FrameRow.gop_id == gop_id,
                                              FrameRow.t.between(first, last)))}
    return [ids[row["t"]] for row in rows]


def _plan_frames(session: Session, mind_id: int, gop_id: str, items: Sequence[Item],
                 hashes: Sequence[str], now: datetime) -> tuple[list[int], list[int], Counter[int]]:
    """Insert the chunk's new frames; returns (frame id per item, new frame ids, touches)."""
    existing = _existing(session, mind_id, hashes)
    SessionRepository(session, mind_id).lock(gop_id)
    base_id, next_t = _session_head(session, mind_id, gop_id)
    touches: Counter[int] = Counter()
    planned: dict[str, dict[str, Any]] = {}  # hash -> the new frame's row
    for item, digest in zip(items, hashes, strict=True):
        if digest in existing:
            touches[existing[digest]] += 1
        elif digest in planned:  # an earlier item of this chunk: touched once per repeat
            planned[digest]["access_count"] += 1
            planned[digest]["last_accessed"] = now
        else:
            when = item.created_at or now
            planned[digest] = {
                "mind_id": mind_id, "frame_type": "P", "gop_id": gop_id, "t": next_t,
                "base_frame_id": base_id, "content": item.content, "content_hash": digest,
                "importance": item.importance, "source": item.source, "access_count": 0,
                "created_at": when, "last_accessed": when, "salience": None,
                "metadata": item.metadata}
            next_t += 1
    rows = list(planned.values())
    new_ids: list[int] = []
    if rows and base_id is None:  # an empty session: its first frame is the keyframe
        rows[0]["frame_type"] = "I"
        new_ids = _insert_frames(session, mind_id, gop_id, rows[:1])
        for row in rows[1:]:
            row["base_frame_id"] = new_ids[0]
        rows = rows[1:]
    new_ids += _insert_frames(session, mind_id, gop_id, rows)
    by_hash = dict(zip(planned, new_ids, strict=True))
    by_hash.update(existing)
    return [by_hash[h] for h in hashes], new_ids, touches


def _touch(session: Session, touches: Counter[int], now: datetime) -> None:
    if touches:
        session.execute(
            update(_FRAMES).where(_FRAMES.c.id == bindparam("fid"))
            .values(access_count=_FRAMES.c.access_count + bindparam("n"), last_accessed=now),
            [{"fid": fid, "n": n} for fid, n in sorted(touches.items())])


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


def _write_graph(session: Session, mind_id: int, items: Sequence[Item], frame_ids: Sequence[int],
                 new_ids: set[int], schema: ValidationSchema | None) -> tuple[list[int], int]:
    """Entities, mentions and edges of the whole chunk; returns (entities per item, new edges).

    What the mind's ValidationSchema refuses is skipped and logged, not fatal: the memory itself
    is still stored, and a schema too strict for the rule-based extractor shows in the log.
    """
    specs = [EntitySpec(e.type, e.name, {"confidence": e.confidence, "source": "cognify"})
             for item in items for e in item.entities]
    rows, refused = EntityRepository(session, mind_id).upsert_many(specs, schema)
    pairs: dict[tuple[int, int], None] = {}  # (frame, entity), in order
    edges: list[EdgeSpec] = []
    types: dict[int, str] = {}
    counts: list[int] = []
    offset = 0
    for item, frame_id in zip(items, frame_ids, strict=True):
        ids, item_edges = item_graph(item, rows[offset:offset + len(item.entities)], types)
        offset += len(item.entities)
        counts.append(len(ids))
        pairs.update(((frame_id, e), None) for e in ids)
        edges.extend(item_edges)
    _add_mentions(session, list(pairs), new_ids)
    created, edge_refused = RelationRepository(session, mind_id).ensure_many(edges, types, schema)
    for why in refused + edge_refused:
        log.info("cognify skipped a graph write the mind's schema refuses: %s", why)
    return counts, created


def _add_mentions(session: Session, pairs: list[tuple[int, int]], new_ids: set[int]) -> None:
    """Insert the mentions not recorded yet: only frames that existed before may have some.
    The caller holds the per-mind graph lock, which serialises this mind's mention writers."""
    old_frames = sorted({f for f, _ in pairs if f not in new_ids})
    have: set[tuple[int, int]] = set()
    for part in _in_chunks(old_frames):
        have.update((int(f), int(e)) for f, e in session.execute(
            select(EntityMentionRow.frame_id, EntityMentionRow.entity_id)
            .where(EntityMentionRow.frame_id.in_(part))))
    missing = [{"entity_id": e, "frame_id": f} for f, e in pairs if (f, e) not in have]
    if missing:
        session.execute(insert(_MENTIONS), missing)


def _write_new_vectors(session: Session, mind: MindContext, gop_id: str,
                       rows: list[tuple[int, str, datetime, list[float]]],
                       model_id: int) -> None:
    """Vectors of frames inserted by this chunk: validated first (nothing is written if one
    fails), then one upsert; their manifests are inserted as ready by the caller."""
    model = session.get(EmbeddingModelRow, model_id)
    assert model is not None  # registered by the caller in this transaction
    mind.adapter.upsert_vectors(session, model_id, [
        VectorRow(fid, mind.id, gop_id, created,
                  validate_vector(vector, model.dimensions, normalize=True))
        for fid, _, created, vector in rows])


def write_chunk(session: Session, mind: MindContext, gop_id: str, items: Sequence[Item],
                schema: ValidationSchema | None, vectors: Sequence[list[float]] | None,
                model_id: int | None, embed_error: str | None) -> dict[int, Written]:
    """Store the items (see the module docstring); item index → what was written.

    ``vectors`` are the items' embeddings in item order (None: not embedded, ``embed_error``
    says why); ``model_id`` is the mind's claimed model, None when no vector may be stored."""
    now = utcnow()
    hashes = [content_hash(item.content) for item in items]
    frame_ids, new_list, touches = _plan_frames(session, mind.id, gop_id, items, hashes, now)
    new_ids = set(new_list)
    _touch(session, touches, now)
    first: dict[int, int] = {}  # frame id -> position of its first item
    for position, frame_id in enumerate(frame_ids):
        first.setdefault(frame_id, position)
    embedded = vectors is not None and model_id is not None
    error = embed_error[:2000] if embed_error else None
    form = text_form_of(mind.embedder)
    manifests: list[dict[str, Any]] = []
    new_vectors: list[tuple[int, str, datetime, list[float]]] = []
    for frame_id in new_list:
        position = first[frame_id]
        manifests.append({"frame_id": frame_id, "model_id": model_id if embedded else None,
                          "content_hash": hashes[position],
                          "status": "ready" if embedded else "pending",
                          "error": None if embedded else error, "updated_at": now,
                          "text_form": form})
        if vectors is not None and embedded:
            created = items[position].created_at or now
            new_vectors.append((frame_id, hashes[position], created, vectors[position]))
    if new_vectors and model_id is not None:
        _write_new_vectors(session, mind, gop_id, new_vectors, model_id)
    if manifests:
        session.execute(insert(_MANIFESTS), manifests)
    # Dedup hits on frames stored before: their vector may be current already (or not).
    hits = {fid: (vectors[pos] if vectors is not None else None)
            for fid, pos in first.items() if fid not in new_ids}
    ready = write_vectors(session, mind, hits, model_id, embed_error) if hits else set()
    if embedded:
        ready |= new_ids
    counts, relations = _write_graph(session, mind.id, items, frame_ids, new_ids, schema)
    written: dict[int, Written] = {}
    for position, (item, frame_id, n_entities) in enumerate(
            zip(items, frame_ids, counts, strict=True)):
        ok = frame_id in ready
        written[item.index] = Written(frame_id, n_entities, relations, ok,
                                      None if ok else embed_error,
                                      created=frame_id in new_ids and first[frame_id] == position)
    return written
