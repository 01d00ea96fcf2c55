"""What a bound store (``open_store(bound_mind=...)``) costs on PostgreSQL: row-level security
evaluated on every row read or written, plus ``set_config`` at each transaction's start.

    python benchmarks/bound_mind_cost.py --pg-url URL [--frames 2000] [--searches 300]
                                         [--writes 150]

``URL`` names a superuser (it creates a throwaway schema and a login role, and drops both at
the end). The owner migrates, creates the vector table and grants the runtime role
(``migrate.grant_runtime``); ``--frames`` frames are bulk-loaded into two minds, half each
(``search_latency.py``'s texts, hashing embedder, 384 dims), then vacuumed and analyzed. Three
variants, in the same run, interleaved in rotating order:

* no-rls: an unbound store as the superuser, which bypasses row security (the floor: what a
  ``BYPASSRLS`` role, or a store before migration 0011, costs);
* unbound: ``open_store(url, upgrade=False)`` as the runtime role: the policies apply and run
  their "no mind set" branch;
* bound: ``open_store(url, upgrade=False, bound_mind="tenant")`` as the runtime role.

Reported: the p50 of a search (``limit=20``, both lanes) and of a ``cognify`` for each, after
the first half of the rounds (psycopg prepares a statement at its fifth run), and the ratios to
no-rls and bound / unbound.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import cast

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout, uninstalled
sys.path.insert(0, str(Path(__file__).resolve().parent))

import search_latency  # the latency benchmark's texts, row builder, vacuum and embedder
import sqlalchemy as sa
from sqlalchemy import select

import waggle_store as ws
from waggle_store import migrate
from waggle_store.models import FrameRow, SessionRow
from waggle_store.pipeline.embed import embed_frames

MINDS = ("tenant", "other")


def _load(store: ws.Store, frames: int) -> None:
    texts, _ = search_latency._texts(frames)
    half = frames // len(MINDS)
    base = time.time() - frames
    for m, name in enumerate(MINDS):
        mind = store.mind(name)
        with store.write() as s:
            s.add(SessionRow(mind_id=mind.id, gop_id="g0", kind="named"))
            s.flush()
            s.execute(cast(sa.Table, FrameRow.__table__).insert(), [
                search_latency.frame_row(mind.id, "g0", i, texts[m * half + i],
                                         base + m * half + i) for i in range(half)])
            ids = list(s.scalars(select(FrameRow.id).where(FrameRow.mind_id == mind.id)))
        embed_frames(store.context, ids, batch_size=2000)
    search_latency.vacuum_analyze(store)


def _searching(mind: ws.Mind, queries: Sequence[str]) -> Callable[[int], object]:
    """Round r's search on ``mind``: the queries in turn."""
    return lambda r: mind.search(queries[r % len(queries)], limit=search_latency.LIMIT)


def _cognifying(mind: ws.Mind, name: str) -> Callable[[int], object]:
    """Round r's write on ``mind``: a note naming the mind's side and the round."""
    return lambda r: mind.cognify(f"{name} note {r}: Alice met Bob in Paris about topic {r % 13}")


def _p50s(calls: dict[str, Callable[[int], object]], rounds: int) -> dict[str, float]:
    """p50 seconds of each call over the second half of ``rounds``, interleaved, order rotating."""
    names = list(calls)
    times: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            t0 = time.perf_counter()
            calls[name](r)
            if r >= rounds // 2:
                times[name].append(time.perf_counter() - t0)
    return {name: statistics.median(t) for name, t in times.items()}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pg-url", required=True)
    parser.add_argument("--frames", type=int, default=2000)
    parser.add_argument("--searches", type=int, default=300)
    parser.add_argument("--writes", type=int, default=150)
    args = parser.parse_args(argv)
    schema, role = f"bound_cost_{uuid.uuid4().hex[:8]}", f"bound_cost_{uuid.uuid4().hex[:8]}"
    password = uuid.uuid4().hex
    admin = sa.create_engine(args.pg_url)
    with admin.begin() as conn:
        conn.exec_driver_sql(f"CREATE ROLE {role} LOGIN NOSUPERUSER NOBYPASSRLS "
                             f"PASSWORD '{password}'")
    embedder = search_latency._embedder("hashing")
    stores: list[ws.Store] = []
    try:
        migrate.upgrade(args.pg_url, schema=schema)
        migrate.ensure_vector_table(args.pg_url, embedder, schema=schema)
        migrate.grant_runtime(args.pg_url, role, schema=schema)
        with ws.open_store(args.pg_url, schema=schema, embedder=embedder) as owner:
            _load(owner, args.frames)
        url = sa.make_url(args.pg_url).set(username=role, password=password)
        floor = ws.open_store(args.pg_url, schema=schema, embedder=embedder, upgrade=False)
        unbound = ws.open_store(url, schema=schema, embedder=embedder, upgrade=False)
        bound = ws.open_store(url, schema=schema, embedder=embedder, upgrade=False,
                              bound_mind="tenant")
        stores += [floor, unbound, bound]
        minds = {"no-rls": floor.mind("tenant"), "unbound": unbound.mind("tenant"),
                 "bound": bound.mind("tenant")}
        queries = search_latency._texts(0)[1]
        search = _p50s({name: _searching(mind, queries) for name, mind in minds.items()},
                       args.searches)
        cognify = _p50s({name: _cognifying(mind, name) for name, mind in minds.items()},
                        args.writes)
        print(f"# {args.frames} frames in {len(MINDS)} minds; p50 in ms")
        print(f"{'operation':<10} {'no-rls':>8} {'unbound':>8} {'bound':>8} "
              f"{'unbound/no-rls':>15} {'bound/no-rls':>13} {'bound/unbound':>14}")
        for label, p50 in (("search", search), ("cognify", cognify)):
            f, u, b = (p50[k] for k in ("no-rls", "unbound", "bound"))
            print(f"{label:<10} {f * 1000:8.2f} {u * 1000:8.2f} {b * 1000:8.2f} "
                  f"{u / f:15.2f} {b / f:13.2f} {b / u:14.2f}")
    finally:
        for store in stores:
            store.close()
        with admin.begin() as conn:
            conn.exec_driver_sql(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
            conn.exec_driver_sql(f"DROP OWNED BY {role}")
            conn.exec_driver_sql(f"DROP ROLE {role}")
        admin.dispose()
    return 0


if __name__ == "__main__":
    sys.exit(main())
