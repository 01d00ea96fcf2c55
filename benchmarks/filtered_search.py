"""Filtered search cost: ``mind.search(q, where=...)`` beside the same search unfiltered.

    python benchmarks/filtered_search.py [--n 100000] [--dialect sqlite postgres]
                                         [--pg-url URL] [--queries 60] [--keep DIR]

Builds the store of ``search_latency.py`` (N synthetic frames, the hashing embedder, 384 dims;
bulk-inserted, then embedded), with metadata: every frame ``{"i": i}``, every 40th also
``{"rare": "yes"}`` and told by a tool (``source="tool_verified"``), every 2nd ``{"half": "a"}``,
every 2,000th ``{"needle": "yes"}``. Then, per query of the latency benchmark, interleaved in
one run: the unfiltered search and each filter, ``limit=20``, both lanes, and each lane alone.
Prints p50/p95 in milliseconds, the ratio of each filter's p50 to the unfiltered p50 of the
same lanes, and the mean number of results (the hashing embedder's vector lane returns only
frames sharing a word with the query, so a rare filter's page can be short because fewer
matching frames share one: ``tests/integration/test_search_where.py`` shows the full page).

Postgres: ``--pg-url``, else ``WAGGLE_BENCH_PG_URL``, else an embedded PostgreSQL started (and
stopped) by the script.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, cast

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout, uninstalled

import search_latency as latency
from latency_raw import _percentiles
from sqlalchemy import Table

import waggle_store as ws
from waggle_store.embeddings import HashingEmbedder
from waggle_store.models import FrameRow, SessionRow
from waggle_store.pipeline.embed import embed_frames
from waggle_store.testing import embedded_postgres

LIMIT = 20
FILTERS: dict[str, dict[str, Any] | None] = {
    "none": None,
    "half (1/2)": {"metadata": {"half": "a"}},
    "rare meta (1/40)": {"metadata": {"rare": "yes"}},
    "rare source (1/40)": {"source": "tool_verified"},
    "needle (1/2000)": {"metadata": {"needle": "yes"}},
}
LANES: dict[str, set[str] | None] = {"both": None, "keyword": {"keyword"}, "vector": {"vector"}}


def metadata(i: int) -> dict[str, Any]:
    meta: dict[str, Any] = {"i": i}
    if i % 40 == 7:
        meta["rare"] = "yes"
    if i % 2 == 0:
        meta["half"] = "a"
    if i % 2000 == 1234:
        meta["needle"] = "yes"
    return meta


def build(store: ws.Store, n: int) -> ws.Mind:
    texts, _ = latency._texts(n)
    mind = store.mind("bench")
    base = time.time() - n
    with store.write() as s:
        for g in range(latency.SESSIONS):
            s.add(SessionRow(mind_id=mind.id, gop_id=f"g{g}", kind="named"))
        s.flush()
        rows = []
        for i, text in enumerate(texts):
            row = latency.frame_row(mind.id, f"g{i % latency.SESSIONS}", i // latency.SESSIONS,
                                    text, base + i)
            row["metadata"] = metadata(i)
            row["source"] = "tool_verified" if i % 40 == 7 else "import"
            rows.append(row)
        for start in range(0, n, 5000):
            s.execute(cast(Table, FrameRow.__table__).insert(), rows[start : start + 5000])
        ids = list(s.scalars(FrameRow.__table__.select().with_only_columns(FrameRow.id)
                             .where(FrameRow.mind_id == mind.id)))
    embed_frames(store.context, ids, batch_size=2000)
    if store.engine.dialect.name == "postgresql":
        latency.vacuum_analyze(store)
    return mind


def measure(mind: ws.Mind, queries: Sequence[str]) -> dict[tuple[str, str], tuple[list[float],
                                                                                 int]]:
    """Per (lanes, filter): each search's seconds, and the results of all its searches."""
    out: dict[tuple[str, str], tuple[list[float], int]] = {}
    for query in queries[:5]:  # warm: the vector index, the frame count, prepared statements
        for where in FILTERS.values():
            mind.search(query, limit=LIMIT, where=where)
    for query in queries:
        for lane_name, lanes in LANES.items():
            for name, where in FILTERS.items():
                t0 = time.perf_counter()
                results = mind.search(query, limit=LIMIT, where=where, lanes=lanes)
                spent = time.perf_counter() - t0
                samples, found = out.setdefault((lane_name, name), ([], 0))
                samples.append(spent)
                out[(lane_name, name)] = (samples, found + len(results))
    return out


def report(dialect: str, n: int, found: dict[tuple[str, str], tuple[list[float], int]]) -> None:
    for lane_name in LANES:
        floor = _percentiles(found[(lane_name, "none")][0])[0]
        for name in FILTERS:
            samples, results = found[(lane_name, name)]
            p50, p95 = _percentiles(samples)
            print(f"{dialect:10} {n:>7} {lane_name:8} {name:20} {p50:8.2f} {p95:8.2f} "
                  f"{p50 / floor:6.2f} {results / len(samples):7.1f}", flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, nargs="+", default=[100_000])
    parser.add_argument("--dialect", nargs="+", choices=("sqlite", "postgres"),
                        default=["sqlite", "postgres"])
    parser.add_argument("--pg-url", default=os.environ.get("WAGGLE_BENCH_PG_URL"))
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--keep", metavar="DIR", help="keep the built stores (SQLite files in "
                        "DIR, Postgres schemas filtered_N) and reuse them")
    args = parser.parse_args(argv)
    stop: Callable[[], None] | None = None
    pg_url = args.pg_url
    if "postgres" in args.dialect and not pg_url:
        pg_url, stop = embedded_postgres("waggle-bench-pg-")
    print(f"{'dialect':10} {'N':>7} {'lanes':8} {'filter':20} {'p50 ms':>8} {'p95 ms':>8} "
          f"{'p50 ×':>6} {'results':>7}")
    queries = latency._texts(0)[1][: args.queries]
    try:
        with tempfile.TemporaryDirectory() as tmp:
            data = Path(args.keep) if args.keep else Path(tmp)
            data.mkdir(parents=True, exist_ok=True)
            for dialect in args.dialect:
                for n in args.n:
                    schema = None
                    if dialect == "sqlite":
                        url = f"sqlite:///{data / f'filtered-{n}.db'}"
                    else:
                        url = pg_url
                        schema = (f"filtered_{n}" if args.keep
                                  else f"filtered_{uuid.uuid4().hex[:8]}")
                    store = ws.open_store(url, schema=schema, embedder=HashingEmbedder(384))
                    try:
                        t0 = time.perf_counter()
                        mind = store.mind("bench")
                        if latency._frames(store) != n:
                            mind = build(store, n)
                        print(f"# {dialect} {n}: built in {time.perf_counter() - t0:.0f} s",
                              flush=True)
                        report(dialect, n, measure(mind, queries))
                    finally:
                        if dialect == "postgres" and not args.keep:
                            with store.engine.connect().execution_options(
                                    isolation_level="AUTOCOMMIT") as conn:
                                conn.exec_driver_sql(f'DROP SCHEMA "{schema}" CASCADE')
                        store.close()
    finally:
        if stop is not None:
            stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
