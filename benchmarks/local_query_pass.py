"""The dense query's embedding: the local embedder's one-text pass against ``encode()``.

    HF_HUB_OFFLINE=1 python benchmarks/local_query_pass.py [--store sqlite:///DIR/bench-10000-local.db]
                                                           [--queries 400] [--idle-ms 5]

A search embeds exactly one text, its query. ``LocalEmbedder`` embeds one text by the model's own
``preprocess`` and ``forward`` (``embeddings/local.py: _one_text_pass``) instead of
sentence-transformers' ``encode()``, whose per-call bookkeeping (every submodule set to eval mode,
the device found through the parameters, one text sorted and batched) is a measurable share of a
short query's embedding. Both sides run in one process on the same embedder, the pass switched on
and off, interleaved query by query (which side goes first alternates), each call after
``--idle-ms`` of sleep (a search comes after other work, not in a tight loop: torch's threads may
have gone to sleep). With ``--store`` (a store built by ``search_latency.py --embedder local
--keep DIR``, its mind ``bench``), ``mind.search(q, limit=20)`` is timed the same way.

Printed: p50 and p95 in ms per side, and how many queries gave a vector that differs from
``encode()``'s (must be 0: the pass is used only where it reproduces ``encode()`` bit for bit).
"""

from __future__ import annotations

import argparse
import functools
import statistics
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout, uninstalled

import waggle_store as ws
from waggle_store.embeddings import LocalEmbedder
from waggle_store.embeddings import local as local_module

SIDES = ("one-text pass", "encode()")


def _queries(count: int) -> list[str]:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import search_latency  # the latency benchmark's queries (2-4 pseudo-words)

    return search_latency._texts(0)[1][:count]


def _p(samples: Sequence[float], q: int) -> float:
    return statistics.quantiles(samples, n=100)[q - 1] * 1000


def main(argv: Sequence[str] | None = None) -> int:
    warnings.filterwarnings("ignore")
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", help="a store URL whose mind 'bench' is searched too")
    parser.add_argument("--queries", type=int, default=400)
    parser.add_argument("--idle-ms", type=float, default=5.0)
    args = parser.parse_args(argv)
    embedder = LocalEmbedder()
    store = ws.open_store(args.store, embedder=embedder) if args.store else None
    mind = store.mind("bench") if store is not None else None
    queries = _queries(args.queries)
    embedder.embed_query("warm up")  # loads the model and decides the pass
    one = embedder._one
    if one is None:
        raise SystemExit("this model / sentence-transformers takes no one-text pass")
    def differs(text: str) -> bool:
        return bool((one(text) != local_module._encode(embedder._st, [text], 32)[0]).any())

    differing = sum(local_module._on_model_thread(functools.partial(differs, q)) for q in queries)
    timed: dict[str, dict[str, list[float]]] = {s: {"embed": [], "search": []} for s in SIDES}
    calls: list[tuple[str, Callable[[str], object]]] = [("embed", embedder.embed_query)]
    if mind is not None:
        for q in queries[:20]:
            mind.search(q, limit=20)
        calls.append(("search", lambda q: mind.search(q, limit=20)))
    for i, q in enumerate(queries):
        for side in SIDES if i % 2 == 0 else SIDES[::-1]:
            embedder._one = one if side == SIDES[0] else None
            for what, call in calls:
                time.sleep(args.idle_ms / 1000)
                t0 = time.perf_counter()
                call(q)
                timed[side][what].append(time.perf_counter() - t0)
    embedder._one = one
    print(f"{len(queries)} queries, {differing} vectors differing from encode()'s")
    for what, _ in calls:
        for side in SIDES:
            samples = timed[side][what]
            print(f"{what:7} {side:14} p50 {_p(samples, 50):7.2f} ms   "
                  f"p95 {_p(samples, 95):7.2f} ms")
    if store is not None:
        store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
