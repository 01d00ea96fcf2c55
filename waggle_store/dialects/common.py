"""What both adapters do the same way: lane filters, the frame columns every lane returns, the
manifest check of a KNN's candidates, the LIKE fallback. Statements run through
:mod:`waggle_store.dialects.statements` (re-exported here).

They live here, still inside ``dialects/``, so that the adapters differ only where the databases
do (FTS5 vs tsvector, vec0 vs pgvector, LIKE vs ILIKE).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any, Final

from sqlalchemy import text
from sqlalchemy.orm import Session

from waggle_store.dialects.base import (
    T_EMBEDDINGS,
    T_FRAMES,
    T_MENTIONS,
    T_MIND_MODELS,
    Executor,
    LaneFilter,
    LaneHit,
    ModelNotActiveError,
)
from waggle_store.dialects.statements import connection_of as connection_of
from waggle_store.dialects.statements import driver_statement as driver_statement
from waggle_store.dialects.statements import raise_driver_error as raise_driver_error
from waggle_store.dialects.statements import run_lane as run_lane
from waggle_store.dialects.statements import run_statement as run_statement
from waggle_store.dialects.statements import run_statements as run_statements
from waggle_store.dialects.statements import timed as timed
from waggle_store.models.base import UTCDateTime
from waggle_store.records import Frame
from waggle_store.textinput import scrub

_TS: Final = UTCDateTime()


def clean_term(term: object) -> str:
    """``term`` with control, format and surrogate characters (``C*``) turned into spaces, stripped;
    ``""`` for a non-string. The query builders take terms from any caller: a NUL makes FTS5 raise
    "unterminated string" and psycopg refuse the parameter, a lone surrogate cannot be encoded."""
    return scrub(term) if isinstance(term, str) else ""


def frame_filters(where: LaneFilter, params: dict[str, Any], alias: str = "f",
                  mind_alias: str | None = None, *, inline_minds: bool = False) -> str:
    """SQL conditions for the mind/session/time filters (bound; ``inline_minds``: the mind ids,
    integers, written into the text instead, see the Postgres KNN for why).

    ``alias`` names the table carrying ``gop_id``/``created_at``, ``mind_alias`` (default: the
    same) the one carrying ``mind_id``. Times are bound through :func:`timed` so they are written
    exactly like the stored column (on SQLite a fixed-width UTC string; a differently formatted
    string would compare wrongly).
    """
    names = []
    for i, mind_id in enumerate(where.mind_ids):
        if inline_minds:
            names.append(str(int(mind_id)))
            continue
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


#: The columns of :class:`waggle_store.records.Frame` after its id (its fields are the
#: ``memory_frames`` columns), as lanes select them after ``id, score`` (see :func:`frame_select`).
FRAME_COLUMNS: Final = tuple(field.name for field in dataclasses.fields(Frame))[1:]


def frame_select(alias: str = "f") -> str:
    """The select list a lane puts after ``id, score``: :data:`FRAME_COLUMNS`, then whether the
    frame mentions any entity (an index probe per hit; the search skips its graph-distance query
    when no candidate does)."""
    columns = ", ".join(f"{alias}.{name}" for name in FRAME_COLUMNS)
    mentions = f"EXISTS (SELECT 1 FROM {T_MENTIONS} m WHERE m.frame_id = {alias}.id) AS mentions"
    return f"{columns}, {mentions}"


#: Where ``frame_select()`` puts the two times and the mention flag, after ``id, score``.
_CREATED, _LAST_ACCESSED = (
    2 + FRAME_COLUMNS.index("created_at"),
    2 + FRAME_COLUMNS.index("last_accessed"),
)
_MENTIONS = 2 + len(FRAME_COLUMNS)
assert (_CREATED, _LAST_ACCESSED) == (_MENTIONS - 2, _MENTIONS - 1)  # the times close the frame
_TIME_READERS: dict[tuple[str, str], Callable[[Any], Any]] = {}


def frame_hits(executor: Executor, rows: Sequence[Any]) -> list[LaneHit]:
    """``LaneHit``s of driver rows ``(id, score, *frame_select(), ...)``, times read as UTC
    datetimes the way the ``created_at`` column reads them."""
    dialect = connection_of(executor).dialect
    read = _TIME_READERS.get((dialect.name, dialect.driver))
    if read is None:
        read = _TS.dialect_impl(dialect).result_processor(dialect, None)
        assert read is not None  # a TypeDecorator always processes (to UTC)
        _TIME_READERS[(dialect.name, dialect.driver)] = read
    hits: list[LaneHit] = []
    append = hits.append
    for r in rows:
        frame_id = int(r[0])
        # A frame never recalled was last accessed when it was created (the same stored value):
        # read once and the same (immutable) datetime used twice, half of a search's reads.
        created, last = r[_CREATED], r[_LAST_ACCESSED]
        at = read(created)
        frame = (frame_id, *r[2:_CREATED], at, at if last == created else read(last))
        append(LaneHit(frame_id, float(r[1]), frame, bool(r[_MENTIONS])))
    return hits


def checked_knn(source: str, key: str, distance: str) -> str:
    """A KNN's candidates ``c`` (``source``: the derived table or CTE that yields them, frame id in
    ``c.<key>``, distance in ``c.<distance>``) with the manifest check riding along as LEFT JOINs,
    so one statement ranks, says which candidates are current and reads their frames. Rows:
    ``(id, distance, *frame_select(), current, model still the mind's active one)`` (the mind
    bound as ``check_mind``: a switch may have flipped it since the caller looked it up); see
    :func:`current_hits`.
    """
    return (
        f"SELECT c.{key}, c.{distance}, {frame_select()}, f.id IS NOT NULL, "
        f"EXISTS (SELECT 1 FROM {T_MIND_MODELS} WHERE mind_id = :check_mind "
        "AND model_id = :model_id AND status = 'active') "
        f"FROM {source} "
        f"LEFT JOIN {T_EMBEDDINGS} e ON e.frame_id = c.{key} AND e.status = 'ready' "
        "AND e.model_id = :model_id "
        f"LEFT JOIN {T_FRAMES} f ON f.id = c.{key} AND f.content_hash = e.content_hash"
    )


def current_hits(executor: Executor, rows: Sequence[Any], model_id: int) -> list[LaneHit]:
    """The current candidates of :func:`checked_knn` rows, in their order;
    :class:`ModelNotActiveError` if ``model_id`` is no longer the mind's active model."""
    if rows and not rows[0][-1]:
        raise ModelNotActiveError(model_id)
    return frame_hits(executor, [r for r in rows if r[-2]])


