"""The PostgreSQL keyword lane's statements over the generated tsvectors: the idf sum of
:mod:`~waggle_store.dialects.keyword_rank`, the SQLite lane's formula (see
:meth:`~waggle_store.dialects.postgres.PostgresAdapter.keyword_search`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from waggle_store.dialects.base import T_FRAMES, Executor, LaneFilter
from waggle_store.dialects.common import (
    clean_term,
    frame_filters,
    frame_select,
    passes_column,
    run_lane,
)
from waggle_store.dialects.keyword_rank import (
    FrameCounts,
    ranked_page_sql,
    score_sql,
    shortest_page_sql,
    walk_parts,
    weights_sql,
)


def tsquery_terms(terms: Sequence[str]) -> list[str]:
    """The values the keyword lane binds, one per term; empty: skip the lane.

    Each becomes ``plainto_tsquery('english', :tN)``, ORed with ``||``. ``plainto_tsquery``
    accepts any text without a syntax error (unlike ``to_tsquery``) and parses it with the
    parser and dictionary of the generated ``tsvector``, ANDing the lexemes of one term:
    "e-mail" → ``'e-mail' & 'e' & 'mail'``, "node.js" → ``'node.js'``, what ``to_tsvector``
    stored. A term of only stop words ("what's") yields an empty tsquery, which ``||`` ignores.
    """
    return [clean for clean in map(clean_term, terms) if clean]


#: A frame's length for the keyword lane's tie order, in bytes (``keyword_rank``: no character
#: count walks the text).
TEXT_BYTES: Final = "octet_length(f.content) + coalesce(octet_length(f.search_context), 0)"



def keyword_statement(frame_counts: FrameCounts, session: Executor, values: Sequence[str],
                      where: LaneFilter, limit: int, common: Mapping[int, int]
                      ) -> tuple[list[Any], bool]:
    """The lane's statement (see :meth:`keyword_search`): its rows and whether it counted
    ``N``. Its candidates are the frames holding a term not in ``common`` (terms known to be
    common, with their ``df``: :class:`~waggle_store.dialects.keyword_rank.TermCounts`)."""
    params: dict[str, Any] = {"limit": int(limit)}
    n = range(len(values))
    for i, value in enumerate(values):
        params[f"t{i}"] = value
    minds = frame_filters(LaneFilter(where.mind_ids), params)
    filters = frame_filters(where, params, alias="c", dialect="postgresql", attributes="column")
    passes = passes_column(where, params, "postgresql")
    queries = ", ".join(f"plainto_tsquery('english', :t{i}) AS q{i}" for i in n)
    # Per term: 2 matched in the own words, 1 only in the context, 0 neither — the context
    # is tested only where the own words lack the term (2–4 % of the statement at 100k).
    matched = ", ".join(
        f"CASE WHEN f.content_tsv @@ q.q{i} THEN 2 WHEN f.context_tsv @@ q.q{i} THEN 1 "
        f"ELSE 0 END AS m{i}" for i in n
    )
    counts = []
    for i in n:
        count = f"count(*) FILTER (WHERE m{i} > 0)"
        if i in common:  # counted among the candidates only: its known df, at least that
            params[f"df{i}"] = common[i]
            count = f"GREATEST(:df{i}, {count})"
        counts.append(f"{count} AS d{i}")
    total, counting = frame_counts.total_sql(where.mind_ids, minds, params, "GREATEST")
    score = score_sql([f"w.w{i}" for i in n], [f"c.m{i} = 2" for i in n],
                      [f"c.m{i} > 0" for i in n])
    anyq = " || ".join(f"q.q{i}" for i in n if i not in common)
    # MATERIALIZED: q is evaluated once and feeds the GIN scan; w is one row, computed once
    # (inlined, the planner re-ran the aggregate for every candidate).
    # The page's frames are read after the LIMIT, so the sort carries ids, not contents.
    rows = run_lane(
        session,
        f"WITH q AS MATERIALIZED (SELECT {queries}), "
        f"c AS MATERIALIZED (SELECT f.id, f.mind_id, f.gop_id, f.created_at, "
        f"{TEXT_BYTES} AS len, {matched}{passes} "
        f"FROM {T_FRAMES} f, q "
        f"WHERE (f.content_tsv @@ ({anyq}) OR f.context_tsv @@ ({anyq})) AND {minds}), "
        f"w AS MATERIALIZED ("
        + weights_sql(f"SELECT {total}::float8 AS n, {', '.join(counts)} FROM c",
                      len(values), common)
        + ") "
        + ranked_page_sql(score, filters, frame_select(), len(values)),
        params,
    )
    return rows, counting


def shortest_statement(frame_counts: FrameCounts, session: Executor, values: Sequence[str],
                       where: LaneFilter, limit: int, dfs: Mapping[int, int]
                       ) -> tuple[list[Any], bool]:
    """The page of a query of common terms only (``dfs``: each one's known ``df``), walked
    shortest first (:func:`~waggle_store.dialects.keyword_rank.shortest_page_sql`; each
    walked frame's ``content_tsv`` tested): its rows and whether it counted ``N``. ``n`` and
    the ``df`` are typed as :meth:`_keyword_rows` has them (``float8``, ``bigint``), so the
    weights are the same floating-point operations."""
    walk = walk_parts(frame_counts, where, values, dfs, limit, dialect="postgresql")
    n = range(len(values))
    dfs_sql = [f"CAST(:df{i} AS bigint)" for i in n]
    counted = (f"SELECT GREATEST({walk.total}, {', '.join(dfs_sql)})::float8 AS n, "
               + ", ".join(f"{df} AS d{i}" for i, df in enumerate(dfs_sql)))
    queries = ", ".join(f"plainto_tsquery('english', :t{i}) AS q{i}" for i in n)
    # The mind's :walk shortest frames in the index's order, each tested as it comes: each
    # term's query is one value (a scalar subquery), not a joined row, so the outer LIMIT
    # stops the walk at the page (joined with q, the planner sorted all :walk rows).
    holds = " AND ".join(f"s.content_tsv @@ (SELECT q.q{i} FROM q)" for i in n)
    walked = (f"SELECT s.id, s.len FROM (SELECT f.id, {TEXT_BYTES} AS len, f.content_tsv "
              f"FROM {T_FRAMES} f WHERE {walk.filters} ORDER BY {TEXT_BYTES}, f.id "
              f"LIMIT :walk) s WHERE {holds} ORDER BY s.len, s.id LIMIT :limit")
    rows = run_lane(session, shortest_page_sql(
        counted, len(values), walked, f"q AS MATERIALIZED (SELECT {queries}), "), walk.params)
    return rows, walk.counting
