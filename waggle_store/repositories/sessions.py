"""Sessions repository: groups of frames, one active auto session per (mind, project).

"One active auto session per (mind, project)" is enforced by the partial unique index
``uq_sessions_one_active``; the code here never relies on check-then-insert alone. Every insert
that can race runs inside a SAVEPOINT (:func:`~waggle_store.repositories.common.insert_or_none`),
and on IntegrityError the winner's row is re-read (on
Postgres under READ COMMITTED each statement sees the other transaction's commit; on SQLite
BEGIN IMMEDIATE already serialises writers, so the first SELECT finds it).
"""

from __future__ import annotations

import secrets
import string
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Executable, func, select
from sqlalchemy.orm import Session

from waggle_store.errors import ConflictError, NotFoundError
from waggle_store.models import SESSION_STATUSES, SessionRow
from waggle_store.records import Session as SessionRecord
from waggle_store.repositories.common import (
    check_choice,
    check_name,
    check_text,
    insert_or_none,
    locks_rows,
)
from waggle_store.repositories.frame_sql import LOCK_MIND_AND_SESSION, LOCK_SESSION
from waggle_store.repositories.knowledge_common import graph_locked, note_graph_lock
from waggle_store.timeutil import utcnow

_BASE36 = string.digits + string.ascii_lowercase
_RACE_ATTEMPTS = 8  # each lost race means another writer committed; a handful always suffices


def to_session(row: SessionRow) -> SessionRecord:
    return SessionRecord(row.id, row.gop_id, row.project_id, row.status, row.started_at,
                         row.ended_at, row.summary)


def new_gop_id(now: datetime | None = None) -> str:
    """``session:<ISO ms Z>:<6 base36>`` (Waggle's form), always 6 random characters."""
    moment = now or utcnow()
    stamp = moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
    return f"session:{stamp}:{''.join(secrets.choice(_BASE36) for _ in range(6))}"


def _not_found(gop_id: str) -> NotFoundError:
    return NotFoundError(f"no session {gop_id!r} in this mind (create it with sessions.ensure)")


def _check_project(project_id: str | None) -> str | None:
    return None if project_id is None else check_name(project_id, name="project_id")