def like_search(
    session: Executor, *, operator: str, patterns: Sequence[str], where: LaneFilter, limit: int
) -> list[LaneHit]:
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
    rows = run_lane(
        session,
        f"SELECT f.id, 0.0 AS score, {frame_select()} FROM {T_FRAMES} f "
        f"WHERE {filters} AND ({' OR '.join(likes)}) "
        "ORDER BY f.created_at DESC, f.id DESC LIMIT :limit",
        params,
    )
    return frame_hits(session, rows)


def frames_missing_vectors(
    session: Session, table: str, key: str, model_id: int, mind_id: int | None,
    *, after: int = 0, limit: int | None = None, up_to: int | None = None,
) -> list[int]:
    """Frames whose manifest says ready for ``model_id`` (and matches their content) but whose
    row in the vector ``table`` (frame id in column ``key``: ``rowid`` for vec0, ``frame_id``
    on Postgres) is missing. A manifest for other content is stale whatever the vector table
    holds (reconcile finds those by the manifest alone), so the two sets never overlap.

    By id, from ``after`` (exclusive) to ``up_to`` (inclusive), at most ``limit`` of them:
    reconcile walks a large store page by page instead of holding every id."""
    params: dict[str, Any] = {"model_id": model_id, "after": after}
    mind = ""
    if mind_id is not None:
        params["mind_id"] = mind_id
        mind += " AND f.mind_id = :mind_id"
    if up_to is not None:
        params["up_to"] = up_to
        mind += " AND f.id <= :up_to"
    page = ""
    if limit is not None:
        params["limit"] = limit
        page = " LIMIT :limit"
    rows = session.execute(
        text(
            f"SELECT f.id FROM {T_FRAMES} f JOIN {T_EMBEDDINGS} e ON e.frame_id = f.id "
            f"WHERE e.status = 'ready' AND e.model_id = :model_id "
            f"AND e.content_hash = f.content_hash AND f.id > :after{mind} AND NOT EXISTS "
            f"(SELECT 1 FROM {table} v WHERE v.{key} = f.id) ORDER BY f.id{page}"
        ),
        params,
    ).all()
    return [int(r[0]) for r in rows]
