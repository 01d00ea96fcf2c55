"""The match score: how well a result matches the query, the same on every backend.

Decisions that compare a score with a fixed threshold — the linker's 0.1
(:mod:`waggle_store.pipeline.linker`), CombinedRetrieval's coverage 0.7 and conflict 0.6
(:mod:`waggle_store.pipeline.combined`) — read this score, not the fused ``rrf_score``. Why:
``rrf_score`` weighs each keyword hit by its raw lane score relative to the lane's best (an idf
sum, the same formula on both dialects, but over each backend's tokenizer and stemmer) and by
its rank in that lane's order; these differed per backend (FTS5 bm25 on SQLite then), so the
same data gave different decisions (``related_frames`` of one memory differed between SQLite
and Postgres around the 0.1 threshold).
Ranking may differ per backend; a yes/no decision must not.

So the match score uses nothing a backend computes about text:

* **lexical**: the share of the query's keyword terms (:func:`~.query.keyword_terms`) that the
  frame's own text contains, computed here in Python from the content. Terms are compared
  case-folded, with a possessive ``'s`` and a plural ``s`` removed (:func:`fold_term`), a crude
  stemmer on purpose: it is the same everywhere and needs no language data, which the backends'
  stemmers (porter vs. snowball english) are not.
* **semantic**: the vector lane's confidence for the frame (:func:`~.fusion.vector_confidence`:
  how far its cosine similarity stands out from the lane's median, squared), 0 for a frame the
  lane did not return. Cosine distances are computed the same way by sqlite-vec and pgvector;
  the lane's candidates are the same as long as the KNN is exact (sqlite-vec always; pgvector's
  HNSW on the small sets where a threshold decision is made).

The match score combines the two as independent evidence, ``1 - (1 - lexical)(1 - semantic)``
(lexical only when the query has keyword terms and the keyword lane was asked for; semantic only
when the vector lane ran), in ``[0, 1]``: either kind of evidence alone can make a match, both
together make it stronger, a frame holding every query term is a full match (1.0), and a frame
with neither scores 0.0. Unlike ``rrf_score`` it does not depend on which frames a keyword index
returned, or in which order.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Collection, Mapping, Sequence
from typing import Final

from waggle_store.dialects.base import LaneHit
from waggle_store.search.fusion import vector_confidence
from waggle_store.search.query import keyword_terms, text_terms

__all__ = [
    "DIGITS", "fold_term", "lexical_coverage", "match_score", "match_scores", "match_terms",
]

_POSSESSIVE: Final = ("'s", "\u2019s")
#: Match scores are rounded to this many decimals: sqlite-vec and pgvector compute cosine
#: distances in float32 and may differ in the last bits, which must not flip a decision.
DIGITS: Final = 6


def fold_term(term: str) -> str:
    """Case-folded, possessive and plural ``s`` removed ("Apollo's" → "apollo", "leads" →
    "lead"); short words and ``-ss`` endings are kept ("bus", "class")."""
    folded = term.casefold()
    for suffix in _POSSESSIVE:
        folded = folded.removesuffix(suffix)
    if len(folded) > 3 and folded.endswith("s") and not folded.endswith("ss"):
        folded = folded[:-1]
    return folded


#: The rest of a whitespace-separated token from a position (``re``'s ``\\s`` is exactly
#: ``str.isspace``, the whitespace ``str.split`` and :func:`~.query.text_terms` split at).
_TOKEN_REST: Final = re.compile(r"\S*")


def _holds_ascii(term: str, at: int, folded: str, content: str) -> bool:
    """Whether a whitespace-separated token of ASCII ``content`` (``folded``: its case-folded
    copy, character for character) has ``term`` among its folded terms: each token containing
    ``term`` (found with ``str.find``, the first at ``at``) is split in turn, until one does.

    Not one regular expression of the terms: compiling it cost ~0.17 ms a search (every query
    is a new pattern), more than the rest of the match score."""
    while at != -1:
        start = at
        while start > 0 and not folded[start - 1].isspace():
            start -= 1
        rest = _TOKEN_REST.match(folded, at)  # always matches (maybe nothing)
        end = rest.end() if rest else at + len(term)
        if term in _token_terms(content[start:end]):
            return True
        at = folded.find(term, end)
    return False


def lexical_coverage(query_terms: Collection[str], content: str) -> float:
    """The share of ``query_terms`` (already folded) found among ``content``'s folded terms."""
    if not query_terms:
        return 0.0
    # A content term that folds to ``t`` starts with ``t`` once case-folded (folding only drops
    # suffixes, and case folding maps character by character), and a term lies within one
    # whitespace-separated token of the content: so only the tokens that contain a query term
    # (case-folded) are split into terms, and a query term is looked for only until one token
    # holds it. The result is that of splitting the whole content (the terms of a text are the
    # union of its tokens' terms); the split, the costliest part of a search's Python work, runs
    # for a few words instead of every word of every result.
    folded = content.casefold()
    if content.isascii():
        # ASCII case-folds character for character (to lower case): a token of ``folded`` sits
        # at the same offsets as its original in ``content``.
        found = 0
        for term in query_terms:
            at = folded.find(term) if term else -1  # (no text term is empty)
            if at != -1 and _holds_ascii(term, at, folded, content):
                found += 1
        return found / len(query_terms)
    if not any(t in folded for t in query_terms):
        return 0.0
    terms: set[str] = set()
    for token in content.split():
        if any(t in token.casefold() for t in query_terms):
            terms.update(_token_terms(token))
    return sum(1 for t in query_terms if t in terms) / len(query_terms)


@functools.lru_cache(maxsize=4096)
def _token_terms(token: str) -> frozenset[str]:
    """The folded terms of one whitespace-separated token. Memoised (a pure function of the
    token): the tokens a search splits are those holding a query term, mostly the query's own
    words again and again, and splitting one costs ~4 µs."""
    return frozenset(fold_term(t) for t in text_terms(token))


def match_terms(query: str, *, keyword: bool, terms: Sequence[str] | None = None) -> set[str]:
    """The folded keyword terms of ``query`` that the lexical part counts (none when the keyword
    lane was not asked for); ``terms``: its :func:`~.query.keyword_terms` when the caller has
    them already (a search's plan)."""
    if not keyword:
        return set()
    return {fold_term(t) for t in (keyword_terms(query) if terms is None else terms)}


def match_score(terms: Collection[str], content: str, semantic: float) -> float:
    """One frame's match score: ``terms`` from :func:`match_terms`, ``semantic`` its vector
    confidence (0.0 when the vector lane did not return it or did not run)."""
    return round(1.0 - (1.0 - lexical_coverage(terms, content)) * (1.0 - semantic), DIGITS)


def match_scores(query: str, *, keyword: bool, vector_hits: Sequence[LaneHit] | None,
                 contents: Mapping[int, str]) -> dict[int, float]:
    """The match score of each frame in ``contents`` (id → text) for ``query``.

    ``keyword``: the keyword lane was asked for (its terms count); ``vector_hits``: the vector
    lane's hits, nearest first, or None when it did not run. (A search reads each frame's vector
    confidence from its fusion instead, where it was computed already: :func:`match_score`.)
    """
    terms = match_terms(query, keyword=keyword)
    semantic: dict[int, float] = {}
    if vector_hits is not None:
        confidences = vector_confidence([h.score for h in vector_hits])
        for hit, confidence in zip(vector_hits, confidences, strict=True):
            semantic.setdefault(hit.frame_id, confidence)
    return {frame_id: match_score(terms, content, semantic.get(frame_id, 0.0))
            for frame_id, content in contents.items()}
