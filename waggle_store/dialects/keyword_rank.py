"""The keyword lane's ranking, one formula on both dialects: the sum of the idf of the query
terms a frame matches.

Each term ``t`` weighs ``idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5))`` (Lucene's BM25 idf,
always > 0). ``N`` is the number of frames of the searched minds; ``df`` the number of those frames
holding ``t`` in their own words or in their context (the preceding turn, ``context_index``),
counted before the session/time filters so that a filter does not change a term's rarity. A
frame scores ``idf(t)`` for each term in its own words and :data:`CONTEXT_WEIGHT` ``× idf(t)``
for each term found only in its context. Term frequency and length are BM25 with ``k1 = 0``: a
term counts once, and among frames with the same score the shorter one goes first (the length of
the content plus the context, in UTF-8 bytes), then the lower id. The score is positive, bigger
is better. Bytes, not characters: both databases know a text's byte length without reading it
through (``octet_length``; a BLOB's length in SQLite), while counting characters walks every
candidate's text. The order differs only among tied frames of non-ASCII text.

Why one formula: a mind exported from one dialect and imported into the other must search the
same. SQLite's FTS5 ``bm25()`` (BM25F over the two columns) and Postgres's tsvector
ranking cannot be made to agree, but both backends can say *which* frames match a term in which
column, and the rest is arithmetic each does in SQL with the same IEEE operations in the same
order. Why this formula rather than bm25: ``ts_rank_cd`` has no term rarity, and
``k1 = 1.2, b = 0.75`` ranks no better than ``k1 = 0`` on conversation memories, whose frames are
single turns or notes, where a repeated term is rare.

The tokenizers still differ: Postgres's ``english`` configuration drops its stop words from the
query and the documents, FTS5's ``porter unicode61`` keeps every word. A query term made only of
those stop words ("down", "after", "she") matches nothing on Postgres, so the SQLite lane drops it
too (:func:`only_stop_words`); otherwise it would add a small idf to most frames and reorder them.
What remains different is the stemmer (Porter vs Snowball English) and how punctuated tokens are
split, which changes which frames match a term only for rare words.

``N`` is counted by the lane's statement (an index-only scan of the minds' frames) while the
minds hold fewer than :data:`FRAME_COUNT_EXACT_BELOW` frames; above that the count costs more than
the rest of the search, so the last count is reused for :data:`FRAME_COUNT_TTL` seconds
(:class:`FrameCounts`; idf moves with ``ln N``: frames added meanwhile shift every term's weight
alike and by a hair) and never taken below the number of frames matching a term. Once it has
expired, the next search's statement counts again, on the searching thread, and its count is
kept for the searches after it.

A *common* term's ``df`` (one that a sixteenth of the frames and at least
:data:`COMMON_TERM_FRAMES` hold: a speaker's name, a word the mind says all the time) is reused
the same way (:class:`TermCounts`), and with it known the lane reads only the frames holding the
query's other terms, then checks that no frame holding only common terms could be on its page
(else it reads them all): a query's cost follows its rarer terms, not the most common one. A
query made *only* of common terms (a speaker's name alone) has no rarer term: every frame holding
them all in its own words scores the same most a frame can, so its page is the shortest of those
frames, which the lane finds walking the mind's frames shortest first (:func:`shortest_page_sql`,
an index on the length: migration 0008) instead of reading and sorting every frame holding them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from waggle_store.dialects.base import T_FRAMES, LaneFilter
from waggle_store.dialects.common import frame_filters
from waggle_store.dialects.keyword_sql import idf_sql as idf_sql
from waggle_store.dialects.keyword_sql import ranked_page_sql as ranked_page_sql
from waggle_store.dialects.keyword_sql import score_sql as score_sql
from waggle_store.dialects.keyword_sql import shortest_page_sql as shortest_page_sql
from waggle_store.dialects.keyword_sql import weights_sql as weights_sql
from waggle_store.dialects.stop_words import (
    POSTGRES_ENGLISH_STOP_WORDS as POSTGRES_ENGLISH_STOP_WORDS,
)
from waggle_store.dialects.stop_words import only_stop_words as only_stop_words

#: Below this many frames in the searched minds, every keyword statement counts them (idf's N).
FRAME_COUNT_EXACT_BELOW: Final = 5000
#: How long a count of a larger set of minds is reused.
FRAME_COUNT_TTL: Final = 60.0
#: A query term at least this many frames of the searched minds hold, and at least
#: :data:`COMMON_TERM_SHARE` of them, is *common* (:class:`TermCounts`). Fewer frames: reading
#: them costs the lane little. The share: a common term's weight (its idf) must stay below what
#: the frames holding the query's rarer terms score, or the page found without its frames is not
#: kept and the lane runs twice. A term in a sixteenth of the frames or more weighs at most
#: ``ln 16`` ≈ 2.8, under what a frame holding a term of fewer than 1 in 250 frames scores
#: (≥ 5.5).
COMMON_TERM_FRAMES: Final = 1000
COMMON_TERM_SHARE: Final = 1 / 16
#: A query of common terms only walks at most this many times its page's frames, shortest first,
#: for the frames holding them all (:func:`shortest_page_sql`). A common term is in a sixteenth
#: of the frames or more (its ``df`` counts a frame holding it only in its context, the frame
#: before one holding it: at least a thirty-second hold it in their own words), so one term's walk
#: expects at least twice its page; fewer found (rarer combinations of terms, a narrow filter)
#: and the whole lane runs after the walk.
SHORTEST_WALK: Final = 64

def _count_sql(minds: str) -> str:
    """``N``: the frames of the minds (``minds``: their filter on ``f``), as a keyword statement
    counts it."""
    return f"SELECT count(*) FROM {T_FRAMES} f WHERE {minds}"


def _fresh(at: float) -> bool:
    """Whether a count made at ``at`` (``time.monotonic()``) may still be reused."""
    return time.monotonic() - at < FRAME_COUNT_TTL


class FrameCounts:
    """The last count of each set of searched minds' frames at or above
    :data:`FRAME_COUNT_EXACT_BELOW`, reused for :data:`FRAME_COUNT_TTL` seconds (an adapter
    keeps one); an expired one is counted again by the next statement, which remembers it.

    No lock: each method reads or writes one dict entry (atomic under the GIL); two searches that
    both find a count expired both count, which costs a count and changes nothing."""

    def __init__(self) -> None:
        self._known: dict[tuple[int, ...], tuple[int, float]] = {}

    def reusable(self, mind_ids: Sequence[int]) -> int | None:
        """A fresh count that may stand for ``N``, or None: count in the statement."""
        known = self._known.get(tuple(mind_ids))
        if known is not None and _fresh(known[1]):
            return known[0]
        return None

    def counted(self, mind_ids: Sequence[int], n: int) -> None:
        """A statement counted ``n`` frames: remember it if counting is costly at that size."""
        key = tuple(mind_ids)
        if n >= FRAME_COUNT_EXACT_BELOW:
            self._known[key] = (n, time.monotonic())
        else:
            self._known.pop(key, None)

    def total_sql(self, mind_ids: Sequence[int], count_minds: str, params: dict[str, object],
                  greatest: str) -> tuple[str, bool]:
        """The SQL for ``N`` — a count (``count_minds``: the filter on the minds' frames) or the
        reused one (:meth:`reusable`), bound as ``:n`` and never below the candidates'
        ``count(*)`` (``greatest``: the dialect's two-argument maximum) — and whether the
        statement counts (so its ``N`` should be passed to :meth:`counted`)."""
        known = self.reusable(mind_ids)
        if known is None:
            return f"({_count_sql(count_minds)})", True
        params["n"] = known
        return f"{greatest}(:n, count(*))", False


class TermCounts:
    """The ``df`` of each *common* query term (one that at least :data:`COMMON_TERM_FRAMES`
    frames of the searched minds hold, and :data:`COMMON_TERM_SHARE` of them) as the last
    statement that counted it found, reused for :data:`FRAME_COUNT_TTL` seconds as
    :class:`FrameCounts` reuses ``N`` (an adapter keeps one); an expired one is not used, so the
    next statement counts the term in full and remembers it again.

    Why: a query holding such a term (a speaker's name, in half a conversation's frames; a word
    the mind says all the time) would make the lane read every frame holding it, to count its
    ``df`` and score those frames: a cost that follows the most common term. With its ``df``
    known, the lane runs as MaxScore does: its candidates are the frames holding any *other*
    term, and the common terms only add their weight to those. A frame holding only common
    terms scores at most the sum of their weights (``ub``); if the page so ranked is full and
    its last score is above ``ub`` (:func:`page_holds`), no such frame could be on it, and the
    page is the one the whole lane gives (the same frames, scores and order). Else the
    statement runs again over every frame holding any term. A known ``df`` is never taken below
    the candidates holding the term, and goes stale as ``N`` does (frames added or forgotten
    meanwhile move a common term's weight by a hair).

    No lock, as :class:`FrameCounts`."""

    def __init__(self) -> None:
        #: (minds, term) -> (df, N when counted, when).
        self._known: dict[tuple[tuple[int, ...], str], tuple[int, int, float]] = {}

    def common(self, mind_ids: Sequence[int], terms: Sequence[str]) -> dict[int, int]:
        """The position and fresh ``df`` of each of ``terms`` known to be common; every term
        when all are (then no term finds candidates: :func:`shortest_page_sql`)."""
        key = tuple(mind_ids)
        found: dict[int, int] = {}
        for i, term in enumerate(terms):
            known = self._known.get((key, term))
            if known is not None and _fresh(known[2]):
                found[i] = known[0]
        return found

    def counted(self, mind_ids: Sequence[int], terms: Sequence[str], dfs: Sequence[int],
                common: Mapping[int, int], n: int) -> None:
        """A statement counted ``dfs`` of ``n`` frames: remember the common terms among those it
        counted in full (not the ``common`` ones it took from here, counted among the candidates
        only); forget a term no longer common."""
        for i, (term, df) in enumerate(zip(terms, dfs, strict=True)):
            if i in common:
                continue
            key = (tuple(mind_ids), term)
            if df >= max(COMMON_TERM_FRAMES, COMMON_TERM_SHARE * n):
                if len(self._known) > 4096:  # a few names and words per mind: never unbounded
                    self._known.clear()
                self._known[key] = (df, n, time.monotonic())
            else:
                self._known.pop(key, None)


@dataclass
class Walk:
    """The parts of a walk's statement (:func:`shortest_page_sql`) both adapters share."""

    #: The binds: ``:limit``, ``:walk``, each term as ``:t<i>``, its known ``df`` as
    #: ``:df<i>``, the minds and filters, and ``:n`` when the frame count is known.
    params: dict[str, Any]
    minds: str  # the mind filter on ``f``
    filters: str  # that and the session/time filters on ``f``
    total: str  # ``N``: ``:n``, or a count of the minds' frames
    counting: bool  # whether the statement counts ``N``
    n: int | None  # the known ``N``


def walk_parts(frame_counts: FrameCounts, where: LaneFilter, terms: Sequence[str],
               dfs: Mapping[int, int], limit: int, *, dialect: str | None = None) -> Walk:
    """:class:`Walk` of a query of common ``terms`` (``dfs``: their known ``df``) for a page of
    ``limit``; ``N`` is the reused count or counted by the statement (a statement without
    candidates has none to count it among)."""
    params: dict[str, Any] = {"limit": int(limit), "walk": SHORTEST_WALK * int(limit)}
    for i, term in enumerate(terms):
        params[f"t{i}"] = term
    for i, df in dfs.items():
        params[f"df{i}"] = df
    minds = frame_filters(LaneFilter(where.mind_ids), params)
    filters = frame_filters(where, params, dialect=dialect)
    known = frame_counts.reusable(where.mind_ids)
    if known is None:
        return Walk(params, minds, filters, f"({_count_sql(minds)})", True, None)
    params["n"] = known
    return Walk(params, minds, filters, ":n", False, known)


def lane_tail(row: Sequence[Any], terms: int) -> tuple[int, list[int], float]:
    """``N``, the terms' ``df`` and ``ub`` that end a row of :func:`ranked_page_sql`."""
    return int(row[-2 - terms]), [int(d) for d in row[-1 - terms:-1]], float(row[-1])


def keyword_rows(statement: Callable[[Mapping[int, int]], tuple[list[Any], bool]],
                 shortest: Callable[[Mapping[int, int]], tuple[list[Any], bool]],
                 frame_counts: FrameCounts, term_counts: TermCounts, mind_ids: Sequence[int],
                 terms: Sequence[str], limit: int) -> list[Any]:
    """The keyword lane's rows on both dialects: ``statement(common)`` runs the adapter's
    statement with the known common terms (position -> ``df``; empty: every term finds
    candidates) and says whether it counted ``N``; a pruned page that does not hold
    (:func:`page_holds`) is ranked again by the whole lane. When every term is known common and
    one mind is searched, ``shortest(common)`` walks for the page first
    (:func:`shortest_page_sql`); a page it does not fill is ranked by the whole lane. The counts
    the statements made are remembered (:class:`FrameCounts`, :class:`TermCounts`)."""
    common = term_counts.common(mind_ids, terms)
    if len(common) == len(terms):
        if len(mind_ids) == 1:
            rows, counting = shortest(common)
            if len(rows) >= limit:
                if counting:
                    frame_counts.counted(mind_ids, lane_tail(rows[0], len(terms))[0])
                return rows
        common = {}  # no term to find candidates by: the whole lane
    rows, counting = statement(common)
    if common and not page_holds(rows, limit):
        common = {}
        rows, counting = statement(common)
    if rows:
        n, dfs, _ = lane_tail(rows[0], len(terms))
        if counting:
            frame_counts.counted(mind_ids, n)
        term_counts.counted(mind_ids, terms, dfs, common, n)
    return rows


def page_holds(rows: Sequence[Any], limit: int) -> bool:
    """Whether a page ranked among the frames holding a term other than the common ones is the
    page of all the frames that hold any term: it is full and its last score is above ``ub``,
    which no frame holding only common terms can exceed (:class:`TermCounts`)."""
    return len(rows) >= limit and float(rows[limit - 1][1]) > float(rows[0][-1])
