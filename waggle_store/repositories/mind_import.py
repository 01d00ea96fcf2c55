"""The reads and inserts of an import into one mind (its frames go through the frame writer):
what the mind holds already, for the merge rules of ``pipeline/transfer/writer.py``, and the
executemany inserts of the records it does not hold.

Rows that existed before the import started are those with an id at most the table's highest
id read at its start (:func:`highest_ids`): the merge looks only at those.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy import func, insert, select, update
from sqlalchemy.orm import Session

from waggle_store.models import (
    AliasRow,
    AwarenessRow,
    EntityRow,
    EntityVersionRow,
    FrameEmbeddingRow,
    FrameRow,
    HarvestSourceRow,
    HarvestTombstoneRow,
    IdentityRow,
    KVRow,
    PendingExtractionRow,
    RelationRow,
    RelationVersionRow,
    SessionRow,
)

__all__ = ["ImportRows"]

_HIGHEST = (("frame", FrameRow.id), ("entity", EntityRow.id), ("relation", RelationRow.id),
            ("awareness", AwarenessRow.id))
_TABLES: dict[str, Any] = {"identity": IdentityRow, "awareness": AwarenessRow,
                           "session": SessionRow, "kv": KVRow, "harvest_source": HarvestSourceRow,
                           "entity": EntityRow, "relation": RelationRow,
                           "alias": AliasRow, "entity_version": EntityVersionRow,
                           "relation_version": RelationVersionRow,
                           "extraction_pending": PendingExtractionRow,
                           "harvest_tombstone": HarvestTombstoneRow}


def _table(model: Any) -> sa.Table:
    found = model.__table__
    assert isinstance(found, sa.Table)
    return found


class ImportRows:
    """One mind's rows as an import reads and writes them."""

    def __init__(self, session: Session, mind_id: int) -> None:
        self.session = session
        self.mind_id = mind_id

    def highest_ids(self) -> dict[str, int]:
        """The highest id of the frame, entity, relation and awareness tables (0 if empty)."""
        return {name: int(self.session.scalar(select(func.coalesce(func.max(col), 0))) or 0)
                for name, col in _HIGHEST}

    def insert(self, kind: str, rows: Sequence[dict[str, Any]]) -> None:
        """Insert records of ``kind`` (identity, awareness, session, kv, harvest_source, alias,
        entity_version, relation_version, extraction_pending, harvest_tombstone)."""
        if rows:
            self.session.execute(insert(_table(_TABLES[kind])),
                                 [{**r, "mind_id": self.mind_id} for r in rows])

    def insert_returning(self, kind: str, rows: Sequence[dict[str, Any]]) -> list[int]:
        """Insert entities or relations; returns their ids in row order."""
        if not rows:
            return []
        target = _table(_TABLES[kind])
        return [int(i) for i in self.session.scalars(
            insert(target).returning(target.c.id, sort_by_parameter_order=True),
            [{**r, "mind_id": self.mind_id} for r in rows])]

    def pending_after(self, frame_id: int) -> int:
        """How many of the mind's frames with an id above ``frame_id`` have no ready vector."""
        return int(self.session.scalar(select(func.count()).select_from(FrameEmbeddingRow).where(
            FrameEmbeddingRow.frame_id.in_(select(FrameRow.id).where(
                FrameRow.mind_id == self.mind_id, FrameRow.id > frame_id)),
            FrameEmbeddingRow.status != "ready")) or 0)

    # -- small records ------------------------------------------------------------------------

    def identity_name(self) -> str | None:
        return self.session.scalar(
            select(IdentityRow.name).where(IdentityRow.mind_id == self.mind_id))

    def awareness_held(self, up_to: int, contents: Iterable[str]) -> set[tuple[str, str]]:
        """(category, content) of the mind's awareness items (id ≤ ``up_to``) with these
        contents."""
        a = AwarenessRow
        return {(str(c), str(t)) for c, t in self.session.execute(
            select(a.category, a.content).where(a.mind_id == self.mind_id, a.id <= up_to,
                                                a.content.in_(set(contents))))}

    def sessions_held(self, gops: Iterable[str]) -> set[str]:
        return set(self.session.scalars(select(SessionRow.gop_id).where(
            SessionRow.mind_id == self.mind_id, SessionRow.gop_id.in_(list(gops)))))

    def active_auto_projects(self) -> set[str]:
        """The projects ("" for none) of the mind's active automatic sessions."""
        s = SessionRow
        return {p or "" for p in self.session.scalars(select(s.project_id).where(
            s.mind_id == self.mind_id, s.status == "active", s.kind == "auto"))}

    def kv_updated(self, keys: Iterable[str]) -> dict[str, datetime]:
        """Key → updated_at of the mind's kv entries among ``keys``."""
        return {str(k): u for k, u in self.session.execute(select(KVRow.key, KVRow.updated_at)
                .where(KVRow.mind_id == self.mind_id, KVRow.key.in_(list(keys))))}

    def set_kv(self, key: str, value: Any, updated_at: datetime) -> None:
        self.session.execute(update(KVRow).where(KVRow.mind_id == self.mind_id, KVRow.key == key)
                             .values(value=value, updated_at=updated_at))

    def harvest_sources_held(self, sources: Iterable[str]) -> set[str]:
        h = HarvestSourceRow
        return set(self.session.scalars(select(h.source).where(
            h.mind_id == self.mind_id, h.source.in_(list(sources)))))

    def tombstones_held(self, sources: Iterable[str]) -> set[tuple[str, str]]:
        """(source, content hash) of the mind's harvest tombstones of these sources."""
        t = HarvestTombstoneRow
        return {(str(s), str(h)) for s, h in self.session.execute(
            select(t.source, t.content_hash).where(t.mind_id == self.mind_id,
                                                   t.source.in_(set(sources))))}

    # -- graph --------------------------------------------------------------------------------

    def entities_held(self, up_to: int, keys: Iterable[tuple[str, str]]
                      ) -> list[tuple[int, str, str | None, datetime, datetime | None]]:
        """(id, type, resolved key, valid_from, valid_to) of the mind's entities with these
        (type, resolved key) pairs, by id: every active one (an import's own included) and the
        retired ones with id ≤ ``up_to``."""
        e = EntityRow
        return [(int(i), t, k, vf, vt) for i, t, k, vf, vt in self.session.execute(
            select(e.id, e.entity_type, e.resolved_key, e.valid_from, e.valid_to)
            .where(e.mind_id == self.mind_id, sa.or_(e.valid_to.is_(None), e.id <= up_to),
                   sa.tuple_(e.entity_type, e.resolved_key).in_(list(keys))).order_by(e.id))]

    def relations_held(self, up_to: int, ends: Iterable[tuple[int, int, str]]
                       ) -> list[tuple[int, int, int, str, datetime, datetime | None]]:
        """(id, source, target, type, valid_from, valid_to) of the mind's relations with these
        (source, target, type) triples, by id: every active one and the retired ones with id ≤
        ``up_to``."""
        x = RelationRow
        return [(int(i), int(s), int(t), r, vf, vt) for i, s, t, r, vf, vt in self.session.execute(
            select(x.id, x.source_id, x.target_id, x.relation_type, x.valid_from, x.valid_to)
            .where(x.mind_id == self.mind_id, sa.or_(x.valid_to.is_(None), x.id <= up_to),
                   sa.tuple_(x.source_id, x.target_id, x.relation_type).in_(list(ends)))
            .order_by(x.id))]

    def keyed_before(self, up_to: int, keys: Iterable[str]) -> set[str]:
        """Which of ``keys`` are the resolved key of an entity with id ≤ ``up_to``."""
        e = EntityRow
        return {str(k) for k in self.session.scalars(
            select(e.resolved_key).distinct().where(
                e.mind_id == self.mind_id, e.id <= up_to, e.resolved_key.in_(set(keys))))}
