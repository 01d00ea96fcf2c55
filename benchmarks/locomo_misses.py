"""Where a LoCoMo category's gold turns rank, and whether they share a word with the question.

    python benchmarks/locomo_recall.py PATH --ranks RANKS.jsonl
    python benchmarks/locomo_misses.py PATH RANKS.jsonl [--category multi-hop] [--lanes hybrid]

For each embedder in RANKS (``locomo_recall.py --ranks``) it counts the category's gold turns by
their rank in the lane set's results: in the top 10, at 11-50, or not in the top 50; and in each
band, how many share no content word with their question. A content word is one of three or more
letters that is neither in PostgreSQL's English stop-word list nor a speaker's name (every turn
carries its speaker's name, so a name matches every turn of that person); two words are the same
when their first five letters are. A gold turn that shares no word with its question can reach
the top 10 only through the vector lane or through a turn beside a hit.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout, uninstalled
sys.path.insert(0, str(Path(__file__).resolve().parent))

from locomo_recall import normalise_dia_id, session_numbers

from waggle_store.dialects.stop_words import POSTGRES_ENGLISH_STOP_WORDS

_WORD = re.compile(r"[a-z0-9]+")


def turn_texts(data: list[dict[str, Any]]) -> tuple[dict[tuple[str, str], str], set[str]]:
    """(question text, dia_id) → the turn's words (text and image caption); the speakers' names."""
    texts: dict[tuple[str, str], str] = {}
    names: set[str] = set()
    for sample in data:
        conv = sample["conversation"]
        names |= {conv["speaker_a"].lower(), conv["speaker_b"].lower()}
        turns = {normalise_dia_id(t["dia_id"]): f"{t['text']} {t.get('blip_caption', '')}"
                 for n in session_numbers(conv) for t in conv[f"session_{n}"]}
        for qa in sample["qa"]:
            for dia, text in turns.items():
                texts[(qa["question"], dia)] = text
    return texts, names


def content_words(text: str, names: set[str]) -> set[str]:
    return {w[:5] for w in _WORD.findall(text.lower())
            if len(w) > 2 and w not in POSTGRES_ENGLISH_STOP_WORDS and w not in names}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("path", type=Path)
    parser.add_argument("ranks", type=Path)
    parser.add_argument("--category", default="multi-hop")
    parser.add_argument("--lanes", default="hybrid", choices=("keyword", "vector", "hybrid"))
    args = parser.parse_args(argv)
    texts, names = turn_texts(json.loads(args.path.read_text()))
    bands: dict[str, Counter[str]] = {}
    for line in args.ranks.read_text().splitlines():
        row = json.loads(line)
        if row["category"] != args.category:
            continue
        asked = content_words(row["question"], names)
        counts = bands.setdefault(row["embedder"], Counter())
        for dia, rank in zip(row["gold"], row[args.lanes], strict=True):
            band = "top 10" if rank is not None and rank <= 10 else (
                "11-50" if rank is not None else "past 50")
            counts[band] += 1
            if not asked & content_words(texts[(row["question"], dia)], names):
                counts[f"{band}, no shared word"] += 1
    for embedder, counts in bands.items():
        print(f"{embedder} ({args.lanes}, {args.category}): " + "; ".join(
            f"{band} {counts[band]} ({counts[f'{band}, no shared word']} share no word)"
            for band in ("top 10", "11-50", "past 50")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
