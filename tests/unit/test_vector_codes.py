"""The vector index's coarse pass (``vectorindex/codes.py``): the codes and their
Hamming distances, the candidates it rescores, and the calibration that decides per mind
whether it may be used and with how many candidates."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from waggle_store import vectorindex
from waggle_store.errors import InvalidInputError
from waggle_store.vectorindex import codes as sign_codes
from waggle_store.vectorindex.codes import (
    BITS,
    SignCodes,
    calibrate,
    candidates,
    nearest,
)


def _unit_rows(m: Any) -> Any:
    return (m / np.linalg.norm(m, axis=1, keepdims=True)).astype(np.float32)


def _clustered(n: int, dims: int, seed: int = 3) -> Any:
    """Vectors around directions shared by ~50 rows each (as sentence embeddings of a long
    conversation are: many texts near each of its topics)."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((n // 50, dims))
    return _unit_rows(centres[rng.integers(0, len(centres), n)]
                      + 0.35 * rng.standard_normal((n, dims)))


def _planes(dims: int) -> Any:
    return SignCodes(np, dims, 0)._planes


def _hamming(a: Any, b: Any, planes: Any) -> int:
    return int(np.count_nonzero((a @ planes > 0) != (b @ planes > 0)))


@pytest.mark.parametrize("dims", [8, 48, 384])
def test_distances_count_the_planes_that_separate_row_and_query(dims: int) -> None:
    rng = np.random.default_rng(dims)
    m = rng.standard_normal((300, dims)).astype(np.float32)
    m[5] = 0.0  # on no plane's positive side: every bit clear
    q = rng.standard_normal(dims).astype(np.float32)
    codes = SignCodes.of(np, m, 310)
    planes = _planes(dims)
    assert planes.shape == (dims, BITS)
    got = codes.distances(q, 300)
    assert got.dtype == np.uint16
    assert got.tolist() == [_hamming(row, q, planes) for row in m]
    assert got[5] == np.count_nonzero(q @ planes > 0)
    assert codes.nbytes == BITS // 8 * 310
    # The planes are the same in every process (a fixed seed): a rebuilt index agrees.
    assert np.array_equal(SignCodes.of(np, m, 300).words, codes.words[:, :300])


def test_the_angle_decides_the_distance() -> None:
    """SimHash: the expected share of separating planes is angle / pi."""
    rng = np.random.default_rng(2)
    a = _unit_rows(rng.standard_normal((1, 64)))[0]
    for degrees in (10, 45, 90, 170):
        other = _unit_rows(rng.standard_normal((1, 64)))[0]
        other = _unit_rows((other - (other @ a) * a)[None])[0]  # orthogonal to a
        t = np.radians(degrees)
        b = (np.cos(t) * a + np.sin(t) * other).astype(np.float32)
        codes = SignCodes.of(np, b[None], 1)
        share = int(codes.distances(a, 1)[0]) / BITS
        assert share == pytest.approx(degrees / 180, abs=0.05)


def test_rows_set_and_grown_after_packing() -> None:
    rng = np.random.default_rng(1)
    m = rng.standard_normal((50, 100)).astype(np.float32)
    codes = SignCodes.of(np, m[:40], 40)
    codes.grow(60)
    assert codes.words.shape[1] == 60
    codes.set_rows(np.arange(40, 50), m[40:50])
    m[3] = -m[3]
    codes.set_rows(np.array([3]), m[[3]])  # a row overwritten: every bit flips
    q = rng.standard_normal(100).astype(np.float32)
    planes = _planes(100)
    assert codes.distances(q, 50).tolist() == [_hamming(row, q, planes) for row in m]


def test_nearest_rescores_the_rows_nearest_by_code() -> None:
    m = _clustered(4000, 64)
    codes = SignCodes.of(np, m, len(m))
    q = m[17]
    planes = _planes(64)
    far = np.array([_hamming(row, q, planes) for row in m])
    rows, sims = nearest(np, codes, m, q, len(m), None, 20, 16)
    want = candidates(20, 16)
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
    m[:, 0] = 1.0  # one direction: one code for every row
    codes = SignCodes.of(np, m, len(m))
    rows, _ = nearest(np, codes, m, m[0], len(m), None, 5, 16)
    assert rows.tolist() == list(range(candidates(5, 16)))


