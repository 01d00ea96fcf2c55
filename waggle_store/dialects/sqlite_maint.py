"""SQLite derived-object maintenance: the ``vec0`` tables' DDL and rows, and the FTS5 repairs.

Split out of :mod:`waggle_store.dialects.sqlite` (the house rule keeps modules under 400 lines)
along the seam between *searching* the derived indexes and *maintaining* them: the adapter keeps
the lanes (every lane statement goes through ``run_lane``, which the benchmarks patch in that
module), its per-engine caches and the in-process vector index; its maintenance methods delegate
here to plain functions. Nothing here is part of the public API; the adapter's methods (the
``SearchAdapter`` protocol) are.

Vector tables are ``vec0(mind_id integer partition key, embedding float[d] distance_metric=cosine,
gop_id text, created_ts float)`` with rowid = frame id; vec0 takes neither a foreign key nor
triggers of its own, so a trigger on the frames table deletes vectors and every write to a vec0
table is recorded in the change log (:func:`~waggle_store.dialects.sqlite_vecindex.log_changes`).
"""

from __future__ import annotations

import os
import sys
from array import array
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Engine, bindparam, text
from sqlalchemy.orm import Session

from waggle_store.dialects.base import (
    T_FRAMES,
    T_FTS,
    DerivedProblem,
    Executor,
    VectorRow,
    vector_table_name,
)
from waggle_store.dialects.common import connection_of
from waggle_store.dialects.context_index import stale_context_update
from waggle_store.dialects.sqlite_vecindex import ensure_log, log_changes
from waggle_store.errors import StorageBusyError
from waggle_store.models.base import TABLE_PREFIX
from waggle_store.models.idioms import rowcount


def vec_blob(vector: Sequence[float]) -> bytes:
    """vec0's native input, little-endian float32: what it would parse the JSON text into, at a
    fraction of the cost of formatting and parsing 384 decimal numbers per vector."""
    floats = array("f", vector)
    if sys.byteorder == "big":
        floats.byteswap()
    return floats.tobytes()


# -- vector tables ---------------------------------------------------------------------------


