"""Batches of a dense embedder: ONNX Runtime against sentence-transformers' ``encode()``.

    HF_HUB_OFFLINE=1 python benchmarks/local_batch_pass.py [--texts 2000] [--rounds 3]
                                                           [--batch-size 32]

What ingest pays per memory with the local model (cognify, reconcile and import embed their
texts in batches): ``LocalEmbedder(query_runtime="onnxruntime")`` (the ``[onnx]`` extra) runs
them through sentence-transformers' ONNX backend, ``LocalEmbedder(query_runtime="torch")``
through torch, both by ``encode()``. Both load the same model in one process and embed the same
texts, in rounds that alternate which goes first. Texts: ``search_latency.py``'s synthetic
frames (12–25 Zipf pseudo-words, ~60 word pieces) and short conversation-like turns (a
LoCoMo-sized sentence), so both padding-heavy and short batches are measured.

Printed per kind of text: texts per second for each side (median over the rounds), the ratio,
and the largest coordinate difference between the two sides' vectors.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout, uninstalled

import numpy as np
from search_latency import _texts

from waggle_store.embeddings import LocalEmbedder

_SENTENCES = ("we went to the lake last weekend with the kids and it was lovely honestly",
              "my sister painted a sunset for the charity auction yesterday because she loves",
              "colours I have been reading about adoption agencies since the support group")
_WORDS = [word for sentence in _SENTENCES for word in sentence.split()]


def _turns(n: int, seed: int = 11) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choices(_WORDS, k=rng.randint(4, 30))).capitalize() + "."
            for _ in range(n)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--texts", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    sides = {
        # text_form="whole": the texts as given, one row each (the pass is what is measured).
        "onnxruntime": LocalEmbedder(batch_size=args.batch_size, query_runtime="onnxruntime",
                                     text_form="whole"),
        "encode()": LocalEmbedder(batch_size=args.batch_size, query_runtime="torch",
                                  text_form="whole"),
    }
    for embedder in sides.values():
        embedder.embed_documents(["load the model", "and its passes"])  # onnxruntime: or says why
    kinds = {"synthetic frames": _texts(args.texts)[0], "conversation turns": _turns(args.texts)}
    print(f"{'texts':20s} {'onnxruntime/s':>14s} {'encode()/s':>11s} {'ratio':>6s} "
          f"{'max diff':>9s}")
    for kind, texts in kinds.items():
        rates: dict[str, list[float]] = {side: [] for side in sides}
        vectors: dict[str, np.ndarray] = {}
        for r in range(args.rounds):
            order = list(sides) if r % 2 == 0 else list(reversed(sides))
            for side in order:
                t0 = time.perf_counter()
                rows = sides[side].embed_documents(texts)
                rates[side].append(len(texts) / (time.perf_counter() - t0))
                vectors[side] = np.asarray(rows)
        ort = statistics.median(rates["onnxruntime"])
        enc = statistics.median(rates["encode()"])
        diff = float(np.abs(vectors["onnxruntime"] - vectors["encode()"]).max())
        print(f"{kind:20s} {ort:14.0f} {enc:11.0f} {ort / enc:6.2f} {diff:9.1e}")


if __name__ == "__main__":
    main()
