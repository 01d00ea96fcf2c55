"""The SQLite vector lane's in-process index (``dialects/sqlite_vecindex.py`` over
``waggle_store/vectorindex``): the same answers
as vec0's exact KNN, coherent with writes by other connections and processes, never a stale or
deleted frame, full pages under filters."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import text

import waggle_store as ws
from waggle_store.dialects import sqlite_vecload
from waggle_store.dialects.base import LaneFilter, LaneHit
from waggle_store.dialects.sqlite import SQLiteAdapter
from waggle_store.dialects.sqlite_vecindex import LOG_TABLE
from waggle_store.pipeline.embed import embed_frames
from waggle_store.records import Frame
from waggle_store.vectorindex import topk

from conftest import only_sqlite

pytestmark = only_sqlite

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True, params=["exact", "coarse"])
def scan_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test on each scan path: the exact scan, and the coarse pass (sign codes,
    candidates rescored: ``vectorindex/codes.py``) chosen for every mind — these minds are
    smaller than its candidate count, so its answers must be the exact scan's exactly."""
    if request.param == "coarse":
        # Every mind is built and calibrated when loaded, and takes the pass with candidates
        # enough for all its rows.
        monkeypatch.setattr(topk, "COARSE_MIN_ROWS", 0)
        monkeypatch.setattr(topk, "RESCORED_SHARE", 0)
        monkeypatch.setattr(topk, "calibrate", lambda *args: (10_000, {10_000: 1.0}))
    return str(request.param)


def _coarse_used(store: ws.Store, scan_path: str) -> None:
    """On the coarse paths, every loaded lane has taken the coarse pass."""
    lanes = _adapter(store).vector_index.loaded().values()
    assert lanes
    assert all((lane.codes is not None) == scan_path.startswith("coarse") for lane in lanes)


