"""Graph walks on a dense graph: ``traverse``, ``bfs_distances`` and a search's graph distances.

    python benchmarks/graph_walk.py                      # SQLite, 300 entities, 6,000 edges
    python benchmarks/graph_walk.py --pg-url URL         # the same on PostgreSQL (own schema)
    python benchmarks/graph_walk.py --nodes 300 --edges 6000 --depths 1 3 10 20 --runs 5

Builds one mind with ``--nodes`` entities and ``--edges`` random directed ``links`` edges (seeded,
no self-loops), then times, at each ``--depths`` value, ``knowledge.traverse`` and
``knowledge.bfs_distances`` from one entity, and the undirected distances from one entity that
the contextual score reads. Printed: the median of ``--runs`` runs in ms and how many entities
each walk returned (never more than the walk's node cap).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any, cast

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout, uninstalled

from sqlalchemy import Table

import waggle_store as ws
from waggle_store.models import RelationRow
from waggle_store.repositories.knowledge import KnowledgeRepository
from waggle_store.timeutil import utcnow


def build(store: ws.Store, nodes: int, edges: int, seed: int = 7) -> tuple[ws.Mind, list[int]]:
    mind = store.mind("graph")
    ids = [mind.knowledge.create_entity("node", f"n{i}").id for i in range(nodes)]
    rng = random.Random(seed)
    pairs: set[tuple[int, int]] = set()
    while len(pairs) < edges:
        s, t = rng.sample(ids, 2)
        pairs.add((s, t))
    now = utcnow()
    with store.write() as session:
        session.execute(cast(Table, RelationRow.__table__).insert(), [
            {"mind_id": mind.id, "source_id": s, "target_id": t, "relation_type": "links",
             "confidence": 1.0, "properties": {}, "valid_from": now, "valid_to": None,
             "recorded_at": now} for s, t in sorted(pairs)])
    return mind, ids


def _time(runs: int, call: Callable[[], Any]) -> tuple[float, int]:
    samples, size = [], 0
    for _ in range(runs):
        t0 = time.perf_counter()
        size = len(call())
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples) * 1000, size


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pg-url")
    parser.add_argument("--nodes", type=int, default=300)
    parser.add_argument("--edges", type=int, default=6000)
    parser.add_argument("--depths", type=int, nargs="+", default=[1, 3, 10, 20])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        if args.pg_url:
            store = ws.open_store(args.pg_url, schema=f"graph_{uuid.uuid4().hex[:8]}",
                                  embedder="hashing")
        else:
            store = ws.open_store(f"sqlite:///{tmp}/graph.db", embedder="hashing")
        try:
            mind, ids = build(store, args.nodes, args.edges)
            start = ids[0]
            print(f"{store.engine.dialect.name}: {args.nodes} entities, {args.edges} edges, "
                  f"median of {args.runs} runs")
            print("depth  traverse ms (n)   bfs_distances ms (n)   undirected ms (n)")
            for depth in args.depths:
                row = [_time(args.runs, partial(mind.knowledge.traverse, start, None, depth)),
                       _time(args.runs, partial(mind.knowledge.bfs_distances, start, depth))]

                def undirected(d: int = depth) -> dict[int, int]:
                    with store.read() as session:
                        return KnowledgeRepository(session, mind.id).graph.distances([start], d)

                row.append(_time(args.runs, undirected))
                print(f"{depth:5d}  " + "   ".join(f"{ms:9.1f} ({n:4d})   " for ms, n in row))
        finally:
            if args.pg_url:
                with store.engine.begin() as conn:
                    conn.exec_driver_sql(f'DROP SCHEMA "{store.schema}" CASCADE')
            store.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