def create_vector_table(session: Session, model_id: int, dimensions: int) -> None:
    """Create the vec0 table, its delete trigger and the change log; idempotent, so the
    adapter's "already ensured" cache only saves round trips."""
    table = vector_table_name(model_id)
    session.execute(
        text(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS {table} USING vec0("
            "mind_id integer partition key, "
            f"embedding float[{int(dimensions)}] distance_metric=cosine, "
            "gop_id text, created_ts float)"
        )
    )
    # Vectors follow their frame out, in the deleting transaction (frame delete, compaction,
    # drop_mind's cascade): vec0 cannot take a foreign key.
    session.execute(
        text(
            f"CREATE TRIGGER IF NOT EXISTS {table}_ad AFTER DELETE ON {T_FRAMES} BEGIN "
            f"DELETE FROM {table} WHERE rowid = old.id; END"
        )
    )
    ensure_log(session)  # what keeps the in-process index coherent with the tables


def insert_vectors(session: Session, model_id: int, rows: Sequence[VectorRow]) -> None:
    """Insert rows whose frame ids are known absent: vec0 has no upsert, so the adapter deletes
    them first (an insert over an existing rowid fails)."""
    session.execute(
        text(
            f"INSERT INTO {vector_table_name(model_id)}(rowid, mind_id, embedding, gop_id, "
            "created_ts) VALUES (:id, :mind_id, :embedding, :gop_id, :ts)"
        ),
        [
            {
                "id": int(r.frame_id),
                "mind_id": int(r.mind_id),
                "embedding": vec_blob(r.vector),
                "gop_id": r.gop_id,
                "ts": r.created_at.timestamp(),
            }
            for r in rows
        ],
    )


def delete_vectors(session: Session, model_id: int, frame_ids: Sequence[int]) -> None:
    """Delete the given frames' vectors and log the change for other processes' indexes."""
    if not frame_ids:
        return
    session.execute(
        text(f"DELETE FROM {vector_table_name(model_id)} WHERE rowid = :id"),
        [{"id": int(i)} for i in frame_ids],
    )
    log_changes(session, frame_ids)  # vec0 takes no triggers (upsert deletes first)


def read_vectors(
    session: Executor, model_id: int, frame_ids: Sequence[int]
) -> dict[int, list[float]]:
    """The stored vectors, read in batches of 500 ids."""
    # vec0 returns a float[] column as its little-endian float32 blob.
    found: dict[int, list[float]] = {}
    ids = [int(i) for i in frame_ids]
    for start in range(0, len(ids), 500):
        rows = connection_of(session).execute(
            text(
                f"SELECT rowid, embedding FROM {vector_table_name(model_id)} "
                "WHERE rowid IN :ids"
            ).bindparams(bindparam("ids", expanding=True)),
            {"ids": ids[start : start + 500]},
        )
        for frame_id, blob in rows:
            floats = array("f", bytes(blob))
            if sys.byteorder == "big":
                floats.byteswap()
            found[int(frame_id)] = list(floats)
    return found


def vector_orphans(session: Session, model_id: int) -> list[int]:
    """Frame ids with a vector but no frame (the trigger missed them: a write around it)."""
    table = vector_table_name(model_id)
    return [
        int(r[0])
        for r in session.execute(
            text(
                f"SELECT v.rowid FROM {table} v WHERE NOT EXISTS "
                f"(SELECT 1 FROM {T_FRAMES} f WHERE f.id = v.rowid)"
            )
        ).all()
    ]


# -- keyword index (FTS5) ----------------------------------------------------------------------


def has_fts_table(session: Session) -> bool:
    """A dropped FTS5 table has no rows to fix (``verify_derived`` reports it)."""
    return (
        session.execute(
            text("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = :name"),
            {"name": T_FTS},
        ).scalar()
        is not None
    )


#: Frame ids per page while re-indexing frames missing from the FTS5 table.
KEYWORD_REPAIR_PAGE = 1000


def repair_keyword_index(session: Session, mind_id: int | None) -> int:
    """Recompute stale frame contexts (``context_index``; the FTS update trigger re-indexes
    them), then re-index the frames whose FTS5 row is missing or stale; returns how many frames
    were fixed."""
    if not has_fts_table(session):
        return 0
    params: dict[str, Any] = {}
    mind = ""
    if mind_id is not None:
        params["mind_id"] = mind_id
        mind = "AND f.mind_id = :mind_id"
    contexts = rowcount(session.execute(text(stale_context_update("sqlite", mind_id)), params))
    # Missing rows, and rows whose text is not the frame's (a write that bypassed triggers).
    # Read in keyset pages, so a rebuilt (empty) FTS5 table of a large store is refilled
    # without holding every frame id; all in the caller's one transaction.
    fixed = after = 0
    while True:
        stale = [
            int(r[0])
            for r in session.execute(
                text(
                    f"SELECT f.id FROM {T_FRAMES} f LEFT JOIN {T_FTS} x "
                    "ON x.rowid = f.id "
                    "WHERE (x.rowid IS NULL OR x.content IS NOT f.content "
                    f"OR x.context IS NOT f.search_context) {mind} "
                    "AND f.id > :after ORDER BY f.id LIMIT :page"
                ),
                {**params, "after": after, "page": KEYWORD_REPAIR_PAGE},
            ).all()
        ]
        if not stale:
            return contexts + fixed
        for frame_id in stale:
            session.execute(text(f"DELETE FROM {T_FTS} WHERE rowid = :id"), {"id": frame_id})
            session.execute(
                text(
                    f"INSERT INTO {T_FTS}(rowid, content, context) "
                    f"SELECT id, content, search_context FROM {T_FRAMES} WHERE id = :id"
                ),
                {"id": frame_id},
            )
        fixed += len(stale)
        after = stale[-1]


def remove_keyword_orphans(session: Session) -> int:
    """Delete FTS5 rows whose frame is gone; returns how many."""
    if not has_fts_table(session):
        return 0
    result = session.execute(
        text(f"DELETE FROM {T_FTS} WHERE rowid NOT IN (SELECT id FROM {T_FRAMES})")
    )
    return rowcount(result)


# -- purge -----------------------------------------------------------------------------------


def _file_bytes(path: str) -> int:
    return sum(os.path.getsize(p) for p in (path, f"{path}-wal") if os.path.exists(p))


def purge(engine: Engine) -> tuple[int, int]:
    """Make deleted text unrecoverable from the database files; (bytes before, bytes after) of
    the file and its WAL.

    With ``secure_delete`` on for this connection, the FTS5 index is merged into one segment
    (``optimize``: the doclists of deleted rows are dropped, where a delete only adds a
    tombstone entry), ``VACUUM`` rebuilds the file from the live rows only (free pages and the
    unused space of pages are not copied), and a ``TRUNCATE`` checkpoint writes the WAL back
    and cuts it to zero bytes. The FTS5 ``secure-delete`` option is not turned on: a table
    with it cannot be written by SQLite before 3.42, and ``optimize`` removes the same
    traces at purge time."""
    path = engine.url.database
    if path in (None, "", ":memory:"):
        return 0, 0
    before = _file_bytes(path)
    raw = engine.raw_connection()
    try:
        conn: Any = raw.driver_connection
        conn.execute("PRAGMA secure_delete = ON")
        try:
            if conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (T_FTS,)).fetchone():
                conn.execute(f"INSERT INTO {T_FTS}({T_FTS}) VALUES ('optimize')")
            conn.execute("VACUUM")
            busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
        finally:
            conn.execute("PRAGMA secure_delete = OFF")
    finally:
        raw.close()
    if busy:
        raise StorageBusyError(
            "purge: the WAL could not be checkpointed (another connection is reading); the "
            "deleted text may remain in the -wal file until the next checkpoint")
    return before, _file_bytes(path)


def orphan_rows(session: Executor) -> list[DerivedProblem]:
    """``PRAGMA foreign_key_check`` over the store's tables, as one problem per table."""
    counts: dict[str, int] = {}
    for row in connection_of(session).execute(text("PRAGMA foreign_key_check")):
        table = str(row[0])
        if table.startswith(TABLE_PREFIX):
            counts[table] = counts.get(table, 0) + 1
    return [DerivedProblem(
        "rows", table, f"{n} row(s) of {table} belong to a deleted parent row (deleted with "
        "foreign keys off, so nothing cascaded): store.reconcile(repair=True) removes them")
        for table, n in sorted(counts.items())]


def remove_orphan_rows(session: Session) -> int:
    """Delete every store row ``PRAGMA foreign_key_check`` reports, by rowid; the deletes
    cascade (the store's connections have foreign keys on), and what a cascade cannot reach
    is found on the next pass."""
    removed = 0
    for _ in range(16):  # one pass per level of the deepest parent chain is enough
        found = {(str(r[0]), int(r[1])) for r in session.execute(text("PRAGMA foreign_key_check"))
                 if str(r[0]).startswith(TABLE_PREFIX) and r[1] is not None}
        if not found:
            break
        for table, rowid in sorted(found):
            removed += rowcount(session.execute(text(f'DELETE FROM "{table}" WHERE rowid = :r'),
                                                {"r": rowid}))
    return removed
