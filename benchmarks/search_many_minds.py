"""Postgres searches of many minds in turn: the KNN's mind ids written in, bound, or both.

    python benchmarks/search_many_minds.py --pg-url URL [--minds 20 110 200] [--frames 200]
                                           [--rounds 12] [--schema many_minds]

Builds (once: the schema is kept) 200 minds of ``--frames`` frames each (``search_latency.py``'s
texts, hashing embedder, 384 dims) in one store, opens it three times — three engines, so three
pools whose connections keep their own prepared statements — each with another room for the
vector lane's KNN texts that write their mind ids in (:class:`KnnTexts`):

* default: the first ``WRITTEN_IN_KNN`` (32) texts written in, the minds after them bound;
* all: every mind's text written in (no bound);
* bound: none written in (one text for every mind).

Then, for each ``--minds`` M, it searches minds 0..M-1 in turn (``limit=20``), ``--rounds``
times, each search made by the three stores one after the other (the order rotating), and
reports the p50 of the second half of the rounds (the first half prepares the statements: psycopg
prepares one at its fifth run on a connection) and how many statements each pool's connections
hold prepared. psycopg keeps 100 a connection (``prepared_max``), deallocating the oldest: with
more minds than that searched in turn, "all" prepares and deallocates a KNN at nearly every
search.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout, uninstalled
sys.path.insert(0, str(Path(__file__).resolve().parent))

import search_latency  # the latency benchmark's texts, queries and embedder
from sqlalchemy import select

import waggle_store as ws
from waggle_store.dialects.postgres import WRITTEN_IN_KNN, KnnTexts
from waggle_store.models import FrameRow, SessionRow
from waggle_store.pipeline.embed import embed_frames

#: The minds built (the most ``--minds`` may ask for).
BUILT = 200
#: Each variant's room for written-in KNN texts.
ROOMS = {"default": WRITTEN_IN_KNN, "all": 10**9, "bound": 0}


def build(store: ws.Store, frames: int) -> None:
    texts, _ = search_latency._texts(BUILT * frames)
    base = time.time() - len(texts)
    for m in range(BUILT):
        mind = store.mind(f"m{m}")
        with store.write() as s:
            s.add(SessionRow(mind_id=mind.id, gop_id="g0", kind="named"))
            s.flush()
            rows = [search_latency.frame_row(mind.id, "g0", i, texts[m * frames + i],
                                             base + m * frames + i) for i in range(frames)]
            s.execute(FrameRow.__table__.insert(), rows)
            ids = list(s.scalars(select(FrameRow.id).where(FrameRow.mind_id == mind.id)))
        embed_frames(store.context, ids, batch_size=2000)
    search_latency.vacuum_analyze(store)


def _prepared(store: ws.Store) -> list[int]:
    """How many statements each pooled connection of ``store`` holds prepared (psycopg's count)."""
    pool: Any = store.engine.pool
    return sorted(len(c.driver_connection._prepared._names) for c in pool._pool.queue)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pg-url", required=True)
    parser.add_argument("--minds", type=int, nargs="+", default=[20, 110, 200])
    parser.add_argument("--frames", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--schema", default="many_minds")
    args = parser.parse_args(argv)
    if max(args.minds) > BUILT:
        parser.error(f"at most {BUILT} minds")
    embedder = search_latency._embedder("hashing")
    stores = {name: ws.open_store(args.pg_url, schema=args.schema, embedder=embedder)
              for name in ROOMS}
    try:
        first = stores["default"]
        if search_latency._frames(first) != BUILT * args.frames:
            if search_latency._frames(first):
                raise SystemExit(f"schema {args.schema} holds another store; drop it")
            t0 = time.perf_counter()
            build(first, args.frames)
            print(f"# built {BUILT} minds x {args.frames} frames in "
                  f"{time.perf_counter() - t0:.0f} s", flush=True)
        for name, room in ROOMS.items():
            stores[name].adapter.knn_texts = KnnTexts(room)  # type: ignore[attr-defined]
        queries = search_latency._texts(0)[1]
        names = list(ROOMS)
        print(f"{'minds':>5} " + " ".join(f"{name + ' p50':>12} {'prepared':>10}"
                                          for name in names))
        for count in args.minds:
            minds = {name: [store.mind(f"m{i}") for i in range(count)]
                     for name, store in stores.items()}
            times: dict[str, list[float]] = {name: [] for name in names}
            for r in range(args.rounds):
                for i in range(count):
                    turn = r * count + i
                    query = queries[turn % len(queries)]
                    for name in names[turn % 3:] + names[:turn % 3]:
                        t0 = time.perf_counter()
                        minds[name][i].search(query, limit=search_latency.LIMIT)
                        if r >= args.rounds // 2:
                            times[name].append(time.perf_counter() - t0)
            print(f"{count:>5} " + " ".join(
                f"{statistics.median(times[name]) * 1000:9.2f} ms "
                f"{'/'.join(map(str, _prepared(stores[name]))):>10}" for name in names),
                flush=True)
    finally:
        for store in stores.values():
            store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