class DenseEmbedder:
    """Pseudo-random dense unit vectors seeded by the text: ties are (almost) impossible, so the
    order of two exact scans is comparable position by position."""

    provider = "dense-test"
    model = "dense-v1"
    dimensions = 48

    @property
    def model_id(self) -> str:
        return "dense-test/dense-v1/48"

    def _one(self, text: str) -> list[float]:
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
        v = np.random.default_rng(seed).standard_normal(self.dimensions)
        return [float(x) for x in v / np.linalg.norm(v)]

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return [self._one(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._one(text)


def _seed(store: ws.Store, mind: ws.Mind, n: int, sessions: int = 3) -> list[int]:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    gops = [mind.sessions.ensure(f"s{g}").gop_id for g in range(sessions)]
    ids = [mind.frames.create_i(gops[i % sessions], f"memory number {i}",
                                created_at=start + timedelta(minutes=i)).id for i in range(n)]
    embed_frames(store.context, ids)
    return ids


def _model_id(store: ws.Store, mind: ws.Mind) -> int:
    with store.read_connection() as conn:
        return int(conn.execute(text("SELECT model_id FROM waggle_mind_embedding_models WHERE "
                                     "mind_id = :m AND status = 'active'"),
                                {"m": mind.id}).scalar_one())


def _adapter(store: ws.Store) -> SQLiteAdapter:
    adapter = store.adapter
    assert isinstance(adapter, SQLiteAdapter)
    return adapter


def _lanes(store: ws.Store, mind: ws.Mind, vector: Sequence[float], where: LaneFilter,
           limit: int) -> tuple[list[LaneHit], list[LaneHit]]:
    """(the lane through the index, vec0's KNN) on the same snapshot."""
    adapter, model_id = _adapter(store), _model_id(store, mind)
    with store.read_connection() as conn:
        indexed = adapter.vector_search(conn, model_id=model_id, vector=vector, where=where,
                                        limit=limit)
        vec0 = adapter._vector_search_one(conn, model_id, vector, where, mind.id, limit)
    return indexed, vec0


def _ids(hits: Sequence[LaneHit]) -> list[int]:
    return [h.frame_id for h in hits]


def test_the_index_answers_like_vec0s_exact_knn(store_factory: Callable[..., ws.Store],
                                                 scan_path: str) -> None:
    store = store_factory(embedder=DenseEmbedder())
    mind = store.mind("m")
    _seed(store, mind, 240)
    emb = DenseEmbedder()
    start = datetime(2026, 1, 1, tzinfo=UTC)
    filters = [
        LaneFilter([mind.id]),
        LaneFilter([mind.id], gop_id="s1"),
        LaneFilter([mind.id], since=start + timedelta(minutes=50)),
        LaneFilter([mind.id], until=start + timedelta(minutes=100)),
        LaneFilter([mind.id], gop_id="s2", since=start + timedelta(minutes=30),
                   until=start + timedelta(minutes=200)),
    ]
    for q in ("first query", "another one", "memory number 7"):
        for where in filters:
            indexed, vec0 = _lanes(store, mind, emb.embed_query(q), where, 20)
            assert _ids(indexed) == _ids(vec0), (q, where)
            assert [h.score for h in indexed] == pytest.approx([h.score for h in vec0], abs=1e-5)
            assert [h.frame for h in indexed] == [h.frame for h in vec0]
    assert _adapter(store).vector_index.nbytes > 0  # the index answered, not the fallback
    _coarse_used(store, scan_path)


def test_filters_give_full_pages(store_factory: Callable[..., ws.Store]) -> None:
    store = store_factory(embedder=DenseEmbedder())
    mind = store.mind("m")
    _seed(store, mind, 300)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    since, until = start + timedelta(minutes=100), start + timedelta(minutes=160)
    q = DenseEmbedder().embed_query("anything")
    indexed, _ = _lanes(store, mind, q, LaneFilter([mind.id], gop_id="s0"), 40)
    assert len(indexed) == 40
    assert {Frame(*h.frame).gop_id for h in indexed} == {"s0"}
    indexed, _ = _lanes(store, mind, q, LaneFilter([mind.id], since=since, until=until), 40)
    assert len(indexed) == 40
    assert all(since <= Frame(*h.frame).created_at <= until for h in indexed)
    # Fewer matching frames than the page: all of them.
    indexed, _ = _lanes(store, mind, q, LaneFilter([mind.id], gop_id="s2", since=since,
                                                   until=until), 40)
    assert len(indexed) == 20


def test_a_write_by_another_process_is_seen_by_the_next_search(
    store_factory: Callable[..., ws.Store], tmp_path: Path
) -> None:
    store = store_factory()
    mind = store.mind("m")
    _seed(store, mind, 50)
    assert mind.search("memory number 1", lanes=("vector",))
    assert _adapter(store).vector_index.nbytes > 0  # the index is built now
    url = str(store.engine.url)
    code = textwrap.dedent(f"""
        import waggle_store as ws
        from waggle_store.pipeline.embed import embed_frames
        store = ws.open_store({url!r}, embedder="hashing")
        mind = store.mind("m")
        frame = mind.frames.create_i(mind.sessions.ensure("s0").gop_id, "zebra crossing at dawn")
        embed_frames(store.context, [frame.id])
        print(frame.id)
        store.close()
    """)
    env = {**os.environ,
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-W", "ignore", "-c", code], capture_output=True,
                          text=True, env=env, check=True)
    new_id = int(done.stdout.strip().splitlines()[-1])
    results = mind.search("zebra crossing at dawn", lanes=("vector",))
    assert results[0].frame.id == new_id
    assert results[0].frame.content == "zebra crossing at dawn"


def test_deleted_and_updated_frames_never_come_back(
    store_factory: Callable[..., ws.Store]
) -> None:
    store = store_factory()
    other = store_factory()  # another engine and pool on the same file
    mind = store.mind("m")
    ids = _seed(store, mind, 60)
    probe = "memory number 7"
    assert mind.search(probe, lanes=("vector",))[0].frame.id == ids[7]
    other.mind("m").frames.delete(ids[7])
    assert ids[7] not in [r.frame.id for r in mind.search(probe, lanes=("vector",))]
    assert mind.search("memory number 8", lanes=("vector",))[0].frame.id == ids[8]
    other.mind("m").frames.update(ids[8], "a completely different sentence about kites")
    after = mind.search("memory number 8", lanes=("vector",))
    assert all(r.frame.id != ids[8] or r.frame.content.endswith("kites") for r in after)
    kites = mind.search("a completely different sentence about kites", lanes=("vector",))
    assert kites[0].frame.id == ids[8]
    assert kites[0].frame.content == "a completely different sentence about kites"


def test_a_change_the_log_missed_is_caught_by_the_verification(
    store_factory: Callable[..., ws.Store]
) -> None:
    """Even a cache that missed a change (the log's triggers dropped, a frame deleted behind
    its back) never returns the deleted frame: every candidate is checked in SQL."""
    store = store_factory()
    mind = store.mind("m")
    ids = _seed(store, mind, 40)
    assert mind.search("memory number 3", lanes=("vector",))[0].frame.id == ids[3]
    with store.write() as s:
        for name in ("frame_ad", "manifest_ad"):
            s.execute(text(f"DROP TRIGGER {LOG_TABLE}_{name}"))
        s.execute(text("DELETE FROM waggle_memory_frames WHERE id = :id"), {"id": ids[3]})
    hits = mind.search("memory number 3", lanes=("vector",), limit=10)
    assert ids[3] not in [r.frame.id for r in hits]
    assert len(hits) == 10  # the page is still full


def test_incremental_refresh_appends_without_reloading(
    store_factory: Callable[..., ws.Store], scan_path: str
) -> None:
    store = store_factory(embedder=DenseEmbedder())
    mind = store.mind("m")
    _seed(store, mind, 30)
    index = _adapter(store).vector_index
    assert mind.search("x", lanes=("vector",))
    (lane,) = index.loaded().values()
    more = [mind.frames.create_i(mind.sessions.ensure("s0").gop_id, f"later memory {i}").id
            for i in range(5)]
    embed_frames(store.context, more)
    top = mind.search("later memory 3", lanes=("vector",))
    assert top[0].frame.id == more[3]
    assert index.loaded()[(mind.id, _model_id(store, mind))] is lane  # refreshed in place
    assert lane.n == 35
    _coarse_used(store, scan_path)


def test_without_budget_the_lane_is_vec0s(store_factory: Callable[..., ws.Store]) -> None:
    store = store_factory(embedder=DenseEmbedder())
    mind = store.mind("m")
    _seed(store, mind, 30)
    _adapter(store).vector_index.budget = 0
    q = DenseEmbedder().embed_query("q")
    indexed, vec0 = _lanes(store, mind, q, LaneFilter([mind.id]), 10)
    assert _ids(indexed) == _ids(vec0)
    assert _adapter(store).vector_index.nbytes == 0


def test_the_vec0_scan_loader_reads_the_same_index(
    store_factory: Callable[..., ws.Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where sqlite-vec's chunk tables are not laid out as expected, the index is read through
    vec0's own scan: the same answers."""
    store = store_factory(embedder=DenseEmbedder())
    mind = store.mind("m")
    _seed(store, mind, 90)
    monkeypatch.setattr(sqlite_vecload, "_load_chunks", lambda *args: False)
    q = DenseEmbedder().embed_query("q")
    indexed, vec0 = _lanes(store, mind, q, LaneFilter([mind.id], gop_id="s1"), 10)
    assert _ids(indexed) == _ids(vec0)
    assert _adapter(store).vector_index.nbytes > 0


def test_a_write_session_never_fills_the_index(store_factory: Callable[..., ws.Store]) -> None:
    """A write transaction may hold uncommitted changes: it reads a current index but never
    loads one (a rollback would leave the index ahead of the database)."""
    store = store_factory(embedder=DenseEmbedder())
    mind = store.mind("m")
    ids = _seed(store, mind, 20)
    adapter, model_id = _adapter(store), _model_id(store, mind)
    q = DenseEmbedder().embed_query("memory number 4")
    with store.write() as s:
        hits = adapter.vector_search(s, model_id=model_id, vector=q, where=LaneFilter([mind.id]),
                                     limit=5)
    assert hits[0].frame_id == ids[4]
    assert adapter.vector_index.nbytes == 0  # answered by vec0
    assert mind.search("memory number 4", lanes=("vector",))[0].frame.id == ids[4]
    assert adapter.vector_index.nbytes > 0


def test_the_budget_bounds_the_index(store_factory: Callable[..., ws.Store]) -> None:
    """Over the budget a mind is searched by vec0; two minds that do not fit together take
    turns (the least recently searched is evicted)."""
    store = store_factory(embedder=DenseEmbedder())
    a, b = store.mind("a"), store.mind("b")
    _seed(store, a, 40)
    _seed(store, b, 40)
    index = _adapter(store).vector_index
    assert a.search("memory number 2", lanes=("vector",))
    one = index.nbytes
    index.clear()
    index.budget = one + one // 2  # room for one mind, not two
    q = DenseEmbedder().embed_query("memory number 2")
    for mind in (a, b):
        indexed, vec0 = _lanes(store, mind, q, LaneFilter([mind.id]), 10)
        assert _ids(indexed) == _ids(vec0)
        assert [key[0] for key in index.loaded()] == [mind.id]
        assert index.nbytes <= index.budget
    index.clear()
    index.budget = one // 2  # not even one
    indexed, vec0 = _lanes(store, a, q, LaneFilter([a.id]), 10)
    assert _ids(indexed) == _ids(vec0)
    assert index.nbytes == 0


def test_a_mind_that_outgrows_the_budget_leaves_the_index(
    store_factory: Callable[..., ws.Store]
) -> None:
    """Rows appended by refreshes count against the budget too: once the mind no longer fits,
    it is searched by vec0."""
    store = store_factory(embedder=DenseEmbedder())
    mind = store.mind("m")
    _seed(store, mind, 40)
    index = _adapter(store).vector_index
    assert mind.search("memory number 2", lanes=("vector",))
    index.budget = index.nbytes + 2000  # room for the mind as loaded, not for 20 more frames
    gop = mind.sessions.ensure("s0").gop_id
    more = [mind.frames.create_i(gop, f"later memory {i}").id for i in range(20)]
    embed_frames(store.context, more)
    assert mind.search("later memory 3", lanes=("vector",))[0].frame.id == more[3]
    q = DenseEmbedder().embed_query("later memory 5")
    indexed, vec0 = _lanes(store, mind, q, LaneFilter([mind.id]), 10)
    assert _ids(indexed) == _ids(vec0)
    assert index.nbytes == 0


def test_closing_the_store_frees_the_index(store_factory: Callable[..., ws.Store]) -> None:
    store = store_factory(embedder=DenseEmbedder())
    mind = store.mind("m")
    _seed(store, mind, 20)
    assert mind.search("memory number 4", lanes=("vector",))
    index = _adapter(store).vector_index
    assert index.nbytes > 0
    with store.engine.connect() as conn:
        store.within(conn).close()  # a view shares the store's index: it stays
    assert index.nbytes > 0
    store.close()
    assert index.nbytes == 0


def test_a_child_forked_while_the_index_is_locked_searches(
    store_factory: Callable[..., ws.Store]
) -> None:
    """A child forked while another thread of the parent holds the index's lock (a scan, a
    refresh) has no such thread to release it: it starts with a fresh lock and no lanes."""
    store = store_factory(embedder=DenseEmbedder())
    mind = store.mind("m")
    ids = _seed(store, mind, 30)
    assert mind.search("memory number 3", lanes=("vector",))[0].frame.id == ids[3]
    index = _adapter(store).vector_index
    lock = index.cache.state().lock
    assert lock.acquire(timeout=10)  # as a search on another thread holds it
    try:
        pid = os.fork()
        if pid == 0:  # the child: its own connections (SQLAlchemy's advice), then a search
            code = 3
            try:
                store.engine.dispose(close=False)
                hits = mind.search("memory number 5", lanes=("vector",))
                code = 0 if hits and hits[0].frame.id == ids[5] and index.nbytes > 0 else 2
            finally:
                os._exit(code)
    finally:
        lock.release()
    deadline = time.monotonic() + 60
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail("the forked child hung on the parent's index lock")
        time.sleep(0.05)
    assert os.waitstatus_to_exitcode(status) == 0
    assert mind.search("memory number 7", lanes=("vector",))[0].frame.id == ids[7]  # the parent
