"""The library's own threads: small named pools, started on first use, replaced in a forked child.

Each kind of work that leaves the calling thread has a pool of its own, so a queue of one kind
never delays another; ``docs/operations.md`` lists them and why each exists. A pool's threads
are started when it is first used, not at import: most processes never need them.

A forked child has none of its parent's threads, so a pool inherited from the parent would
queue work forever, and its lock may have been held by one of those threads. A pool notes the
process that started its executor; used from another process, it starts afresh (no at-fork
hook).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

__all__ = ["WorkerPool"]

T = TypeVar("T")


class _Executor:
    """One process's executor (None until first used) and the lock that guards its start."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.lock = threading.Lock()
        self.executor: ThreadPoolExecutor | None = None


class WorkerPool:
    """A process-wide ``ThreadPoolExecutor`` of ``max_workers`` threads named ``name``_N."""

    def __init__(self, name: str, max_workers: int) -> None:
        self.name = name
        self.max_workers = max_workers
        self._state = _Executor()

    def submit(self, fn: Callable[..., T], /, *args: object) -> Future[T]:
        """``fn(*args)`` on one of the pool's threads."""
        state = self._state
        if state.pid != os.getpid():  # a forked child: the parent's threads did not come along
            state = self._state = _Executor()
        executor = state.executor
        if executor is None:
            with state.lock:
                if state.executor is None:
                    state.executor = ThreadPoolExecutor(max_workers=self.max_workers,
                                                        thread_name_prefix=self.name)
                executor = state.executor
        return executor.submit(fn, *args)

    def runs_this_thread(self) -> bool:
        """Whether the calling thread is one of this pool's (waiting on the pool from there could
        wait for itself)."""
        return threading.current_thread().name.startswith(self.name + "_")
