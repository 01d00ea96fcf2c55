"""The dense query's embedding: ONNX Runtime, torch, and torch's ``encode()``.

    HF_HUB_OFFLINE=1 python benchmarks/local_query_pass.py [--store sqlite:///DIR/bench-10000-local.db]
                                                           [--queries 400] [--idle-ms 5]

A search embeds exactly one text, its query. ``LocalEmbedder`` runs the model through
sentence-transformers' ONNX backend when the ``[onnx]`` extra is installed (``query_runtime=
"auto"``), else through torch; either way one text goes through the model's own ``preprocess``
and ``forward`` (``_one_text_pass``) instead of ``encode()``, whose per-call bookkeeping is a
measurable share of a short query's embedding. The sides — ``"onnxruntime"`` (when the extra is
installed), ``"torch"`` and ``"encode()"`` (torch through ``encode()``) — are separate
embedders of the same model in one process, switched query by query (the order rotates), each
call after ``--idle-ms`` of sleep (a search comes after other work, not in a tight loop: the
runtimes' threads may have gone to sleep). With ``--store`` (a store built by
``search_latency.py --embedder local --keep DIR``, its mind ``bench``), ``mind.search(q,
limit=20)`` is timed the same way, the store's embedder running each side's model in turn.

Printed: the load time of each side; p50 and p95 in ms per side; per side the lowest cosine
and the largest coordinate difference against torch's ``encode()`` over all queries.
"""

from __future__ import annotations

import argparse
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


def _queries(count: int) -> list[str]:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import search_latency  # the latency benchmark's queries (2-4 pseudo-words)

    return search_latency._texts(0)[1][:count]


def _p(samples: Sequence[float], q: int) -> float:
    return statistics.quantiles(samples, n=100)[q - 1] * 1000


def _sides() -> dict[str, LocalEmbedder]:
    """The loaded embedders by side name, each load timed and printed."""
    sides: dict[str, LocalEmbedder] = {}
    wanted = [("torch", "torch"), ("encode()", "torch")]
    if local_module.onnx_missing() is None:
        wanted.insert(0, ("onnxruntime", "onnxruntime"))
    for side, runtime in wanted:
        embedder = LocalEmbedder(query_runtime=runtime)
        t0 = time.perf_counter()
        embedder.embed_query("warm up")  # loads the model
        print(f"load {side:12} {time.perf_counter() - t0:6.2f} s ({embedder.runtime})")
        sides[side] = embedder
    if sides["torch"]._one is None:
        raise SystemExit("this model / sentence-transformers takes no one-text pass")
    sides["encode()"]._one = None
    return sides


def main(argv: Sequence[str] | None = None) -> int:
    warnings.filterwarnings("ignore")
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", help="a store URL whose mind 'bench' is searched too")
    parser.add_argument("--queries", type=int, default=400)
    parser.add_argument("--idle-ms", type=float, default=5.0)
    args = parser.parse_args(argv)
    sides = _sides()
    queries = _queries(args.queries)
    reference = sides["encode()"]
    for side, embedder in sides.items():
        cosines, gaps = [], []
        for q in queries:
            vector, expected = embedder.embed_query(q), reference.embed_query(q)
            cosines.append(sum(a * b for a, b in zip(vector, expected, strict=True)))
            gaps.append(max(abs(a - b) for a, b in zip(vector, expected, strict=True)))
        print(f"{side:12} vs encode(): lowest cosine {min(cosines):.7f}, "
              f"largest coordinate difference {max(gaps):.1e}")
    front = LocalEmbedder()
    store = ws.open_store(args.store, embedder=front) if args.store else None
    mind = store.mind("bench") if store is not None else None
    names = list(sides)
    timed: dict[str, dict[str, list[float]]] = {s: {"embed": [], "search": []} for s in names}
    calls: list[tuple[str, Callable[[LocalEmbedder, str], object]]] = [
        ("embed", lambda embedder, q: embedder.embed_query(q))]
    if mind is not None:
        def search(embedder: LocalEmbedder, q: str) -> object:
            # The store's embedder runs this side's loaded model.
            front._st, front._one, front.runtime = embedder._st, embedder._one, embedder.runtime
            front._dimensions = embedder._dimensions
            return mind.search(q, limit=20)

        for q in queries[:20]:
            search(sides[names[0]], q)
        calls.append(("search", search))
    for i, q in enumerate(queries):
        for side in names[i % len(names):] + names[:i % len(names)]:
            for what, call in calls:
                time.sleep(args.idle_ms / 1000)
                t0 = time.perf_counter()
                call(sides[side], q)
                timed[side][what].append(time.perf_counter() - t0)
    print(f"{len(queries)} queries, {args.idle_ms:g} ms idle before each call")
    for what, _ in calls:
        for side in names:
            samples = timed[side][what]
            print(f"{what:7} {side:12} p50 {_p(samples, 50):7.2f} ms   "
                  f"p95 {_p(samples, 95):7.2f} ms")
    if store is not None:
        store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
