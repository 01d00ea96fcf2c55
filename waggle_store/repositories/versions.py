"""Entities and relations in recorded time: their earlier states, and the graph as of a time.

The current state of an entity or relation stays in its own table (every other query reads it
there, unchanged); a write that replaces a state first copies it into the versions table with
``recorded_to`` = the time of the change, and the row's ``recorded_at`` becomes that time. So a
row's states tile recorded time without gaps: ``[recorded_from, recorded_to)`` for each version,
``[recorded_at, ∞)`` for the current one.

The "as of" reads are one statement on both dialects: the current rows and the versions,
``UNION ALL``, filtered on recorded time (what the store held then) and valid time (what was true
then in the world).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, cast

import sqlalchemy as sa
from sqlalchemy.orm import Session

from waggle_store.models.knowledge import (
    EntityRow,
    EntityVersionRow,
    RelationRow,
    RelationVersionRow,
)
from waggle_store.records import Entity, EntityVersion, Relation
from waggle_store.repositories.knowledge_common import check_limit

__all__ = ["VersionRepository"]

_E = cast(sa.Table, EntityRow.__table__)
_EV = cast(sa.Table, EntityVersionRow.__table__)
_R = cast(sa.Table, RelationRow.__table__)
_RV = cast(sa.Table, RelationVersionRow.__table__)
_NO_TIME = sa.null().cast(EntityRow.recorded_at.type)


def _window(sub: Any, recorded: datetime | None, valid: datetime | None) -> list[Any]:
    where: list[Any] = []
    if recorded is not None:
        where += [sub.c.recorded_from <= recorded,
                  sa.or_(sub.c.recorded_to.is_(None), sub.c.recorded_to > recorded)]
    else:
        where.append(sub.c.recorded_to.is_(None))
    if valid is not None:
        where += [sub.c.valid_from <= valid,
                  sa.or_(sub.c.valid_to.is_(None), sub.c.valid_to > valid)]
    return where


class VersionRepository:
    """Recorded-time history of one mind's entities and relations."""

    def __init__(self, session: Session, mind_id: int) -> None:
        self.session = session
        self.mind_id = mind_id

    # -- writes -------------------------------------------------------------------------------

    def keep_entity(self, row: EntityRow, now: datetime) -> None:
        """Copy the entity's current state into its history, ended at ``now``; the caller then
        changes the row, whose version and ``recorded_at`` move on here."""
        self.session.add(EntityVersionRow(
            entity_id=row.id, version=row.version, mind_id=self.mind_id,
            entity_type=row.entity_type, name=row.name, properties=dict(row.properties or {}),
            valid_from=row.valid_from, valid_to=row.valid_to,
            recorded_from=row.recorded_at, recorded_to=max(now, row.recorded_at)))
        row.version += 1
        row.recorded_at = max(now, row.recorded_at)

    def keep_relations(self, where: sa.ColumnElement[bool], now: datetime) -> None:
        """Copy the current state of the relations ``where`` selects into their history (one
        INSERT ... SELECT); the caller then updates those same rows with :meth:`moved_on`."""
        picked = sa.select(
            _R.c.id, _R.c.version, _R.c.mind_id, _R.c.source_id, _R.c.target_id,
            _R.c.relation_type, _R.c.confidence, _R.c.properties, _R.c.valid_from, _R.c.valid_to,
            _R.c.recorded_at,
            sa.case((_R.c.recorded_at > now, _R.c.recorded_at), else_=now),
        ).where(_R.c.mind_id == self.mind_id, where)
        self.session.execute(sa.insert(_RV).from_select(
            ["relation_id", "version", "mind_id", "source_id", "target_id", "relation_type",
             "confidence", "properties", "valid_from", "valid_to", "recorded_from",
             "recorded_to"], picked))

    @staticmethod
    def moved_on(now: datetime) -> dict[str, Any]:
        """The values a relation update sets beside its change: the next version, recorded now."""
        return {"version": _R.c.version + 1,
                "recorded_at": sa.case((_R.c.recorded_at > now, _R.c.recorded_at), else_=now)}

    # -- reads --------------------------------------------------------------------------------

    def entity_history(self, entity_id: int) -> list[EntityVersion]:
        """Every recorded state of the entity, oldest first; the last is the current one."""
        past = sa.select(
            _EV.c.entity_id, _EV.c.version, _EV.c.name, _EV.c.entity_type, _EV.c.properties,
            _EV.c.recorded_from, _EV.c.recorded_to, _EV.c.valid_from, _EV.c.valid_to,
        ).where(_EV.c.mind_id == self.mind_id, _EV.c.entity_id == entity_id)
        now = sa.select(
            _E.c.id, _E.c.version, _E.c.name, _E.c.entity_type, _E.c.properties,
            _E.c.recorded_at, _NO_TIME, _E.c.valid_from, _E.c.valid_to,
        ).where(_E.c.mind_id == self.mind_id, _E.c.id == entity_id)
        union = sa.union_all(past, now).subquery()
        rows = self.session.execute(sa.select(union).order_by(union.c.version))
        return [EntityVersion(int(r[0]), int(r[1]), r[2], r[3], dict(r[4] or {}), r[5], r[6],
                              r[7], r[8]) for r in rows]

    def entities_as_of(self, *, recorded: datetime | None, valid: datetime | None,
                       limit: int = 500) -> list[Entity]:
        """The entities as the store held them at ``recorded`` (None: now) that were true at
        ``valid`` (None: at any time), in name order."""
        parts = [sa.select(
            _E.c.id, _E.c.entity_type, _E.c.name, _E.c.properties, _E.c.valid_from,
            _E.c.valid_to, _E.c.recorded_at.label("recorded_from"),
            _NO_TIME.label("recorded_to"),
        ).where(_E.c.mind_id == self.mind_id)]
        if recorded is not None:
            parts.append(sa.select(
                _EV.c.entity_id, _EV.c.entity_type, _EV.c.name, _EV.c.properties,
                _EV.c.valid_from, _EV.c.valid_to, _EV.c.recorded_from, _EV.c.recorded_to,
            ).where(_EV.c.mind_id == self.mind_id))
        sub = (sa.union_all(*parts) if len(parts) > 1 else parts[0]).subquery()
        rows = self.session.execute(
            sa.select(sub).where(*_window(sub, recorded, valid))
            .order_by(sub.c.name, sub.c.id).limit(check_limit(limit)))
        return [Entity(int(r.id), r.entity_type, r.name, dict(r.properties or {}), r.valid_from,
                       r.valid_to, r.recorded_from) for r in rows]

    def relations_as_of(self, *, recorded: datetime | None, valid: datetime | None,
                        limit: int = 500) -> list[Relation]:
        """The relations as the store held them at ``recorded`` (None: now) that were true at
        ``valid`` (None: at any time), in id order."""
        parts = [sa.select(
            _R.c.id, _R.c.source_id, _R.c.target_id, _R.c.relation_type, _R.c.confidence,
            _R.c.properties, _R.c.valid_from, _R.c.valid_to,
            _R.c.recorded_at.label("recorded_from"), _NO_TIME.label("recorded_to"),
        ).where(_R.c.mind_id == self.mind_id)]
        if recorded is not None:
            parts.append(sa.select(
                _RV.c.relation_id, _RV.c.source_id, _RV.c.target_id, _RV.c.relation_type,
                _RV.c.confidence, _RV.c.properties, _RV.c.valid_from, _RV.c.valid_to,
                _RV.c.recorded_from, _RV.c.recorded_to,
            ).where(_RV.c.mind_id == self.mind_id))
        sub = (sa.union_all(*parts) if len(parts) > 1 else parts[0]).subquery()
        rows = self.session.execute(
            sa.select(sub).where(*_window(sub, recorded, valid))
            .order_by(sub.c.id).limit(check_limit(limit)))
        return [Relation(int(r.id), int(r.source_id), int(r.target_id), r.relation_type,
                         float(r.confidence), dict(r.properties or {}), r.valid_from, r.valid_to,
                         r.recorded_from) for r in rows]
