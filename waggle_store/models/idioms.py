"""Two database idioms every writer needs: a race-free get-or-create, and affected-row counts.

They sit beside the ORM models, in the lowest layer that knows SQLAlchemy sessions, so that every
layer that writes can use the same code: the repositories and the dialect adapters.
(:mod:`waggle_store.repositories.common` re-exports them.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import CursorResult, Result
from sqlalchemy.orm import Session

__all__ = ["get_or_create", "insert_or_none", "rowcount"]

RowT = TypeVar("RowT")


def insert_or_none(session: Session, row: RowT) -> RowT | None:
    """Add ``row`` (an ORM instance) in a savepoint; None when a constraint refused it.

    The savepoint is what makes this safe inside a longer unit of work: a refused INSERT rolls
    back only itself, and the caller's transaction (and, on Postgres, its other statements) go
    on. Callers that retry in a loop (a unique *partial* index that a concurrent writer can
    satisfy and then release, like "one active session per project") use this directly;
    everything else uses :func:`get_or_create`.
    """
    try:
        with session.begin_nested():
            session.add(row)
    except sa_exc.IntegrityError:
        return None
    return row


def get_or_create(session: Session, find: Callable[[], RowT | None],
                  make: Callable[[], RowT]) -> tuple[RowT, bool]:
    """The row ``find()`` returns, else ``make()``'s row inserted; ``(row, created)``.

    Race-free without a lock: two transactions may both miss the row and both insert, but the
    unique constraint lets one INSERT through and refuses the other, whose savepoint rolls back
    and who then finds the winner's row (Postgres READ COMMITTED sees it once the winner
    commits; the refused INSERT waited for that). An IntegrityError after which ``find()`` still
    sees nothing was not a lost race (e.g. a missing foreign key) and is re-raised.
    ``make`` is only called on a miss, so a row with side effects (a fresh id) is built once.
    """
    found = find()
    if found is not None:
        return found, False
    try:
        with session.begin_nested():
            row = make()
            session.add(row)
    except sa_exc.IntegrityError:
        found = find()
        if found is None:
            raise
        return found, False
    return row, True


def rowcount(result: Result[Any]) -> int:
    """Rows matched by the UPDATE or DELETE that produced ``result``.

    ``Session.execute`` is typed to return a plain ``Result``; a DML statement's result is a
    ``CursorResult`` at run time, which is the only kind that carries a row count. Checking
    that here (instead of an ``attr-defined`` ignore at every call) turns a misuse on a SELECT
    into a clear error rather than an AttributeError.
    """
    if not isinstance(result, CursorResult):
        raise TypeError(
            f"rowcount needs the result of an UPDATE or DELETE, got {type(result).__name__}")
    return int(result.rowcount)
