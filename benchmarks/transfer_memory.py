"""Peak memory of exporting and importing a large mind (constant at any size).

    python benchmarks/transfer_memory.py                     # 100,000 frames on SQLite
    python benchmarks/transfer_memory.py --frames 20000 --only postgres
    WAGGLE_BENCH_PG_URL=postgresql+psycopg://... \
        python benchmarks/transfer_memory.py --only postgres

Builds a mind of N frames (I-frames each followed by P-frames on it, every 50th a B-frame, in
sessions of 500) with an entity per 20 frames, relations and mentions, written with Core bulk
inserts (building it through cognify would take an hour and measure nothing of interest here).
Then it exports the mind to a JSONL file and imports that file into an empty mind of a second
store, measuring for each step:

* the peak growth of Python allocations during the step (``tracemalloc``), and
* the peak growth of the process's resident set size over the step (``psutil``, sampled every
  20 ms by a thread), which also counts the drivers' own buffers.

Nothing is asserted: it prints the numbers (the issue's bar is 200 MB of growth). Memory is
not time; the timings printed are for orientation only.
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import shutil
import tempfile
import threading
import time
import tracemalloc
import uuid
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

import psutil
import sqlalchemy as sa

import waggle_store as ws
from waggle_store.engine import WaggleStoreWarning
from waggle_store.models import (
    EntityMentionRow,
    EntityRow,
    FrameEmbeddingRow,
    FrameRow,
    RelationRow,
    SessionRow,
)
from waggle_store.repositories.common import content_hash
from waggle_store.testing import embedded_postgres

warnings.filterwarnings("ignore", category=WaggleStoreWarning)

WORDS = [
    "apollo",
    "hermes",
    "launch",
    "budget",
    "review",
    "postgres",
    "sqlite",
    "latency",
    "design",
    "customer",
    "meeting",
    "roadmap",
    "release",
    "checklist",
    "migration",
    "incident",
    "retro",
    "pricing",
    "contract",
    "hiring",
]
SESSION_SIZE = 500
CHUNK = 2000


class Peak:
    """RSS sampled in a thread while a step runs; tracemalloc for Python allocations."""

    def __init__(self) -> None:
        self.process = psutil.Process()
        self.base = self.process.memory_info().rss
        self.peak = self.base
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self.process.memory_info().rss)
            time.sleep(0.02)

    @contextmanager
    def measure(self, label: str) -> Iterator[None]:
        tracemalloc.start()
        start_traced = tracemalloc.get_traced_memory()[0]
        self.base = self.peak = self.process.memory_info().rss
        self._stop.clear()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        began = time.perf_counter()
        try:
            yield
        finally:
            elapsed = time.perf_counter() - began
            self._stop.set()
            self._thread.join()
            self.peak = max(self.peak, self.process.memory_info().rss)
            _, traced_peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            print(
                f"  {label:<8} tracemalloc peak growth "
                f"{(traced_peak - start_traced) / 2**20:7.1f} MB   "
                f"RSS peak growth {(self.peak - self.base) / 2**20:7.1f} MB   ({elapsed:.1f} s)"
            )


def _text(rng: random.Random, n: int) -> str:
    return f"memory {n}: " + " ".join(rng.choice(WORDS) for _ in range(30))


def build(store: ws.Store, frames: int) -> None:
    """A mind of ``frames`` frames, written with Core bulk inserts."""
    rng = random.Random(7)
    mind = store.mind("big")
    start = datetime(2025, 1, 1, tzinfo=UTC)
    made = 0
    with store.write() as session:
        sessions = [
            {
                "mind_id": mind.id,
                "gop_id": f"g{i}",
                "kind": "named",
                "status": "closed",
                "started_at": start + timedelta(hours=i),
                "project_id": None,
            }
            for i in range((frames + SESSION_SIZE - 1) // SESSION_SIZE)
        ]
        session.execute(sa.insert(SessionRow), sessions)
    while made < frames:
        with store.write() as session:
            rows: list[dict[str, Any]] = [
                {
                    "mind_id": mind.id,
                    "frame_type": "I",
                    "gop_id": f"g{n // SESSION_SIZE}",
                    "t": n % SESSION_SIZE,
                    "base_frame_id": None,
                    "content": _text(rng, n),
                    "importance": "normal",
                    "source": "user_stated",
                    "access_count": n % 7,
                    "created_at": start + timedelta(minutes=n),
                    "last_accessed": start + timedelta(minutes=n + 5),
                }
                for n in range(made, min(frames, made + CHUNK))
            ]
            for row in rows:
                row["content_hash"] = content_hash(row["content"])
            table = cast(sa.Table, FrameRow.__table__)
            ids = list(
                session.scalars(
                    sa.insert(table).returning(table.c.id, sort_by_parameter_order=True), rows
                )
            )
            # Every frame after a session's first is a P-frame on it; every 50th a B-frame.
            first: dict[str, int] = {}
            updates = []
            for fid, row in zip(ids, rows, strict=True):
                head = first.setdefault(row["gop_id"], fid)
                if fid != head:
                    kind = "B" if row["t"] % 50 == 0 else "P"
                    content = (
                        f'{{"description":"link {row["t"]}","references":[{head},{fid - 1}]}}'
                        if kind == "B"
                        else row["content"]
                    )
                    updates.append(
                        {
                            "b_id": fid,
                            "b_type": kind,
                            "b_base": head,
                            "b_content": content,
                            "b_hash": content_hash(content),
                        }
                    )
            if updates:
                session.execute(
                    sa.update(table)
                    .where(table.c.id == sa.bindparam("b_id"))
                    .values(
                        frame_type=sa.bindparam("b_type"),
                        base_frame_id=sa.bindparam("b_base"),
                        content=sa.bindparam("b_content"),
                        content_hash=sa.bindparam("b_hash"),
                    ),
                    updates,
                )
            session.execute(
                sa.insert(FrameEmbeddingRow),
                [
                    {
                        "frame_id": fid,
                        "content_hash": content_hash(row["content"]),
                        "status": "pending",
                    }
                    for fid, row in zip(ids, rows, strict=True)
                ],
            )
            entities = list(
                session.scalars(
                    sa.insert(cast(sa.Table, EntityRow.__table__)).returning(
                        EntityRow.__table__.c.id, sort_by_parameter_order=True
                    ),
                    [
                        {
                            "mind_id": mind.id,
                            "entity_type": "concept",
                            "name": f"Topic {made + i}",
                            "name_key": f"topic {made + i}",
                            "properties": {"n": i},
                            "valid_from": start,
                            "recorded_at": start,
                        }
                        for i in range(0, len(ids), 20)
                    ],
                )
            )
            session.execute(
                sa.insert(RelationRow),
                [
                    {
                        "mind_id": mind.id,
                        "source_id": a,
                        "target_id": b,
                        "relation_type": "related_to",
                        "confidence": 0.5,
                        "properties": {},
                        "valid_from": start,
                        "recorded_at": start,
                    }
                    for a, b in itertools.pairwise(entities)
                ],
            )
            session.execute(
                sa.insert(EntityMentionRow),
                [{"entity_id": entities[i // 20], "frame_id": fid} for i, fid in enumerate(ids)],
            )
        made += len(ids)


def run(label: str, open_store: Callable[[str], ws.Store], frames: int, workdir: Path) -> None:
    print(f"{label}: {frames:,} frames")
    source, target = open_store("src"), open_store("dst")
    try:
        began = time.perf_counter()
        build(source, frames)
        print(f"  built in {time.perf_counter() - began:.1f} s")
        path = workdir / f"{label}.jsonl"
        peak = Peak()
        with peak.measure("export"):
            report = source.export_mind("big", path)
        print(
            f"  export: {report.records:,} lines, {path.stat().st_size / 2**20:.1f} MB file, "
            f"{report.frames:,} frames, {report.entities:,} entities, {report.mentions:,} mentions"
        )
        with peak.measure("import"):
            imported = target.import_mind(path)
        print(
            f"  import: {imported.frames_imported:,} frames, "
            f"{imported.entities_imported:,} entities, "
            f"{imported.relations_imported:,} relations, {imported.mentions_imported:,} mentions, "
            f"problems={imported.problems}"
        )
    finally:
        source.close()
        target.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=100_000)
    parser.add_argument("--only", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--pg-url", default=os.environ.get("WAGGLE_BENCH_PG_URL"))
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="waggle-transfer-"))
    try:
        if args.only == "sqlite":
            run(
                "sqlite",
                lambda name: ws.open_store(f"sqlite:///{workdir / name}.db", embedder=None),
                args.frames,
                workdir,
            )
            return
        url, stop = (args.pg_url, None) if args.pg_url else embedded_postgres()
        schemas: list[str] = []

        def pg(name: str) -> ws.Store:
            schemas.append(f"bench_{name}_{uuid.uuid4().hex[:8]}")
            return ws.open_store(url, schema=schemas[-1], embedder=None)

        try:
            run("postgres", pg, args.frames, workdir)
        finally:
            engine = sa.create_engine(url)
            with engine.begin() as conn:
                for schema in schemas:
                    conn.exec_driver_sql(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
            engine.dispose()
            if stop is not None:
                stop()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
