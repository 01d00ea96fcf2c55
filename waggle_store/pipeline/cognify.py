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
from collections.abc import Callable, Iterable, Sequence, Sized
from dataclasses import dataclass
from datetime import datetime
from itertools import islice
from typing import Any, Final

from sqlalchemy import exc as sa_exc
from sqlalchemy import select
from sqlalchemy.orm import Session

from waggle_store.context import MindContext
from waggle_store.errors import InvalidInputError, WaggleStoreError
from waggle_store.knowledge.extract import extract_entities, extract_relations
from waggle_store.models import FRAME_SOURCES, IMPORTANCE_LEVELS, FrameRow
from waggle_store.pipeline.cognify_vectors import embed_texts, vector_plan, write_vectors
from waggle_store.pipeline.ingest import Item, Written, item_graph, write_chunk
from waggle_store.pipeline.linker import MemoryLinker
from waggle_store.records import (
    BatchResult,
    CognifyResult,
    MemoryInput,
    SearchResult,
    ValidationSchema,
)
from waggle_store.repositories.common import check_choice, check_content, content_hash
from waggle_store.repositories.frames import FrameRepository
from waggle_store.repositories.knowledge import (
    EntityRepository,
    EntitySpec,
    KnowledgeRepository,
    MentionRepository,
    RelationRepository,
)
from waggle_store.repositories.mind_models import MindModelRepository, mismatch_reason
from waggle_store.repositories.sessions import SessionRepository
from waggle_store.repositories.usage import UsageRepository
from waggle_store.repositories.vectors import (
    model_key,
    model_key_of,
    register_model,
)
from waggle_store.search.engine import HybridSearch
from waggle_store.textinput import check_metadata
from waggle_store.timeutil import optional_utc

log = logging.getLogger(__name__)

#: Extraction reads at most this much of a text (the seed's cap): entity rules are linear, but
#: a 1 MB paste should not turn into thousands of graph writes.
EXTRACT_CHARS: Final = 10_000
#: Items per write transaction in cognify_batch: few transactions, but none that holds the
#: SQLite write lock for long.
BATCH_CHUNK: Final = 250


def _prepare(index: int, item: str | MemoryInput, importance: str, source: str) -> Item:
    meta: object = None
    if isinstance(item, MemoryInput):
        content, created, imp, src = item.content, item.created_at, item.importance, item.source
        meta = item.metadata
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
    metadata = check_metadata(meta)
    return Item(index, content, imp, src, when, entities, relations, metadata)


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


def _write_frame(session: Session, mind_id: int, gop_id: str, item: Item) -> tuple[int, bool]:
    """The frame for this item: an existing one with the same memory, else a new P or I frame."""
    frames = FrameRepository(session, mind_id)
    existing = _existing_frame(session, mind_id, item.content)
    if existing is not None:
        frames.touch(existing.id)
        return existing.id, False
    latest = frames.latest_i(gop_id)
    if latest is None:
        written = frames.create_i(gop_id, item.content, importance=item.importance,
                                  source=item.source, created_at=item.created_at,
                                  metadata=item.metadata)
        return written.frame.id, written.created
    frame = frames.create_p(gop_id, item.content, latest.id, importance=item.importance,
                            source=item.source, metadata=item.metadata)
    if item.created_at is not None:
        row = frames.require(frame.id)
        row.created_at = row.last_accessed = item.created_at
    return frame.id, True


def _write_graph(session: Session, mind_id: int, frame_id: int, item: Item,
                 schema: ValidationSchema | None) -> tuple[int, int]:
    """Entities, mentions, co-occurrence and semantic relations; returns (entities, new edges).

    What the mind's ValidationSchema refuses is skipped and logged, not fatal: the memory itself
    is still stored, and a schema too strict for the rule-based extractor shows in the log.
    """
    specs = [EntitySpec(e.type, e.name, {"confidence": e.confidence, "source": "cognify"})
             for e in item.entities]
    rows, refused = EntityRepository(session, mind_id).upsert_many(specs, schema)
    types: dict[int, str] = {}
    ids, edges = item_graph(item, rows, types)
    MentionRepository(session, mind_id).add_many(frame_id, ids)
    created, edge_refused = RelationRepository(session, mind_id).ensure_many(edges, types, schema)
    for why in refused + edge_refused:
        log.info("cognify skipped a graph write the mind's schema refuses: %s", why)
    return len(ids), created


def _write_items(mind: MindContext, items: Sequence[Item], gop_id: str | None,
                 vectors: list[list[float]] | None, embed_error: str | None,
                 on_error: Callable[[Item, Exception], None] | None) -> dict[int, Written]:
    """One write transaction for these items: set-based (:func:`write_chunk`); item by item,
    each in its own savepoint, only when on_error is set and the chunk failed as a whole."""
    with mind.write() as session:
        # The mind row first, as in every write path (then session rows: see
        # FrameRepository.create_i). Taken once at the root so the per-item savepoints reuse
        # it (Postgres: dedup and the graph's check-then-insert are serialised per mind;
        # SQLite writers are serialised already).
        knowledge = KnowledgeRepository(session, mind.id)
        knowledge.lock()
        gop = _resolve_gop(session, mind.id, gop_id)
        schema = knowledge.schema.get()
        embedder = mind.embedder
        model_id = (register_model(session, mind.adapter, model_key(embedder))
                    if vectors is not None and embedder is not None else None)
        if model_id is not None and embedder is not None:
            active = MindModelRepository(session, mind.id).claim(model_id)
            if active != model_id:  # another model won the mind's first write meanwhile
                embed_error = mismatch_reason(mind.name, model_key_of(session, active),
                                              model_key(embedder))
                model_id = None
        if vectors is not None:  # the request this chunk's vectors came from, in the usage log
            UsageRepository(session).record_embedding(mind.id, embedder, len(items))
        if on_error is None:
            return write_chunk(session, mind, gop, items, schema, vectors, model_id, embed_error)
        try:
            # One savepoint per chunk, not per item: only if an item fails on its own is the
            # chunk written again item by item, each in its own savepoint.
            with session.begin_nested():
                return write_chunk(session, mind, gop, items, schema, vectors, model_id,
                                   embed_error)
        except (WaggleStoreError, sa_exc.IntegrityError) as exc:
            log.info("cognify_batch writes a chunk item by item after: %s", exc)
        return _write_one_by_one(session, mind, gop, items, schema, vectors, model_id,
                                 embed_error, on_error)


