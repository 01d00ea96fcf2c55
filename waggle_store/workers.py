"""The library's own threads: small named pools, started on first use, replaced in a forked child.

Work leaves the calling thread in four places: SQLite's vector scan
(:mod:`waggle_store.dialects.sqlite_vecindex`), to run beside the keyword lane's statement on the
connection (numpy and SQLite both release the GIL); the build of a large mind's coarse-pass codes
(the same module), off every search's way; every embedding by the in-process model
(:mod:`waggle_store.embeddings.local`), so that torch is only ever called from one thread; and the
recount of a large mind's frames for the keyword lane's idf once its cached count has expired
(:mod:`waggle_store.search.engine`), off the search that found it expired. Each has a pool of its
own, so a queue of one kind of work never delays the other.

A pool's threads are started when it is first used, not at import: most processes never search
a large mind or embed with a local model. A forked child has none of its parent's threads, so a
pool inherited from the parent would queue work forever; the child starts its own.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

__all__ = ["WorkerPool"]

T = TypeVar("T")


class WorkerPool:
    """A process-wide ``ThreadPoolExecutor`` of ``max_workers`` threads named ``name``_N."""

    def __init__(self, name: str, max_workers: int) -> None:
        self.name = name
        self.max_workers = max_workers
        self._executor: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        os.register_at_fork(after_in_child=self._after_fork_in_child)

    def submit(self, fn: Callable[..., T], /, *args: object) -> Future[T]:
        """``fn(*args)`` on one of the pool's threads."""
        executor = self._executor
        if executor is None:
            with self._lock:
                if self._executor is None:
                    self._executor = ThreadPoolExecutor(max_workers=self.max_workers,
                                                        thread_name_prefix=self.name)
                executor = self._executor
        return executor.submit(fn, *args)

    def runs_this_thread(self) -> bool:
        """Whether the calling thread is one of this pool's (waiting on the pool from there could
        wait for itself)."""
        return threading.current_thread().name.startswith(self.name + "_")

    def _after_fork_in_child(self) -> None:
        # The parent's threads (and a lock one of them may have held) did not come along.
        self._executor, self._lock = None, threading.Lock()
