"""The minds an index holds in memory: a least-recently-searched map of (mind, model) -> rows,
bounded by a byte budget, with the one lock that guards it, all owned by one process.

Memory: a (mind, model) of ``n`` rows of ``d`` dimensions costs about ``n × (4·d + 131)``
bytes (plus 192 a row with coarse-pass codes): ~170 MB for 100k frames of 384 dimensions.
The cache keeps at most ``budget`` bytes, evicting the least recently searched first; a mind
that would not fit alone is not loaded (its owner searches it another way).

Fork: a child process has none of its parent's threads, so a lock one of them held would never
be released, and rows one of them was changing may be half-changed. The cache notes the process
that created its state; a caller in another process (a forked child) gets a fresh state — a new
lock, no rows — on first use, with no at-fork hook. Threads that race to replace it each work on
a consistent state of their own; the last one installed stays.
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Final

from waggle_store.vectorindex.rows import Rows

Key = tuple[int, int]  # (mind id, model id)

#: A (mind, model) over the budget is not counted again for this long (the count costs a scan).
TOO_BIG_RETRY_S: Final = 300.0


class State:
    """One process's rows and their lock. Everything here is read and changed under
    ``lock``."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.lock = threading.Lock()
        self.rows: OrderedDict[Key, Rows] = OrderedDict()
        self.too_big: dict[Key, float] = {}

    def nbytes(self, but: Key | None = None) -> int:
        return sum(rows.nbytes for key, rows in self.rows.items() if key != but)


class RowsCache:
    """The index's loaded minds within ``budget`` bytes (``0``: nothing is held)."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self._state = State()

    def state(self) -> State:
        """This process's state (a fresh one in a forked child)."""
        state = self._state
        if state.pid != os.getpid():
            state = self._state = State()
        return state

    def clear(self) -> None:
        """Forget every loaded mind (a search under way finishes on the rows it holds)."""
        self._state = State()

    @property
    def nbytes(self) -> int:
        return self.state().nbytes()

    def get(self, state: State, key: Key) -> Rows | None:
        """The rows of ``key``, now the most recently used (under ``state.lock``)."""
        rows = state.rows.get(key)
        if rows is not None:
            state.rows.move_to_end(key)
        return rows

    def may_load(self, state: State, key: Key) -> bool:
        """Whether loading ``key`` is worth trying: False for :data:`TOO_BIG_RETRY_S` after it
        was found over the budget (counting a mind's rows costs a scan). Drops the rows held
        for ``key``, which the caller replaces. Under ``state.lock``."""
        state.rows.pop(key, None)
        retry = state.too_big.get(key)
        return retry is None or time.monotonic() >= retry

    def load(self, state: State, key: Key, need: int, fill: Callable[[], Rows]) -> Rows | None:
        """Make room for ``need`` bytes (evicting the least recently used) and install what
        ``fill`` loads; None, without calling it, when ``need`` exceeds the budget. Under
        ``state.lock``."""
        if need > self.budget:
            state.too_big[key] = time.monotonic() + TOO_BIG_RETRY_S
            return None
        state.too_big.pop(key, None)
        others = state.nbytes(but=key)
        while state.rows and others + need > self.budget:
            _, evicted = state.rows.popitem(last=False)
            others -= evicted.nbytes
        rows = fill()
        state.rows[key] = rows
        return rows

    def trim(self, state: State, key: Key) -> None:
        """After ``key``'s rows grew in place (appended rows, new codes): evict the least
        recently used others until the index fits its budget again, and mark ``key``'s rows
        for a reload if they alone no longer fit (the reload then finds them over the budget).
        Under ``state.lock``."""
        total = state.nbytes()
        while total > self.budget and len(state.rows) > 1:
            oldest = next(iter(state.rows))
            if oldest == key:
                state.rows.move_to_end(key)
                continue
            total -= state.rows.pop(oldest).nbytes
        rows = state.rows.get(key)
        if rows is not None and total > self.budget:
            rows.stale = True

    def loaded(self) -> dict[Key, Rows]:
        """A snapshot of this process's loaded minds (for inspection)."""
        return dict(self.state().rows)
