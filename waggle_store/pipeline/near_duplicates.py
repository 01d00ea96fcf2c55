"""Finding near-duplicate frames of one mind, for consolidation (OpenFang's merge heuristics).

Two frames are near-duplicates when they come from the same ``source`` and

* both have a current vector of the active embedding model and their cosine similarity is above
  ``merge_similarity``: candidates come from the database's own nearest-neighbour search (the
  vector lane), so the cost grows with the number of frames, not with its square; or
* at least one has no such vector and their normalised edit distance (Levenshtein distance over
  the longer length, after trimming, collapsing whitespace and case-folding) is below
  ``1 - merge_similarity`` (10 % at the default 0.9). Candidate pairs are narrowed by length
  (the distance is at least the length difference) and by a q-gram count (one edit removes at
  most q of a string's q-gram occurrences, hence at most q of its distinct q-grams, so strings
  within distance k share at least ``|Q(a)| - k*q`` distinct q-grams; a set intersection, run in
  C) before the banded Levenshtein runs. Texts longer than :data:`MAX_EDIT_CHARS` only match
  when equal.

The result is a symmetric map ``frame id -> {neighbour id: similarity}``.
"""

from __future__ import annotations

import bisect
import math
import re
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from sqlalchemy.orm import Session

from waggle_store.dialects.base import LaneFilter, ModelNotActiveError, SearchAdapter

__all__ = ["MAX_EDIT_CHARS", "Candidate", "bounded_levenshtein", "near_duplicates", "normalise"]

#: Above this length the O(n·k) edit distance is too slow to run pairwise; such texts merge only
#: when identical after normalisation.
MAX_EDIT_CHARS: Final = 20_000
_Q: Final = 3
_KNN_START: Final = 16
_KNN_MAX: Final = 1024
_VECTOR_CHUNK: Final = 200
_SPACE = re.compile(r"\s+")

Edges = dict[int, dict[int, float]]


@dataclass(frozen=True)
class Candidate:
    id: int
    source: str
    text: str  # normalised
    has_vector: bool


def normalise(content: str) -> str:
    return _SPACE.sub(" ", content).strip().casefold()


def bounded_levenshtein(a: str, b: str, limit: int) -> int | None:
    """The Levenshtein distance of ``a`` and ``b`` if it is at most ``limit``, else None.

    Only the diagonal band of width ``2*limit + 1`` is computed, and the scan stops as soon as
    a whole row exceeds the limit: O(len × limit) at worst."""
    if len(a) > len(b):
        a, b = b, a
    n, m = len(a), len(b)
    if m - n > limit or limit < 0:
        return None
    if a == b:
        return 0
    if limit == 0:
        return None
    width, inf = 2 * limit + 1, limit + 1
    # Row i holds D[i][j] for j = i - limit + k, k in [0, width).
    prev = [k - limit if 0 <= k - limit <= m else inf for k in range(width)]
    for i in range(1, n + 1):
        cur = [inf] * width
        ca, best = a[i - 1], inf
        for k in range(width):
            j = i - limit + k
            if j < 0 or j > m:
                continue
            if j == 0:
                value = i
            else:
                value = prev[k] + (ca != b[j - 1])  # D[i-1][j-1]
                if k + 1 < width and prev[k + 1] + 1 < value:
                    value = prev[k + 1] + 1  # D[i-1][j] + 1
                if k > 0 and cur[k - 1] + 1 < value:
                    value = cur[k - 1] + 1  # D[i][j-1] + 1
            cur[k] = min(value, inf)
            best = min(best, cur[k])
        if best > limit:
            return None
        prev = cur
    result = prev[m - n + limit]
    return result if result <= limit else None


def _qgrams(text: str) -> frozenset[str]:
    padded = f"\x00\x00{text}\x00\x00"
    return frozenset(padded[i:i + _Q] for i in range(len(padded) - _Q + 1))


def _edit_limit(longer: int, max_ratio: float) -> int:
    """Largest distance d with d / longer < max_ratio."""
    return max(0, math.ceil(longer * max_ratio) - 1)


