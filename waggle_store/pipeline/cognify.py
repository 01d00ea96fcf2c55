"""Cognify: the write pipeline that turns text into a frame, graph knowledge and a vector.

Order matters (DESIGN §6): extraction and embedding run first, with no transaction open (a
network call never holds a database lock); then one write transaction stores the frame, its
entities and mentions, co-occurrence and semantic relations, and its vector. If embedding
failed, the frame is still written with a ``pending`` manifest and ``reconcile`` embeds it later;
a frame is never given a stand-in vector.

Cognifying the same text twice creates nothing new: the second call finds the frame by its
content hash (any frame type, not only I-frames), and every graph write is a get-or-create.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

from sqlalchemy import exc as sa_exc
from sqlalchemy import select
from sqlalchemy.orm import Session

from waggle_store.errors import InvalidInputError, ValidationError, WaggleStoreError
from waggle_store.knowledge.extract import extract_entities, extract_relations
from waggle_store.models import FRAME_SOURCES, IMPORTANCE_LEVELS, FrameEmbeddingRow, FrameRow
from waggle_store.records import (
    BatchResult,
    CognifyResult,
    ExtractedEntity,
    ExtractedRelation,
    MemoryInput,
)
from waggle_store.repositories import knowledge as kg
from waggle_store.repositories.common import check_choice, check_content, content_hash
from waggle_store.repositories.frames import FrameRepository
from waggle_store.repositories.knowledge_graph import add_mention
from waggle_store.repositories.knowledge_schema import get_validation_schema
from waggle_store.repositories.sessions import SessionRepository
from waggle_store.search.vectors import mark_pending, model_key, register_model, store_vectors
from waggle_store.timeutil import optional_utc

if TYPE_CHECKING:
    from waggle_store.store import Mind

log = logging.getLogger(__name__)

#: Extraction reads at most this much of a text (the seed's cap): entity rules are linear, but
#: a 1 MB paste should not turn into thousands of graph writes.
EXTRACT_CHARS: Final = 10_000
CO_OCCURRENCE: Final = "co_occurs_with"
CO_OCCURRENCE_CONFIDENCE: Final = 0.8
#: Items per write transaction in cognify_batch: few transactions, but none that holds the
#: SQLite write lock for long.
BATCH_CHUNK: Final = 250


@dataclass
class _Item:
    index: int
    content: str
    importance: str
    source: str
    created_at: datetime | None
    entities: list[ExtractedEntity]
    relations: list[ExtractedRelation]


@dataclass
class _Written:
    frame_id: int
    entities: int
    relations: int
    vector_ready: bool


def _prepare(index: int, item: str | MemoryInput, importance: str, source: str) -> _Item:
    if isinstance(item, MemoryInput):
        content, created, imp, src = item.content, item.created_at, item.importance, item.source
    elif isinstance(item, str):
        content, created, imp, src = item, None, None, None
    else:
        raise InvalidInputError(
            f"item {index} must be a str or MemoryInput, got {type(item).__name__}"
        )
    content = check_content(content)
    imp = check_choice(imp or importance, IMPORTANCE_LEVELS, name="importance")
    src = check_choice(src or source, FRAME_SOURCES, name="source")
    when = optional_utc(created, name="created_at")
    entities = extract_entities(content[:EXTRACT_CHARS])
    relations = extract_relations(content[:EXTRACT_CHARS], entities)
    return _Item(index, content, imp, src, when, entities, relations)


def _embed(mind: Mind, texts: Sequence[str]) -> tuple[list[list[float]] | None, str | None]:
    """Embed outside any transaction; on failure return the reason instead of vectors."""
    embedder = mind.store.embedder
    if embedder is None:
        return None, None
    try:
        vectors = embedder.embed_documents(list(texts))
    except Exception as exc:  # provider down, quota, bad response: the frames go in pending
        reason = f"{type(exc).__name__}: {exc}"
        log.warning("embedding %d text(s) failed; frames stored as pending: %s", len(texts), reason)
        return None, reason
    if len(vectors) != len(texts):
        return None, f"the embedder returned {len(vectors)} vectors for {len(texts)} texts"
    return vectors, None


def _resolve_gop(session: Session, mind_id: int, gop_id: str | None) -> str:
    sessions = SessionRepository(session, mind_id)
    if gop_id is None:
        return sessions.ensure_active(None).gop_id
    return sessions.require(gop_id).gop_id


def _existing_frame(session: Session, mind_id: int, content: str) -> FrameRow | None:
    return session.scalar(
        select(FrameRow)
        .where(FrameRow.mind_id == mind_id, FrameRow.content_hash == content_hash(content))
        .order_by(FrameRow.id)
        .limit(1)
    )


def _write_frame(session: Session, mind_id: int, gop_id: str, item: _Item) -> tuple[int, bool]:
    """The frame for this item: an existing one with the same memory, else a new P or I frame."""
    frames = FrameRepository(session, mind_id)
    existing = _existing_frame(session, mind_id, item.content)
    if existing is not None:
        frames.touch(existing.id)
        return existing.id, False
    latest = frames.latest_i(gop_id)
    if latest is None:
        written = frames.create_i(gop_id, item.content, importance=item.importance,
                                  source=item.source, created_at=item.created_at)
        return written.frame.id, written.created
    frame = frames.create_p(gop_id, item.content, latest.id, importance=item.importance,
                            source=item.source)
    if item.created_at is not None:
        row = frames.require(frame.id)
        row.created_at = row.last_accessed = item.created_at
    return frame.id, True


def _write_graph(session: Session, mind_id: int, frame_id: int, item: _Item) -> tuple[int, int]:
    """Entities, mentions, co-occurrence and semantic relations; returns (entities, new edges)."""
    schema = get_validation_schema(session, mind_id)
    ids: list[int] = []
    by_name: dict[str, int] = {}
    for entity in item.entities:
        try:
            with session.begin_nested():
                row, _ = kg.upsert_entity(
                    session, mind_id, entity.type, entity.name,
                    {"confidence": entity.confidence, "source": "cognify"}, schema=schema,
                )
        except ValidationError as exc:
            # The mind's schema refuses what the rule-based extractor found; the memory itself
            # is still stored. Logged so that a schema too strict for cognify is visible.
            log.info("cognify skipped entity %r (%s): %s", entity.name, entity.type, exc)
            continue
        if row.id not in ids:
            ids.append(row.id)
        by_name.setdefault(entity.name.casefold(), row.id)
        add_mention(session, row.id, frame_id)
    created = 0
    for i, source_id in enumerate(ids):
        for target_id in ids[i + 1 :]:
            created += _edge(session, mind_id, source_id, target_id, CO_OCCURRENCE,
                             CO_OCCURRENCE_CONFIDENCE, "cognify", schema, unordered=True)
    for rel in item.relations:
        source_id = by_name.get(rel.source.casefold())
        target_id = by_name.get(rel.target.casefold())
        if source_id is None or target_id is None or source_id == target_id:
            continue
        created += _edge(session, mind_id, source_id, target_id, rel.relation_type,
                         rel.confidence, "semantic", schema)
    return len(ids), created


def _edge(session: Session, mind_id: int, source_id: int, target_id: int, relation_type: str,
          confidence: float, origin: str, schema: Any, *, unordered: bool = False) -> int:
    try:
        with session.begin_nested():
            _, created = kg.ensure_relation(
                session, mind_id, source_id, target_id, relation_type, confidence,
                unordered=unordered, properties={"source": origin}, schema=schema,
            )
    except ValidationError as exc:
        log.info("cognify skipped relation %s between %d and %d: %s", relation_type, source_id,
                 target_id, exc)
        return 0
    return int(created)


def _write_vector(session: Session, mind: Mind, frame_id: int, vector: list[float] | None,
                  model_id: int | None, embed_error: str | None) -> bool:
    """Store the frame's vector unless it already has a current one; True when it is ready."""
    manifest = session.get(FrameEmbeddingRow, frame_id)
    row = session.get(FrameRow, frame_id)
    assert row is not None  # written in this transaction
    if (manifest is not None and manifest.status == "ready" and manifest.model_id == model_id
            and manifest.content_hash == row.content_hash and model_id is not None):
        return True
    if vector is None or model_id is None:
        if embed_error:
            mark_pending(session, [frame_id], embed_error)
        return False
    return store_vectors(session, mind.store.adapter, model_id,
                         [(frame_id, row.content_hash, vector)]) == 1


