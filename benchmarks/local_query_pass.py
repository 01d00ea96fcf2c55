"""The dense query's embedding: ONNX Runtime, torch's one-text pass and ``encode()``.

    HF_HUB_OFFLINE=1 python benchmarks/local_query_pass.py [--store sqlite:///DIR/bench-10000-local.db]
                                                           [--queries 400] [--idle-ms 5]

A search embeds exactly one text, its query. ``LocalEmbedder`` embeds one text through ONNX
Runtime when the ``[onnx]`` extra is installed (the model's transformer exported at load,
``embeddings/local.py: _onnx_pass``), else by the model's own ``preprocess`` and ``forward`` in
torch (``_one_text_pass``), instead of sentence-transformers' ``encode()``, whose per-call
bookkeeping (every submodule set to eval mode, the device found through the parameters, one text
sorted and batched) is a measurable share of a short query's embedding. All sides run in one
process on the same model, switched query by query (the order rotates), each call after
``--idle-ms`` of sleep (a search comes after other work, not in a tight loop: the runtimes'
threads may have gone to sleep). With ``--store`` (a store built by ``search_latency.py
--embedder local --keep DIR``, its mind ``bench``), ``mind.search(q, limit=20)`` is timed the
same way.

Printed: p50 and p95 in ms per side; how many queries gave a vector that differs from
``encode()``'s through torch's pass (must be 0: it is used only where it reproduces ``encode()``
bit for bit), and the largest coordinate difference through ONNX Runtime (within the 1e-5 its
check at load allows).
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
from typing import Any

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
    torch_pass = local_module._on_model_thread(
        lambda: local_module._one_text_pass(embedder._st, 32))
    if torch_pass is None:
        raise SystemExit("this model / sentence-transformers takes no one-text pass")
    passes: dict[str, Callable[[str], Any] | None] = {}
    if embedder.runtime == "onnxruntime":
        passes["onnxruntime"] = embedder._one
    passes["torch pass"] = torch_pass
    passes["encode()"] = None

    def encoded(text: str) -> Any:
        return local_module._encode(embedder._st, [text], 32)[0]

    def gap(one: Callable[[str], Any], text: str) -> float:
        return float(abs(one(text) - encoded(text)).max())

    differing = sum(local_module._on_model_thread(functools.partial(gap, torch_pass, q)) > 0
                    for q in queries)
    onnx = passes.get("onnxruntime")
    onnx_gap = None if onnx is None else max(
        local_module._on_model_thread(functools.partial(gap, onnx, q)) for q in queries)
    sides = list(passes)
    timed: dict[str, dict[str, list[float]]] = {s: {"embed": [], "search": []} for s in sides}
    calls: list[tuple[str, Callable[[str], object]]] = [("embed", embedder.embed_query)]
    if mind is not None:
        for q in queries[:20]:
            mind.search(q, limit=20)
        calls.append(("search", lambda q: mind.search(q, limit=20)))
    for i, q in enumerate(queries):
        for side in sides[i % len(sides):] + sides[:i % len(sides)]:
            embedder._one = passes[side]
            for what, call in calls:
                time.sleep(args.idle_ms / 1000)
                t0 = time.perf_counter()
                call(q)
                timed[side][what].append(time.perf_counter() - t0)
    embedder._one = passes[sides[0]]
    print(f"{len(queries)} queries; torch pass: {differing} vectors differing from encode()'s"
          + ("" if onnx_gap is None else
             f"; onnxruntime: largest coordinate difference {onnx_gap:.1e}"))
    for what, _ in calls:
        for side in sides:
            samples = timed[side][what]
            print(f"{what:7} {side:12} p50 {_p(samples, 50):7.2f} ms   "
                  f"p95 {_p(samples, 95):7.2f} ms")
    if store is not None:
        store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