def test_nearest_returns_only_rows_the_mask_allows() -> None:
    m = _clustered(2000, 64)
    codes = SignCodes.of(np, m, len(m))
    mask = np.zeros(len(m), np.bool_)
    mask[::7] = True
    rows, _ = nearest(np, codes, m, m[0], len(m), mask, 10, 16)
    assert len(rows) == min(candidates(10, 16), int(mask.sum()))
    assert mask[rows].all()
    mask[:] = False
    mask[[3, 9]] = True  # fewer allowed rows than candidates: all of them
    rows, _ = nearest(np, codes, m, m[0], len(m), mask, 10, 16)
    assert sorted(rows.tolist()) == [3, 9]


def test_calibration_chooses_the_smallest_factor_that_recalls() -> None:
    m = _clustered(20_000, 96)
    alive = np.ones(len(m), np.bool_)
    factor, recalls = calibrate(np, SignCodes.of(np, m, len(m)), m, alive)
    assert factor is not None
    assert recalls[factor] >= sign_codes.REQUIRED_RECALL
    assert all(recalls[f] < sign_codes.REQUIRED_RECALL for f in recalls if f < factor)
    # More candidates never find less.
    ordered = [recalls[f] for f in sorted(recalls)]
    assert ordered == sorted(ordered)


def test_calibration_refuses_when_no_factor_recalls(monkeypatch: pytest.MonkeyPatch) -> None:
    # Random directions in many dimensions: the nearest are barely nearer than the rest, and
    # with few candidates the codes cannot tell them apart.
    rng = np.random.default_rng(9)
    noise = _unit_rows(rng.standard_normal((20_000, 384)))
    monkeypatch.setattr(sign_codes, "FACTORS", (1, 2))
    monkeypatch.setattr(sign_codes, "MIN_CANDIDATES", 1)
    factor, recalls = calibrate(np, SignCodes.of(np, noise, len(noise)), noise,
                                np.ones(len(noise), np.bool_))
    assert factor is None
    assert set(recalls) == {1, 2}
    assert max(recalls.values()) < sign_codes.REQUIRED_RECALL


def test_calibration_tries_no_factor_that_would_rescore_an_eighth_of_the_mind() -> None:
    m = _clustered(5000, 32)
    factor, recalls = calibrate(np, SignCodes.of(np, m, len(m)), m, np.ones(len(m), np.bool_))
    assert set(recalls) == {f for f in sign_codes.FACTORS
                            if 8 * candidates(sign_codes.CALIBRATION_K, f) <= 5000}
    assert factor is None or factor in recalls


def test_calibration_leaves_out_dead_rows() -> None:
    m = _clustered(20_000, 64)
    alive = np.ones(len(m), np.bool_)
    alive[1::2] = False
    m[1::2] = m[0]  # dead rows identical to a query: everyone's nearest, were they counted
    _, recalls = calibrate(np, SignCodes.of(np, m, len(m)), m, alive)
    _, alive_only = calibrate(np, SignCodes.of(np, m[::2], len(m) // 2), m[::2],
                              np.ones(len(m) // 2, np.bool_))
    assert recalls
    assert all(0.0 < r <= 1.0 for r in recalls.values())
    assert min(recalls.values()) >= min(alive_only.values()) - 0.05


def test_the_mode_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WAGGLE_VECTOR_INDEX_MODE", raising=False)
    assert vectorindex.mode_from_env() == "auto"
    monkeypatch.setenv("WAGGLE_VECTOR_INDEX_MODE", " Exact ")
    assert vectorindex.mode_from_env() == "exact"
    monkeypatch.setenv("WAGGLE_VECTOR_INDEX_MODE", "fast")
    with pytest.raises(InvalidInputError, match="WAGGLE_VECTOR_INDEX_MODE"):
        vectorindex.mode_from_env()


def test_the_budget_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WAGGLE_VECTOR_INDEX_BYTES", raising=False)
    assert vectorindex.budget_from_env() == vectorindex.DEFAULT_BUDGET
    monkeypatch.setenv("WAGGLE_VECTOR_INDEX_BYTES", " 0 ")
    assert vectorindex.budget_from_env() == 0
    for bad in ("-1", "2GB", "1e9"):
        monkeypatch.setenv("WAGGLE_VECTOR_INDEX_BYTES", bad)
        with pytest.raises(InvalidInputError, match="WAGGLE_VECTOR_INDEX_BYTES"):
            vectorindex.budget_from_env()