def _vector_backend(mind: Mind) -> bool:
    if mind.store.embedder is None:
        return False
    with mind.store.read() as session:
        return bool(mind.store.adapter.vector_backend_available(session))


def _write_items(mind: Mind, items: Sequence[_Item], gop_id: str | None,
                 vectors: list[list[float]] | None, embed_error: str | None,
                 on_error: Callable[[_Item, Exception], None] | None) -> dict[int, _Written]:
    """One write transaction for these items; each item in its own savepoint when on_error is set."""
    written: dict[int, _Written] = {}
    with mind.store.write() as session:
        gop = _resolve_gop(session, mind.id, gop_id)
        model_id = (register_model(session, mind.store.adapter, model_key(mind.store.embedder))
                    if vectors is not None else None)
        for position, item in enumerate(items):
            vector = vectors[position] if vectors is not None else None
            try:
                with session.begin_nested():
                    frame_id, _new = _write_frame(session, mind.id, gop, item)
                    n_entities, n_relations = _write_graph(session, mind.id, frame_id, item)
                    ready = _write_vector(session, mind, frame_id, vector, model_id, embed_error)
            except (WaggleStoreError, sa_exc.IntegrityError) as exc:
                if on_error is None:
                    raise
                on_error(item, exc)
                continue
            written[item.index] = _Written(frame_id, n_entities, n_relations, ready)
    return written


