"""The SQL the keyword lane's statements share on both dialects: the idf, a frame's score, the
weights row, the ranked page and the page of a walk (see :mod:`.keyword_rank`)."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from waggle_store.dialects.base import T_FRAMES
from waggle_store.dialects.common import frame_select
from waggle_store.dialects.context_index import CONTEXT_WEIGHT


def idf_sql(n: str, df: str) -> str:
    """``idf`` of a term matched by ``df`` of ``n`` frames, as SQL both dialects evaluate alike
    (``n`` and ``df`` are integral; every step is a double operation)."""
    return f"ln(1 + ({n} - {df} + 0.5) / ({df} + 0.5))"


def score_sql(weights: Sequence[str], own: Sequence[str], anywhere: Sequence[str]) -> str:
    """A frame's score: per term, its weight if matched in the frame's own words, else
    ``CONTEXT_WEIGHT ×`` it if matched in the context (``anywhere``), summed left to right."""
    return " + ".join(
        f"CASE WHEN {h} THEN {w} WHEN {a} THEN {w} * {CONTEXT_WEIGHT!r} ELSE 0 END"
        for w, h, a in zip(weights, own, anywhere, strict=True)
    )


def ranked_page_sql(score: str, filters: str, frame_columns: str, terms: int) -> str:
    """The lane's last step on both dialects: candidates ``c`` scored with the idf row ``w``,
    filtered, sorted by score, then length, then id, the page's frames read after the LIMIT (the
    sort carries ids, not contents); each row ends with ``w``'s ``N``, the ``df`` of each of the
    ``terms`` and ``ub`` (see :func:`lane_tail`)."""
    tail = ", ".join(["n", *(f"d{i}" for i in range(terms)), "ub"])
    return (
        f"SELECT h.id, h.score, {frame_columns}, {_prefixed('h', tail)} FROM (SELECT c.id, "
        f"{score} AS score, c.len, {_prefixed('w', tail)} FROM c, w WHERE {filters} "
        f"ORDER BY score DESC, c.len, c.id LIMIT :limit) h "
        f"JOIN {T_FRAMES} f ON f.id = h.id ORDER BY h.score DESC, h.len, h.id"
    )


def _prefixed(alias: str, columns: str) -> str:
    return ", ".join(f"{alias}.{c}" for c in columns.split(", "))


def weights_sql(counted: str, terms: int, common: Collection[int]) -> str:
    """The idf row ``w`` from the row ``s`` of ``counted`` (``n`` and ``d0``…: ``N`` and each
    term's ``df``): ``n``, each term's weight ``w<i>`` and ``df`` ``d<i>``, and ``ub``, the most a
    frame holding none of the other terms can score: the sum of the ``common`` terms' weights
    (0.0 without any; see :class:`TermCounts`)."""
    idf = ", ".join(f"{idf_sql('s.n', f's.d{i}')} AS w{i}" for i in range(terms))
    dfs = ", ".join(f"s.d{i}" for i in range(terms))
    ub = " + ".join(f"x.w{i}" for i in sorted(common)) or "0.0"
    return (f"SELECT x.*, {ub} AS ub FROM (SELECT s.n, {idf}, {dfs} FROM ({counted}) s) x")


def shortest_page_sql(counted: str, terms: int, walked: str, queries: str = "") -> str:
    """The lane's page for a query of common terms only, on both dialects: the rows of
    :func:`ranked_page_sql` (each term's ``df`` and ``N`` from ``counted``, as
    :func:`weights_sql` reads them).

    Every frame holding all the terms in its own words scores the sum of their weights, the most
    any frame can (a term found only in the context weighs less), and equal scores go shortest
    first (the dialect's ``TEXT_BYTES``, then the id). So when at least ``:limit`` frames hold
    them all, the page is the ``:limit`` shortest such frames — the same frames, scores and order
    as the whole lane's — which the adapter's ``walked`` statement finds (rows ``(id, len)``,
    in that order) by walking the searched mind's frames in the order of the index on
    ``(mind_id, length, id)`` (migration 0008), testing each, and stopping at its page, never past
    the ``:walk``-th frame (:data:`SHORTEST_WALK` times the page) — not by reading
    every frame holding a term (87 % of the mind for a speaker's name). A page it does not fill
    is ranked again by the whole lane (:func:`keyword_rows`). ``queries``: CTEs the walk reads,
    ending with a comma."""
    tail = ", ".join(["n", *(f"d{i}" for i in range(terms)), "ub"])
    return (
        f"WITH {queries}w AS MATERIALIZED ({weights_sql(counted, terms, range(terms))}) "
        f"SELECT h.id, w.ub, {frame_select()}, {_prefixed('w', tail)} FROM ({walked}) h "
        f"JOIN {T_FRAMES} f ON f.id = h.id CROSS JOIN w ORDER BY h.len, h.id"
    )
