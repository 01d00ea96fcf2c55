"""The SQLite vector index's coarse pass (``dialects/sqlite_veccodes.py``): sign codes and their
Hamming distances, the candidates it rescores, and the calibration that decides per mind
whether it may be used."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from waggle_store.dialects import sqlite_veccodes
from waggle_store.dialects.sqlite_veccodes import SignCodes, calibrate, candidates, nearest
from waggle_store.errors import InvalidInputError


def _unit_rows(m: Any) -> Any:
    return (m / np.linalg.norm(m, axis=1, keepdims=True)).astype(np.float32)


def _clustered(n: int, dims: int, seed: int = 3) -> Any:
    """Vectors around directions shared by ~50 rows each (as sentence embeddings of a long
    conversation are: many texts near each of its topics): sign codes rank neighbours well."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((n // 50, dims))
    return _unit_rows(centres[rng.integers(0, len(centres), n)]
                      + 0.35 * rng.standard_normal((n, dims)))


def _hamming(a: Any, b: Any) -> int:
    return int(np.count_nonzero((a > 0) != (b > 0)))


@pytest.mark.parametrize("dims", [8, 48, 64, 100, 384])
def test_distances_are_the_hamming_distances_of_the_signs(dims: int) -> None:
    rng = np.random.default_rng(dims)
    m = rng.standard_normal((300, dims)).astype(np.float32)
    m[5] = 0.0  # no positive value: every bit clear
    q = rng.standard_normal(dims).astype(np.float32)
    codes = SignCodes.of(np, m, 310)
    got = codes.distances(q, 300)
    assert got.dtype == np.uint16
    assert got.tolist() == [_hamming(row, q) for row in m]
    assert codes.nbytes == 8 * ((dims + 63) // 64) * 310


def test_rows_set_and_grown_after_packing() -> None:
    rng = np.random.default_rng(1)
    m = rng.standard_normal((50, 100)).astype(np.float32)
    codes = SignCodes.of(np, m[:40], 40)
    codes.grow(60)
    for row in range(40, 50):
        codes.set_row(row, m[row])
    codes.set_row(3, -m[3])  # a row overwritten: every bit flips
    m[3] = -m[3]
    q = rng.standard_normal(100).astype(np.float32)
    assert codes.distances(q, 50).tolist() == [_hamming(row, q) for row in m]


def test_nearest_rescores_the_rows_nearest_by_code() -> None:
    m = _clustered(4000, 64)
    codes = SignCodes.of(np, m, len(m))
    q = m[17]
    far = np.array([_hamming(row, q) for row in m])
    rows, sims = nearest(np, codes, m, q, len(m), None, 20)
    want = candidates(20)
    assert len(rows) == want == len(set(rows.tolist()))
    cut = int(far[rows].max())
    # Every row nearer than the farthest candidate is a candidate; rows tied at the cut-off
    # are taken in row order.
    assert set(np.flatnonzero(far < cut).tolist()) <= set(rows.tolist())
    tied = np.flatnonzero(far == cut)
    assert sorted(rows[far[rows] == cut].tolist()) == tied[:want - int((far < cut).sum())].tolist()
    np.testing.assert_array_equal(sims, np.einsum("ij,j->i", m[rows], q))


def test_codes_that_all_tie_still_rescore_only_the_candidates() -> None:
    m = np.zeros((3000, 32), np.float32)
    m[:, 0] = -1.0  # one sign code for every row
    codes = SignCodes.of(np, m, len(m))
    rows, _ = nearest(np, codes, m, m[0], len(m), None, 5)
    assert rows.tolist() == list(range(candidates(5)))


def test_nearest_returns_only_rows_the_mask_allows() -> None:
    m = _clustered(2000, 64)
    codes = SignCodes.of(np, m, len(m))
    mask = np.zeros(len(m), np.bool_)
    mask[::7] = True
    rows, _ = nearest(np, codes, m, m[0], len(m), mask, 10)
    assert len(rows) >= min(candidates(10), int(mask.sum()))
    assert mask[rows].all()
    mask[:] = False
    mask[[3, 9]] = True  # fewer allowed rows than candidates: all of them
    rows, _ = nearest(np, codes, m, m[0], len(m), mask, 10)
    assert sorted(rows.tolist()) == [3, 9]


def test_calibration_accepts_vectors_whose_signs_rank_well_and_refuses_others() -> None:
    clustered = _clustered(20_000, 96)
    alive = np.ones(len(clustered), np.bool_)
    good = calibrate(np, SignCodes.of(np, clustered, len(clustered)), clustered, alive)
    assert good >= sqlite_veccodes.REQUIRED_RECALL
    # Random directions: the nearest are barely nearer than the rest, and their signs say little.
    rng = np.random.default_rng(9)
    noise = _unit_rows(rng.standard_normal((20_000, 96)))
    bad = calibrate(np, SignCodes.of(np, noise, len(noise)), noise, alive)
    assert bad < 0.9
    # Sparse vectors (a few non-zero coordinates, as a hashing embedder makes): most signs are
    # "not positive" for every row alike.
    sparse = np.zeros((20_000, 96), np.float32)
    for i in range(len(sparse)):
        sparse[i, rng.choice(96, 4, replace=False)] = rng.standard_normal(4)
    sparse = _unit_rows(sparse)
    assert calibrate(np, SignCodes.of(np, sparse, len(sparse)), sparse, alive) < 0.9


def test_calibration_leaves_out_dead_rows() -> None:
    m = _clustered(3000, 64)
    alive = np.ones(len(m), np.bool_)
    alive[::2] = False
    # A dead row identical to every query would be everyone's nearest if it were counted.
    m[0] = m[1]
    assert 0.0 < calibrate(np, SignCodes.of(np, m, len(m)), m, alive) <= 1.0


def test_the_mode_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WAGGLE_VECTOR_INDEX_MODE", raising=False)
    assert sqlite_veccodes.mode_from_env() == "auto"
    monkeypatch.setenv("WAGGLE_VECTOR_INDEX_MODE", " Exact ")
    assert sqlite_veccodes.mode_from_env() == "exact"
    monkeypatch.setenv("WAGGLE_VECTOR_INDEX_MODE", "fast")
    with pytest.raises(InvalidInputError, match="WAGGLE_VECTOR_INDEX_MODE"):
        sqlite_veccodes.mode_from_env()
