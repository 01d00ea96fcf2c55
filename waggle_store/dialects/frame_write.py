"""``frames.create_i``'s write: a keyframe and its manifest, with the checks that decide whether
to write them, in as few statements as each database allows.

A ``create_i`` loop is the write an agent makes most (one memory, one transaction), so it
stays close to the raw insert of the same two rows. The checks ride in the INSERT
itself: the keyframe is written only if its session exists and the mind has no I-frame of the
same content yet, with ``t`` = the session's MAX(t) + 1 as a subquery. On Postgres the manifest
is a second data-modifying part of the same statement (one round trip for both rows); SQLite
has no data-modifying WITH, so there it is a second statement, which costs no round trip. A
bound store's Postgres session writes the manifest in a second statement too (one more round
trip): the manifest's row-level security checks that its frame belongs to the bound mind, and
the parts of one statement do not see each other's rows.
Both go to the DBAPI cursor (:func:`~waggle_store.dialects.common.run_statement`): compiled once
by SQLAlchemy, without its per-statement execution context, which cost more than SQLite spent
running them.

The caller holds the locks the checks need (Postgres: the mind row, then the session row; SQLite:
``BEGIN IMMEDIATE``). Nothing returned means nothing written; the caller finds out which check
failed.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final, cast

from sqlalchemy import (
    BindParameter,
    Executable,
    Table,
    bindparam,
    exists,
    func,
    insert,
    literal,
    select,
)
from sqlalchemy.orm import Session

from waggle_store.dialects.common import connection_of, run_statement, run_statements
from waggle_store.dialects.host import BOUND_MIND_OPTION
from waggle_store.models import FrameEmbeddingRow, FrameRow, SessionRow

__all__ = ["insert_keyframe"]

_FRAMES = cast(Table, FrameRow.__table__)
_MANIFESTS = cast(Table, FrameEmbeddingRow.__table__)
_SESSIONS = cast(Table, SessionRow.__table__)
_F = _FRAMES.c

_VALUES = ("mind_id", "gop_id", "content", "content_hash", "importance", "source", "created_at")


def _typed(name: str) -> BindParameter[Any]:
    # Typed, so Postgres is told each value's type: an INSERT … SELECT does not take them from
    # the target columns.
    return bindparam(name, type_=_F[name].type)


_KEYFRAME = (
    select(
        _typed("mind_id"), literal("I"), _typed("gop_id"),
        select(func.coalesce(func.max(_F.t), -1) + 1)
        .where(_F.mind_id == bindparam("mind_id"), _F.gop_id == bindparam("gop_id"))
        .scalar_subquery(),
        _typed("content"), _typed("content_hash"), _typed("importance"), _typed("source"),
        literal(0), _typed("created_at"), bindparam("last_accessed", type_=_F.created_at.type),
        _typed("metadata"),
    )
    .where(exists().where(_SESSIONS.c.mind_id == bindparam("mind_id"),
                          _SESSIONS.c.gop_id == bindparam("gop_id")),
           ~exists().where(_F.mind_id == bindparam("mind_id"),
                           _F.content_hash == bindparam("content_hash"),
                           _F.frame_type == "I"))
)
_KEYFRAME_COLUMNS = ("mind_id", "frame_type", "gop_id", "t", "content", "content_hash",
                     "importance", "source", "access_count", "created_at", "last_accessed",
                     "metadata")

#: The keyframe, if its checks pass: returns (id, t). SQLite.
_INSERT_KEYFRAME: Final = (insert(_FRAMES)
                           .from_select(_KEYFRAME_COLUMNS, _KEYFRAME, include_defaults=False)
                           .returning(_F.id, _F.t))

#: A new manifest's text form: the column's default, which SQLAlchemy would fill in when it
#: executes an insert (run_statement does not execute through SQLAlchemy).
_TEXT_FORM: Final = cast(str, _MANIFESTS.c.text_form.default.arg)  # type: ignore[union-attr]

#: Its manifest (no vector yet). SQLite.
_INSERT_MANIFEST: Final = insert(_MANIFESTS).values(
    frame_id=bindparam("frame_id"), model_id=None, content_hash=bindparam("content_hash"),
    status="pending", error=None, updated_at=bindparam("updated_at", type_=_F.created_at.type),
    text_form=_TEXT_FORM)

_written = _INSERT_KEYFRAME.returning(_F.content_hash).cte("written")

#: Both rows in one statement: returns (id, t), or no row. Postgres (a data-modifying WITH).
_INSERT_BOTH: Final[Executable] = select(_written.c.id, _written.c.t).add_cte(
    insert(_MANIFESTS).from_select(
        ["frame_id", "model_id", "content_hash", "status", "error", "updated_at", "text_form"],
        select(_written.c.id, literal(None, _MANIFESTS.c.model_id.type),
               _written.c.content_hash, literal("pending"), literal(None, _MANIFESTS.c.error.type),
               bindparam("updated_at", type_=_F.created_at.type), literal(_TEXT_FORM)),
        include_defaults=False,
    ).cte("manifest"))


def insert_keyframe(session: Session, *, mind_id: int, gop_id: str, content: str,
                    content_hash: str, importance: str, source: str, created_at: datetime,
                    updated_at: datetime,
                    before: tuple[Executable, dict[str, Any]] | None = None,
                    metadata: dict[str, Any] | None = None,
                    ) -> tuple[list[Any], tuple[int, int] | None]:
    """Write a keyframe (``access_count`` 0, last accessed at ``created_at``) and its pending
    manifest (``updated_at``) if the session exists and the mind has no I-frame with this
    ``content_hash``; returns the rows of ``before`` (a statement to run first: the locks the
    checks need) and (id, t), or None when nothing was written.

    On Postgres ``before`` and the write go in one round trip
    (:func:`~waggle_store.dialects.common.run_statements`): the write's checks still read what
    was committed before the locks were granted."""
    params = {"mind_id": mind_id, "gop_id": gop_id, "content": content,
              "content_hash": content_hash, "importance": importance, "source": source,
              "created_at": created_at, "last_accessed": created_at, "metadata": metadata}
    first = [] if before is None else [before]
    both = (session.get_bind().dialect.name == "postgresql"
            and connection_of(session).get_execution_options().get(BOUND_MIND_OPTION) is None)
    if both:
        write: tuple[Executable, dict[str, Any]] = (_INSERT_BOTH,
                                                     params | {"updated_at": updated_at})
    else:
        write = (_INSERT_KEYFRAME, params)
    *locked, rows = run_statements(session, [*first, write])
    lock_rows = locked[0] if locked else []
    if not rows:
        return lock_rows, None
    frame_id, t = int(rows[0][0]), int(rows[0][1])
    if not both:
        run_statement(session, _INSERT_MANIFEST, {
            "frame_id": frame_id, "content_hash": content_hash, "updated_at": updated_at})
    return lock_rows, (frame_id, t)
