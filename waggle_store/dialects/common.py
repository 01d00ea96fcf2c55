"""What both adapters do the same way: lane filters, the frame columns every lane returns, the
manifest check of a KNN's candidates, the LIKE fallback. Statements run through
:mod:`waggle_store.dialects.statements` (re-exported here).

They live here, still inside ``dialects/``, so that the adapters differ only where the databases
do (FTS5 vs tsvector, vec0 vs pgvector, LIKE vs ILIKE).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from typing import Any, Final

from sqlalchemy import text
from sqlalchemy.orm import Session

from waggle_store.dialects.base import (
    T_EMBEDDINGS,
    T_FRAMES,
    T_MENTIONS,
    T_MIND_MODELS,
    Attributes,
    Executor,
    LaneFilter,
    LaneHit,
    ModelNotActiveError,
    vector_key,
    vector_table_name,
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
#: SQLite: the top-level entries of each frame's metadata, kept by triggers (migration 0014).
T_FRAME_METADATA: Final = "waggle_frame_metadata"
#: A KNN whose candidates are checked against ``where`` attributes afterwards starts this many
#: times wider than its page (the check drops those that fail; a page still short widens 4x).
ATTRIBUTE_WIDENING: Final = 4


def clean_term(term: object) -> str:
    """``term`` with control, format and surrogate characters (``C*``) turned into spaces, stripped;
    ``""`` for a non-string. The query builders take terms from any caller: a NUL makes FTS5 raise
    "unterminated string" and psycopg refuse the parameter, a lone surrogate cannot be encoded."""
    return scrub(term) if isinstance(term, str) else ""


def frame_filters(where: LaneFilter, params: dict[str, Any], alias: str = "f",
                  mind_alias: str | None = None, *, inline_minds: bool = False,
                  dialect: str | None = None, attributes: str = "direct") -> str:
    """SQL conditions for the mind/session/time filters (bound; ``inline_minds``: the mind ids,
    integers, written into the text instead, see the Postgres KNN for why), and the frame
    attributes of ``where.attributes`` (:func:`attribute_filters`, in ``dialect``'s SQL).

    ``alias`` names the table carrying ``gop_id``/``created_at``, ``mind_alias`` (default: the
    same) the one carrying ``mind_id``. Times are bound through :func:`timed` so they are written
    exactly like the stored column (on SQLite a fixed-width UTC string; a differently formatted
    string would compare wrongly). ``attributes``: ``"direct"`` when ``alias`` is the frames
    table itself, ``"column"`` when it is a derived table that carries them tested as its
    column ``passes`` (:func:`passes_column`), ``"exists"`` when it is a derived table whose
    ``id`` is a frame's (the attributes are then read from the frame by its primary key).
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
    if where.attributes is not None:
        if dialect is None:
            raise ValueError("attribute filters need the dialect")  # a caller's bug
        if attributes == "direct":
            sql.extend(attribute_filters(where.attributes, params, alias, dialect))
        elif attributes == "column":
            sql.append(f"{alias}.passes")
        else:
            conditions = attribute_filters(where.attributes, params, "fa", dialect)
            sql.append(f"EXISTS (SELECT 1 FROM {T_FRAMES} fa WHERE fa.id = {alias}.id AND "
                       f"{' AND '.join(conditions)})")
    return " AND ".join(sql)


def passes_column(where: LaneFilter, params: dict[str, Any], dialect: str) -> str:
    """``, <the where= attributes tested on the frame f> AS passes`` for a lane's candidate CTE
    (read by ``frame_filters(..., attributes="column")``), or "" when there are none. Tested
    on the row the CTE reads anyway: no second look-up of the frame, and the lane's counts
    (``N``, each term's ``df``) stay those of the whole mind."""
    if where.attributes is None:
        return ""
    conditions = attribute_filters(where.attributes, params, "f", dialect)
    return f", coalesce({' AND '.join(conditions)}, false) AS passes"


def attribute_filters(attrs: Attributes, params: dict[str, Any], alias: str,
                      dialect: str) -> list[str]:
    """SQL conditions (bound) on the frames table ``alias`` for :class:`Attributes`.

    Metadata: on PostgreSQL one JSONB containment ``@>`` (the GIN index ``jsonb_path_ops``
    answers it); on SQLite each key's entry in :data:`T_FRAME_METADATA` (one primary-key probe
    a frame), its JSON type and value compared."""
    sql: list[str] = []
    for name, column, values in (("src", "source", attrs.sources),
                                 ("imp", "importance", attrs.importances)):
        if values is not None:
            names = []
            for i, value in enumerate(values):
                params[f"{name}{i}"] = value
                names.append(f":{name}{i}")
            sql.append(f"{alias}.{column} IN ({', '.join(names)})")
    if attrs.min_salience is not None:
        params["min_salience"] = float(attrs.min_salience)
        sql.append(f"{alias}.salience >= :min_salience")
    if attrs.metadata and dialect == "postgresql":
        params["meta"] = json.dumps(dict(attrs.metadata))
        sql.append(f"{alias}.metadata @> CAST(:meta AS jsonb)")
    elif attrs.metadata:
        for i, (key, value) in enumerate(attrs.metadata):
            params[f"mk{i}"] = key
            equals = _json_equals(f"j{i}", f"mv{i}", value, params)
            sql.append(f"EXISTS (SELECT 1 FROM {T_FRAME_METADATA} j{i} "
                       f"WHERE j{i}.frame_id = {alias}.id AND j{i}.key = :mk{i} AND {equals})")
    return sql


def _json_equals(entry: str, name: str, value: Any, params: dict[str, Any]) -> str:
    """SQLite: the :data:`T_FRAME_METADATA` row ``entry`` (``json_each``'s type and atom of
    the entry) holds the JSON scalar ``value`` (bound as ``name``), as PostgreSQL's containment
    compares scalars: numbers as numbers, ``true`` not 1, ``"1"`` not 1."""
    if value is None:
        return f"{entry}.type = 'null'"
    if isinstance(value, bool):
        return f"{entry}.type = '{'true' if value else 'false'}'"
    params[name] = value
    if isinstance(value, str):
        return f"{entry}.value = :{name} AND {entry}.type = 'text'"
    return f"{entry}.value = :{name} AND {entry}.type IN ('integer', 'real')"


def attribute_frames(executor: Executor, attrs: Attributes, mind_id: int) -> list[int]:
    """SQLite: the ids of the mind's frames that pass ``attrs``, driven by the side table's
    (mind, key, value) index when a metadata value is asked for (a rare value is an index
    range; CROSS JOIN keeps it the outer loop, one primary-key probe a frame), else by the
    frames of the mind (the (mind, source) and (mind, importance) indexes)."""
    params: dict[str, Any] = {"mind": int(mind_id)}
    conditions = attribute_filters(attrs, params, "f", "sqlite")
    if attrs.metadata and attrs.metadata[0][1] is not None \
            and not isinstance(attrs.metadata[0][1], bool):
        params["first_key"], params["first_value"] = attrs.metadata[0]
        source = (f"{T_FRAME_METADATA} s CROSS JOIN {T_FRAMES} f ON f.id = s.frame_id "
                  "WHERE s.mind_id = :mind AND s.key = :first_key AND s.value = :first_value "
                  "AND f.mind_id = :mind")
    else:
        source = f"{T_FRAMES} f WHERE f.mind_id = :mind"
    rows = run_lane(executor, f"SELECT f.id FROM {source} AND {' AND '.join(conditions)}", params)
    return [int(r[0]) for r in rows]


#: The columns of :class:`waggle_store.records.Frame` after its id (its fields are the
#: ``memory_frames`` columns), as lanes select them after ``id, score`` (see :func:`frame_select`).
FRAME_COLUMNS: Final = tuple(field.name for field in dataclasses.fields(Frame)
                             if field.name != "metadata")[1:]


def frame_select(alias: str = "f") -> str:
    """The select list a lane puts after ``id, score``: :data:`FRAME_COLUMNS`, then whether the
    frame mentions any entity (an index probe per hit; the search skips its graph-distance query
    when no candidate does)."""
    columns = ", ".join(f"{alias}.{name}" for name in FRAME_COLUMNS)
    mentions = f"EXISTS (SELECT 1 FROM {T_MENTIONS} m WHERE m.frame_id = {alias}.id) AS mentions"
    return f"{columns}, {alias}.metadata, {mentions}"


#: Where ``frame_select()`` puts the two times and the mention flag, after ``id, score``.
_CREATED, _LAST_ACCESSED = (
    2 + FRAME_COLUMNS.index("created_at"),
    2 + FRAME_COLUMNS.index("last_accessed"),
)
_METADATA = 2 + len(FRAME_COLUMNS)
_MENTIONS = _METADATA + 1
assert (_CREATED, _LAST_ACCESSED) == (_METADATA - 2, _METADATA - 1)  # the times, then metadata
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
        frame = (frame_id, *r[2:_CREATED], at, at if last == created else read(last),
                 read_metadata(r[_METADATA]))
        append(LaneHit(frame_id, float(r[1]), frame, bool(r[_MENTIONS])))
    return hits


def read_metadata(value: Any) -> dict[str, Any]:
    """A frame's metadata as a lane row holds it: JSON text (SQLite), already decoded (JSONB
    through psycopg), or NULL for none."""
    if value is None:
        return {}
    if isinstance(value, str | bytes):
        decoded = json.loads(value)
        return decoded if isinstance(decoded, dict) else {}
    return dict(value)


def checked_knn(source: str, key: str, distance: str, attributes: str | None = None) -> str:
    """A KNN's candidates ``c`` (``source``: the derived table or CTE that yields them, frame id in
    ``c.<key>``, distance in ``c.<distance>``) with the manifest check riding along as LEFT JOINs,
    so one statement ranks, says which candidates are current and reads their frames. Rows:
    ``(id, distance, *frame_select(), [passes,] current, model still the mind's active one)``
    (the mind bound as ``check_mind``: a switch may have flipped it since the caller looked it
    up); see :func:`current_hits`. ``attributes``: conditions on the frame ``f``
    (:func:`attribute_filters`) that a KNN over the vector table alone cannot apply; each row
    then says whether its frame passes them (``passes``).
    """
    passes = "" if attributes is None else f"coalesce({attributes}, false), "
    return (
        f"SELECT c.{key}, c.{distance}, {frame_select()}, {passes}f.id IS NOT NULL, "
        f"EXISTS (SELECT 1 FROM {T_MIND_MODELS} WHERE mind_id = :check_mind "
        "AND model_id = :model_id AND status = 'active') "
        f"FROM {source} "
        f"LEFT JOIN {T_EMBEDDINGS} e ON e.frame_id = c.{key} AND e.status = 'ready' "
        "AND e.model_id = :model_id "
        f"LEFT JOIN {T_FRAMES} f ON f.id = c.{key} AND f.content_hash = e.content_hash"
    )


def current_hits(executor: Executor, rows: Sequence[Any], model_id: int,
                 attributes: bool = False) -> list[LaneHit]:
    """The current candidates of :func:`checked_knn` rows, in their order (``attributes``: the
    rows carry ``passes``, and only those passing are kept); :class:`ModelNotActiveError` if
    ``model_id`` is no longer the mind's active model."""
    if rows and not rows[0][-1]:
        raise ModelNotActiveError(model_id)
    if attributes:
        return frame_hits(executor, [r for r in rows if r[-2] and r[-3]])
    return frame_hits(executor, [r for r in rows if r[-2]])


def knn_attributes(where: LaneFilter, params: dict[str, Any], dialect: str) -> str | None:
    """:func:`checked_knn`'s ``attributes`` for ``where`` (bound into ``params``), or None."""
    if where.attributes is None:
        return None
    return " AND ".join(attribute_filters(where.attributes, params, "f", dialect))


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
    filters = frame_filters(where, params,
                            dialect="postgresql" if operator == "ILIKE" else "sqlite")
    rows = run_lane(
        session,
        f"SELECT f.id, 0.0 AS score, {frame_select()} FROM {T_FRAMES} f "
        f"WHERE {filters} AND ({' OR '.join(likes)}) "
        "ORDER BY f.created_at DESC, f.id DESC LIMIT :limit",
        params,
    )
    return frame_hits(session, rows)


def frames_missing_vectors(
    session: Session, dialect: str, model_id: int, mind_id: int | None,
    *, after: int = 0, limit: int | None = None, up_to: int | None = None,
) -> list[int]:
    """Frames whose manifest says ready for ``model_id`` (and matches their content) but whose
    row in the model's vector table (frame id in column :func:`vector_key`: ``rowid`` for vec0,
    ``frame_id`` on Postgres) is missing. A manifest for other content is stale whatever the
    vector table holds (reconcile finds those by the manifest alone), so the two sets never
    overlap.

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
            f"(SELECT 1 FROM {vector_table_name(model_id)} v "
            f"WHERE v.{vector_key(dialect)} = f.id) ORDER BY f.id{page}"
        ),
        params,
    ).all()
    return [int(r[0]) for r in rows]