class SessionRepository:
    def __init__(self, session: Session, mind_id: int) -> None:
        self.session = session
        self.mind_id = mind_id

    # -- reads --------------------------------------------------------------------------------

    def row(self, gop_id: str, *, lock: bool = False) -> SessionRow | None:
        """The session row; ``lock`` takes a row lock (FOR NO KEY UPDATE on Postgres, a no-op on
        SQLite where BEGIN IMMEDIATE serialises writers) so per-session sequences stay gapless."""
        check_name(gop_id, name="gop_id")
        query = select(SessionRow).where(SessionRow.mind_id == self.mind_id,
                                         SessionRow.gop_id == gop_id)
        if lock:
            query = query.with_for_update(key_share=True)
        return self.session.scalar(query)

    def require(self, gop_id: str, *, lock: bool = False) -> SessionRow:
        row = self.row(gop_id, lock=lock)
        if row is None:
            raise _not_found(gop_id)
        return row

    def lock(self, gop_id: str) -> None:
        """:meth:`require` with ``lock=True`` for writers that need only the lock: one column,
        no ORM row loaded (frames.create_i and cognify take it on every write)."""
        check_name(gop_id, name="gop_id")
        # A prebuilt statement (repositories/frame_sql.py): this runs once per frame written.
        found = self.session.scalar(LOCK_SESSION, {"mind_id": self.mind_id, "gop_id": gop_id})
        if found is None:
            raise _not_found(gop_id)

    def lock_with_mind(self, gop_id: str) -> tuple[Executable, dict[str, Any]] | None:
        """``lock_graph`` then :meth:`lock` (the lock order of every write path) as one
        statement for the caller to run ahead of its write, in the same round trip
        (``dialects.frame_write.insert_keyframe``), then hand its rows to :meth:`locked`.

        None when there is no such statement to run: on SQLite (``BEGIN IMMEDIATE`` serialises
        writers; the caller's write checks that the session exists), or when this transaction
        holds the mind row already (the session row is locked here, then)."""
        if not locks_rows(self.session):
            return None
        if graph_locked(self.session, self.mind_id):
            self.lock(gop_id)
            return None
        check_name(gop_id, name="gop_id")
        return LOCK_MIND_AND_SESSION, {"mind_id": self.mind_id, "gop_id": gop_id}

    def locked(self, gop_id: str, rows: Sequence[Any]) -> None:
        """The rows of :meth:`lock_with_mind`'s statement: none means no such session (the
        caller's transaction is then rolled back with everything it ran)."""
        if not rows:
            raise _not_found(gop_id)
        note_graph_lock(self.session, self.mind_id)

    def get(self, gop_id: str) -> SessionRecord | None:
        row = self.row(gop_id)
        return None if row is None else to_session(row)

    def list(self, *, project_id: str | None = None,
             status: str | None = None) -> list[SessionRecord]:
        query = select(SessionRow).where(SessionRow.mind_id == self.mind_id)
        if project_id is not None:
            query = query.where(SessionRow.project_id == _check_project(project_id))
        if status is not None:
            wanted = check_choice(status, SESSION_STATUSES, name="status")
            query = query.where(SessionRow.status == wanted)
        query = query.order_by(SessionRow.started_at.desc(), SessionRow.id.desc())
        return [to_session(r) for r in self.session.scalars(query)]

    def _active_auto(self, project_id: str | None) -> SessionRow | None:
        return self.session.scalar(select(SessionRow).where(
            SessionRow.mind_id == self.mind_id,
            SessionRow.kind == "auto",
            SessionRow.status == "active",
            func.coalesce(SessionRow.project_id, "") == (project_id or ""),
        ).order_by(SessionRow.id.desc()).limit(1))

    # -- writes -------------------------------------------------------------------------------

    def ensure_active(self, project_id: str | None = None) -> SessionRecord:
        """The one active auto session of (mind, project), created if there is none.

        Named sessions (harvest, MCP day sessions) are never returned."""
        project = _check_project(project_id)
        for _ in range(_RACE_ATTEMPTS):
            row = self._active_auto(project)
            if row is None:
                row = insert_or_none(self.session, SessionRow(
                    mind_id=self.mind_id, gop_id=new_gop_id(), project_id=project, kind="auto"))
            if row is not None:
                return to_session(row)
        raise ConflictError(
            "could not create or find the active session: too many concurrent writers")

    def create(self, project_id: str | None = None) -> SessionRecord:
        """Start a new auto session for (mind, project); the previous active auto session of that
        project, if any, is closed (its summary kept), so ensure_active() returns the new one."""
        project = _check_project(project_id)
        for _ in range(_RACE_ATTEMPTS):
            current = self._active_auto(project)
            if current is not None:
                self._finish(current, "closed")
            row = insert_or_none(self.session, SessionRow(
                mind_id=self.mind_id, gop_id=new_gop_id(), project_id=project, kind="auto"))
            if row is not None:
                return to_session(row)
        raise ConflictError("could not start a session: too many concurrent writers")

    def ensure(self, gop_id: str, *, project_id: str | None = None,
               summary: str | None = None) -> SessionRecord:
        """A named session: returned as is if it exists (any status), else created active."""
        check_name(gop_id, name="gop_id")
        project = _check_project(project_id)
        if summary is not None:
            check_text(summary, name="summary", allow_empty=True)
        for _ in range(_RACE_ATTEMPTS):
            row = self.row(gop_id)
            if row is None:
                row = insert_or_none(self.session, SessionRow(
                    mind_id=self.mind_id, gop_id=gop_id, project_id=project, kind="named",
                    summary=summary))
            if row is not None:
                return to_session(row)
        raise ConflictError(f"could not create or find session {gop_id!r}")

    def _finish(self, row: SessionRow, status: str) -> None:
        row.status = status
        if row.ended_at is None:
            row.ended_at = utcnow()
        self.session.flush()

    def close(self, gop_id: str, summary: str | None = None) -> SessionRecord:
        """Close a session. ``summary=None`` keeps the existing summary."""
        if summary is not None:
            check_text(summary, name="summary", allow_empty=True)
        row = self.require(gop_id)
        if summary is not None:
            row.summary = summary
        self._finish(row, "closed")
        return to_session(row)

    def archive(self, gop_id: str) -> SessionRecord:
        row = self.require(gop_id)
        self._finish(row, "archived")
        return to_session(row)