def _write_one_by_one(session: Session, mind: MindContext, gop: str, items: Sequence[Item],
                      schema: ValidationSchema | None, vectors: list[list[float]] | None,
                      model_id: int | None, embed_error: str | None,
                      on_error: Callable[[Item, Exception], None]) -> dict[int, Written]:
    """The item-at-a-time write, each item in a savepoint: the fallback that isolates the
    item that fails from the others (its failure is reported through ``on_error``)."""
    written: dict[int, Written] = {}
    pending_vectors: dict[int, list[float] | None] = {}
    for position, item in enumerate(items):
        try:
            with session.begin_nested():
                frame_id, new = _write_frame(session, mind.id, gop, item)
                n_entities, n_relations = _write_graph(session, mind.id, frame_id, item, schema)
        except (WaggleStoreError, sa_exc.IntegrityError) as exc:
            on_error(item, exc)
            continue
        pending_vectors[frame_id] = vectors[position] if vectors is not None else None
        written[item.index] = Written(frame_id, n_entities, n_relations, False, created=new)
    ready = write_vectors(session, mind, pending_vectors, model_id, embed_error)
    for w in written.values():
        w.vector_ready = w.frame_id in ready
        w.vector_error = None if w.vector_ready else embed_error
    return written


def _check_session(mind: MindContext, gop_id: str | None) -> None:
    """An unknown session is refused before the provider is called (and billed); the write
    transaction checks it again."""
    if gop_id is not None:
        with mind.read() as session:
            SessionRepository(session, mind.id).require(gop_id)


def cognify(mind: MindContext, search: HybridSearch, content: str, *, importance: str = "normal",
            gop_id: str | None = None, created_at: datetime | str | None = None,
            source: str = "user_stated", link: bool = True,
            metadata: dict[str, Any] | None = None) -> CognifyResult:
    """Store one memory; see the module docstring.

    The memory is embedded once: the linker's related-frames search reuses that vector. Linking
    runs after the commit, so its failure cannot undo the memory: it is logged and reported in
    ``CognifyResult.link_error``, never raised (a return means the memory is stored).
    """
    item = _prepare(0, MemoryInput(content, created_at, None, None, metadata), importance, source)
    _check_session(mind, gop_id)
    use_vectors, error = vector_plan(mind)
    vectors, embed_error = embed_texts(mind, [item.content]) if use_vectors else (None, None)
    written = _write_items(mind, [item], gop_id, vectors, embed_error or error, None)[0]
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
        vector_error=written.vector_error,
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
    None at its position and ``failures`` says why. Items are checked, extracted, embedded and
    written :data:`BATCH_CHUNK` at a time (each chunk one transaction), so what the call holds
    besides the caller's items is one chunk and the result: memory does not grow with the
    batch. ``items`` that is not Sized (a generator) is read into a list first: ``progress``
    reports a total.
    """
    if isinstance(items, (str, bytes)):
        raise InvalidInputError("cognify_batch takes a list of texts, not one string")
    if not isinstance(items, Iterable):
        raise InvalidInputError(f"cognify_batch takes a list of texts, got {type(items).__name__}")
    source: Iterable[str | MemoryInput] = items
    if not isinstance(items, Sized):
        source = listed = list(items)
        total = len(listed)
    else:
        total = len(items)
    frame_ids: list[int | None] = [None] * total
    created: list[bool] = [False] * total
    failures: list[tuple[int, str]] = []

    def on_error(item: Item, exc: Exception) -> None:
        failures.append((item.index, f"{type(exc).__name__}: {exc}"))

    use_vectors, not_embedded = vector_plan(mind)
    numbered = enumerate(source)
    done = 0
    while chunk_in := list(islice(numbered, BATCH_CHUNK)):
        chunk: list[Item] = []
        for index, item in chunk_in:
            try:
                chunk.append(_prepare(index, item, importance, "user_stated"))
            except WaggleStoreError as exc:
                failures.append((index, f"{type(exc).__name__}: {exc}"))
        done += len(chunk_in)
        if chunk:
            _write_chunk(mind, chunk, gop_id, use_vectors, not_embedded, on_error, frame_ids,
                         created)
        if progress is not None:
            progress(done, total)
    failures.sort()
    return BatchResult(frame_ids=frame_ids, failures=failures, created=created)


def _write_chunk(mind: MindContext, chunk: list[Item], gop_id: str | None, use_vectors: bool,
                 not_embedded: str | None, on_error: Callable[[Item, Exception], None],
                 frame_ids: list[int | None], created: list[bool]) -> None:
    """Embed one chunk (outside any transaction) and write it in one transaction."""
    vectors, error = (embed_texts(mind, [it.content for it in chunk]) if use_vectors
                      else (None, not_embedded))
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
        created[index] = w.created
