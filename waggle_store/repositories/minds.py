"""Minds: the memory namespaces every other table hangs off.

Unlike the other repositories this one is not scoped to a mind (it finds and makes them), so it
takes only the caller's Session; like them, it never commits.
"""

from __future__ import annotations

from collections.abc import Iterable

import sqlalchemy as sa
from sqlalchemy.orm import Session

from waggle_store.errors import InvalidInputError, NotFoundError
from waggle_store.models import MIND_KINDS, Base, MindRow
from waggle_store.records import MindInfo
from waggle_store.repositories.common import get_or_create, rowcount

MAX_MIND_NAME_LENGTH = 200  # minds.name is VARCHAR(200)


def mind_names(session: Session, mind_ids: Iterable[int] | None = None) -> dict[int, str]:
    """Mind id → name, for the ids that exist (every mind when ``mind_ids`` is None)."""
    stmt = sa.select(MindRow.id, MindRow.name)
    if mind_ids is not None:
        stmt = stmt.where(MindRow.id.in_(set(mind_ids)))
    return {int(i): str(n) for i, n in session.execute(stmt).all()}


def mind_holds_rows(session: Session, mind_id: int) -> bool:
    """Whether any table keyed by mind holds a row of this mind."""
    for table in Base.metadata.sorted_tables:
        column = table.c.get("mind_id")
        if column is not None and session.scalar(
                sa.select(column).where(column == mind_id).limit(1)) is not None:
            return True
    return False


def mind_exists(session: Session, mind_id: int) -> bool:
    return session.get(MindRow, mind_id) is not None


def check_mind_name(name: object) -> str:
    if (not isinstance(name, str) or not name.strip() or len(name) > MAX_MIND_NAME_LENGTH
            or "\x00" in name):
        raise InvalidInputError(
            f"a mind name must be a non-empty string of at most {MAX_MIND_NAME_LENGTH} characters")
    return name


def check_mind_kind(kind: object) -> str:
    if kind not in MIND_KINDS:
        raise InvalidInputError(f"mind kind must be one of {MIND_KINDS}, got {kind!r}")
    return str(kind)


def to_info(row: MindRow) -> MindInfo:
    return MindInfo(row.name, row.kind, row.created_at)


class MindRepository:
    def __init__(self, session: Session) -> None:
        self.session = session

    def get_or_create(self, name: str, kind: str = "workspace") -> tuple[MindRow, bool]:
        """The mind called ``name``, created with ``kind`` if there is none; ``(row, created)``.

        Race-free through the unique index on ``minds.name`` (see
        :func:`~waggle_store.repositories.common.get_or_create`): processes that open the same
        mind at once all get the one row. An existing mind keeps its kind, whatever ``kind``
        says: the name is the identity, the kind was decided when it was made.
        """
        check_mind_name(name)
        check_mind_kind(kind)
        return get_or_create(self.session, lambda: self.get(name),
                             lambda: MindRow(name=name, kind=kind))

    def get(self, name: str) -> MindRow | None:
        return self.session.scalar(sa.select(MindRow).where(MindRow.name == name))

    def delete(self, name: str) -> None:
        """Delete the mind and, through ``ON DELETE CASCADE``, every row of it, and nothing else.

        The FTS rows follow through triggers, the per-model vector rows through the adapter's
        triggers / foreign keys. NotFoundError when there is no such mind.
        """
        if rowcount(self.session.execute(sa.delete(MindRow).where(MindRow.name == name))) == 0:
            raise NotFoundError(f"no mind named {name!r}")

    def list(self) -> list[MindInfo]:
        """Every mind, by name."""
        return [to_info(r) for r in self.session.scalars(sa.select(MindRow).order_by(MindRow.name))]
