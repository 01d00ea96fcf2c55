"""8 processes × 50 iterations of ensure_active() + create_i + create_p on one store.

Proves, on one SQLite file and on Postgres: one active auto session per (mind, project), no
duplicate and no missing ``t`` per session, no error, no lost frame.
"""

from __future__ import annotations

import multiprocessing
import traceback
from collections import defaultdict
from typing import Any

import waggle_store as ws

PROCESSES = 8
ITERATIONS = 50
FRAMES_PER_ITERATION = 2
PROJECTS = (None, "alpha")  # the NULL project exercises the coalesce() of the unique index


def _worker(url: str, schema: str | None, index: int, barrier: Any, results: Any) -> None:
    """One writer process: its own store, started at the same moment as the others."""
    try:
        store = ws.open_store(url, schema=schema, embedder=None, upgrade=False)
        try:
            mind = store.mind("shared")
            project = PROJECTS[index % len(PROJECTS)]
            barrier.wait(timeout=120)
            for n in range(ITERATIONS):
                session = mind.sessions.ensure_active(project)
                i = mind.frames.create_i(session.gop_id, f"worker {index} iteration {n} keyframe")
                mind.frames.create_p(session.gop_id, f"worker {index} iteration {n} delta", i.id)
        finally:
            store.close()
        results.put((index, None))
    except BaseException:  # noqa: BLE001 - report everything to the parent; the test fails on any of it
        results.put((index, traceback.format_exc()))


def test_concurrent_writers(target: Any, store_factory: Any) -> None:
    store = store_factory(embedder=None)  # runs the migrations once, before the workers start
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(PROCESSES)
    results = ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(target.url, target.schema, k, barrier, results))
             for k in range(PROCESSES)]
    for proc in procs:
        proc.start()
    outcomes = [results.get(timeout=600) for _ in procs]
    for proc in procs:
        proc.join(timeout=60)
    errors = [err for _, err in outcomes if err]
    assert errors == [], "\n".join(errors)
    assert all(proc.exitcode == 0 for proc in procs)

    mind = store.mind("shared")
    for project in PROJECTS:
        active = [s for s in mind.sessions.list(status="active")
                  if s.project_id == project]
        assert len(active) == 1, f"project {project!r}: {len(active)} active sessions"
    total = PROCESSES * ITERATIONS * FRAMES_PER_ITERATION
    assert mind.frames.stats().total == total
    frames = mind.frames.recent(total + 10)
    assert len(frames) == total
    assert len({f.content for f in frames}) == total
    by_session: dict[str, list[int]] = defaultdict(list)
    for frame in frames:
        by_session[frame.gop_id].append(frame.t)
    assert len(by_session) == len(PROJECTS)
    for gop_id, ts in by_session.items():
        assert sorted(ts) == list(range(len(ts))), f"{gop_id}: t is not gapless and unique"
    for frame in frames:  # every P-frame sits on an I-frame of its own session
        if frame.frame_type == "P":
            base = mind.frames.get(frame.base_frame_id)
            assert base is not None
            assert base.frame_type == "I"
            assert base.gop_id == frame.gop_id
