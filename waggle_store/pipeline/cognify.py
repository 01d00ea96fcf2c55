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
from typing import Final

from sqlalchemy import exc as sa_exc
from sqlalchemy import select
from sqlalchemy.orm import Session

from waggle_store.context import MindContext
from waggle_store.errors import InvalidInputError, WaggleStoreError
from waggle_store.knowledge.extract import extract_entities, extract_relations
from waggle_store.models import FRAME_SOURCES, IMPORTANCE_LEVELS, FrameEmbeddingRow, FrameRow
from waggle_store.records import (
    BatchResult,
    CognifyResult,
    ExtractedEntity,
    ExtractedRelation,
    MemoryInput,
    SearchResult,
    ValidationSchema,
)
from waggle_store.repositories.common import check_choice, check_content, content_hash
from waggle_store.repositories.frames import FrameRepository
from waggle_store.repositories.graph_bulk import (
    EdgeSpec,
    EntitySpec,
    add_mentions,
    ensure_edges,
    upsert_entities,
)
from waggle_store.repositories.knowledge import lock_graph
from waggle_store.repositories.knowledge_schema import get_validation_schema
from waggle_store.repositories.sessions import SessionRepository
from waggle_store.repositories.vectors import (
    mark_pending,
    model_key,
    register_model,
    store_vectors,
)
from waggle_store.pipeline.linker import MemoryLinker
from waggle_store.search.engine import HybridSearch
from waggle_store.timeutil import optional_utc

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


def _embed(mind: MindContext, texts: Sequence[str]) -> tuple[list[list[float]] | None, str | None]:
    """Embed outside any transaction; on failure return the reason instead of vectors."""
    embedder = mind.embedder
    if embedder is None:
        return None, None
    try:
        vectors = embedder.embed_documents(list(texts))
    except Exception as exc:  # noqa: BLE001 - provider down, quota, bad response: frames go in pending
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


def _write_graph(session: Session, mind_id: int, frame_id: int, item: _Item,
                 schema: ValidationSchema | None) -> tuple[int, int]:
    """Entities, mentions, co-occurrence and semantic relations; returns (entities, new edges).

    What the mind's ValidationSchema refuses is skipped and logged, not fatal: the memory itself
    is still stored, and a schema too strict for the rule-based extractor shows in the log.
    """
    specs = [EntitySpec(e.type, e.name, {"confidence": e.confidence, "source": "cognify"})
             for e in item.entities]
    rows, refused = upsert_entities(session, mind_id, specs, schema)
    ids: list[int] = []
    by_name: dict[str, int] = {}
    types: dict[int, str] = {}
    for entity, row in zip(item.entities, rows, strict=True):
        if row is None:
            continue
        if row.id not in types:
            ids.append(row.id)
            types[row.id] = row.entity_type
        by_name.setdefault(entity.name.casefold(), row.id)
    add_mentions(session, frame_id, ids)
    edges = [EdgeSpec(a, b, CO_OCCURRENCE, CO_OCCURRENCE_CONFIDENCE, {"source": "cognify"},
                      unordered=True)
             for i, a in enumerate(ids) for b in ids[i + 1 :]]
    for rel in item.relations:
        source_id = by_name.get(rel.source.casefold())
        target_id = by_name.get(rel.target.casefold())
        if source_id is not None and target_id is not None and source_id != target_id:
            edges.append(EdgeSpec(source_id, target_id, rel.relation_type, rel.confidence,
                                  {"source": "semantic"}))
    created, edge_refused = ensure_edges(session, mind_id, edges, types, schema)
    for why in refused + edge_refused:
        log.info("cognify skipped a graph write the mind's schema refuses: %s", why)
    return len(ids), created


def _write_vectors(session: Session, mind: MindContext, vectors: dict[int, list[float] | None],
                   model_id: int | None, embed_error: str | None) -> set[int]:
    """Store the frames' vectors (skipping those already current); returns the ready frame ids."""
    if not vectors:
        return set()
    rows = {r.id: r for r in session.scalars(select(FrameRow).where(FrameRow.id.in_(vectors)))}
    manifests = {m.frame_id: m for m in session.scalars(
        select(FrameEmbeddingRow).where(FrameEmbeddingRow.frame_id.in_(vectors)))}
    ready: set[int] = set()
    todo: list[tuple[int, str, list[float]]] = []
    missing: list[int] = []
    for frame_id, vector in vectors.items():
        row, manifest = rows[frame_id], manifests.get(frame_id)
        if (model_id is not None and manifest is not None and manifest.status == "ready"
                and manifest.model_id == model_id and manifest.content_hash == row.content_hash):
            ready.add(frame_id)  # a dedup hit whose vector is current: nothing to write
        elif vector is not None and model_id is not None:
            todo.append((frame_id, row.content_hash, vector))
        else:
            missing.append(frame_id)
    if todo and model_id is not None:
        store_vectors(session, mind.adapter, model_id, todo)
        ready.update(frame_id for frame_id, _, _ in todo)
    if missing and embed_error:
        mark_pending(session, missing, embed_error)
    return ready


