"""The SQLite vector index's shared product (``sqlite_vecindex._Product``): chunks taken by any
number of threads give exactly the one-pass product; a failing chunk fails the scan without
leaving anyone waiting."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest

from waggle_store.dialects import sqlite_vecindex
from waggle_store.dialects.sqlite_vecindex import _Product


def _matrix(rows: int, dims: int = 16) -> tuple[Any, Any]:
    rng = np.random.default_rng(7)
    m = rng.standard_normal((rows, dims)).astype(np.float32)
    q = rng.standard_normal(dims).astype(np.float32)
    return m, q / np.linalg.norm(q)


@pytest.mark.parametrize("threads", [1, 2, 5])
def test_shared_chunks_give_the_one_pass_product(monkeypatch: pytest.MonkeyPatch,
                                                 threads: int) -> None:
    monkeypatch.setattr(sqlite_vecindex, "SCAN_CHUNK_ENTRIES", 16 * 3)  # 3 rows a chunk
    m, q = _matrix(1000)
    product = _Product(np, m, q)
    workers = [threading.Thread(target=product.work) for _ in range(threads - 1)]
    for w in workers:
        w.start()
    product.work()
    got = product.wait()
    for w in workers:
        w.join()
    np.testing.assert_array_equal(got, -np.einsum("ij,j->i", m, q))


def test_a_failing_chunk_fails_the_scan_and_nobody_waits_forever(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sqlite_vecindex, "SCAN_CHUNK_ENTRIES", 16 * 10)
    m, q = _matrix(100)
    product = _Product(np, m, q)
    calls = 0
    real = np.einsum

    class Numpy:
        """numpy whose second product chunk fails."""

        def __getattr__(self, name: str) -> Any:
            return getattr(np, name)

        def einsum(self, *args: Any, **kwargs: Any) -> Any:
            nonlocal calls
            calls += 1
            if calls == 2:
                raise MemoryError("chunk failed")
            return real(*args, **kwargs)

    product._np = Numpy()
    with pytest.raises(MemoryError):
        product.work()
    assert calls == 2  # the untaken chunks were abandoned, not computed
    product.finish()  # returns: nothing left running or untaken
    with pytest.raises(RuntimeError, match="the vector scan failed"):
        product.wait()


def test_cancel_leaves_nothing_to_take() -> None:
    m, q = _matrix(50)
    product = _Product(np, m, q)
    product.cancel()
    product.finish()  # returns at once
    assert product._next == len(m)
