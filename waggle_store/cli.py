"""The ``waggle-store`` command: a demo on the embedded default, health, and migrations."""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from dataclasses import asdict
from pathlib import Path

from waggle_store.engine import WaggleStoreWarning


def _demo(args: argparse.Namespace) -> int:
    import waggle_store as ws
    from waggle_store.demo_data import SAMPLE_CONVERSATION, SAMPLE_QUERIES

    path = Path(args.db)
    if path.exists() and not args.keep:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
    with ws.open_store(f"sqlite:///{path}", embedder=args.embedder) as store:
        health = store.health()
        embedder = health.embedder
        print(f"store: {path} ({health.dialect} via {health.driver}); "
              f"keyword search {'on' if health.keyword_search else 'off'}, "
              f"vector search {'on' if health.vector_search else 'off'}")
        if embedder is not None:
            print(f"embedder: {embedder.active_provider} / {embedder.model} "
                  f"({embedder.dimensions} dims)"
                  + (f" — {embedder.last_error}" if embedder.last_error else ""))
        for reason in health.reasons:
            print(f"  note: {reason}")
        mind = store.mind("demo")
        result = mind.cognify_batch(list(SAMPLE_CONVERSATION))
        stored = sum(1 for f in result.frame_ids if f is not None)
        print(f"\ncognified {stored}/{len(SAMPLE_CONVERSATION)} turns"
              + (f", {len(result.failures)} failed: {result.failures}" if result.failures else ""))
        counts = mind.knowledge.entity_type_counts()
        print("knowledge graph:", ", ".join(f"{n} {t}" for t, n in sorted(counts.items())) or "empty")
        for query in SAMPLE_QUERIES:
            print(f"\n? {query}")
            for hit in mind.recall(query, limit=3):
                lanes = hit.explain.get("lanes", {})
                lane_text = " ".join(
                    f"{name}#{info['rank'] + 1}" for name, info in lanes.items() if info
                ) if isinstance(lanes, dict) else ""
                print(f"  {hit.final_score:.3f} = rrf {hit.rrf_score:.3f} × relevance "
                      f"{hit.relevance_score:.3f} [{lane_text}]  {hit.frame.content}")
    return 0


def _health(args: argparse.Namespace) -> int:
    import waggle_store as ws

    with ws.open_store(args.url, embedder=args.embedder, upgrade=not args.no_upgrade) as store:
        print(json.dumps(asdict(store.health()), indent=2, default=str))
    return 0


def _migrate(args: argparse.Namespace) -> int:
    from waggle_store import migrate

    if args.action == "upgrade":
        migrate.upgrade(args.url, args.revision or "head")
    elif args.action == "downgrade":
        migrate.downgrade(args.url, args.revision or "base")
    elif args.action == "check":
        diffs = migrate.check(args.url)
        for diff in diffs:
            print(diff)
        return 1 if diffs else 0
    print(migrate.current(args.url))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="waggle-store", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="cognify a sample conversation into ./waggle-demo.db and recall from it")
    demo.add_argument("--db", default="waggle-demo.db")
    demo.add_argument("--embedder", default="auto", help="auto (best available, hashing as the floor) or a provider name")
    demo.add_argument("--keep", action="store_true", help="keep an existing demo database")
    demo.set_defaults(func=_demo)
    health = sub.add_parser("health", help="print a store's health as JSON")
    health.add_argument("url", nargs="?", default=None)
    health.add_argument("--embedder", default="auto")
    health.add_argument("--no-upgrade", action="store_true")
    health.set_defaults(func=_health)
    mig = sub.add_parser("migrate", help="upgrade / downgrade / check / current")
    mig.add_argument("action", choices=["upgrade", "downgrade", "check", "current"])
    mig.add_argument("url")
    mig.add_argument("revision", nargs="?")
    mig.set_defaults(func=_migrate)
    args = parser.parse_args(argv)
    with warnings.catch_warnings():
        warnings.simplefilter("default", WaggleStoreWarning)
        from waggle_store.errors import WaggleStoreError

        try:
            return int(args.func(args))
        except WaggleStoreError as exc:
            print(f"waggle-store: {exc}", file=sys.stderr)
            return 2


if __name__ == "__main__":
    sys.exit(main())
