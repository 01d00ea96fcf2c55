"""What the local model's ``text_form="sentences"`` costs at ingest, against ``"whole"``.

    HF_HUB_OFFLINE=1 python benchmarks/sentence_form_cost.py PATH [--rounds 3]

PATH is a LoCoMo data file (``locomo_recall.py`` reads the same): every turn of every
conversation, written as that protocol writes it ("Speaker: text [shares caption]"), is one
memory. For each text form the script reports how many texts the model embeds and their
characters (a remote provider bills tokens, which follow characters), the time to embed every
memory in batches of 50 (reconcile's batch) and the wall time of ``mind.cognify_batch`` of
every memory into a fresh SQLite store (frames, entities, vectors: what an application sees).
The two forms alternate for ``--rounds`` rounds on the same loaded model; medians and the
sentences/whole ratios are printed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from locomo_recall import session_numbers, turn_text

import waggle_store as ws
from waggle_store.embeddings import LocalEmbedder
from waggle_store.embeddings.sentences import sentence_parts

FORMS = ("whole", "sentences")


def turns(data: list[dict[str, Any]]) -> list[str]:
    """Every turn's text as ``locomo_recall.py`` stores it."""
    return [turn_text(turn) for sample in data
            for n in session_numbers(sample["conversation"])
            for turn in sample["conversation"][f"session_{n}"]]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("path", type=Path)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    texts = turns(json.loads(args.path.read_text()))
    embedder = LocalEmbedder()
    embedder.embed_query("load the model")
    parts = [sentence_parts(t) or [t] for t in texts]
    sizes = {"whole": (len(texts), sum(map(len, texts))),
             "sentences": (sum(map(len, parts)), sum(len(p) for ps in parts for p in ps))}
    embed_s: dict[str, list[float]] = {f: [] for f in FORMS}
    cognify_s: dict[str, list[float]] = {f: [] for f in FORMS}
    with tempfile.TemporaryDirectory() as tmp:
        for round_no in range(args.rounds):
            for form in FORMS:
                embedder.text_form = form
                started = time.perf_counter()
                for start in range(0, len(texts), 50):
                    embedder.embed_documents(texts[start:start + 50])
                embed_s[form].append(time.perf_counter() - started)
                url = f"sqlite:///{Path(tmp) / f'{form}-{round_no}.db'}"
                with ws.open_store(url, embedder=embedder) as store:
                    mind = store.mind("m")
                    started = time.perf_counter()
                    mind.cognify_batch(texts)
                    cognify_s[form].append(time.perf_counter() - started)
    print(f"{len(texts)} memories, {args.rounds} rounds, medians")
    print(f"{'form':10} {'texts':>7} {'chars':>8} {'embed s':>8} {'cognify_batch s':>16}")
    for form in FORMS:
        n, chars = sizes[form]
        print(f"{form:10} {n:7d} {chars:8d} {statistics.median(embed_s[form]):8.2f} "
              f"{statistics.median(cognify_s[form]):16.2f}")

    def ratio(xs: dict[str, list[float]]) -> float:
        return statistics.median(xs["sentences"]) / statistics.median(xs["whole"])

    print(f"sentences/whole: texts {sizes['sentences'][0] / sizes['whole'][0]:.2f}, chars "
          f"{sizes['sentences'][1] / sizes['whole'][1]:.2f}, embed {ratio(embed_s):.2f}, "
          f"cognify_batch {ratio(cognify_s):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
