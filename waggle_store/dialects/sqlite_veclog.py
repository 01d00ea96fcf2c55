"""The change log that keeps in-process vector indexes coherent with a SQLite store.

``frame_vectors_log(seq, frame_id)``: every change that can alter what the vector lane may
return for a frame appends the frame's id, in the writing transaction —

* the adapter's vector upserts and deletes (vec0 tables take no triggers): :func:`log_changes`;
* triggers: a frame deleted, or its ``content_hash``/``gop_id``/``created_at``/``mind_id``
  changed; a manifest row inserted, deleted, or its ``status``/``content_hash``/``model_id``
  changed.

SQLite has one writer at a time, so ``seq`` (the rowid) is handed out in commit order and a
read snapshot sees a prefix of the log: an index that read the log up to ``seq`` knows which
frames to re-read. The log keeps its newest :data:`LOG_KEEP` entries. It is created with the
first vector table (and by ``store.reconcile()``); a store without it has no index.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from sqlalchemy import text
from sqlalchemy.orm import Session

from waggle_store.dialects.base import T_EMBEDDINGS, T_FRAMES, Executor
from waggle_store.dialects.common import run_lane
from waggle_store.models.base import table_name

LOG_TABLE: Final = table_name("frame_vectors_log")
#: Log entries kept; an index further behind reloads in full.
LOG_KEEP: Final = 200_000


def _trigger(name: str, event: str, table: str, frame: str) -> str:
    return (f"CREATE TRIGGER IF NOT EXISTS {LOG_TABLE}_{name} AFTER {event} ON {table} "
            f"BEGIN INSERT INTO {LOG_TABLE}(frame_id) VALUES ({frame}); END")


LOG_DDL: Final = (
    f"CREATE TABLE IF NOT EXISTS {LOG_TABLE} (seq INTEGER PRIMARY KEY, frame_id INTEGER NOT NULL)",
    _trigger("frame_ad", "DELETE", T_FRAMES, "old.id"),
    _trigger("frame_au", "UPDATE OF content_hash, gop_id, created_at, mind_id", T_FRAMES,
             "new.id"),
    _trigger("manifest_ai", "INSERT", T_EMBEDDINGS, "new.frame_id"),
    _trigger("manifest_au", "UPDATE OF status, content_hash, model_id", T_EMBEDDINGS,
             "new.frame_id"),
    _trigger("manifest_ad", "DELETE", T_EMBEDDINGS, "old.frame_id"),
)


def ensure_log(session: Session) -> None:
    """Create the change log and its triggers (idempotent; in the caller's write transaction)."""
    for ddl in LOG_DDL:
        session.execute(text(ddl))


def log_changes(session: Session, frame_ids: Sequence[int]) -> None:
    """Append these frames to the change log and prune it to its newest :data:`LOG_KEEP`
    entries (a range delete on the primary key). A store without the log has no index to keep
    coherent."""
    if not frame_ids or not has_log(session):
        return
    session.execute(text(f"INSERT INTO {LOG_TABLE}(frame_id) VALUES (:id)"),
                    [{"id": int(i)} for i in frame_ids])
    session.execute(text(f"DELETE FROM {LOG_TABLE} WHERE seq <= "
                         f"(SELECT max(seq) FROM {LOG_TABLE}) - {LOG_KEEP}"))


def has_log(executor: Executor) -> bool:
    return bool(run_lane(executor, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = :n",
                         {"n": LOG_TABLE}))


def log_bounds(executor: Executor) -> tuple[int, int]:
    """(oldest, newest) ``seq`` the snapshot sees; (0, 0) for an empty log."""
    # Two subqueries: SQLite answers a lone min() or max() from the primary key's ends, where
    # ``SELECT min(seq), max(seq)`` scans the whole log.
    low, high = run_lane(executor, f"SELECT (SELECT min(seq) FROM {LOG_TABLE}), "
                         f"(SELECT max(seq) FROM {LOG_TABLE})", {})[0]
    return int(low or 0), int(high or 0)


def changed_since(executor: Executor, seq: int) -> list[int]:
    """The frames logged after ``seq``."""
    return [int(r[0]) for r in run_lane(
        executor, f"SELECT DISTINCT frame_id FROM {LOG_TABLE} WHERE seq > :s", {"s": seq})]
