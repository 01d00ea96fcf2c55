"""SQL pieces both adapters write the same way: lane filters, time binding, the LIKE fallback.

They live here, still inside ``dialects/``, so that the adapters differ only where the databases
do (FTS5 vs tsvector, vec0 vs pgvector, LIKE vs ILIKE).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import Any, Final

from sqlalchemy import TextClause, TextualSelect, bindparam, text
from waggle_store.dialects.base import Executor, LaneFilter, LaneHit
from waggle_store.models.base import UTCDateTime

_TS: Final = UTCDateTime()


def frame_filters(where: LaneFilter, params: dict[str, Any], alias: str = "f",
                  mind_alias: str | None = None) -> str:
    """SQL conditions for the mind/session/time filters (bound, never inlined).

    ``alias`` names the table carrying ``gop_id``/``created_at``, ``mind_alias`` (default: the
    same) the one carrying ``mind_id``. Times are bound through :func:`timed` so they are written
    exactly like the stored column (on SQLite a fixed-width UTC string; a differently formatted
    string would compare wrongly).
    """
    names = []
    for i, mind_id in enumerate(where.mind_ids):
        params[f"m{i}"] = int(mind_id)
        names.append(f":m{i}")
    sql = [f"{mind_alias or alias}.mind_id IN ({', '.join(names) or 'NULL'})"]
    if where.gop_id is not None:
        params["gop_id"] = where.gop_id
        sql.append(f"{alias}.gop_id = :gop_id")
    if where.since is not None:
        params["since"] = where.since
        sql.append(f"{alias}.created_at >= :since")
    if where.until is not None:
        params["until"] = where.until
        sql.append(f"{alias}.created_at <= :until")
    return " AND ".join(sql)


#: The columns of :class:`waggle_store.records.Frame` after its id, as lanes select them after
#: ``id, score`` (see :func:`frame_select`).
FRAME_COLUMNS: Final = (
    "frame_type", "gop_id", "t", "base_frame_id", "content", "importance", "source", "access_count",
    "created_at", "last_accessed",
)


def frame_select(alias: str = "f") -> str:
    """The select list a lane puts after ``id, score``: :data:`FRAME_COLUMNS`, then whether the
    frame mentions any entity (an index probe per hit; the search skips its graph-distance query
    when no candidate does)."""
    columns = ", ".join(f"{alias}.{name}" for name in FRAME_COLUMNS)
    return f"{columns}, EXISTS (SELECT 1 FROM entity_mentions m WHERE m.frame_id = {alias}.id) AS mentions"


def frame_hit(row: Any) -> LaneHit:
    """``LaneHit`` of a row ``(id, score, *frame_select(), ...)``."""
    frame_id = int(row[0])
    end = 2 + len(FRAME_COLUMNS)
    return LaneHit(frame_id, float(row[1]), (frame_id, *row[2:end]), bool(row[end]))


@functools.lru_cache(maxsize=512)
def lane_statement(sql: str) -> TextualSelect:
    """The statement of a lane selecting ``id, score,`` :func:`frame_select`: times bound as
    :func:`timed` binds them and read back as UTC datetimes.

    Memoised by text: a lane's SQL takes a handful of shapes (number of terms, which filters), and
    parsing it into a new ``text()`` construct on every search cost more than running it on a
    small table.
    """
    return timed(sql).columns(created_at=_TS, last_accessed=_TS)


def timed(sql: str) -> TextClause:
    """``text(sql)`` with the time parameters typed as the ``created_at`` column."""
    clause = text(sql)
    binds = [bindparam(name, type_=_TS) for name in ("since", "until") if re.search(rf":{name}\b", sql)]
    return clause.bindparams(*binds) if binds else clause


def like_search(session: Executor, *, operator: str, patterns: Sequence[str], where: LaneFilter,
                limit: int) -> list[LaneHit]:
    """The escaped-LIKE fallback for a keyword index that errors: newest matches first.

    ``operator`` is the dialect's case-insensitive match (SQLite ``LIKE`` folds ASCII, Postgres
    needs ``ILIKE``); patterns come from :func:`waggle_store.search.query.like_patterns`.
    """
    if not patterns or not where.mind_ids:
        return []
    params: dict[str, Any] = {"limit": int(limit)}
    likes = []
    for i, pattern in enumerate(patterns):
        params[f"p{i}"] = pattern
        likes.append(f"f.content {operator} :p{i} ESCAPE '\\'")
    filters = frame_filters(where, params)
    rows = session.execute(
        lane_statement(
            f"SELECT f.id, 0.0 AS score, {frame_select()} FROM memory_frames f "
            f"WHERE {filters} AND ({' OR '.join(likes)}) "
            "ORDER BY f.created_at DESC, f.id DESC LIMIT :limit"
        ),
        params,
    ).all()
    return [frame_hit(r) for r in rows]