def _vector_backend(mind: MindContext) -> bool:
    if mind.embedder is None:
        return False
    with mind.read() as session:
        return bool(mind.adapter.vector_backend_available(session))


def _write_items(mind: MindContext, items: Sequence[_Item], gop_id: str | None,
                 vectors: list[list[float]] | None, embed_error: str | None,
                 on_error: Callable[[_Item, Exception], None] | None) -> dict[int, _Written]:
    """One write transaction for these items; each item in its own savepoint when on_error is set."""
    written: dict[int, _Written] = {}
    with mind.write() as session:
        # The mind row first, as in every write path (then session rows: see
        # FrameRepository.create_i). Taken once at the root so the per-item savepoints reuse
        # it (Postgres: dedup and the graph's check-then-insert are serialised per mind;
        # SQLite writers are serialised already).
        lock_graph(session, mind.id)
        gop = _resolve_gop(session, mind.id, gop_id)
        schema = get_validation_schema(session, mind.id)
        embedder = mind.embedder
        model_id = (register_model(session, mind.adapter, model_key(embedder))
                    if vectors is not None and embedder is not None else None)
        pending_vectors: dict[int, list[float] | None] = {}
        for position, item in enumerate(items):
            try:
                with session.begin_nested():
                    frame_id, _new = _write_frame(session, mind.id, gop, item)
                    n_entities, n_relations = _write_graph(session, mind.id, frame_id, item, schema)
            except (WaggleStoreError, sa_exc.IntegrityError) as exc:
                if on_error is None:
                    raise
                on_error(item, exc)
                continue
            pending_vectors[frame_id] = vectors[position] if vectors is not None else None
            written[item.index] = _Written(frame_id, n_entities, n_relations, False)
        ready = _write_vectors(session, mind, pending_vectors, model_id, embed_error)
        for w in written.values():
            w.vector_ready = w.frame_id in ready
    return written


def _check_session(mind: MindContext, gop_id: str | None) -> None:
    """An unknown session is refused before the provider is called (and billed); the write
    transaction checks it again."""
    if gop_id is not None:
        with mind.read() as session:
            SessionRepository(session, mind.id).require(gop_id)


def cognify(mind: MindContext, search: HybridSearch, content: str, *, importance: str = "normal",
            gop_id: str | None = None, created_at: datetime | str | None = None,
            source: str = "user_stated", link: bool = True) -> CognifyResult:
    """Store one memory; see the module docstring.

    The memory is embedded once: the linker's related-frames search reuses that vector. Linking
    runs after the commit, so its failure cannot undo the memory: it is logged and reported in
    ``CognifyResult.link_error``, never raised (a return means the memory is stored).
    """
    item = _prepare(0, MemoryInput(content, created_at, None, None), importance, source)
    _check_session(mind, gop_id)
    vectors, error = _embed(mind, [item.content]) if _vector_backend(mind) else (None, None)
    written = _write_items(mind, [item], gop_id, vectors, error, None)[0]
    related: list[int] = []
    link_error: str | None = None
    if link:
        try:
            related = _related(mind, search, item.content, written.frame_id,
                               vectors[0] if vectors is not None else None)
        except Exception as exc:  # noqa: BLE001 - post-commit: report, never raise (docstring)
            link_error = f"{type(exc).__name__}: {exc}"
            log.warning("cognify stored frame %d but linking failed: %s", written.frame_id,
                        link_error)
    return CognifyResult(
        frame_id=written.frame_id,
        entities_extracted=written.entities,
        relations_created=written.relations,
        related_frames=related,
        vector_status="ready" if written.vector_ready else "pending",
        link_error=link_error,
    )


@dataclass(frozen=True)
class _LinkSearch:
    """One mind's search, queried with the memory's own vector: what the linker reads."""

    mind: MindContext
    engine: HybridSearch
    vector: list[float] | None

    def search(self, query: str, *, limit: int) -> list[SearchResult]:
        return self.engine.search(self.mind, query, limit=limit, query_vector=self.vector)


def _related(mind: MindContext, search: HybridSearch, content: str, frame_id: int,
             vector: list[float] | None) -> list[int]:
    linker = MemoryLinker(_LinkSearch(mind, search, vector))
    return [link.frame_id for link in linker.find_related(content, exclude_frame_id=frame_id)]


def cognify_batch(mind: MindContext, items: Iterable[str | MemoryInput], *,
                  importance: str = "normal",
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
