"""The SQLite vector index's coarse pass on a real store (``vectorindex/codes.py``): a
large mind of an embedder whose sign codes rank well takes it after calibration, and answers
with the exact scan's distances and (nearly) its frames; a mind whose vectors do not suit it
keeps the exact scan; writes after the load reach the codes; ``WAGGLE_VECTOR_INDEX_MODE=exact``
turns it off. The minds here are small, so the size threshold and the candidate count are
lowered to make the pass choose among many more rows than it rescores."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest
from sqlalchemy import text

import waggle_store as ws
from waggle_store.dialects import sqlite_vecindex
from waggle_store.dialects.base import LaneFilter
from waggle_store.dialects.sqlite import SQLiteAdapter
from waggle_store.vectorindex import codes, topk
from waggle_store.vectorindex.rows import Rows

from conftest import only_sqlite

pytestmark = only_sqlite

ROWS = 1500
TOPICS = 30


class TopicEmbedder:
    """64-d unit vectors near one of ``TOPICS`` directions (the text's "topic N" word), with a
    per-text offset: the shape of sentence embeddings, whose sign codes rank neighbours well."""

    provider = "topic-test"
    model = "topic-v1"
    dimensions = 64

    @property
    def model_id(self) -> str:
        return "topic-test/topic-v1/64"

    @staticmethod
    def _rng(text: str) -> np.random.Generator:
        return np.random.default_rng(int.from_bytes(hashlib.sha256(text.encode()).digest()[:8],
                                                    "little"))

    def _one(self, text: str) -> list[float]:
        topic = text.split()[1] if text.startswith("topic ") else "none"
        v = self._rng(f"topic {topic}").standard_normal(64) + 0.35 * self._rng(
            text).standard_normal(64)
        return [float(x) for x in v / np.linalg.norm(v)]

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return [self._one(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._one(text)


@pytest.fixture(autouse=True)
def small_minds_are_large(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(topk, "COARSE_MIN_ROWS", 1000)
    # Candidate factors small enough for a mind of 1,500 rows (at most 160 of them rescored).
    monkeypatch.setattr(codes, "MIN_CANDIDATES", 16)
    monkeypatch.setattr(codes, "FACTORS", (2, 4, 8))


def _fill(mind: ws.Mind, texts: Sequence[str] | None = None) -> list[int]:
    texts = texts or [f"topic {i % TOPICS} note {i}" for i in range(ROWS)]
    done = mind.cognify_batch(texts)
    assert not done.failures
    assert all(done.created)
    return [i for i in done.frame_ids if i is not None]


def _lane(store: ws.Store) -> Rows:
    """The store's one loaded (mind, model)."""
    adapter = store.adapter
    assert isinstance(adapter, SQLiteAdapter)
    (lane,) = adapter.vector_index.loaded().values()
    return lane


def _both(store: ws.Store, mind: ws.Mind, vector: Sequence[float], limit: int = 20
          ) -> tuple[list[tuple[int, float]], list[tuple[int, float]]]:
    """(the index lane, vec0's exact KNN) as (frame id, distance) on one snapshot."""
    adapter = store.adapter
    assert isinstance(adapter, SQLiteAdapter)
    with store.read_connection() as conn:
        model_id = int(conn.execute(text(
            "SELECT model_id FROM waggle_mind_embedding_models WHERE mind_id = :m"),
            {"m": mind.id}).scalar_one())
        got = adapter.vector_search(conn, model_id=model_id, vector=vector,
                                    where=LaneFilter([mind.id]), limit=limit)
        exact = adapter._vector_search_one(conn, model_id, vector, LaneFilter([mind.id]),
                                           mind.id, limit)
    return [(h.frame_id, h.score) for h in got], [(h.frame_id, h.score) for h in exact]


def _coded(store_factory: Callable[..., ws.Store]) -> tuple[ws.Store, ws.Mind, Rows]:
    """A mind of the topic embedder, searched once (loaded, its codes built) and coded."""
    store = store_factory(embedder=TopicEmbedder())
    mind = store.mind("m")
    _fill(mind)
    _both(store, mind, TopicEmbedder().embed_query("topic 0 first"))  # loads, builds the codes
    lane = _lane(store)
    assert lane.codes is not None
    return store, mind, lane


def test_a_mind_whose_codes_rank_well_takes_the_coarse_pass(
    store_factory: Callable[..., ws.Store]
) -> None:
    store, mind, lane = _coded(store_factory)
    emb = TopicEmbedder()
    assert lane.factor is not None
    assert lane.recalls is not None
    assert lane.recalls[lane.factor] >= codes.REQUIRED_RECALL
    found = total = 0
    for i in range(12):
        got, exact = _both(store, mind, emb.embed_query(f"topic {i} asked about {i}"))
        assert len(got) == len(exact) == 20
        exact_distance = dict(exact)
        bound = exact[-1][1] + 1e-6
        # Every distance is the exact one (the candidates are rescored), in the exact order.
        distances = [d for _, d in got]
        assert distances == sorted(distances)
        for frame_id, distance in got:
            if frame_id in exact_distance:
                assert distance == pytest.approx(exact_distance[frame_id], abs=1e-6)
        found += sum(1 for _, d in got if d <= bound)
        total += len(exact)
    assert found / total >= 0.98


class RandomEmbedder(TopicEmbedder):
    """384-d pseudo-random directions: the nearest are barely nearer than the rest."""

    provider = "random-test"
    model = "random-v1"
    dimensions = 384

    @property
    def model_id(self) -> str:
        return "random-test/random-v1/384"

    def _one(self, text: str) -> list[float]:
        v = self._rng(text).standard_normal(384)
        return [float(x) for x in v / np.linalg.norm(v)]


def test_vectors_the_codes_do_not_suit_keep_the_exact_scan(
    store_factory: Callable[..., ws.Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Few candidates: random directions in 384 dimensions are then beyond the codes.
    monkeypatch.setattr(codes, "MIN_CANDIDATES", 1)
    monkeypatch.setattr(codes, "FACTORS", (1, 2))
    store = store_factory(embedder=RandomEmbedder())
    mind = store.mind("m")
    _fill(mind)
    _both(store, mind, RandomEmbedder().embed_query("first"))
    lane = _lane(store)
    assert lane.recalls is not None
    assert set(lane.recalls) == {1, 2}
    assert max(lane.recalls.values()) < codes.REQUIRED_RECALL
    assert lane.codes is None
    assert lane.factor is None
    got, exact = _both(store, mind, RandomEmbedder().embed_query("topic 3 note 30 again"))
    assert [i for i, _ in got] == [i for i, _ in exact]


def test_frames_written_after_the_load_reach_the_codes(
    store_factory: Callable[..., ws.Store]
) -> None:
    store, mind, lane = _coded(store_factory)
    emb = TopicEmbedder()
    capacity = len(lane.ids)
    # Enough new frames to grow the lane's arrays (and its codes) at least once.
    texts = [f"topic 7 later {i}" for i in range(capacity - lane.n + 50)]
    later = _fill(mind, texts)
    for frame_id, content in list(zip(later, texts, strict=True))[-5:]:
        got, exact = _both(store, mind, emb.embed_query(content), limit=5)
        assert got[0] == (frame_id, pytest.approx(0.0, abs=1e-6))
        assert got[0][0] == exact[0][0]
    assert _lane(store) is lane
    assert len(lane.ids) > capacity
    assert lane.codes is not None
    assert lane.codes.words.shape[1] == len(lane.ids)
    # The mind has not doubled: no second calibration.
    assert lane.decided_at == ROWS


def test_the_exact_mode_turns_the_pass_off(
    store_factory: Callable[..., ws.Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WAGGLE_VECTOR_INDEX_MODE", "exact")
    store = store_factory(embedder=TopicEmbedder())
    mind = store.mind("m")
    _fill(mind)
    got, exact = _both(store, mind, TopicEmbedder().embed_query("topic 2 anything"))
    assert _lane(store).codes is None
    assert _lane(store).recalls is None
    assert [i for i, _ in got] == [i for i, _ in exact]
    assert [d for _, d in got] == pytest.approx([d for _, d in exact], abs=1e-6)


def test_a_numpy_without_bitwise_count_keeps_the_exact_scan(
    store_factory: Callable[..., ws.Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    """numpy before 2.0 has no ``bitwise_count``: the mind is never built for the pass."""

    class OldNumpy:
        def __getattr__(self, name: str) -> Any:
            if name == "bitwise_count":
                raise AttributeError(name)
            return getattr(np, name)

    monkeypatch.setattr(sqlite_vecindex, "numpy_or_none", OldNumpy)
    store = store_factory(embedder=TopicEmbedder())
    mind = store.mind("m")
    _fill(mind)
    got, exact = _both(store, mind, TopicEmbedder().embed_query("topic 2 anything"))
    lane = _lane(store)
    assert lane.recalls is None
    assert lane.codes is None
    assert lane.n == ROWS  # the index answered (exact), not vec0
    assert [i for i, _ in got] == [i for i, _ in exact]


def test_an_invalid_mode_is_refused_at_open(
    store_factory: Callable[..., ws.Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WAGGLE_VECTOR_INDEX_MODE", "approximate")
    with pytest.raises(ws.InvalidInputError, match="WAGGLE_VECTOR_INDEX_MODE"):
        store_factory()