def cognify(mind: Mind, content: str, *, importance: str = "normal", gop_id: str | None = None,
            created_at: datetime | str | None = None, source: str = "user_stated",
            link: bool = True) -> CognifyResult:
    item = _prepare(0, MemoryInput(content, created_at, None, None), importance, source)
    vectors, error = _embed(mind, [item.content]) if _vector_backend(mind) else (None, None)
    written = _write_items(mind, [item], gop_id, vectors, error, None)[0]
    related: list[int] = []
    if link:
        from waggle_store.pipeline.linker import MemoryLinker

        related = [l.frame_id for l in MemoryLinker(mind).find_related(
            item.content, exclude_frame_id=written.frame_id)]
    return CognifyResult(
        frame_id=written.frame_id,
        entities_extracted=written.entities,
        relations_created=written.relations,
        related_frames=related,
        vector_status="ready" if written.vector_ready else "pending",
    )


def cognify_batch(mind: Mind, items: Iterable[str | MemoryInput], *, importance: str = "normal",
                  gop_id: str | None = None,
                  progress: Callable[[int, int], None] | None = None) -> BatchResult:
    """Cognify many texts: embedded in batches, written in few transactions.

    One item's failure (bad input, a refused write) does not lose the others: ``frame_ids`` has
    None at its position and ``failures`` says why.
    """
    if isinstance(items, (str, bytes)):
        raise InvalidInputError("cognify_batch takes a list of texts, not one string")
    raw = list(items)
    frame_ids: list[int | None] = [None] * len(raw)
    failures: list[tuple[int, str]] = []
    prepared: list[_Item] = []
    for index, item in enumerate(raw):
        try:
            prepared.append(_prepare(index, item, importance, "user_stated"))
        except WaggleStoreError as exc:
            failures.append((index, f"{type(exc).__name__}: {exc}"))

    def on_error(item: _Item, exc: Exception) -> None:
        failures.append((item.index, f"{type(exc).__name__}: {exc}"))

    use_vectors = _vector_backend(mind)
    done = len(raw) - len(prepared)
    for start in range(0, len(prepared), BATCH_CHUNK):
        chunk = prepared[start : start + BATCH_CHUNK]
        vectors, error = _embed(mind, [it.content for it in chunk]) if use_vectors else (None, None)
        try:
            written = _write_items(mind, chunk, gop_id, vectors, error, on_error)
        except WaggleStoreError as exc:
            # The chunk's transaction itself failed (an unknown gop_id, the database refusing):
            # none of its items was stored, and each says why.
            for it in chunk:
                on_error(it, exc)
            written = {}
        for index, w in written.items():
            frame_ids[index] = w.frame_id
        done += len(chunk)
        if progress is not None:
            progress(done, len(raw))
    failures.sort()
    return BatchResult(frame_ids=frame_ids, failures=failures)
