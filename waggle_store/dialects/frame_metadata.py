"""The derived objects that answer a search's ``where={"metadata": {...}}`` filter: their DDL,
and the repair of SQLite's side table when its rows drift from the frames' metadata.

* SQLite: the side table ``waggle_frame_metadata(frame_id, mind_id, key, type, value)`` of each
  frame's top-level metadata entries, indexed by (mind_id, key, value), and the three triggers
  on the frames table that keep it in step (a dropped insert trigger makes every new frame
  invisible to a metadata filter);
* PostgreSQL: the GIN index (``jsonb_path_ops``) on ``waggle_memory_frames.metadata``.

Migration 0014 creates the same objects with its own frozen copies of these statements (as
migrations must); the tests check a migrated store reports no problem with them. The checks of
missing or broken objects are in :mod:`.derived` (catalogue reads, cheap enough for every
``health()``); the row comparison here reads every frame with metadata, so only ``reconcile``
runs it.
"""

from __future__ import annotations

from typing import Final

from sqlalchemy import text

from waggle_store.dialects.base import T_FRAMES, Executor
from waggle_store.dialects.common import T_FRAME_METADATA

__all__ = ["PG_METADATA_INDEX", "PG_METADATA_INDEX_DDL", "SQLITE_METADATA_DDL",
           "SQLITE_METADATA_TRIGGERS", "sqlite_resync_metadata"]

_ENTRIES: Final = (
    f"INSERT INTO {T_FRAME_METADATA} (frame_id, mind_id, key, type, value) "
    "SELECT new.id, new.mind_id, j.key, j.type, j.atom FROM json_each(new.metadata) j "
    "WHERE json_type(new.metadata) = 'object'; "
)
SQLITE_METADATA_TABLE_DDL: Final = (
    f"CREATE TABLE IF NOT EXISTS {T_FRAME_METADATA} (frame_id INTEGER NOT NULL, "
    "mind_id INTEGER NOT NULL, key TEXT NOT NULL, type TEXT NOT NULL, value, "
    "PRIMARY KEY (frame_id, key)) WITHOUT ROWID"
)
SQLITE_METADATA_INDEX_DDL: Final = (
    f"CREATE INDEX IF NOT EXISTS ix_{T_FRAME_METADATA}_mind_key_value "
    f"ON {T_FRAME_METADATA} (mind_id, key, value)"
)
#: Trigger name -> (statement, what goes wrong without it).
SQLITE_METADATA_TRIGGERS: Final[dict[str, tuple[str, str]]] = {
    f"{T_FRAME_METADATA}_ai": (
        (f"CREATE TRIGGER IF NOT EXISTS {T_FRAME_METADATA}_ai AFTER INSERT ON {T_FRAMES} "
         f"WHEN new.metadata IS NOT NULL BEGIN {_ENTRIES}END"),
        "new frames are not found by a metadata filter"),
    f"{T_FRAME_METADATA}_ad": (
        (f"CREATE TRIGGER IF NOT EXISTS {T_FRAME_METADATA}_ad AFTER DELETE ON {T_FRAMES} "
         f"BEGIN DELETE FROM {T_FRAME_METADATA} WHERE frame_id = old.id; END"),
        "deleted frames leave their metadata entries behind"),
    f"{T_FRAME_METADATA}_au": (
        (f"CREATE TRIGGER IF NOT EXISTS {T_FRAME_METADATA}_au AFTER UPDATE OF metadata, mind_id "
         f"ON {T_FRAMES} BEGIN DELETE FROM {T_FRAME_METADATA} WHERE frame_id = old.id; "
         f"{_ENTRIES}END"),
        "changed metadata is filtered by its old entries"),
}
#: Every statement that builds SQLite's metadata index, in order (repair runs these).
SQLITE_METADATA_DDL: Final = (SQLITE_METADATA_TABLE_DDL, SQLITE_METADATA_INDEX_DDL,
                              *(ddl for ddl, _ in SQLITE_METADATA_TRIGGERS.values()))

