"""The async API: the synchronous store, run on a bounded worker pool, with the same names awaited.

Why a worker pool and not an async driver: waggle_store's storage is synchronous SQLAlchemy (and
sqlite-vec, FTS5, an embedding provider that may be a local model). Rewriting it on async drivers
would fork every code path; running the same code on a few threads (the OpenFang model) keeps one
implementation, keeps the event loop free (nothing here blocks it), and bounds the concurrency a
store sees to ``max_workers`` — a burst of 500 awaited calls queues instead of opening 500
connections.

Cancellation: a call that a worker has started always runs to completion (a thread cannot be
interrupted, and each store call is one transaction anyway), while a call still waiting in the
queue when its task is cancelled is withdrawn and never starts. A cancelled ``await
mind.cognify(...)`` therefore leaves either the whole memory or nothing; never half of one.

    from waggle_store import aio

    async with aio.open_store("sqlite:///./waggle.db") as store:
        mind = await store.mind("default")
        await mind.cognify("Alice leads the Atlas project")
        hits = await mind.search("Atlas", limit=5)
        await mind.frames.create_i("s1", "a frame")
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Self, TypeVar

import sqlalchemy as sa

import waggle_store as ws
from waggle_store.records import (
    BatchResult,
    CognifyResult,
    Health,
    MemoryInput,
    MindInfo,
    ReconcileReport,
    SearchResult,
)

T = TypeVar("T")
Progress = Callable[[int, int], None]

DEFAULT_MAX_WORKERS = 4


class AsyncStore:
    """A :class:`waggle_store.Store` whose calls run on its own bounded thread pool.

    ``store.sync`` is the underlying synchronous store, for code that already runs on a thread.
    """

    def __init__(self, store: ws.Store, *, max_workers: int = DEFAULT_MAX_WORKERS) -> None:
        if max_workers < 1:
            raise ws.InvalidInputError(f"max_workers must be at least 1, got {max_workers}")
        self.sync = store
        self.max_workers = max_workers
        self._pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=max_workers, thread_name_prefix="waggle-store-aio"
        )
        self._closed = False
        #: The agents registry, awaited (``await store.agents.save(name, manifest)``).
        self.agents = AsyncLayer(self, store.agents)

    # -- running on the pool ------------------------------------------------------------------

    async def run_sync(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """Run ``fn(*args, **kwargs)`` on this store's worker pool and await its result.

        Public so that callers can run anything the async API does not wrap (a
        ``ws.CombinedRetrieval`` search, a ``ws.migrate`` call) under the same bound. The call is
        shielded: cancelling the awaiting task withdraws a queued call but never interrupts one
        that has started, so a store transaction is never cut in half.
        """
        if self._closed:
            raise ws.WaggleStoreError("this async store is closed")
        future = self._pool.submit(functools.partial(fn, *args, **kwargs))
        wrapped = asyncio.wrap_future(future)
        try:
            return await asyncio.shield(wrapped)
        except asyncio.CancelledError:
            # Withdraw it if no worker took it yet; a running call is left to finish (its result
            # or error is retrieved so that asyncio does not log it as never retrieved).
            if not future.cancel():
                wrapped.add_done_callback(_consume)
            raise

    def _on_loop(self, progress: Progress | None) -> Progress | None:
        """A progress callback called from a worker, forwarded to run on the event loop thread,
        where async code may touch its own objects safely. The loop runs them in order, and
        all of them before the call's result (which reaches the loop the same way, later)."""
        if progress is None:
            return None
        loop = asyncio.get_running_loop()

        def forward(done: int, total: int) -> None:
            if not loop.is_closed():  # a cancelled caller's loop may be gone; the work goes on
                loop.call_soon_threadsafe(progress, done, total)

        return forward

    # -- the store's API, awaited -------------------------------------------------------------

    async def mind(self, name: str = "default", *, kind: str = "workspace") -> AsyncMind:
        return AsyncMind(self, await self.run_sync(self.sync.mind, name, kind=kind))

    async def list_minds(self) -> list[MindInfo]:
        return await self.run_sync(self.sync.list_minds)

    async def drop_mind(self, name: str) -> None:
        await self.run_sync(self.sync.drop_mind, name)

    async def health(self) -> Health:
        return await self.run_sync(self.sync.health)

    async def embedding_status(self) -> ws.EmbedderStatus:
        return await self.run_sync(self.sync.embedding_status)

    async def quota_status(self, user_id: str | None = None) -> ws.QuotaStatus:
        return await self.run_sync(self.sync.quota_status, user_id)

    async def reconcile(self, *, mind: str | ws.Mind | AsyncMind | None = None,
                        progress: Progress | None = None) -> ReconcileReport:
        target = mind.sync if isinstance(mind, AsyncMind) else mind
        return await self.run_sync(self.sync.reconcile, mind=target,
                                   progress=self._on_loop(progress))

    def __getattr__(self, name: str) -> Any:
        """Anything else of the sync store, awaited: methods (``export_mind``,
        ``switch_embedding_model``, ...) and layers (``usage``)."""
        if name.startswith("_") or name in ("sync", "max_workers"):
            raise AttributeError(name)
        return _wrap(self, self.sync, name, layers=True)

    # -- lifetime -----------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Wait for the calls already started or queued, then close the store.

        Waiting matters: a call a cancelled task left running must finish before its engine is
        disposed. The wait itself runs off the event loop.
        """
        if self._closed:
            return
        self._closed = True
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, functools.partial(self._pool.shutdown, wait=True))
        await loop.run_in_executor(None, self.sync.close)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"<AsyncStore {self.sync!r} workers={self.max_workers}>"


class AsyncMind:
    """A :class:`waggle_store.Mind` whose calls are awaited; ``mind.sync`` is the sync mind."""

    def __init__(self, store: AsyncStore, mind: ws.Mind) -> None:
        self.store = store
        self.sync = mind
        self.name: str = mind.name
        self.kind: str = mind.kind
        self.frames = AsyncLayer(store, mind.frames)
        self.identity = AsyncLayer(store, mind.identity)
        self.awareness = AsyncLayer(store, mind.awareness)
        self.sessions = AsyncLayer(store, mind.sessions)
        self.knowledge = AsyncLayer(store, mind.knowledge)
        self.kv = AsyncLayer(store, mind.kv)
        self.conversations = AsyncLayer(store, mind.conversations)

    @property
    def id(self) -> int:
        return self.sync.id

    async def search(self, query: str, *, limit: int = 20, gop_id: str | None = None,
                     profile: str = "balanced", since: datetime | str | None = None,
                     until: datetime | str | None = None,
                     context: Mapping[int, int] | None = None,
                     where: ws.Where | dict[str, Any] | None = None,
                     query_vector: Sequence[float] | None = None,
                     expand: bool = True) -> list[SearchResult]:
        return await self.store.run_sync(
            self.sync.search, query, limit=limit, gop_id=gop_id, profile=profile, since=since,
            until=until, context=context, where=where, query_vector=query_vector, expand=expand,
        )

    async def recall(self, query: str, *, limit: int = 20, gop_id: str | None = None,
                     profile: str = "balanced", since: datetime | str | None = None,
                     until: datetime | str | None = None,
                     context: Mapping[int, int] | None = None,
                     where: ws.Where | dict[str, Any] | None = None,
                     query_vector: Sequence[float] | None = None,
                     expand: bool = True) -> list[SearchResult]:
        return await self.store.run_sync(
            self.sync.recall, query, limit=limit, gop_id=gop_id, profile=profile, since=since,
            until=until, context=context, where=where, query_vector=query_vector, expand=expand,
        )

    async def cognify(self, content: str, *, importance: str = "normal",
                      gop_id: str | None = None, created_at: datetime | str | None = None,
                      source: str = "user_stated",
                      metadata: dict[str, Any] | None = None) -> CognifyResult:
        return await self.store.run_sync(
            self.sync.cognify, content, importance=importance, gop_id=gop_id,
            created_at=created_at, source=source, metadata=metadata,
        )

    async def cognify_batch(self, items: Iterable[str | MemoryInput], *,
                            importance: str = "normal", gop_id: str | None = None,
                            progress: Progress | None = None) -> BatchResult:
        """``items`` is read on the calling thread (a generator need not be thread-safe)."""
        materialized = list(items)
        return await self.store.run_sync(
            self.sync.cognify_batch, materialized, importance=importance, gop_id=gop_id,
            progress=self.store._on_loop(progress),
        )

    def __getattr__(self, name: str) -> Any:
        """Anything else of the sync mind, awaited: its other methods (``consolidate``,
        ``embedding_model``, ...) and layers (``harvest``), so that names added to the sync API
        are reachable here without a release of this module."""
        if name.startswith("_") or name in ("store", "sync"):
            raise AttributeError(name)
        return _wrap(self.store, self.sync, name, layers=True)

    def __repr__(self) -> str:
        return f"<AsyncMind {self.name!r}>"


class AsyncLayer:
    """One layer of a mind (frames, identity, awareness, sessions, knowledge, kv, conversations)
    or of the store (agents), awaited.

    Every public method of the sync layer is available under its own name and signature and
    returns an awaitable: ``await mind.frames.create_i("s1", "text")``. The layer is proxied
    rather than rewritten so that the async API can never drift from the sync one.
    """

    def __init__(self, store: AsyncStore, layer: object) -> None:
        self._store = store
        self._layer = layer

    def __getattr__(self, name: str) -> Any:
        """The layer's method ``name``, awaited. ``sync`` is the layer's own ``sync`` method
        where it has one (``await mind.harvest.sync("notes")``), else the sync layer itself."""
        if name.startswith("_"):  # not set yet (copy, pickle): no recursion
            raise AttributeError(name)
        if name == "sync" and not callable(getattr(self._layer, "sync", None)):
            return self._layer
        return _wrap(self._store, self._layer, name, layers=False)

    def __dir__(self) -> list[str]:
        return sorted(n for n in dir(self._layer) if not n.startswith("_"))

    def __repr__(self) -> str:
        return f"<AsyncLayer {type(self._layer).__name__}>"


_PLAIN = (str, int, float, bool, bytes, type(None))


def _wrap(store: AsyncStore, target: object, name: str, *, layers: bool) -> Any:
    """``target.name`` for async callers: a method becomes a coroutine function run on the pool;
    a layer object (with ``layers``) an :class:`AsyncLayer`; a plain value is returned as is."""
    if name.startswith("_"):
        raise AttributeError(name)
    attribute = getattr(target, name)
    if isinstance(attribute, _PLAIN):
        return attribute
    if not callable(attribute):
        if layers:
            return AsyncLayer(store, attribute)
        # AttributeError, not TypeError: __getattr__ must keep hasattr() and getattr(x, n, d)
        # working
        raise AttributeError(f"{type(target).__name__}.{name} is not a method")

    @functools.wraps(attribute)
    async def call(*args: Any, **kwargs: Any) -> Any:
        return await store.run_sync(attribute, *args, **kwargs)

    return call


def _consume(future: asyncio.Future[Any]) -> None:
    """Retrieve an abandoned call's outcome; the task that wanted it was cancelled."""
    if not future.cancelled():
        future.exception()


