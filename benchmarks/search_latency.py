"""Search latency: ``mind.search()`` beside the raw SQL of its two lanes, on SQLite and Postgres.

    python benchmarks/search_latency.py [--n 10000 100000] [--dialect sqlite postgres]
                                        [--pg-url URL] [--queries 200] [--keep DIR]

Builds a store of N synthetic frames (Zipf-distributed pseudo-words, 10 sessions) with the
deterministic hashing embedder (384 dims), then times, per query:

* library: ``mind.search(q, limit=20)`` (query embedding, a pooled connection with its pre-ping,
  both lanes with 2x over-fetch, fusion, the graph-distance query, scoring, explain);
* raw: the library's two lane statements, verbatim (keyword over-fetch 40; vector KNN k=40 with
  the mind filter and the manifest check; both return the hits' frame columns, as the library's
  lanes do), executed in one transaction on a DBAPI connection of the same engine and driver
  (psycopg: the same prepare_threshold), query vector precomputed.

On Postgres the tables are ``VACUUM ANALYZE``d after the load, as autovacuum would have done.

Postgres: ``--pg-url``, else ``WAGGLE_BENCH_PG_URL``, else an embedded PostgreSQL is started (and
stopped) by the script. Reports p50/p95 in milliseconds and the library/raw ratio of the p50s.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout, uninstalled

from sqlalchemy import func, select  # noqa: E402

import waggle_store as ws  # noqa: E402
from waggle_store.dialects import vector_table_name  # noqa: E402
from waggle_store.dialects.common import frame_select  # noqa: E402
from waggle_store.embeddings import HashingEmbedder  # noqa: E402
from waggle_store.models import FrameRow, SessionRow  # noqa: E402
from waggle_store.search.query import fts5_match_expression, keyword_terms, tsquery_terms  # noqa: E402
from waggle_store.search.vectors import active_model_id, embed_frames  # noqa: E402
from waggle_store.testing import embedded_postgres  # noqa: E402

LIMIT = 20
K = 2 * LIMIT
SESSIONS = 10
COLUMNS = frame_select()  # what every lane selects after (id, score)


def _vocabulary(rng: random.Random, size: int = 5000) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(letters) for _ in range(rng.randint(4, 9))))
    return sorted(words)


def _texts(n: int, seed: int = 7) -> tuple[list[str], list[str]]:
    rng = random.Random(seed)
    vocab = _vocabulary(rng)
    weights = [1.0 / (rank + 1) for rank in range(len(vocab))]  # Zipf
    texts = [" ".join(rng.choices(vocab, weights, k=rng.randint(12, 25))) for _ in range(n)]
    mid = vocab[50:2000]
    queries = [" ".join(rng.sample(mid, rng.randint(2, 4))) for _ in range(400)]
    return texts, queries


def build(store: ws.Store, n: int) -> ws.Mind:
    texts, _ = _texts(n)
    mind = store.mind("bench")
    base = time.time() - n
    from datetime import UTC, datetime

    with store.write() as s:
        for g in range(SESSIONS):
            s.add(SessionRow(mind_id=mind.id, gop_id=f"g{g}", kind="named"))
        s.flush()
        rows = []
        for i, text in enumerate(texts):
            when = datetime.fromtimestamp(base + i, UTC)
            rows.append(dict(mind_id=mind.id, frame_type="I", gop_id=f"g{i % SESSIONS}", t=i // SESSIONS,
                             content=text, content_hash=hashlib.sha256(text.encode()).hexdigest(),
                             importance="normal", source="import", access_count=0,
                             created_at=when, last_accessed=when))
        for start in range(0, n, 5000):
            s.execute(FrameRow.__table__.insert(), rows[start : start + 5000])
        ids = list(s.scalars(FrameRow.__table__.select().with_only_columns(FrameRow.id)
                             .where(FrameRow.mind_id == mind.id)))
    embed_frames(store, ids, batch_size=2000)
    if store.engine.dialect.name == "postgresql":
        # What autovacuum does to a table this size within a minute of the load: without
        # statistics the planner took the GIN and primary-key lookups for full scans, and both
        # sides measured a plan no running server keeps.
        with store.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.exec_driver_sql("VACUUM ANALYZE")
    return mind


def _frames(store: ws.Store) -> int:
    with store.read() as s:
        return int(s.scalar(select(func.count()).select_from(FrameRow.__table__)) or 0)


def _percentiles(samples: Sequence[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]
    return statistics.median(ordered) * 1000, p95 * 1000


def _raw_runner(store: ws.Store, mind: ws.Mind) -> Callable[[str, list[float]], None]:
    """The library's two lane statements, verbatim, on a DBAPI connection of the same engine.

    Same text, same parameters, same driver as ``SQLiteAdapter``/``PostgresAdapter`` run for an
    unfiltered search whose KNN page is full at the first try (as here: no stale vectors): the
    keyword lane, and the vector lane's KNN with its manifest check. Keep in step with
    ``waggle_store/dialects/``.
    """
    with store.read() as s:
        model_id = active_model_id(s)
    table = vector_table_name(model_id or 0)
    conn: Any = store.engine.raw_connection()
    if store.engine.dialect.name == "sqlite":
        kw_sql = (f"SELECT h.id, h.score, {COLUMNS} FROM ("
                  "SELECT f.id, bm25(memory_frames_fts) AS score FROM memory_frames_fts "
                  "JOIN memory_frames f ON f.id = memory_frames_fts.rowid "
                  "WHERE memory_frames_fts MATCH :q AND f.mind_id IN (:m0) ORDER BY score, f.id LIMIT :limit) h "
                  "JOIN memory_frames f ON f.id = h.id ORDER BY h.score, h.id")
        vec_sql = (f"SELECT c.rowid, c.distance, {COLUMNS}, f.id IS NOT NULL, "
                   "(SELECT status = 'active' FROM embedding_models WHERE id = :model_id) FROM ("
                   f"SELECT rowid, distance FROM {table} WHERE embedding MATCH :q AND k = :k "
                   "AND mind_id = :mind_id ) c "
                   "LEFT JOIN frame_embeddings e ON e.frame_id = c.rowid AND e.status = 'ready' "
                   "AND e.model_id = :model_id "
                   "LEFT JOIN memory_frames f ON f.id = c.rowid AND f.content_hash = e.content_hash")

        def run(query: str, qvec: list[float]) -> None:
            cur = conn.cursor()
            cur.execute("BEGIN DEFERRED")
            match = fts5_match_expression(keyword_terms(query))
            if match:
                cur.execute(kw_sql, {"q": match, "m0": mind.id, "limit": K}).fetchall()
            rows = cur.execute(vec_sql, {"q": "[" + ",".join(map(repr, qvec)) + "]", "k": K,
                                         "mind_id": mind.id, "model_id": model_id})
            sorted(rows.fetchall(), key=lambda r: (r[1], r[0]))
            cur.execute("COMMIT")
    else:
        # Statements are prepared by psycopg after the same number of runs on both sides.
        with store.engine.connect() as lib_conn:
            conn.driver_connection.prepare_threshold = lib_conn.connection.driver_connection.prepare_threshold
        dims = store.embedder.dimensions if store.embedder else 0
        dist = f"(v.embedding <=> CAST(%(q)s AS vector({dims})))"
        vec_sql = (f"WITH c AS MATERIALIZED (SELECT v.frame_id, {dist} AS d FROM {table} v "
                   f"WHERE v.mind_id IN (%(m0)s) ORDER BY {dist} LIMIT %(k)s) "
                   f"SELECT c.frame_id, c.d, {COLUMNS}, f.id IS NOT NULL, "
                   "(SELECT status = 'active' FROM embedding_models WHERE id = %(model_id)s) FROM c "
                   "LEFT JOIN frame_embeddings e ON e.frame_id = c.frame_id AND e.status = 'ready' "
                   "AND e.model_id = %(model_id)s "
                   "LEFT JOIN memory_frames f ON f.id = c.frame_id AND f.content_hash = e.content_hash "
                   "ORDER BY c.d, c.frame_id")

        def run(query: str, qvec: list[float]) -> None:
            values = tsquery_terms(keyword_terms(query))
            with conn.cursor() as cur:
                if values:
                    n = range(len(values))
                    minds = "f.mind_id IN (%(m0)s)"
                    cur.execute(
                        "WITH q AS MATERIALIZED (SELECT "
                        + ", ".join(f"plainto_tsquery('english', %(t{i})s) AS q{i}" for i in n) + "), "
                        "c AS MATERIALIZED (SELECT f.id, f.mind_id, f.gop_id, f.created_at, "
                        "length(f.content) AS len, "
                        + ", ".join(f"f.content_tsv @@ q.q{i} AS h{i}" for i in n) + " FROM memory_frames f, q "
                        f"WHERE f.content_tsv @@ ({' || '.join(f'q.q{i}' for i in n)}) AND {minds}), "
                        "w AS MATERIALIZED (SELECT "
                        + ", ".join(f"ln(1 + (n - d{i} + 0.5) / (d{i} + 0.5)) AS w{i}" for i in n)
                        + " FROM (SELECT (SELECT count(*) FROM memory_frames f "
                        f"WHERE {minds})::float8 AS n, "
                        + ", ".join(f"count(*) FILTER (WHERE h{i}) AS d{i}" for i in n) + " FROM c) s) "
                        f"SELECT h.id, h.score, {COLUMNS} FROM (SELECT c.id, "
                        + " + ".join(f"CASE WHEN c.h{i} THEN w.w{i} ELSE 0 END" for i in n)
                        + " AS score, c.len FROM c, w WHERE c.mind_id IN (%(m0)s) "
                        "ORDER BY score DESC, c.len, c.id LIMIT %(limit)s) h "
                        "JOIN memory_frames f ON f.id = h.id ORDER BY h.score DESC, h.len, h.id",
                        {**{f"t{i}": v for i, v in enumerate(values)}, "m0": mind.id, "limit": K})
                    cur.fetchall()
                cur.execute("SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true), "
                            "set_config('hnsw.ef_search', %(ef)s, true)", {"ef": str(max(40, K))})
                cur.execute(vec_sql, {"q": "[" + ",".join(map(repr, qvec)) + "]", "m0": mind.id,
                                      "model_id": model_id, "k": K})
                cur.fetchall()
            conn.commit()
    return run


def measure(store: ws.Store, mind: ws.Mind, n: int, count: int) -> dict[str, float]:
    _, queries = _texts(0)
    queries = queries[:count]
    embedder = store.embedder
    vectors = [embedder.embed_query(q) for q in queries]
    raw = _raw_runner(store, mind)
    for q, v in list(zip(queries, vectors))[:20]:  # warm caches (and psycopg's prepared plans)
        mind.search(q, limit=LIMIT)
        raw(q, v)
    lib_t, raw_t = [], []
    for i, (q, v) in enumerate(zip(queries, vectors)):
        # Alternate who goes first: the second run of a query finds its pages already cached.
        for which in ((0, 1) if i % 2 == 0 else (1, 0)):
            t0 = time.perf_counter()
            if which == 0:
                results = mind.search(q, limit=LIMIT)
                lib_t.append(time.perf_counter() - t0)
                assert results, q
            else:
                raw(q, v)
                raw_t.append(time.perf_counter() - t0)
    lib50, lib95 = _percentiles(lib_t)
    raw50, raw95 = _percentiles(raw_t)
    return {"lib_p50": lib50, "lib_p95": lib95, "raw_p50": raw50, "raw_p95": raw95,
            "ratio_p50": lib50 / raw50, "ratio_p95": lib95 / raw95}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--dialect", nargs="+", choices=("sqlite", "postgres"), default=["sqlite", "postgres"])
    parser.add_argument("--pg-url", default=os.environ.get("WAGGLE_BENCH_PG_URL"))
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--keep", metavar="DIR",
                        help="keep the built stores (SQLite files in DIR, Postgres schemas bench_N) "
                             "and reuse them on the next run instead of building again")
    args = parser.parse_args(argv)
    stop: Callable[[], None] | None = None
    pg_url = args.pg_url
    if "postgres" in args.dialect and not pg_url:
        pg_url, stop = embedded_postgres("waggle-bench-pg-")
    print(f"{'dialect':10} {'N':>7} {'build s':>8} {'lib p50':>8} {'lib p95':>8} {'raw p50':>8} "
          f"{'raw p95':>8} {'p50 ×':>6} {'p95 ×':>6}")
    try:
        with tempfile.TemporaryDirectory() as tmp:
            data = Path(args.keep) if args.keep else Path(tmp)
            data.mkdir(parents=True, exist_ok=True)
            for dialect in args.dialect:
                for n in args.n:
                    schema = None
                    if dialect == "sqlite":
                        url = f"sqlite:///{data / f'bench-{n}.db'}"
                    else:
                        url = pg_url
                        schema = f"bench_{n}" if args.keep else f"bench_{uuid.uuid4().hex[:8]}"
                    store = ws.open_store(url, schema=schema, embedder=HashingEmbedder(384))
                    try:
                        t0 = time.perf_counter()
                        mind = store.mind("bench")
                        if _frames(store) != n:
                            if _frames(store):
                                raise SystemExit(f"{url} {schema or ''}: holds another store; remove it")
                            mind = build(store, n)
                        built = time.perf_counter() - t0
                        r = measure(store, mind, n, args.queries)
                        print(f"{dialect:10} {n:>7} {built:8.1f} {r['lib_p50']:8.2f} {r['lib_p95']:8.2f} "
                              f"{r['raw_p50']:8.2f} {r['raw_p95']:8.2f} {r['ratio_p50']:6.2f} "
                              f"{r['ratio_p95']:6.2f}", flush=True)
                    finally:
                        if schema and not args.keep:
                            with store.engine.begin() as conn:
                                conn.exec_driver_sql(f'DROP SCHEMA "{schema}" CASCADE')
                        store.close()
    finally:
        if stop is not None:
            stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
