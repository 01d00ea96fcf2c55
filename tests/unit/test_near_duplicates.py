"""The text side of consolidation's near-duplicate search: the banded Levenshtein and the
length / q-gram filters never change the answer of a plain edit-distance comparison."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from waggle_store.pipeline.harvest.files import chunk_text
from waggle_store.pipeline.near_duplicates import (
    Candidate,
    _text_edges,
    bounded_levenshtein,
    normalise,
)


def _levenshtein(a: str, b: str) -> int:
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


@given(st.text("abc", max_size=14), st.text("abc", max_size=14), st.integers(0, 9))
def test_bounded_levenshtein_is_levenshtein_up_to_the_limit(a: str, b: str, limit: int) -> None:
    distance = _levenshtein(a, b)
    assert bounded_levenshtein(a, b, limit) == (distance if distance <= limit else None)


def _mutate(rng: random.Random, text: str, edits: int) -> str:
    chars = list(text)
    for _ in range(edits):
        at = rng.randrange(len(chars) + 1)
        roll = rng.random()
        if roll < 0.33 and chars:
            chars[min(at, len(chars) - 1)] = rng.choice("abc")
        elif roll < 0.66:
            chars.insert(at, rng.choice("abc"))
        elif chars:
            del chars[min(at, len(chars) - 1)]
    return "".join(chars)


def test_filtered_pairs_equal_the_brute_force_pairs() -> None:
    rng = random.Random(7)
    for _ in range(30):
        texts: list[str] = []
        for _ in range(8):
            base = "".join(rng.choice("ab ") for _ in range(rng.randint(5, 40)))
            texts += [base, _mutate(rng, base, rng.randint(0, 4))]
        candidates = [Candidate(i, "s", normalise(t), False) for i, t in enumerate(texts)]
        edges: dict[int, dict[int, float]] = {}
        _text_edges(candidates, 0.10, edges)
        found = {(a, b) for a in edges for b in edges[a] if a < b}
        expected = set()
        for i, x in enumerate(candidates):
            for y in candidates[i + 1:]:
                longer = max(len(x.text), len(y.text))
                if longer and _levenshtein(x.text, y.text) / longer < 0.10:
                    expected.add((x.id, y.id))
        assert found == expected


def test_pairs_need_the_same_source() -> None:
    edges: dict[int, dict[int, float]] = {}
    _text_edges([Candidate(1, "a", "same words here", False),
                 Candidate(2, "b", "same words here", False)], 0.10, edges)
    assert edges == {}


def test_chunks_split_at_blank_lines_within_the_limit() -> None:
    paragraphs = [f"p{i} " + "x" * 30 for i in range(10)]
    pieces = chunk_text("\n\n".join(paragraphs), limit=100)
    assert all(len(p) <= 100 for p in pieces)
    assert "\n\n".join(pieces).split("\n\n") == paragraphs
    assert chunk_text("y" * 250, limit=100) == ["y" * 100, "y" * 100, "y" * 50]
    assert chunk_text(" \n\n \n") == []
