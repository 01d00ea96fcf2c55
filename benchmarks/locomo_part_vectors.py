"""What vectors of a frame's *parts* would do to LoCoMo recall, measured before building them.

    HF_HUB_OFFLINE=1 python benchmarks/locomo_part_vectors.py PATH [--combine max mean centroid]
                    [--min-words 0 8] [--embedder local|hashing] [--no-speaker]

A frame has one vector, of its whole content. A long turn that touches several topics ("Yes! I
went there last week with my kids. Also, my sister just moved to Denver, and I finally finished
the painting.") has an embedding near none of them, and the vector lane misses it for a question
about any one. This script measures remedies without building them: the store is built as
``locomo_recall.py`` builds it (SQLite, all-MiniLM-L6-v2 or ``--embedder hashing``,
``store.reconcile()``); then the adapter's vector lane is wrapped so that each frame's distance
is computed from its *parts* — a part being a sentence of the turn (split after ``.``, ``!``,
``?``; sentences of fewer than ``--min-words`` words joined to the next), prefixed by the turn's
speaker label ("Caroline: ") as the turn is, or, with ``--no-speaker``, the plain split (only
the first part names the speaker, as any text split into sentences would):

* ``max``: the nearer of the whole vector and the nearest part (a vector per part, the best
  standing for the frame);
* ``mean``: the average of those two distances;
* ``centroid``: the frame's one vector replaced by the normalised mean of its parts' (what the
  schema of today could store).

A turn of one part keeps its own distance. The parts are embedded once, in memory, by the same
model; the stored vectors, the keyword lane, the fusion and everything else are the library's.
``base`` (no parts) is run first: its rows must equal ``locomo_recall.py``'s with whole vectors
(the local model is built here with ``text_form="whole"``).

Prints recall@{1,5,10,20,50} and MRR for keyword, vector and hybrid searches per variant, and
how many part vectors each variant embedded (the embedding calls and vector rows it would add).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import locomo_recall
import numpy as np

import waggle_store as ws
from waggle_store.dialects.base import LaneHit
from waggle_store.embeddings import HashingEmbedder, LocalEmbedder
from waggle_store.records import Frame

#: Where a hit's frame columns (in :class:`Frame` order) hold the content.
_CONTENT = [field.name for field in dataclasses.fields(Frame)].index("content")

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_SPEAKER = re.compile(r"(\w+): (.*)", re.DOTALL)


def parts_of(content: str, min_words: int, speaker: bool = True) -> list[str]:
    """The turn's sentences (short ones joined to the next), each prefixed by its speaker (the
    turn's leading ``Name: ``) unless not ``speaker``; [] for a turn of one part."""
    found = _SPEAKER.fullmatch(content) if speaker else None
    label, body = (found.group(1), found.group(2)) if found else ("", content)
    parts: list[str] = []
    pending = ""
    for sentence in _SENTENCE_END.split(body):
        pending = f"{pending} {sentence}".strip()
        if len(pending.split()) >= min_words:
            parts.append(pending)
            pending = ""
    if pending:
        if parts and len(pending.split()) < min_words:
            parts[-1] = f"{parts[-1]} {pending}"
        else:
            parts.append(pending)
    if len(parts) <= 1:
        return []
    return [f"{label}: {part}" if label else part for part in parts]


class PartLane:
    """Wraps ``store.adapter.vector_search``: each frame's distance computed from its parts
    as ``combine`` says (the adapter is asked for every frame of the mind, then the top ``limit``
    kept)."""

    def __init__(self, store: ws.Store, embedder: Any) -> None:
        self.embedder = embedder
        self.search = store.adapter.vector_search
        self.combine = "base"
        self.min_words = 0
        self.speaker = True
        self.parts: dict[tuple[int, int], Any] = {}

    def vectors(self, frame_id: int, content: str) -> Any:
        key = (frame_id, self.min_words)
        if key not in self.parts:
            texts = parts_of(content, self.min_words, self.speaker)
            self.parts[key] = (np.asarray(self.embedder.embed_documents(texts), dtype=np.float32)
                               if texts else None)
        return self.parts[key]

    def __call__(self, session: Any, *, model_id: int, vector: Sequence[float], where: Any,
                 limit: int) -> list[LaneHit]:
        if self.combine == "base":
            return self.search(session, model_id=model_id, vector=vector, where=where,
                               limit=limit)
        everything = self.search(session, model_id=model_id, vector=vector, where=where,
                                 limit=1_000_000)
        query = np.asarray(list(vector), dtype=np.float32)
        hits = []
        for hit in everything:
            whole = 1.0 - hit.score
            parts = self.vectors(hit.frame_id, hit.frame[_CONTENT])
            similarity = whole
            if parts is not None and self.combine == "centroid":
                mean = parts.mean(axis=0)
                similarity = float(mean @ query) / float(np.linalg.norm(mean))
            elif parts is not None:
                best = float((parts @ query).max())
                similarity = max(whole, best) if self.combine == "max" else (whole + best) / 2
            hits.append(LaneHit(hit.frame_id, round(1.0 - similarity, 5), hit.frame,
                                hit.mentions))
        hits.sort(key=lambda h: (h.score, h.frame_id))
        return hits[:limit]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("path", type=Path)
    parser.add_argument("--combine", nargs="+", choices=("max", "mean", "centroid"),
                        default=["max", "mean"])
    parser.add_argument("--min-words", nargs="+", type=int, default=[0])
    parser.add_argument("--embedder", choices=("local", "hashing"), default="local")
    parser.add_argument("--no-speaker", action="store_true",
                        help="split the turn as plain text (only the first part names the speaker)")
    args = parser.parse_args(argv)
    data = json.loads(args.path.read_text())
    # Whole vectors: the parts are compared with one vector of the whole text (the local model's
    # default is the sentence centroid).
    embedder: Any = (LocalEmbedder(text_form="whole") if args.embedder == "local"
                     else HashingEmbedder())
    variants = [("base", 0)] + [(c, w) for w in args.min_words for c in args.combine]
    with tempfile.TemporaryDirectory() as tmp, \
            ws.open_store(f"sqlite:///{tmp}/parts.db", embedder=embedder) as store:
        lane = PartLane(store, embedder)
        lane.speaker = not args.no_speaker
        store.adapter.vector_search = lane  # type: ignore[method-assign]
        loaded = [(sample, *locomo_recall.load_sample(store, sample)) for sample in data]
        store.reconcile()
        frames = sum(len(dias) for _, _, dias in loaded)
        print(f"{frames} frames; R@1 R@5 R@10 R@20 R@50 | MRR")
        for combine, min_words in variants:
            lane.combine, lane.min_words = combine, min_words
            summary = locomo_recall.score(loaded)
            label = combine if combine == "base" else f"{combine}, parts of >= {min_words} words"
            for name, row in summary.items():
                cells = " ".join(f"{row[f'recall@{k}']:.3f}" for k in locomo_recall.KS)
                print(f"{label:30} {name:8} {cells} | {row['mrr']:.3f}")
            if combine != "base":
                count = sum(len(vectors) for (_, words), vectors in lane.parts.items()
                            if words == min_words and vectors is not None)
                print(f"{label:30} part vectors: {count}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
