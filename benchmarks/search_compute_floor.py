"""How much of a Postgres search is its ranking: the raw lanes, plus only the library's ranking.

    python benchmarks/search_compute_floor.py --keep DIR --pg-url URL [--n 10000] [--queries 300]

Opens the Postgres store that ``search_latency.py --keep DIR --pg-url URL`` built (same ``--n``;
it does not build one) and times each query three ways:

* library: ``mind.search(q, limit=20)``;
* raw: the query's lane statements replayed on the driver (``search_latency.py``'s raw side);
* compute: the same statements, sent the same way on two connections held open (no pool, no
  statement built: the recorded text and arguments), plus only what a hybrid search must compute
  from their rows, with the library's own functions: the plan (the query's terms and dates), the
  query's embedding, the lanes' hits, the vector distances settled, the confidences, the fusion,
  and the page's ranking with its explain (``explain.Ranking``). Its page is checked equal to the
  library's.

Library and raw alternate per query, as in ``search_latency.py``, and so do compute and raw (a
raw run of its own): two ratios from one run. What compute/raw says: the share of a search that
no connection handling or statement building could remove — what the ranking itself costs on
this machine, beside the lanes' SQL.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout, uninstalled
sys.path.insert(0, str(Path(__file__).resolve().parent))

import search_latency  # the latency benchmark's stores, queries and raw side

import waggle_store as ws
from waggle_store.config import StoreConfig
from waggle_store.dialects import postgres_maint
from waggle_store.dialects.common import frame_hits
from waggle_store.dialects.postgres_engine import create_postgres_engine
from waggle_store.records import SearchResult
from waggle_store.search.engine import settled
from waggle_store.search.explain import Ranking
from waggle_store.search.fusion import LANE_CONFIDENCE, Fusion
from waggle_store.search.plan import plan_search
from waggle_store.timeutil import utcnow


def _compute_runner(store: ws.Store, mind: ws.Mind, schema: str,
                    statements: dict[str, list[Any]]) -> Callable[[str], list[SearchResult]]:
    """The compute side (see the module): two connections of an engine of its own (the store's
    pool keeps its connections for the library's searches), set up as the raw side's."""
    engine = create_postgres_engine(store.engine.url, StoreConfig.from_env(None, schema))
    conns = []
    for _ in range(2):
        conn: Any = engine.raw_connection()
        postgres_maint.dumps_binary_vectors(conn.driver_connection)
        conn.driver_connection.autocommit = True
        conns.append(conn)
    keyword_conn, vector_conn = (c.driver_connection for c in conns)
    embedder = store.embedder
    assert embedder is not None

    class _Executor:  # what frame_hits reads of a connection: its dialect
        dialect = store.engine.dialect

    executor: Any = _Executor()

    def run(query: str) -> list[SearchResult]:
        plan = plan_search(mind.id, query, search_latency.LIMIT, None, "balanced", None, None,
                           None, None)
        embedder.embed_query(query)
        ranking = Ranking(profile=plan.profile, now=utcnow(), query=query, keyword=True,
                          terms=plan.terms, periods=plan.periods)
        steps = statements[query]
        vector = next(step[1] for step in steps if step[0] in ("beside", "beside-first"))
        keyword = next(step for step in steps if step[0] not in ("beside", "beside-first"))
        pipeline = vector_conn.pipeline()
        pipeline.__enter__()
        vector_cur = vector_conn.cursor()
        vector_cur.execute(*vector)
        keyword_cur = keyword_conn.cursor()
        with keyword_conn.pipeline():
            keyword_cur.execute(*keyword)
        ran = {"keyword": frame_hits(executor, keyword_cur.fetchall())}
        ranking.take(ran["keyword"])
        pipeline.__exit__(None, None, None)
        rows = vector_cur.fetchall()
        ran["vector"] = settled(frame_hits(executor, [r for r in rows if r[-2]]))
        ranking.take(ran["vector"])
        keyword_cur.close()
        vector_cur.close()
        fusion = Fusion({lane: [h.frame_id for h in hits] for lane, hits in ran.items()},
                        weights={lane: LANE_CONFIDENCE[lane]([h.score for h in hits])
                                 for lane, hits in ran.items()})
        return ranking.results(ran=ran, fusion=fusion, distances={},
                               limit=search_latency.LIMIT, keyword_backend="postgresql",
                               degraded=[])

    return run


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keep", required=True, metavar="DIR",
                        help="the --keep DIR of search_latency.py")
    parser.add_argument("--pg-url", required=True,
                        help="the server search_latency.py built the store on")
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args(argv)
    schema = f"bench_{args.n}"
    store, mind, queries = search_latency.open_kept(args.pg_url, schema, args.n, args.queries)
    try:
        statements = search_latency._lane_statements(store, mind, queries)
        if not all(any(step[0] in ("beside", "beside-first") for step in statements[q])
                   for q in queries):
            raise SystemExit("the library did not send the vector lane beside the keyword lane")
        raw = search_latency._raw_runner(store, statements)
        compute = _compute_runner(store, mind, schema, statements)
        for query in queries[:20]:
            raw(query)
            page = [r.frame.id for r in compute(query)]
            if page != [r.frame.id for r in mind.search(query, limit=search_latency.LIMIT)]:
                raise SystemExit(f"compute's page differs from the library's for {query!r}")
        times: dict[str, list[float]] = {"library": [], "raw (library)": [], "compute": [],
                                         "raw (compute)": []}
        for i, query in enumerate(queries):
            pairs: list[list[tuple[str, Callable[[], object]]]] = [
                [("library", lambda q=query: mind.search(q, limit=search_latency.LIMIT)),
                 ("raw (library)", lambda q=query: raw(q))],
                [("compute", lambda q=query: compute(q)),
                 ("raw (compute)", lambda q=query: raw(q))],
            ]
            if i % 2:  # who goes first alternates, as in search_latency.py
                for pair in pairs:
                    pair.reverse()
            if i % 4 >= 2:
                pairs.reverse()
            for pair in pairs:
                for key, call in pair:
                    t0 = time.perf_counter()
                    call()
                    times[key].append(time.perf_counter() - t0)
        p50 = {key: statistics.median(samples) * 1000 for key, samples in times.items()}
        print(f"postgres {args.n}: {len(queries)} queries (p50 ms)")
        print(f"  library {p50['library']:.3f} / raw {p50['raw (library)']:.3f} = "
              f"{p50['library'] / p50['raw (library)']:.2f}")
        print(f"  compute {p50['compute']:.3f} / raw {p50['raw (compute)']:.3f} = "
              f"{p50['compute'] / p50['raw (compute)']:.2f}")
    finally:
        store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
