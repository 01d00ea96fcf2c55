"""SQL pieces both adapters write the same way: lane filters, time binding, the LIKE fallback.

They live here, still inside ``dialects/``, so that the adapters differ only where the databases
do (FTS5 vs tsvector, vec0 vs pgvector, LIKE vs ILIKE).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from sqlalchemy import TextClause, bindparam, text
from sqlalchemy.orm import Session

from waggle_store.dialects.base import LaneFilter, LaneHit
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


def timed(sql: str) -> TextClause:
    """``text(sql)`` with the time parameters typed as the ``created_at`` column."""
    clause = text(sql)
    binds = [bindparam(name, type_=_TS) for name in ("since", "until") if f":{name}" in sql]
    return clause.bindparams(*binds) if binds else clause


def like_search(session: Session, *, operator: str, patterns: Sequence[str], where: LaneFilter,
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
        timed(
            f"SELECT f.id FROM memory_frames f WHERE {filters} AND ({' OR '.join(likes)}) "
            "ORDER BY f.created_at DESC, f.id DESC LIMIT :limit"
        ),
        params,
    ).all()
    return [LaneHit(int(r[0]), 0.0) for r in rows]