PG_METADATA_INDEX: Final = f"ix_{T_FRAMES}_metadata"
PG_METADATA_INDEX_DDL: Final = (
    f"CREATE INDEX IF NOT EXISTS {PG_METADATA_INDEX} ON {T_FRAMES} "
    "USING gin (metadata jsonb_path_ops)"
)

#: Frames re-indexed per statement.
_BATCH: Final = 500


def _drifted(session: Executor, mind_id: int | None) -> list[int]:
    """Ids of the frames (and of gone frames) whose side-table rows differ from their
    metadata's top-level entries, either way.

    One pass first: when every entry of the frames' metadata has its row and the side table
    holds as many rows as there are entries, the two are equal (a frame's entries have distinct
    keys, the side table's key is (frame, key)) and nothing more is read. Only a drift pays for
    the second probe, from the side table's rows back to the frames' JSON."""
    mine = "" if mind_id is None else "AND f.mind_id = :mind_id"
    params = {} if mind_id is None else {"mind_id": mind_id}
    wanted = (f"SELECT f.id AS frame_id, f.mind_id, j.key, j.type, j.atom FROM {T_FRAMES} f, "
              f"json_each(f.metadata) j WHERE f.metadata IS NOT NULL "
              f"AND json_type(f.metadata) = 'object' {mine}")
    lost = (f"NOT EXISTS (SELECT 1 FROM {T_FRAME_METADATA} s WHERE s.frame_id = w.frame_id "
            "AND s.key = w.key AND s.mind_id = w.mind_id AND s.type = w.type "
            "AND s.value IS w.atom)")
    entries, missing = session.execute(text(
        f"SELECT count(*), coalesce(sum({lost}), 0) FROM ({wanted}) w"), params).one()
    held = session.execute(text(
        f"SELECT count(*) FROM {T_FRAME_METADATA} "
        f"{'' if mind_id is None else 'WHERE mind_id = :mind_id'}"), params).scalar()
    if not missing and entries == held:
        return []
    extra = (f"SELECT s.frame_id FROM {T_FRAME_METADATA} s WHERE "
             f"{'' if mind_id is None else 's.mind_id = :mind_id AND '}NOT EXISTS ("
             f"SELECT 1 FROM {T_FRAMES} f, json_each(f.metadata) j WHERE f.id = s.frame_id "
             "AND f.mind_id = s.mind_id AND json_type(f.metadata) = 'object' "
             "AND j.key = s.key AND j.type = s.type AND j.atom IS s.value)")
    rows = session.execute(text(
        f"SELECT w.frame_id FROM ({wanted}) w WHERE {lost} UNION {extra} ORDER BY 1"), params)
    return [int(r[0]) for r in rows]


def sqlite_resync_metadata(session: Executor, mind_id: int | None) -> int:
    """Rewrite the side-table rows of every frame (of mind ``mind_id``, or all) whose rows are
    not its metadata's entries; returns how many frames. The side table must exist."""
    ids = _drifted(session, mind_id)
    for start in range(0, len(ids), _BATCH):
        chunk = ids[start:start + _BATCH]
        marks = ", ".join(f":f{n}" for n in range(len(chunk)))
        params = {f"f{n}": fid for n, fid in enumerate(chunk)}
        session.execute(text(f"DELETE FROM {T_FRAME_METADATA} WHERE frame_id IN ({marks})"),
                        params)
        session.execute(text(
            f"INSERT INTO {T_FRAME_METADATA} (frame_id, mind_id, key, type, value) "
            f"SELECT f.id, f.mind_id, j.key, j.type, j.atom FROM {T_FRAMES} f, "
            f"json_each(f.metadata) j WHERE f.id IN ({marks}) AND f.metadata IS NOT NULL "
            "AND json_type(f.metadata) = 'object'"), params)
    return len(ids)