class _Opener:
    """What :func:`open_store` returns: awaitable (``store = await aio.open_store(...)``) and an
    async context manager (``async with aio.open_store(...) as store``)."""

    def __init__(self, args: tuple[Any, ...], kwargs: dict[str, Any], max_workers: int) -> None:
        self._args = args
        self._kwargs = kwargs
        self._max_workers = max_workers
        self._store: AsyncStore | None = None

    async def _open(self) -> AsyncStore:
        # Opening migrates and may probe embedders (network, model load): off the loop, too.
        loop = asyncio.get_running_loop()
        sync = await loop.run_in_executor(
            None, functools.partial(ws.open_store, *self._args, **self._kwargs)
        )
        return AsyncStore(sync, max_workers=self._max_workers)

    def __await__(self) -> Generator[Any, None, AsyncStore]:
        return self._open().__await__()

    async def __aenter__(self) -> AsyncStore:
        self._store = await self._open()
        return self._store

    async def __aexit__(self, *exc: object) -> None:
        if self._store is not None:
            await self._store.aclose()


def open_store(
    url: str | sa.URL | sa.Engine | None = None,
    *,
    embedder: Any = "auto",
    schema: str | None = None,
    upgrade: bool = True,
    tier: str | None = None,
    user_id: str = "local",
    tier_policy: Any = None,
    max_workers: int = DEFAULT_MAX_WORKERS,
    **kwargs: Any,
) -> _Opener:
    """Open a store for async code: the arguments of :func:`waggle_store.open_store` (any it
    gains later pass through ``kwargs``), plus ``max_workers``, the size of the store's worker
    pool (its bound on concurrent calls)."""
    kwargs.update(
        embedder=embedder,
        schema=schema,
        upgrade=upgrade,
        tier=tier,
        user_id=user_id,
        tier_policy=tier_policy,
    )
    return _Opener((url,), kwargs, max_workers)


__all__ = ["AsyncLayer", "AsyncMind", "AsyncStore", "open_store"]
