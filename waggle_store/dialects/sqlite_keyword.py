"""The SQLite keyword lane's statements over FTS5: the idf sum of
:mod:`~waggle_store.dialects.keyword_rank`, the Postgres lane's formula (see
:meth:`~waggle_store.dialects.sqlite.SQLiteAdapter.keyword_search`)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Final

from waggle_store.dialects.base import T_FRAMES, T_FTS, Executor, LaneFilter
from waggle_store.dialects.common import (
    clean_term,
    frame_filters,
    frame_select,
    passes_column,
    run_lane,
)
from waggle_store.dialects.context_index import CONTEXT_COLUMN
from waggle_store.dialects.keyword_rank import (
    FrameCounts,
    only_stop_words,
    ranked_page_sql,
    score_sql,
    shortest_page_sql,
    walk_parts,
    weights_sql,
)

#: Query terms per integer bit mask of the keyword lane (two bits a term; 62 of a signed 64-bit
#: integer's bits, so a sum of distinct bits never overflows).
TERMS_PER_MASK: Final = 31
def fts5_phrases(terms: Sequence[str]) -> list[str]:
    """The keyword lane's FTS5 query strings, one per term (each bound as a ``MATCH`` value);
    empty: skip the lane (FTS5 rejects an empty expression).

    Raw query text never reaches ``MATCH``: each term is one quoted string, and inside FTS5
    double quotes every character is literal except ``"`` itself, written ``""``, so
    ``AND``/``OR``/``NOT``/``NEAR``, ``*``, ``^``, ``:`` and parentheses lose their meaning. The
    quoted text is tokenised like the indexed content (``porter unicode61``), so "node.js"
    becomes the phrase ``node js``. A term of Postgres stop words only is dropped
    (:func:`~waggle_store.dialects.keyword_rank.only_stop_words`): the Postgres lane finds
    nothing for it, and the two lanes rank alike.
    """
    return [
        '"' + clean.replace('"', '""') + '"'
        for clean in map(clean_term, terms)
        if clean and not only_stop_words(clean)
    ]


def fts5_match_expression(terms: Sequence[str]) -> str | None:
    """The lane's terms as one FTS5 ``MATCH`` string (:func:`fts5_phrases` ORed; ``None`` for
    no terms): what finds every frame matching any term, for a caller that does not rank."""
    phrases = fts5_phrases(terms)
    return " OR ".join(phrases) if phrases else None


#: In a query of common terms only, terms that this share of the searched frames hold (all of
#: them: the product of their shares) are looked up per walked frame; rarer ones' lists are read
#: first
#: (:meth:`SQLiteAdapter._shortest_rows`; at 100k frames, a word in 28 % of them: 10 against
#: 13 ms; in 9 %: 72 against 4 ms).
PROBE_SHARE: Final = 1 / 4

#: A frame's length for the keyword lane's tie order, in UTF-8 bytes as on Postgres
#: (``keyword_rank``): a BLOB's length is its size; a TEXT's is counted character by character.
TEXT_BYTES: Final = ("length(CAST(f.content AS BLOB)) "
                     f"+ coalesce(length(CAST(f.{CONTEXT_COLUMN} AS BLOB)), 0)")



def keyword_statement(frame_counts: FrameCounts, session: Executor, phrases: Sequence[str],
                      where: LaneFilter, limit: int, common: Mapping[int, int]
                      ) -> tuple[list[Any], bool]:
    """The lane's statement (see :meth:`keyword_search`): its rows and whether it counted
    ``N``. Its candidates are the frames holding a term not in ``common`` (terms known to be
    common, with their ``df``: :class:`~waggle_store.dialects.keyword_rank.TermCounts`),
    whose (term, column) queries are asked of those candidates only."""
    params: dict[str, Any] = {"limit": int(limit)}
    n = range(len(phrases))
    for i, phrase in enumerate(phrases):
        params[f"t{i}"] = phrase
    minds = frame_filters(LaneFilter(where.mind_ids), params)
    filters = frame_filters(where, params, alias="c", dialect="sqlite", attributes="column")
    passes = passes_column(where, params, "sqlite")
    # Which (term, column) pairs a frame matched, as bits: term i sets bit 2i in the own words
    # and 2i + 1 in the context, in integer k = i // TERMS_PER_MASK. A frame is returned at
    # most once per (term, column) query, so the sum of its rows' bits is their OR, and one
    # aggregate per mask replaces two per term (a third of the statement's time at 100k).
    masks = range((len(phrases) + TERMS_PER_MASK - 1) // TERMS_PER_MASK)

    def bit(i: int, context: int) -> int:
        return 1 << (2 * (i % TERMS_PER_MASK) + context)

    def mask(i: int) -> str:
        return f"c.b{i // TERMS_PER_MASK}"

    def pairs(terms: Sequence[int], among: str = "") -> str:
        return " UNION ALL ".join(
            "SELECT rowid AS id, "
            + ", ".join(f"{bit(i, context) if k == i // TERMS_PER_MASK else 0} AS b{k}"
                        for k in masks)
            + f" FROM {T_FTS} WHERE {T_FTS}.{column} MATCH :t{i}{among}"
            for i in terms
            for context, column in enumerate(("content", "context"))
        )

    generating, matches = "", pairs([i for i in n if i not in common])
    if common:
        # The common terms' pairs only for the frames found by the others: FTS5 reads the
        # term's list through and SQLite keeps the candidates' rowids. ``+`` keeps the
        # rowids from FTS5 itself, which would look each one up in the list: ~23 µs a
        # lookup against ~45 ns an entry read through (16 ms against 8 for 718 candidates
        # and a list of 87k at 100k frames).
        generating = f"r AS MATERIALIZED ({matches}), "
        matches = (f"SELECT * FROM r UNION ALL "
                   f"{pairs(sorted(common), ' AND +rowid IN (SELECT id FROM r)')}")
    sums = ", ".join(f"sum(m.b{k}) AS b{k}" for k in masks)
    anywhere = [f"({mask(i)} & {bit(i, 0) | bit(i, 1)}) != 0" for i in n]
    counts = []
    for i, a in enumerate(anywhere):
        count = f"sum({a})"
        if i in common:  # counted among the candidates only: its known df, at least that
            params[f"df{i}"] = common[i]
            count = f"max(:df{i}, {count})"
        counts.append(f"{count} AS d{i}")
    total, counting = frame_counts.total_sql(where.mind_ids, minds, params, "max")
    score = score_sql(
        [f"w.w{i}" for i in n], [f"({mask(i)} & {bit(i, 0)}) != 0" for i in n], anywhere
    )
    # g groups the matches per frame before the frames are read; CROSS JOIN keeps g the outer
    # loop (one primary-key probe per candidate: the planner otherwise walked the whole
    # mind's mind_id index, 2x slower at 100k frames). The page's frames are read after the
    # LIMIT, so the sort carries ids, not contents.
    rows = run_lane(
        session,
        f"WITH {generating}m AS MATERIALIZED ({matches}), "
        f"g AS MATERIALIZED (SELECT m.id, {sums} FROM m GROUP BY m.id), "
        f"c AS MATERIALIZED (SELECT g.*, f.mind_id, f.gop_id, f.created_at, "
        f"{TEXT_BYTES} AS len{passes} "
        f"FROM g CROSS JOIN {T_FRAMES} f ON f.id = g.id WHERE {minds}), "
        f"w AS MATERIALIZED ("
        + weights_sql(f"SELECT {total} AS n, {', '.join(counts)} FROM c", len(phrases),
                      common)
        + ") "
        + ranked_page_sql(score, filters, frame_select(), len(phrases)),
        params,
    )
    return rows, counting


def shortest_statement(frame_counts: FrameCounts, session: Executor, phrases: Sequence[str],
                       where: LaneFilter, limit: int, dfs: Mapping[int, int]
                       ) -> tuple[list[Any], bool]:
    """The page of a query of common terms only (``dfs``: each one's known ``df``), walked
    shortest first (:func:`~waggle_store.dialects.keyword_rank.shortest_page_sql`): its rows
    and whether it counted ``N``.

    Each walked frame is tested against each term's own-words list in one of two ways.
    Terms most frames hold (together, :data:`PROBE_SHARE` of them or more) are looked up in
    their lists for the walked frame (``rowid =``), and the walk ends after about as many
    frames as its page; rarer ones' lists are read into sets first, as their walk is longer
    and a lookup costs far more than an entry read through."""
    walk = walk_parts(frame_counts, where, phrases, dfs, limit, dialect="sqlite")
    # (Terms taken as independent: the share holding them all is their shares' product.)
    probe = walk.n is not None and math.prod(df / walk.n for df in dfs.values()) >= PROBE_SHARE
    holds = " AND ".join(
        f"EXISTS (SELECT 1 FROM {T_FTS} x WHERE x.content MATCH :t{i} AND x.rowid = f.id)"
        if probe else f"f.id IN (SELECT rowid FROM {T_FTS} x WHERE x.content MATCH :t{i})"
        for i in range(len(phrases))
    )
    # The walk in the index's order, bounded by the length of the mind's :walk-th shortest
    # frame (read off the same index, which holds the length: no frame is read for it).
    bound = (f"(SELECT max(s.len) FROM (SELECT {TEXT_BYTES} AS len FROM {T_FRAMES} f "
             f"WHERE {walk.minds} ORDER BY {TEXT_BYTES} LIMIT :walk) s)")
    walked = (f"SELECT f.id, {TEXT_BYTES} AS len FROM {T_FRAMES} f WHERE {walk.filters} "
              f"AND {TEXT_BYTES} <= {bound} AND {holds} ORDER BY {TEXT_BYTES}, f.id "
              "LIMIT :limit")
    dfs_sql = [f":df{i}" for i in range(len(phrases))]
    counted = (f"SELECT max({walk.total}, {', '.join(dfs_sql)}) AS n, "
               + ", ".join(f"{df} AS d{i}" for i, df in enumerate(dfs_sql)))
    rows = run_lane(session, shortest_page_sql(counted, len(phrases), walked), walk.params)
    return rows, walk.counting
