"""Cognify: the write pipeline that turns text into a frame, graph knowledge and a vector.

Order matters: extraction and embedding run first, with no transaction open (a
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
from sqlalchemy.orm import Session

from waggle_store.context import MindContext
from waggle_store.errors import InvalidInputError, VectorTableMissingError, WaggleStoreError
from waggle_store.knowledge.extract import Extractor
from waggle_store.models import FRAME_SOURCES, IMPORTANCE_LEVELS
from waggle_store.pipeline.cognify_vectors import embed_texts, vector_plan
from waggle_store.pipeline.extraction import Outcome, extract, extractor_of, settle
from waggle_store.pipeline.ingest import Item, Written, write_chunk, write_one_by_one
from waggle_store.pipeline.linker import MemoryLinker
from waggle_store.records import (
    BatchResult,
    CognifyResult,
    MemoryInput,
    SearchResult,
)
from waggle_store.repositories.common import check_choice, check_content
from waggle_store.repositories.knowledge import (
    KnowledgeRepository,
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

#: Items per write transaction in cognify_batch: few transactions, but none that holds the
#: SQLite write lock for long.
BATCH_CHUNK: Final = 250


def prepare_item(index: int, item: str | MemoryInput, importance: str, source: str,
                 extractor: Extractor) -> Item:
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
    metadata = check_metadata(meta)
    found = extract(extractor, content)
    return Item(index, content, imp, src, when, found.entities, found.relations, found.error,
                found.usage, metadata)


def _resolve_gop(session: Session, mind_id: int, gop_id: str | None) -> str:
    sessions = SessionRepository(session, mind_id)
    if gop_id is None:
        return sessions.ensure_active(None).gop_id
    return sessions.require(gop_id).gop_id


def _write_items(mind: MindContext, items: Sequence[Item], gop_id: str | None,
                 vectors: list[list[float]] | None, embed_error: str | None,
                 on_error: Callable[[Item, Exception], None] | None) -> dict[int, Written]:
    """One write transaction for these items: set-based (:func:`write_chunk`); item by item,
    each in its own savepoint, only when on_error is set and the chunk failed as a whole."""
    with mind.write() as session:
        return write_items_in(session, mind, items, gop_id, vectors, embed_error, on_error)


def _settled(session: Session, mind_id: int, items: Sequence[Item],
             written: dict[int, Written]) -> dict[int, Written]:
    """Mark the stored items whose extraction failed as pending; log what extraction cost."""
    for item in items:
        done = written.get(item.index)
        if done is not None and (item.extract_error is not None or item.usage is not None):
            settle(session, mind_id, done.frame_id,
                   Outcome(usage=item.usage, error=item.extract_error))
    return written


def write_items_in(session: Session, mind: MindContext, items: Sequence[Item],
                   gop_id: str | None, vectors: list[list[float]] | None,
                   embed_error: str | None,
                   on_error: Callable[[Item, Exception], None] | None = None
                   ) -> dict[int, Written]:
    """:func:`_write_items` inside the caller's write transaction ``session`` (a caller that
    stores other rows with the memories in one transaction: ``conversations.append``)."""
    # The mind row first, as in every write path (then session rows: see
    # FrameRepository.create_i). Taken once at the root so the per-item savepoints reuse
    # it (Postgres: dedup and the graph's check-then-insert are serialised per mind;
    # SQLite writers are serialised already).
    knowledge = KnowledgeRepository(session, mind.id)
    knowledge.lock()
    gop = _resolve_gop(session, mind.id, gop_id)
    schema = knowledge.schema.get()
    embedder = mind.embedder
    model_id = None
    if vectors is not None and embedder is not None:
        try:
            model_id = register_model(session, mind.adapter, model_key(embedder))
        except VectorTableMissingError as exc:  # a runtime role: stored, vector pending
            embed_error = str(exc)
    if model_id is not None and embedder is not None:
        active = MindModelRepository(session, mind.id).claim(model_id)
        if active != model_id:  # another model won the mind's first write meanwhile
            embed_error = mismatch_reason(mind.name, model_key_of(session, active),
                                          model_key(embedder))
            model_id = None
    if vectors is not None:  # the request this chunk's vectors came from, in the usage log
        UsageRepository(session).record_embedding(mind.id, embedder, len(items))
    if on_error is None:
        written = write_chunk(session, mind, gop, items, schema, vectors, model_id, embed_error)
        return _settled(session, mind.id, items, written)
    try:
        # One savepoint per chunk, not per item: only if an item fails on its own is the
        # chunk written again item by item, each in its own savepoint.
        with session.begin_nested():
            written = write_chunk(session, mind, gop, items, schema, vectors, model_id,
                                  embed_error)
            return _settled(session, mind.id, items, written)
    except (WaggleStoreError, sa_exc.IntegrityError) as exc:
        log.info("cognify_batch writes a chunk item by item after: %s", exc)
    written = write_one_by_one(session, mind, gop, items, schema, vectors, model_id,
                               embed_error, on_error)
    return _settled(session, mind.id, items, written)


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
    item = prepare_item(0, MemoryInput(content, created_at, None, None, metadata), importance,
                        source, extractor_of(mind.store))
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
    """One mind's search, queried with the memory's own vector: what the linker reads. The
    turns beside the best hits are left out: the linker relates memories by what they say."""

    mind: MindContext
    engine: HybridSearch
    vector: list[float] | None

    def search(self, query: str, *, limit: int) -> list[SearchResult]:
        return self.engine.search(self.mind, query, limit=limit, query_vector=self.vector,
                                  expand=False)


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
    extractor = extractor_of(mind.store)
    numbered = enumerate(source)
    done = 0
    while chunk_in := list(islice(numbered, BATCH_CHUNK)):
        chunk: list[Item] = []
        for index, item in chunk_in:
            try:
                chunk.append(prepare_item(index, item, importance, "user_stated", extractor))
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
