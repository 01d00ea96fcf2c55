"""Ingest throughput: cognify_batch of N conversation turns with the hashing embedder.

    python benchmarks/ingest.py                      # 5,000 turns on SQLite and on Postgres
    python benchmarks/ingest.py --turns 1000 --only sqlite
    python benchmarks/ingest.py --turns 1000 --writers 2   # 2 processes, one mind each, same store
    WAGGLE_BENCH_PG_URL=postgresql+psycopg://... python benchmarks/ingest.py

Postgres comes from --pg-url / WAGGLE_BENCH_PG_URL, else an embedded PostgreSQL 18 + pgvector
started (and stopped) by this script. Each run uses a fresh SQLite file / Postgres schema.
With ``--writers N``, N processes ingest N turns each into their own mind of the same store at
the same time, and the rate is all their turns over the time from the first start to the last end.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import shutil
import statistics
import tempfile
import time
import uuid
import warnings
from pathlib import Path

import sqlalchemy as sa

import waggle_store as ws
from waggle_store.engine import WaggleStoreWarning
from waggle_store.testing import embedded_postgres

warnings.filterwarnings("ignore", category=WaggleStoreWarning)

PEOPLE = ["Sarah Chen", "Marcus Webb", "Priya Nair", "Elena Rossi", "David Kim", "Ana Souza",
          "Tom Becker", "Yuki Tanaka"]
PROJECTS = ["Project Apollo", "Project Hermes", "Project Zephyr", "Project Orion", "Project Vega"]
TECH = ["PostgreSQL", "SQLite", "Kubernetes", "TypeScript", "Python", "Redis", "React"]
VERBS = ["reviewed", "shipped", "postponed", "discussed", "approved", "rejected", "tested"]
THINGS = [
    "the launch checklist",
    "the latency budget",
    "the schema migration",
    "the onboarding flow",
    "the pricing page",
    "the incident report",
    "the quarterly roadmap",
    "the load test",
]


def turns(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    return [
        f"Turn {i}: {rng.choice(PEOPLE)} {rng.choice(VERBS)} {rng.choice(THINGS)} for "
        f"{rng.choice(PROJECTS)} using {rng.choice(TECH)}; {rng.choice(PEOPLE)} will follow up "
        f"on day {rng.randint(1, 28)}."
        for i in range(n)
    ]


def _write(
    url: str, schema: str | None, mind_name: str, texts: list[str], chunk: int
) -> dict[str, float]:
    warnings.filterwarnings("ignore", category=WaggleStoreWarning)  # again: spawned writers
    with ws.open_store(url, schema=schema, embedder="hashing") as store:
        mind = store.mind(mind_name)
        started = time.time()
        failures = 0
        for start in range(0, len(texts), chunk):
            result = mind.cognify_batch(texts[start : start + chunk])
            failures += len(result.failures)
        ended = time.time()
        frames = mind.frames.stats().total
        entities = sum(mind.knowledge.entity_type_counts().values())
    return {
        "started": started,
        "ended": ended,
        "frames": frames,
        "entities": entities,
        "failures": failures,
    }


def run(
    url: str, schema: str | None, texts: list[str], chunk: int, writers: int
) -> dict[str, float]:
    if writers == 1:
        parts = [_write(url, schema, "bench", texts, chunk)]
    else:
        ws.open_store(url, schema=schema, embedder="hashing").close()  # migrate once, up front
        with multiprocessing.get_context("spawn").Pool(writers) as pool:
            parts = pool.starmap(
                _write, [(url, schema, f"bench-{i}", texts, chunk) for i in range(writers)]
            )
    elapsed = max(p["ended"] for p in parts) - min(p["started"] for p in parts)
    return {
        "seconds": elapsed,
        "turns_per_s": writers * len(texts) / elapsed,
        "frames": sum(p["frames"] for p in parts),
        "entities": sum(p["entities"] for p in parts),
        "failures": sum(p["failures"] for p in parts),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--turns", type=int, default=5000)
    parser.add_argument("--chunk", type=int, default=5000, help="items per cognify_batch call")
    parser.add_argument("--only", choices=["sqlite", "postgres"])
    parser.add_argument("--pg-url", default=os.environ.get("WAGGLE_BENCH_PG_URL"))
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--writers", type=int, default=1, help="processes ingesting at once")
    args = parser.parse_args()
    texts = turns(args.turns)
    stop = None
    results: dict[str, list[dict[str, float]]] = {}
    try:
        if args.only in (None, "sqlite"):
            for _ in range(args.repeat):
                tmp = Path(tempfile.mkdtemp(prefix="waggle-bench-"))
                results.setdefault("sqlite", []).append(
                    run(f"sqlite:///{tmp / 'b.db'}", None, texts, args.chunk, args.writers)
                )
                shutil.rmtree(tmp, ignore_errors=True)
        if args.only in (None, "postgres"):
            url = args.pg_url
            if url is None:
                url, stop = embedded_postgres("waggle-bench-pg-")
            for _ in range(args.repeat):
                schema = "bench_" + uuid.uuid4().hex[:8]
                results.setdefault("postgres", []).append(
                    run(url, schema, texts, args.chunk, args.writers)
                )
                engine = sa.create_engine(url)
                with engine.begin() as conn:
                    conn.exec_driver_sql(f'DROP SCHEMA "{schema}" CASCADE')
                engine.dispose()
    finally:
        if stop is not None:
            stop()
    print(
        f"cognify_batch of {args.turns} turns x {args.writers} writer(s), hashing embedder "
        f"(384 dims), chunk {args.chunk}"
    )
    for dialect, runs in results.items():
        tps = [r["turns_per_s"] for r in runs]
        last = runs[-1]
        print(
            f"  {dialect:9s} {statistics.median(tps):8.1f} turns/s (median of {len(runs)}; "
            f"{last['seconds']:.1f} s; {int(last['frames'])} frames, "
            f"{int(last['entities'])} entities, "
            f"{int(last['failures'])} failures)"
        )


if __name__ == "__main__":
    main()
