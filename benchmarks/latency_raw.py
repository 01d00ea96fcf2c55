"""The raw side of ``search_latency.py`` and its references: the library's lane statements
recorded as its driver receives them and replayed verbatim on a DBAPI connection, the bare scan
that stands for the SQLite index lane's numpy scan, sqlite-vec's bare KNN, and the vector lane's
recall@20 against an exact scan. Also used by ``search_cold_cache.py`` and ``filtered_search.py``.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any, cast

import waggle_store as ws
from waggle_store.dialects import (
    common,
    keyword_rank,
    postgres_keyword,
    postgres_maint,
    sqlite_keyword,
    sqlite_maint,
    sqlite_vecindex,
    sqlite_vecload,
    sqlite_veclog,
)
from waggle_store.dialects import postgres as postgres_adapter
from waggle_store.dialects import sqlite as sqlite_adapter
from waggle_store.dialects.base import LaneFilter, vector_table_name
from waggle_store.vectorindex import codes, topk

LIMIT = 20


def _percentiles(samples: Sequence[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return statistics.median(ordered) * 1000, p95 * 1000


def _lane_statements(
    store: ws.Store, mind: ws.Mind, queries: Sequence[str]
) -> dict[str, list[Any]]:
    """Per query, the lane statements ``mind.search`` runs, in order, exactly as the driver
    receives them.

    Recorded from the library itself (every lane statement goes through ``run_lane``), so the raw
    side runs the same SQL text with the same parameters by construction: the keyword lane, and
    on the vector lane the KNN with its manifest check (and its ``set_config`` on Postgres). Not
    the model lookup or the graph-distance query: those are the library's. SQLite's index lane
    scans in numpy, not SQL: recorded as a ``("scan", lane, vector, k)`` step at its place.
    """
    modules = (common, keyword_rank, sqlite_adapter, postgres_adapter, sqlite_keyword,
               postgres_keyword, sqlite_vecindex, sqlite_veclog, sqlite_vecload)
    real = common.run_lane
    recorded: list[Any] = []

    def recording(executor: Any, sql: str, params: dict[str, Any]) -> list[Any]:
        recorded.append(common.driver_statement(store.engine.dialect, sql, params))
        return real(executor, sql, params)

    # The SQLite index lane's scan is numpy, not SQL: the raw side repeats the bare top-k over
    # the same rows, at the same point of the search (a ("scan", rows, vector, k) step).
    real_top_k = topk.top_k

    def scanning(np_: Any, rows: Any, vector: Any, where: Any, k: int,
                 exact: bool = False) -> Any:
        recorded.append(("scan", rows, np_.asarray(vector, np_.float32), k))
        return real_top_k(np_, rows, vector, where, k, exact)

    topk.top_k = scanning
    statements: dict[str, list[Any]] = {}
    for module in modules:
        module.run_lane = recording  # type: ignore[attr-defined]
    try:
        for q in queries:
            recorded = []
            mind.search(q, limit=LIMIT)
            statements[q] = recorded
    finally:
        for module in modules:
            module.run_lane = real  # type: ignore[attr-defined]
        topk.top_k = real_top_k
    return statements


def _raw_runner(store: ws.Store, statements: dict[str, list[Any]]) -> Callable[[str], None]:
    """Replays a query's lane statements in order, in one transaction, on a DBAPI connection of
    the same engine (same driver; psycopg with the library's ``prepare_threshold``)."""
    sqlite = store.engine.dialect.name == "sqlite"
    conn: Any = store.engine.raw_connection()
    if not sqlite:
        with store.engine.connect() as lib_conn:
            lib_driver = lib_conn.connection.driver_connection
            assert lib_driver is not None  # a checked-out connection holds its driver's
            conn.driver_connection.prepare_threshold = lib_driver.prepare_threshold
        # The recorded vectors are bound in binary, as the library binds them.
        postgres_maint.dumps_binary_vectors(conn.driver_connection)

    def run(query: str) -> None:
        cur = conn.cursor()
        if sqlite:  # isolation_level=None: the library's begin hook does this
            cur.execute("BEGIN DEFERRED")
        for sql, args, *scan in statements[query]:
            if sql == "scan":
                _bare_scan(args, *scan)
                continue
            cur.execute(sql, args)
            cur.fetchall()
        if sqlite:
            cur.execute("COMMIT")
        else:
            conn.commit()

    return run


def _bare_scan(rows: Any, vector: Any, k: int) -> None:
    """The least an in-memory lane must do: normalise, one matrix-vector product over the mind
    and the top k by distance; where the mind's calibration chose the coarse pass, that pass's
    own core (``codes.nearest``: the codes' Hamming distances, the nearest rows' dot products),
    then the top k."""
    import numpy as np

    q = vector / np.linalg.norm(vector)
    if rows.codes is not None:
        found, sim = codes.nearest(np, rows.codes, rows.matrix, q, rows.n, None, k, rows.factor)
        top = np.argpartition(-sim, k - 1)[:k]
        found[top[np.argsort(-sim[top])]]
        return
    d = 1.0 - np.einsum("ij,j->i", rows.matrix[: rows.n], q)
    top = np.argpartition(d, k - 1)[:k]
    top[np.argsort(d[top])]

def _scan_pass(store: ws.Store) -> str:
    """How the SQLite index scans the mind: ``exact``, or ``coarse`` with its candidate factor
    and the recall its calibration measured with it (``exact(0.41)``: calibrated, refused: the
    best recall of any factor)."""
    (lane,) = cast(sqlite_adapter.SQLiteAdapter, store.adapter).vector_index.loaded().values()
    if lane.recalls is None:
        return "exact"
    if lane.codes is None or lane.factor is None:  # a coarse pass has both
        return f"exact({max(lane.recalls.values(), default=0.0):.2f})"
    return f"coarse×{lane.factor}({lane.recalls[lane.factor]:.3f})"


def _model_id(store: ws.Store, mind: ws.Mind) -> int:
    """The mind's active embedding model (its vector table's number)."""
    with store.read_connection() as conn:
        return int(conn.exec_driver_sql(
            "SELECT model_id FROM waggle_mind_embedding_models "
            f"WHERE mind_id = {mind.id}").scalar_one())


def knn_floor(store: ws.Store, mind: ws.Mind, queries: Sequence[str]) -> tuple[float, float]:
    """p50 ms (wall, CPU) of sqlite-vec's bare KNN alone (the mind's ``k = 40`` nearest by
    vec0's own scan, no manifest check, no keyword lane) over the same vectors and queries."""
    embedder = store.embedder
    assert embedder is not None
    model_id = _model_id(store, mind)
    sql = (f"SELECT rowid, distance FROM {vector_table_name(model_id)} "
           "WHERE embedding MATCH ? AND k = 40 AND mind_id = ?")
    conn = store.engine.raw_connection()
    try:
        times, cpu = [], []
        for q in queries:
            blob = sqlite_maint.vec_blob(embedder.embed_query(q))
            c0, t0 = time.process_time(), time.perf_counter()
            conn.cursor().execute(sql, (blob, mind.id)).fetchall()
            times.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
    finally:
        conn.close()
    return statistics.median(times) * 1000, statistics.median(cpu) * 1000


def recall_vs_vec0(store: ws.Store, mind: ws.Mind, queries: Sequence[str]) -> float:
    """recall@20 of the vector lane as it runs (the index) against vec0's exact KNN, counting
    ties at the 20th distance as found."""
    adapter = cast(sqlite_adapter.SQLiteAdapter, store.adapter)
    embedder = store.embedder
    assert embedder is not None
    model_id = _model_id(store, mind)
    found = total = 0
    for q in queries:
        vector = embedder.embed_query(q)
        with store.read_connection() as conn:
            lane = adapter.vector_search(conn, model_id=model_id, vector=vector,
                                         where=LaneFilter([mind.id]), limit=LIMIT)
            exact = adapter._vector_search_one(
                conn, model_id, vector, LaneFilter([mind.id]), mind.id, LIMIT)
        # Tie-aware: a hit as near as vec0's 20th is one of an exact top 20 (the hashing
        # embedder's distances tie often, and either scan may pick any of the tied frames).
        bound = exact[-1].score + 1e-6 if exact else 0.0
        found += sum(1 for h in lane if h.score <= bound)
        total += len(exact)
    return found / max(total, 1)


def recall_vs_exact_pg(store: ws.Store, mind: ws.Mind, queries: Sequence[str]) -> float:
    """recall@20 of the Postgres vector lane (the HNSW KNN) against an exact scan of the same
    vectors, counting ties at the 20th distance as found."""
    adapter = store.adapter
    embedder = store.embedder
    assert embedder is not None
    found = total = 0
    model_id = _model_id(store, mind)
    for q in queries:
        vector = embedder.embed_query(q)
        literal = "[" + ",".join(map(repr, map(float, vector))) + "]"
        with store.read_connection() as conn:
            lane = adapter.vector_search(conn, model_id=model_id, vector=vector,
                                         where=LaneFilter([mind.id]), limit=LIMIT)
            exact = [float(r[0]) for r in conn.exec_driver_sql(
                "SELECT (embedding <=> %(q)s::vector) + 0 AS d "
                f"FROM waggle_frame_vectors_{model_id} "
                "WHERE mind_id = %(m)s ORDER BY d LIMIT %(k)s",
                {"q": literal, "m": mind.id, "k": LIMIT}).all()]
        bound = exact[-1] + 1e-6 if exact else 0.0
        found += sum(1 for h in lane if h.score <= bound)
        total += len(exact)
    return found / max(total, 1)
