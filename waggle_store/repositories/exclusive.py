"""Exclusive relation types: a source holds one such relation at a time.

A new relation of an exclusive type from a source ends the source's previous ones of that type
(``valid_to`` = the new one's ``valid_from``): "Alice works at Globex" ends "Alice works at
Acme". The ended relations stay readable: their open state is kept in recorded time and their
window in valid time. ``works_at``, ``located_in`` and ``reports_to`` are exclusive by default; a
mind changes that per type with ``set_exclusive``, kept in ``minds.settings`` under
:data:`EXCLUSIVE_SETTINGS_KEY` (so it travels with the mind).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Final

import sqlalchemy as sa
from sqlalchemy.orm import Session

from waggle_store.errors import InvalidInputError, NotFoundError
from waggle_store.models import MindRow
from waggle_store.models.knowledge import RelationRow
from waggle_store.repositories.knowledge_common import MAX_TYPE_LENGTH, check_label
from waggle_store.repositories.versions import VersionRepository
from waggle_store.timeutil import utcnow

__all__ = ["DEFAULT_EXCLUSIVE", "EXCLUSIVE_SETTINGS_KEY", "ExclusiveRepository"]

EXCLUSIVE_SETTINGS_KEY: Final = "knowledge.exclusive_relations"
DEFAULT_EXCLUSIVE: Final = frozenset({"works_at", "located_in", "reports_to"})


class ExclusiveRepository:
    def __init__(self, session: Session, mind_id: int) -> None:
        self.session = session
        self.mind_id = mind_id

    def choices(self) -> dict[str, bool]:
        """The mind's own choices (relation type -> exclusive), without the defaults."""
        settings = self.session.scalar(
            sa.select(MindRow.settings).where(MindRow.id == self.mind_id)) or {}
        return dict(settings.get(EXCLUSIVE_SETTINGS_KEY) or {})

    def types(self) -> frozenset[str]:
        """The mind's exclusive relation types: the defaults with its own choices applied."""
        chosen = self.choices()
        return frozenset({t for t in DEFAULT_EXCLUSIVE if chosen.get(t, True)}
                         | {t for t, on in chosen.items() if on})

    def set(self, relation_type: str, exclusive: bool) -> None:
        relation_type = check_label(relation_type, "relation_type", MAX_TYPE_LENGTH)
        if not isinstance(exclusive, bool):
            raise InvalidInputError(f"exclusive must be True or False, got {exclusive!r}")
        row = self.session.scalar(
            sa.select(MindRow).where(MindRow.id == self.mind_id).with_for_update())
        if row is None:
            raise NotFoundError(f"mind {self.mind_id} does not exist")
        settings = dict(row.settings or {})
        chosen = dict(settings.get(EXCLUSIVE_SETTINGS_KEY) or {})
        chosen[relation_type] = exclusive
        settings[EXCLUSIVE_SETTINGS_KEY] = chosen
        row.settings = settings  # a new dict: the JSON column does not track in-place mutation
        self.session.flush()

    def supersede(self, winners: Iterable[RelationRow]) -> int:
        """End the other active relations of each winner's (source, exclusive type); returns
        how many ended. The caller holds the graph lock and has flushed the winners."""
        exclusive = self.types()
        versions = VersionRepository(self.session, self.mind_id)
        last: dict[tuple[int, str], RelationRow] = {}
        for row in winners:
            if row.relation_type in exclusive:
                last[(row.source_id, row.relation_type)] = row  # the last one stated wins
        ended = 0
        for (source_id, relation_type), winner in last.items():
            others = sa.and_(RelationRow.source_id == source_id,
                             RelationRow.relation_type == relation_type,
                             RelationRow.valid_to.is_(None), RelationRow.id != winner.id)
            end: datetime = winner.valid_from
            now = utcnow()
            versions.keep_relations(others, now)
            result = self.session.execute(
                sa.update(RelationRow).where(RelationRow.mind_id == self.mind_id, others)
                .values(valid_to=sa.case((RelationRow.valid_from > end, RelationRow.valid_from),
                                         else_=end), **versions.moved_on(now))
                .execution_options(synchronize_session="fetch"))
            ended += int(getattr(result, "rowcount", 0) or 0)
        return ended