def _text_edges(candidates: Sequence[Candidate], max_ratio: float, edges: Edges) -> None:
    by_source: dict[str, list[Candidate]] = defaultdict(list)
    for c in candidates:
        by_source[c.source].append(c)
    grams: dict[int, frozenset[str]] = {}
    for group in by_source.values():
        group.sort(key=lambda c: (len(c.text), c.id))
        lengths = [len(c.text) for c in group]
        for a in group:
            if a.has_vector:
                continue  # its pairs are found from the other side, or by the vector lane
            la = len(a.text)
            lo = bisect.bisect_right(lengths, la * (1 - max_ratio))
            hi = bisect.bisect_left(lengths, la / (1 - max_ratio)) if max_ratio < 1 else len(group)
            for b in group[lo:hi]:
                if b.id == a.id or (not b.has_vector and b.id < a.id):
                    continue  # a pair of two vector-less frames is compared once, from its lower id
                similarity = _text_similarity(a, b, max_ratio, grams)
                if similarity is not None:
                    edges.setdefault(a.id, {})[b.id] = similarity
                    edges.setdefault(b.id, {})[a.id] = similarity


def _text_similarity(a: Candidate, b: Candidate, max_ratio: float,
                     grams: dict[int, frozenset[str]]) -> float | None:
    longer = max(len(a.text), len(b.text))
    if longer == 0 or a.text == b.text:
        return 1.0 if a.text == b.text else None
    if longer > MAX_EDIT_CHARS:
        return None
    limit = _edit_limit(longer, max_ratio)
    if abs(len(a.text) - len(b.text)) > limit:
        return None
    ga = grams.get(a.id) or grams.setdefault(a.id, _qgrams(a.text))
    gb = grams.get(b.id) or grams.setdefault(b.id, _qgrams(b.text))
    if len(ga & gb) < max(len(ga), len(gb)) - limit * _Q:  # see the module docstring
        return None
    distance = bounded_levenshtein(a.text, b.text, limit)
    return None if distance is None else 1.0 - distance / longer


def _vector_edges(session: Session, adapter: SearchAdapter, mind_id: int, model_id: int,
                  candidates: Mapping[int, Candidate], min_similarity: float,
                  edges: Edges, progress: Callable[[int, int], None] | None = None
                  ) -> set[int] | None:
    """Neighbours by cosine via the vector lane. Returns the frames whose manifest says ready but
    whose vector row is missing (they are compared by text instead), or None when the model
    stopped being active."""
    with_vectors = [c.id for c in candidates.values() if c.has_vector]
    where = LaneFilter([mind_id])
    missing: set[int] = set()
    for start in range(0, len(with_vectors), _VECTOR_CHUNK):
        chunk = with_vectors[start:start + _VECTOR_CHUNK]
        vectors = adapter.read_vectors(session, model_id, chunk)
        missing.update(i for i in chunk if i not in vectors)
        for frame_id, vector in vectors.items():
            me = candidates[frame_id]
            k = _KNN_START
            while True:
                try:
                    hits = adapter.vector_search(session, model_id=model_id, vector=vector,
                                                 where=where, limit=k)
                except ModelNotActiveError:
                    return None
                close = [(h.frame_id, 1.0 - h.score) for h in hits
                         if 1.0 - h.score > min_similarity]
                if len(close) < len(hits) or len(hits) < k or k >= _KNN_MAX:
                    break
                k *= 4  # every neighbour returned was close: there may be more
            for other_id, similarity in close:
                other = candidates.get(other_id)
                if other is None or other_id == frame_id or other.source != me.source \
                        or not other.has_vector:
                    continue
                edges.setdefault(frame_id, {})[other_id] = similarity
                edges.setdefault(other_id, {})[frame_id] = similarity
        if progress is not None:
            progress(start + len(chunk), len(candidates))
    return missing


def near_duplicates(session: Session, adapter: SearchAdapter, mind_id: int,
                    model_id: int | None, candidates: Sequence[Candidate],
                    merge_similarity: float,
                    progress: Callable[[int, int], None] | None = None) -> Edges:
    """The near-duplicate graph of these frames (see the module docstring). ``progress(done,
    total)`` is called as the frames with vectors are compared, and once at the end."""
    edges: Edges = {}
    by_id = {c.id: c for c in candidates}
    if model_id is not None and any(c.has_vector for c in candidates):
        missing = _vector_edges(session, adapter, mind_id, model_id, by_id, merge_similarity,
                                edges, progress)
        if missing is None:
            edges.clear()  # the model changed under us: compare every frame by text
        candidates = [c if missing is not None and c.id not in missing
                      else Candidate(c.id, c.source, c.text, False) for c in candidates]
    _text_edges(candidates, 1.0 - merge_similarity, edges)
    if progress is not None:
        progress(len(candidates), len(candidates))
    return edges
