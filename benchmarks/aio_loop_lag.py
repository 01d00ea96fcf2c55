"""Event-loop responsiveness while waggle_store.aio ingests: the loop's lag during a big batch.

    python benchmarks/aio_loop_lag.py                 # 5,000 items on SQLite, hashing embedder
    python benchmarks/aio_loop_lag.py --items 1000 --url postgresql+psycopg://... --schema bench

A ticker task asks to wake every ``--tick`` seconds; how late it actually wakes is the loop's
lag (what every other request of an async server would wait). It runs while a
``cognify_batch`` of ``--items`` memories goes through ``aio``, and, for comparison, while the
same batch runs directly on the loop with the sync API (what calling the sync store from async
code would do). Printed: the batch time, and the lag's max / p99 / median, in milliseconds.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
import uuid
import warnings
from pathlib import Path

from waggle_store import aio

PEOPLE = ["Sarah Chen", "Marcus Webb", "Priya Nair", "Elena Rossi", "David Kim", "Yuki Tanaka"]
PROJECTS = ["Project Apollo", "Project Hermes", "Project Zephyr", "Project Orion"]
VERBS = ["reviewed", "shipped", "postponed", "discussed", "approved", "tested"]


def corpus(n: int) -> list[str]:
    return [f"{PEOPLE[i % len(PEOPLE)]} {VERBS[i % len(VERBS)]} {PROJECTS[i % len(PROJECTS)]} "
            f"in meeting {i}, follow-up item {i * 7 % 101}" for i in range(n)]


async def ticker(tick: float, lags: list[float], stop: asyncio.Event) -> None:
    while not stop.is_set():
        asked = time.perf_counter()
        await asyncio.sleep(tick)
        lags.append(time.perf_counter() - asked - tick)


def report(label: str, seconds: float, lags: list[float], items: int) -> None:
    ms = sorted(x * 1000 for x in lags) or [0.0]
    p99 = ms[min(len(ms) - 1, int(len(ms) * 0.99))]
    print(f"{label:<28} batch {seconds:7.2f} s ({items / seconds:7.0f} items/s)   loop lag: "
          f"max {ms[-1]:8.1f} ms  p99 {p99:7.1f} ms  median {statistics.median(ms):6.2f} ms  "
          f"({len(ms)} ticks)")


async def run(url: str, schema: str | None, items: int, tick: float, workers: int) -> None:
    texts = corpus(items)
    async with aio.open_store(url, schema=schema, embedder="hashing",
                              max_workers=workers) as store:
        for label, direct in (("aio.cognify_batch", False), ("sync call on the loop", True)):
            mind = await store.mind(f"lag-{uuid.uuid4().hex[:8]}")
            lags: list[float] = []
            stop = asyncio.Event()
            task = asyncio.create_task(ticker(tick, lags, stop))
            await asyncio.sleep(tick * 2)  # the ticker is running before the batch starts
            started = time.perf_counter()
            if direct:
                result = mind.sync.cognify_batch(texts)  # blocks the loop: the baseline
            else:
                result = await mind.cognify_batch(texts)
            elapsed = time.perf_counter() - started
            stop.set()
            await task
            failed = len(result.failures)
            report(label + (f" ({failed} failed)" if failed else ""), elapsed, lags, items)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=5000)
    parser.add_argument("--tick", type=float, default=0.01, help="ticker period, seconds")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--url", default=None, help="default: a fresh SQLite file")
    parser.add_argument("--schema", default=None)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    with tempfile.TemporaryDirectory() as tmp:
        url = args.url or f"sqlite:///{Path(tmp) / 'lag.db'}"
        print(f"{args.items} items, tick {args.tick * 1000:.0f} ms, {args.workers} workers, {url}")
        asyncio.run(run(url, args.schema, args.items, args.tick, args.workers))


if __name__ == "__main__":
    main()
