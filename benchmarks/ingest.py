"""Ingest throughput: cognify_batch of N conversation turns with the hashing embedder.

    python benchmarks/ingest.py                      # 5,000 turns on SQLite and on Postgres
    python benchmarks/ingest.py --turns 1000 --only sqlite
    WAGGLE_BENCH_PG_URL=postgresql+psycopg://... python benchmarks/ingest.py

Postgres comes from --pg-url / WAGGLE_BENCH_PG_URL, else an embedded PostgreSQL 18 + pgvector
started (and stopped) by this script. Each run uses a fresh SQLite file / Postgres schema.
"""

from __future__ import annotations

import argparse
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
THINGS = ["the launch checklist", "the latency budget", "the schema migration", "the onboarding flow",
          "the pricing page", "the incident report", "the quarterly roadmap", "the load test"]


def turns(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        out.append(
            f"Turn {i}: {rng.choice(PEOPLE)} {rng.choice(VERBS)} {rng.choice(THINGS)} for "
            f"{rng.choice(PROJECTS)} using {rng.choice(TECH)}; {rng.choice(PEOPLE)} will follow up "
            f"on day {rng.randint(1, 28)}."
        )
    return out


def run(url: str, schema: str | None, texts: list[str], chunk: int) -> dict[str, float]:
    with ws.open_store(url, schema=schema, embedder="hashing") as store:
        mind = store.mind("bench")
        started = time.perf_counter()
        failures = 0
        for start in range(0, len(texts), chunk):
            result = mind.cognify_batch(texts[start : start + chunk])
            failures += len(result.failures)
        elapsed = time.perf_counter() - started
        frames = mind.frames.stats().total
        entities = sum(mind.knowledge.entity_type_counts().values())
    return {"seconds": elapsed, "turns_per_s": len(texts) / elapsed, "frames": frames,
            "entities": entities, "failures": failures}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=5000)
    parser.add_argument("--chunk", type=int, default=5000, help="items per cognify_batch call")
    parser.add_argument("--only", choices=["sqlite", "postgres"])
    parser.add_argument("--pg-url", default=os.environ.get("WAGGLE_BENCH_PG_URL"))
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    texts = turns(args.turns)
    stop = None
    results: dict[str, list[dict[str, float]]] = {}
    try:
        if args.only in (None, "sqlite"):
            for _ in range(args.repeat):
                tmp = Path(tempfile.mkdtemp(prefix="waggle-bench-"))
                results.setdefault("sqlite", []).append(run(f"sqlite:///{tmp / 'b.db'}", None, texts, args.chunk))
                shutil.rmtree(tmp, ignore_errors=True)
        if args.only in (None, "postgres"):
            url = args.pg_url
            if url is None:
                url, stop = embedded_postgres("waggle-bench-pg-")
            for _ in range(args.repeat):
                schema = "bench_" + uuid.uuid4().hex[:8]
                results.setdefault("postgres", []).append(run(url, schema, texts, args.chunk))
                engine = sa.create_engine(url)
                with engine.begin() as conn:
                    conn.exec_driver_sql(f'DROP SCHEMA "{schema}" CASCADE')
                engine.dispose()
    finally:
        if stop is not None:
            stop()
    print(f"cognify_batch of {args.turns} turns, hashing embedder (384 dims), chunk {args.chunk}")
    for dialect, runs in results.items():
        tps = [r["turns_per_s"] for r in runs]
        last = runs[-1]
        print(f"  {dialect:9s} {statistics.median(tps):8.1f} turns/s (median of {len(runs)}; "
              f"{last['seconds']:.1f} s; {int(last['frames'])} frames, {int(last['entities'])} entities, "
              f"{int(last['failures'])} failures)")


if __name__ == "__main__":
    main()
