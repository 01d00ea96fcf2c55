"""Peak memory of the two calls that walk a whole mind: ``cognify_batch`` and ``reconcile``
(neither may grow with the mind).

    python benchmarks/memory.py cognify --items 100000       # cognify_batch of 100,000 turns
    python benchmarks/memory.py reconcile --frames 1000000   # reconcile of 1,000,000 frames

SQLite, hashing embedder, a fresh file per run. Each step runs in its own process (run the
script once per size), so the baseline is the same interpreter with waggle_store imported and
the store open.

* ``cognify``: the turns of ``benchmarks/ingest.py`` (people, projects, tools: entities and
  relations to extract), built as a list before the measurement; then one
  ``mind.cognify_batch(turns)``.
* ``reconcile``: N frames with no vector (as after a bulk load or an embedder outage), inserted
  with raw ``executemany`` on the driver connection (the FTS5 trigger indexes them, as on any
  write); the store is closed, opened again with ``embedder="hashing"``, and one
  ``store.reconcile()`` embeds every frame.

Measured: the growth of the process's resident set size over the call (``psutil``, sampled every
20 ms by a thread; it counts SQLite's page cache and numpy's buffers too), with ``--trace`` also
Python's own allocations (``tracemalloc``), and for orientation the time. Nothing is asserted.
Bounded means the growth does not scale with N: run two sizes.
"""

from __future__ import annotations

import argparse
import random
import shutil
import tempfile
import threading
import time
import tracemalloc
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psutil

import waggle_store as ws
from waggle_store.engine import WaggleStoreWarning
from waggle_store.repositories.common import content_hash

warnings.filterwarnings("ignore", category=WaggleStoreWarning)

PEOPLE = ["Sarah Chen", "Marcus Webb", "Priya Nair", "Elena Rossi", "David Kim", "Ana Souza"]
PROJECTS = ["Project Apollo", "Project Hermes", "Project Zephyr", "Project Orion"]
TECH = ["PostgreSQL", "SQLite", "Kubernetes", "TypeScript", "Python", "Redis"]
VERBS = ["reviewed", "shipped", "postponed", "discussed", "approved", "tested"]
THINGS = ["the launch checklist", "the latency budget", "the schema migration",
          "the onboarding flow", "the incident report", "the quarterly roadmap"]
SESSION_SIZE = 500
INSERT_CHUNK = 20_000


def turn(rng: random.Random, i: int) -> str:
    return (f"Turn {i}: {rng.choice(PEOPLE)} {rng.choice(VERBS)} {rng.choice(THINGS)} for "
            f"{rng.choice(PROJECTS)} using {rng.choice(TECH)}; {rng.choice(PEOPLE)} will follow "
            f"up on day {rng.randint(1, 28)}.")


@contextmanager
def rss_peak(label: str, *, trace: bool = False) -> Iterator[None]:
    """Print the peak growth of the resident set over the block, and its time; with ``trace``
    also Python's own allocations (``tracemalloc``: peak over the block, and what the block
    left allocated), which RSS mixes with SQLite's page cache and the allocator's arenas."""
    if trace:
        tracemalloc.start()
    process = psutil.Process()
    base = peak = process.memory_info().rss
    stop = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not stop.is_set():
            peak = max(peak, process.memory_info().rss)
            time.sleep(0.02)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    began = time.perf_counter()
    try:
        yield
    finally:
        elapsed = time.perf_counter() - began
        stop.set()
        thread.join()
        peak = max(peak, process.memory_info().rss)
        print(f"  {label}: RSS peak growth {(peak - base) / 2**20:.1f} MB "
              f"(base {base / 2**20:.0f} MB), {elapsed:.1f} s", flush=True)
        if trace:
            left, traced_peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            print(f"  {label}: tracemalloc peak {traced_peak / 2**20:.1f} MB, "
                  f"left allocated {left / 2**20:.1f} MB (result included)", flush=True)


def bench_cognify(workdir: Path, items: int, trace: bool) -> None:
    rng = random.Random(7)
    texts = [turn(rng, i) for i in range(items)]
    with ws.open_store(f"sqlite:///{workdir / 'c.db'}", embedder="hashing") as store:
        mind = store.mind("bench")
        print(f"cognify_batch: {items:,} turns", flush=True)
        with rss_peak("cognify_batch", trace=trace):
            result = mind.cognify_batch(texts)
        stored = sum(1 for fid in result.frame_ids if fid is not None)
        print(f"  stored {stored:,}, failures {len(result.failures)}")


def _bulk_frames(url: str, frames: int) -> None:
    """``frames`` I-frames in one mind, no vector: raw executemany, a commit per chunk."""
    start = datetime(2025, 1, 1, tzinfo=UTC)
    rng = random.Random(7)
    with ws.open_store(url, embedder=None) as store:
        mind_id = store.mind("bench").id
        raw = store.engine.raw_connection()
        try:
            cur = raw.cursor()
            cur.executemany(
                "INSERT INTO waggle_sessions (mind_id, gop_id, kind, status, started_at) "
                "VALUES (?, ?, 'named', 'closed', ?)",
                [(mind_id, f"g{g}", (start + timedelta(hours=g)).isoformat(" "))
                 for g in range((frames + SESSION_SIZE - 1) // SESSION_SIZE)],
            )
            raw.commit()
            for lo in range(0, frames, INSERT_CHUNK):
                rows = []
                for n in range(lo, min(frames, lo + INSERT_CHUNK)):
                    text = turn(rng, n)
                    when = (start + timedelta(seconds=n)).isoformat(" ")
                    rows.append((mind_id, f"g{n // SESSION_SIZE}", n % SESSION_SIZE, text,
                                 content_hash(text), when, when))
                cur.executemany(
                    "INSERT INTO waggle_memory_frames (mind_id, frame_type, gop_id, t, content, "
                    "content_hash, importance, source, access_count, created_at, last_accessed) "
                    "VALUES (?, 'I', ?, ?, ?, ?, 'normal', 'user_stated', 0, ?, ?)",
                    rows,
                )
                raw.commit()
        finally:
            raw.close()


def bench_reconcile(workdir: Path, frames: int, trace: bool) -> None:
    url = f"sqlite:///{workdir / 'r.db'}"
    began = time.perf_counter()
    _bulk_frames(url, frames)
    print(f"reconcile: {frames:,} frames without a vector, inserted in "
          f"{time.perf_counter() - began:.0f} s", flush=True)
    with ws.open_store(url, embedder="hashing") as store:
        with rss_peak("reconcile", trace=trace):
            report = store.reconcile()
        print(f"  vectors_fixed {report.vectors_fixed:,}, fts_fixed {report.fts_fixed:,}, "
              f"orphans_removed {report.orphans_removed:,}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("step", choices=("cognify", "reconcile"))
    parser.add_argument("--items", type=int, default=100_000, help="cognify: turns")
    parser.add_argument("--frames", type=int, default=1_000_000, help="reconcile: frames")
    parser.add_argument("--trace", action="store_true",
                        help="also tracemalloc (slows the call several times)")
    parser.add_argument("--workdir", help="where the SQLite file goes (default: a temp dir)")
    args = parser.parse_args()
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="waggle-memory-"))
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        if args.step == "cognify":
            bench_cognify(workdir, args.items, args.trace)
        else:
            bench_reconcile(workdir, args.frames, args.trace)
    finally:
        if not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
