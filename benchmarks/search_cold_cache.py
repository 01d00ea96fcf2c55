"""A search with warm and with cold CPU caches, beside its lanes' raw SQL.

    python benchmarks/search_cold_cache.py --keep DIR [--n 10000] [--dialect postgres]
                                           [--pg-url URL] [--queries 300] [--sweep-mb 64]

Opens a store that ``search_latency.py --keep DIR`` built (same ``--n``, ``--dialect`` and
``--pg-url``; it does not build one), and runs each query four ways, each timed once:

* library warm: ``mind.search(q, limit=20)`` right after the same call;
* library cold: the same, right after sweeping a buffer of ``--sweep-mb`` MB (read and written),
  which evicts the CPU caches this process and the database server's processes had filled;
* raw warm / raw cold: the query's lane statements replayed on the driver
  (``search_latency.py``'s raw side, ``latency_raw.py``), likewise.

Why: ``search_latency.py`` alternates the library with the raw side, and each runs after the
other's work; the library's Python, replayed in a tight loop, takes a fraction of what it takes
there. This tells how much of a search's cost is its caches: CPU time is this thread's (the
client's), wall time includes the server's statements, whose caches the sweep empties too.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout, uninstalled
sys.path.insert(0, str(Path(__file__).resolve().parent))

import latency_raw  # the latency benchmark's raw side
import search_latency  # the latency benchmark's stores and queries


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keep", required=True, metavar="DIR",
                        help="the --keep DIR of search_latency.py (SQLite files live there)")
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--dialect", choices=("sqlite", "postgres"), default="postgres")
    parser.add_argument("--pg-url", help="the server search_latency.py built the store on")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--sweep-mb", type=int, default=64)
    args = parser.parse_args(argv)
    if args.dialect == "postgres":
        if not args.pg_url:
            parser.error("--dialect postgres needs --pg-url")
        url, schema = args.pg_url, f"bench_{args.n}"
    else:
        url, schema = f"sqlite:///{Path(args.keep) / f'bench-{args.n}.db'}", None
    store, mind, queries = search_latency.open_kept(url, schema, args.n, args.queries)
    try:
        raw = latency_raw._raw_runner(store, latency_raw._lane_statements(store, mind, queries))
        sweep = np.ones(args.sweep_mb * 1024 * 1024 // 8)
        times: dict[str, list[tuple[float, float]]] = {}

        def timed(key: str, call: Callable[[], object]) -> None:
            cpu, wall = time.thread_time(), time.perf_counter()
            call()
            times.setdefault(key, []).append((time.perf_counter() - wall,
                                              time.thread_time() - cpu))

        for query in queries:
            sides: dict[str, Callable[[], object]] = {
                "library": partial(mind.search, query, limit=search_latency.LIMIT),
                "raw": partial(raw, query),
            }
            for side, call in sides.items():
                call()
                timed(f"{side} warm", call)
                sweep.sum()
                sweep *= 1.0
                timed(f"{side} cold", call)
        print(f"{args.dialect} {args.n}: {len(queries)} queries, sweep {args.sweep_mb} MB "
              "(p50 ms)")
        for key, samples in times.items():
            wall = statistics.median(s[0] for s in samples) * 1000
            cpu = statistics.median(s[1] for s in samples) * 1000
            print(f"  {key:13} wall {wall:7.3f}   client CPU {cpu:7.3f}")
        for state in ("warm", "cold"):
            lib = statistics.median(s[0] for s in times[f"library {state}"])
            floor = statistics.median(s[0] for s in times[f"raw {state}"])
            print(f"  library/raw {state}: {lib / floor:.2f}")
    finally:
        store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
