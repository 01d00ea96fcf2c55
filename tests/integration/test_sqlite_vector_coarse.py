"""The SQLite vector index's coarse pass on a real store (``dialects/sqlite_veccodes.py``): a
large mind of an embedder whose sign codes rank well takes it after calibration, and answers
with the exact scan's distances and (nearly) its frames; a mind whose vectors do not suit it
keeps the exact scan; writes after the load reach the codes; ``WAGGLE_VECTOR_INDEX_MODE=exact``
turns it off. The minds here are small, so the size threshold and the candidate count are
lowered to make the pass choose among many more rows than it rescores."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence

import numpy as np
import pytest
from sqlalchemy import text

import waggle_store as ws
from waggle_store.dialects import sqlite_veccodes, sqlite_vecindex
from waggle_store.dialects.base import LaneFilter
from waggle_store.dialects.sqlite import SQLiteAdapter
from waggle_store.dialects.sqlite_vecindex import _Lane

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
    monkeypatch.setattr(sqlite_vecindex, "COARSE_MIN_ROWS", 1000)
    monkeypatch.setattr(sqlite_veccodes, "MIN_CANDIDATES", 64)  # rescore ~4% of the mind
    monkeypatch.setattr(sqlite_veccodes, "CANDIDATE_FACTOR", 4)


def _fill(mind: ws.Mind, texts: Sequence[str] | None = None) -> list[int]:
    texts = texts or [f"topic {i % TOPICS} note {i}" for i in range(ROWS)]
    done = mind.cognify_batch(texts)
    assert not done.failures
    assert all(done.created)
    return [i for i in done.frame_ids if i is not None]


def _lane(store: ws.Store) -> _Lane:
    adapter = store.adapter
    assert isinstance(adapter, SQLiteAdapter)
    (lane,) = adapter.vector_index._lanes.values()
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


def test_a_mind_whose_codes_rank_well_takes_the_coarse_pass(
    store_factory: Callable[..., ws.Store]
) -> None:
    store = store_factory(embedder=TopicEmbedder())
    mind = store.mind("m")
    _fill(mind)
    emb = TopicEmbedder()
    found = total = 0
    for i in range(12):
        got, exact = _both(store, mind, emb.embed_query(f"topic {i} asked about {i}"))
        lane = _lane(store)
        assert lane.codes is not None
        assert lane.recall is not None
        assert lane.recall >= sqlite_veccodes.REQUIRED_RECALL
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


def test_vectors_the_codes_do_not_suit_keep_the_exact_scan(
    store_factory: Callable[..., ws.Store]
) -> None:
    store = store_factory()  # the hashing embedder: sparse signed vectors
    mind = store.mind("m")
    _fill(mind)
    vector = HashingQuery(store).vector("topic 3 note 30 again")
    got, exact = _both(store, mind, vector)
    lane = _lane(store)
    assert lane.recall is not None
    assert lane.recall < sqlite_veccodes.REQUIRED_RECALL
    assert lane.codes is None
    # The exact scan's answers (the hashing embedder's distances tie often: compared by value).
    assert [d for _, d in got] == pytest.approx([d for _, d in exact], abs=1e-6)


class HashingQuery:
    def __init__(self, store: ws.Store) -> None:
        assert store.embedder is not None
        self._embedder = store.embedder

    def vector(self, query: str) -> list[float]:
        return list(self._embedder.embed_query(query))


def test_frames_written_after_the_load_reach_the_codes(
    store_factory: Callable[..., ws.Store]
) -> None:
    store = store_factory(embedder=TopicEmbedder())
    mind = store.mind("m")
    _fill(mind)
    emb = TopicEmbedder()
    _both(store, mind, emb.embed_query("topic 1 first"))
    lane = _lane(store)
    assert lane.codes is not None
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
    assert _lane(store).recall is None
    assert [i for i, _ in got] == [i for i, _ in exact]
    assert [d for _, d in got] == pytest.approx([d for _, d in exact], abs=1e-6)


def test_an_invalid_mode_is_refused_at_open(
    store_factory: Callable[..., ws.Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WAGGLE_VECTOR_INDEX_MODE", "approximate")
    with pytest.raises(ws.InvalidInputError, match="WAGGLE_VECTOR_INDEX_MODE"):
        store_factory()
