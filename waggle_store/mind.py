"""Mind: one memory namespace of a store, and the entry to its layers.

A Mind is what ``store.mind(name)`` returns. It holds the mind's :class:`MindContext` and the
store's search engine, builds the per-layer APIs (``mind.frames``, ``mind.knowledge`` ...) over
that context, and runs the pipelines (cognify, search) for this mind.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from datetime import datetime
from functools import cached_property
from typing import Any

from waggle_store.context import MindContext
from waggle_store.embeddings.base import Embedder
from waggle_store.embeddings.chain import resolve_embedder
from waggle_store.errors import InvalidInputError
from waggle_store.facade.awareness import AwarenessAPI
from waggle_store.facade.conversations import ConversationsAPI
from waggle_store.facade.frames import FramesAPI
from waggle_store.facade.harvest import HarvestAPI
from waggle_store.facade.identity import IdentityAPI
from waggle_store.facade.knowledge import KnowledgeAPI
from waggle_store.facade.kv import KVAPI
from waggle_store.facade.sessions import SessionsAPI
from waggle_store.pipeline.cognify import cognify, cognify_batch
from waggle_store.pipeline.consolidate import consolidate
from waggle_store.pipeline.extraction import recognify
from waggle_store.pipeline.switch import switch_embedding_model
from waggle_store.records import (
    BatchResult,
    CognifyResult,
    ConsolidationReport,
    EmbeddingModelInfo,
    MemoryInput,
    SearchResult,
    SwitchReport,
    Where,
)
from waggle_store.repositories.mind_models import MindModelRepository
from waggle_store.search.engine import HybridSearch

__all__ = ["Mind"]


class Mind:
    """One memory namespace of a store. Every read and write through it is scoped to ``id``."""

    def __init__(self, context: MindContext, searcher: HybridSearch) -> None:
        self.context = context
        self._searcher = searcher
        self.id = context.id
        self.name = context.name
        self.kind = context.kind

    def __repr__(self) -> str:
        return f"<Mind {self.name!r} id={self.id}>"

    @cached_property
    def identity(self) -> IdentityAPI:
        return IdentityAPI(self.context)

    @cached_property
    def awareness(self) -> AwarenessAPI:
        return AwarenessAPI(self.context)

    @cached_property
    def sessions(self) -> SessionsAPI:
        return SessionsAPI(self.context)

    @cached_property
    def conversations(self) -> ConversationsAPI:
        """Message history per channel, trimmed, and the compacted canonical conversation."""
        return ConversationsAPI(self.context)

    @cached_property
    def frames(self) -> FramesAPI:
        return FramesAPI(self.context)

    @cached_property
    def knowledge(self) -> KnowledgeAPI:
        return KnowledgeAPI(self.context)

    @cached_property
    def kv(self) -> KVAPI:
        return KVAPI(self.context)

    @cached_property
    def harvest(self) -> HarvestAPI:
        """Import sources (ChatGPT/Claude exports, notes, JSONL) and their syncs."""
        return HarvestAPI(self.context)

    def search(self, query: str, *, limit: int = 20, gop_id: str | None = None,
               profile: str = "balanced", since: datetime | str | None = None,
               until: datetime | str | None = None,
               context: Mapping[int, int] | None = None,
               lanes: Collection[str] | None = None, where: Where | dict[str, Any] | None = None,
               query_vector: Sequence[float] | None = None,
               expand: bool = True) -> list[SearchResult]:
        """Hybrid keyword + vector search of this mind, the two lanes fused and ranked.

        ``lanes`` restricts the lanes that run ({"keyword"}, {"vector"}; default both), for
        evaluation and debugging. ``where`` filters by source, importance, salience and
        metadata inside both lanes; ``query_vector`` is the caller's own embedding of the query
        (the mind's model), used instead of embedding ``query``. ``expand`` (default True) brings
        in the turns next to the best hits in their sessions (``explain["expansion"]`` says
        which it lifted, and beside what); False leaves them out.
        """
        return self._searcher.search(self.context, query, limit=limit, gop_id=gop_id,
                                          profile=profile, since=since, until=until,
                                          context=context, lanes=lanes, where=where,
                                          query_vector=query_vector, expand=expand)

    def recall(self, query: str, *, limit: int = 20, gop_id: str | None = None,
               profile: str = "balanced", since: datetime | str | None = None,
               until: datetime | str | None = None,
               context: Mapping[int, int] | None = None,
               lanes: Collection[str] | None = None, where: Where | dict[str, Any] | None = None,
               query_vector: Sequence[float] | None = None,
               expand: bool = True) -> list[SearchResult]:
        """search() that also counts an access (touch) of every frame it returns."""
        return self._searcher.recall(self.context, query, limit=limit, gop_id=gop_id,
                                          profile=profile, since=since, until=until,
                                          context=context, lanes=lanes, where=where,
                                          query_vector=query_vector, expand=expand)

    def cognify(self, content: str, *, importance: str = "normal", gop_id: str | None = None,
                created_at: datetime | str | None = None, source: str = "user_stated",
                link: bool = True, metadata: dict[str, Any] | None = None) -> CognifyResult:
        """Store a memory: frame, entities, relations and vector in one transaction.

        ``link=False`` skips the related-frames search when the caller does not need it.
        """
        return cognify(self.context, self._searcher, content, importance=importance,
                       gop_id=gop_id, created_at=created_at, source=source, link=link,
                       metadata=metadata)

    def cognify_batch(self, items: Iterable[str | MemoryInput], *, importance: str = "normal",
                      gop_id: str | None = None,
                      progress: Callable[[int, int], None] | None = None) -> BatchResult:
        """Cognify many memories: embedded in batches, written in few transactions."""
        return cognify_batch(self.context, items, importance=importance, gop_id=gop_id,
                             progress=progress)

    def recognify(self, frame_id: int) -> CognifyResult:
        """Extract a stored memory again with the store's extractor and write the entities,
        mentions and relations found; no new frame. Clears a pending extraction; a failing
        extractor raises and changes nothing."""
        return recognify(self.context, frame_id)

    # -- embedding model ------------------------------------------------------------------------

    def embedding_model(self) -> EmbeddingModelInfo | None:
        """This mind's active embedding model (None before its first embedded write); status
        "switching" while :meth:`switch_embedding_model` replaces it."""
        with self.context.read() as session:
            return MindModelRepository(session, self.id).info()

    def switch_embedding_model(self, embedder: str | Embedder | None = None, *,
                               progress: Callable[[int, int], None] | None = None
                               ) -> SwitchReport:
        """Re-embed this mind with ``embedder`` (None: the store's; or a provider name) and make
        its model the mind's active one; the old model serves searches until the switch flips,
        and a switch stopped by a crash resumes when run again
        (:mod:`waggle_store.pipeline.switch`)."""
        if embedder is None:
            chosen = self.context.embedder
        else:  # through the store: its tier and quota apply to the switch's embeddings too
            prepare = self.context.store.prepare_embedder or resolve_embedder
            chosen = prepare(embedder)
        if chosen is None:
            raise InvalidInputError("switch_embedding_model needs an embedder: this store has "
                                    "none (open it with one, or pass embedder=...)")
        try:
            return switch_embedding_model(self.context, chosen, progress=progress)
        finally:
            self._searcher.forget(self.id)

    def consolidate(self, *, decay_rate: float = 0.95, prune_below: float = 0.1,
                    merge_similarity: float = 0.9, dry_run: bool = False,
                    now: datetime | str | None = None,
                    progress: Callable[[int, int], None] | None = None) -> ConsolidationReport:
        """Decay salience, merge near-duplicates, prune what fell below ``prune_below`` (never
        critical or important frames); idempotent; ``dry_run`` reports without writing, and
        the report lists which frames would be merged into which and which pruned.
        ``progress(done, total)`` follows the comparison of the frames. See
        :mod:`waggle_store.pipeline.consolidate`."""
        return consolidate(self.context, decay_rate=decay_rate, prune_below=prune_below,
                           merge_similarity=merge_similarity, dry_run=dry_run, now=now,
                           progress=progress)
