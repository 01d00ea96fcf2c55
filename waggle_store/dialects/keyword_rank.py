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
the rest of the search, so the last count is reused for
:data:`FRAME_COUNT_TTL` seconds (:class:`FrameCounts`; idf moves with ``ln N``: frames added
meanwhile shift every term's weight alike and by a hair) and never taken below the number of
frames matching a term. A store that owns its connections goes on using an expired count and has
it recounted on a thread of its own (:meth:`FrameCounts.due`, ``search/engine.py``): an agent
searches now and then, and every search more than a minute after the last would otherwise pay
the count.

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

import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from waggle_store.dialects.base import T_FRAMES, Executor, LaneFilter
from waggle_store.dialects.common import frame_filters, run_lane
from waggle_store.dialects.keyword_sql import idf_sql as idf_sql
from waggle_store.dialects.keyword_sql import ranked_page_sql as ranked_page_sql
from waggle_store.dialects.keyword_sql import score_sql as score_sql
from waggle_store.dialects.keyword_sql import shortest_page_sql as shortest_page_sql
from waggle_store.dialects.keyword_sql import weights_sql as weights_sql
from waggle_store.dialects.stop_words import (
    POSTGRES_ENGLISH_STOP_WORDS as POSTGRES_ENGLISH_STOP_WORDS,
)
from waggle_store.dialects.stop_words import only_stop_words as only_stop_words

_K = TypeVar("_K")

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
    """``N``: the frames of the minds (``minds``: their filter on ``f``), as every count of it
    is made — inside a keyword statement or alone (:meth:`FrameCounts.recount`)."""
    return f"SELECT count(*) FROM {T_FRAMES} f WHERE {minds}"


def count_frames(executor: Executor, mind_ids: Sequence[int], holding: str = "",
                 term: str = "") -> int:
    """The frames of the minds, or (``holding``: the dialect's condition on ``f`` that a frame
    holds the term bound as ``:t``) those holding ``term``."""
    params: dict[str, Any] = {"t": term} if holding else {}
    minds = frame_filters(LaneFilter(tuple(mind_ids)), params)
    if holding:
        minds = f"{holding} AND {minds}"
    rows = run_lane(executor, _count_sql(minds), params)
    return int(rows[0][0])


def _claim(recounting: dict[_K, tuple[int, float]], key: _K, now: float) -> bool:
    """Claim the recount of ``key`` unless this process claimed it less than
    :data:`FRAME_COUNT_TTL` ago (a recount that never ended does not block the next; a forked
    child has not the parent's threads, so the parent's claims are not its own)."""
    claim = recounting.get(key)
    if claim is not None and claim[0] == os.getpid() and now - claim[1] < FRAME_COUNT_TTL:
        return False
    recounting[key] = (os.getpid(), now)
    return True


class FrameCounts:
    """The last count of each set of searched minds' frames at or above
    :data:`FRAME_COUNT_EXACT_BELOW`, reused for :data:`FRAME_COUNT_TTL` seconds (an adapter
    keeps one) — or, where the caller recounts off the search's way (:meth:`due`,
    :meth:`recount`), for as long as that takes.

    No lock: each method reads or writes one dict entry (atomic under the GIL); two searches that
    both find a count due may both recount it, which costs a count and changes nothing."""

    def __init__(self) -> None:
        self._known: dict[tuple[int, ...], tuple[int, float]] = {}
        #: Counts being recounted: by which process (a forked child has not the parent's
        #: threads) and since when (a recount that never ended does not block the next).
        self._recounting: dict[tuple[int, ...], tuple[int, float]] = {}

    def reusable(self, mind_ids: Sequence[int], *, expired: bool = False) -> int | None:
        """A count that may stand for ``N`` — fresh, or any known one with ``expired`` — or None:
        count in the statement."""
        known = self._known.get(tuple(mind_ids))
        if known is not None and (expired or time.monotonic() - known[1] < FRAME_COUNT_TTL):
            return known[0]
        return None

    def counted(self, mind_ids: Sequence[int], n: int) -> None:
        """A statement counted ``n`` frames: remember it if counting is costly at that size."""
        key = tuple(mind_ids)
        self._recounting.pop(key, None)
        if n >= FRAME_COUNT_EXACT_BELOW:
            self._known[key] = (n, time.monotonic())
        else:
            self._known.pop(key, None)

    def due(self, mind_ids: Sequence[int]) -> bool:
        """Whether the minds' count is known but expired and nobody recounts it; True claims the
        recount: the caller must end it with :meth:`recount` (or :meth:`forget` if it fails)."""
        key, now = tuple(mind_ids), time.monotonic()
        known = self._known.get(key)
        if known is None or now - known[1] < FRAME_COUNT_TTL:
            return False
        return _claim(self._recounting, key, now)

    def recount(self, executor: Executor, mind_ids: Sequence[int]) -> None:
        """Count the minds' frames on ``executor`` (the statement's own count, alone)."""
        self.counted(mind_ids, count_frames(executor, mind_ids))

    def forget(self, mind_ids: Sequence[int]) -> None:
        """Drop the minds' count (a recount failed): the next search counts in its statement."""
        key = tuple(mind_ids)
        self._known.pop(key, None)
        self._recounting.pop(key, None)

    def total_sql(self, mind_ids: Sequence[int], count_minds: str, params: dict[str, object],
                  greatest: str, *, expired: bool = False) -> tuple[str, bool]:
        """The SQL for ``N`` — a fresh count (``count_minds``: the filter on the minds' frames) or
        the reused one (``expired``: even an expired one, see :meth:`reusable`), bound as ``:n``
        and never below the candidates' ``count(*)`` (``greatest``: the dialect's two-argument
        maximum) — and whether the statement counts (so its ``N`` should be passed to
        :meth:`counted`)."""
        known = self.reusable(mind_ids, expired=expired)
        if known is None:
            return f"({_count_sql(count_minds)})", True
        params["n"] = known
        return f"{greatest}(:n, count(*))", False


class TermCounts:
    """The ``df`` of each *common* query term (one that at least :data:`COMMON_TERM_FRAMES`
    frames of the searched minds hold, and :data:`COMMON_TERM_SHARE` of them) as the last
    statement that counted it found, reused for :data:`FRAME_COUNT_TTL` seconds — or, where the
    caller recounts off the search's way (:meth:`due`), for as long as that takes, as
    :class:`FrameCounts` does for ``N`` (an adapter keeps one).

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
        #: Expired counts a statement used, for :meth:`due` to hand out for recounting.
        self._stale: set[tuple[tuple[int, ...], str]] = set()
        #: Counts being recounted: by which process and since when (as in :class:`FrameCounts`).
        self._recounting: dict[tuple[tuple[int, ...], str], tuple[int, float]] = {}

    def common(self, mind_ids: Sequence[int], terms: Sequence[str], *,
               expired: bool = False) -> dict[int, int]:
        """The position and known ``df`` of each of ``terms`` known to be common — fresh, or
        any known one with ``expired`` (then it is due for a recount: :meth:`due`); every term
        when all are (then no term finds candidates: :func:`shortest_page_sql`)."""
        key, now = tuple(mind_ids), time.monotonic()
        found: dict[int, int] = {}
        stale: list[tuple[tuple[int, ...], str]] = []
        for i, term in enumerate(terms):
            known = self._known.get((key, term))
            if known is None:
                continue
            if now - known[2] >= FRAME_COUNT_TTL:
                if not expired:
                    continue
                stale.append((key, term))
            found[i] = known[0]
        self._stale.update(stale)
        return found

    def counted(self, mind_ids: Sequence[int], terms: Sequence[str], dfs: Sequence[int],
                common: Mapping[int, int], n: int) -> None:
        """A statement counted ``dfs`` of ``n`` frames: remember the common terms among those it
        counted in full (not the ``common`` ones it took from here, counted among the candidates
        only)."""
        for i, (term, df) in enumerate(zip(terms, dfs, strict=True)):
            if i not in common:
                self.recounted(mind_ids, term, df, n)

    def due(self) -> list[tuple[tuple[int, ...], str]]:
        """The (minds, term) counts that statements used expired and nobody recounts; the
        caller claims them and must end each with :meth:`recounted` (or :meth:`forget`)."""
        claimed = []
        now = time.monotonic()
        while self._stale:
            try:
                item = self._stale.pop()
            except KeyError:  # another thread took the last one
                break
            if _claim(self._recounting, item, now):
                claimed.append(item)
        return claimed

    def recounted(self, mind_ids: Sequence[int], term: str, df: int,
                  n: int | None = None) -> None:
        """``df`` of ``n`` frames of the minds hold ``term`` (``n`` None: as many as when it was
        last counted): remember it if the term is common."""
        key = (tuple(mind_ids), term)
        self._recounting.pop(key, None)
        if n is None:
            known = self._known.get(key)
            n = known[1] if known is not None else df
        if df >= max(COMMON_TERM_FRAMES, COMMON_TERM_SHARE * n):
            if len(self._known) > 4096:  # a few names and words per mind; never grow unbounded
                self._known.clear()
            self._known[key] = (df, n, time.monotonic())
        else:
            self._known.pop(key, None)

    def forget(self, mind_ids: Sequence[int], term: str) -> None:
        """Drop a count (its recount failed): the next statement counts the term in full."""
        key = (tuple(mind_ids), term)
        self._known.pop(key, None)
        self._recounting.pop(key, None)


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
               dfs: Mapping[int, int], limit: int, *, expired: bool = False,
               dialect: str | None = None) -> Walk:
    """:class:`Walk` of a query of common ``terms`` (``dfs``: their known ``df``) for a page of
    ``limit``; ``N`` is the reused count (``expired``: even an expired one) or counted by the
    statement (a statement without candidates has none to count it among)."""
    params: dict[str, Any] = {"limit": int(limit), "walk": SHORTEST_WALK * int(limit)}
    for i, term in enumerate(terms):
        params[f"t{i}"] = term
    for i, df in dfs.items():
        params[f"df{i}"] = df
    minds = frame_filters(LaneFilter(where.mind_ids), params)
    filters = frame_filters(where, params, dialect=dialect)
    known = frame_counts.reusable(where.mind_ids, expired=expired)
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
                 terms: Sequence[str], limit: int, *, expired: bool = False) -> list[Any]:
    """The keyword lane's rows on both dialects: ``statement(common)`` runs the adapter's
    statement with the known common terms (position -> ``df``; empty: every term finds
    candidates) and says whether it counted ``N``; a pruned page that does not hold
    (:func:`page_holds`) is ranked again by the whole lane. When every term is known common and
    one mind is searched, ``shortest(common)`` walks for the page first
    (:func:`shortest_page_sql`); a page it does not fill is ranked by the whole lane. The counts
    the statements made are remembered (``expired``: known counts may be used expired; see
    :class:`TermCounts`)."""
    common = term_counts.common(mind_ids, terms, expired=expired)
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
