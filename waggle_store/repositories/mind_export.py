"""The reads of an export: every table of one mind, in keyset pages (``WHERE id > last ORDER BY
id LIMIT n``), so memory stays one page whatever the mind's size. Rows come back as tuples in
the column order each method names; ``pipeline/transfer/export_rows.py`` (the ``waggle-mind``
JSONL export) and ``pipeline/transfer/openfang_export.py`` (OpenFang's JSON) turn them into
records. The counts a progress report needs are read here too.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy import func, select

from waggle_store.models import (
    AliasRow,
    AwarenessRow,
    EmbeddingModelRow,
    EntityMentionRow,
    EntityRow,
    EntityVersionRow,
    FrameEmbeddingRow,
    FrameRow,
    HarvestSourceRow,
    HarvestTombstoneRow,
    IdentityRow,
    KVRow,
    MindRow,
    PendingExtractionRow,
    RelationRow,
    RelationVersionRow,
    SessionRow,
)

__all__ = ["PAGE", "MindExportRows", "pages", "pairs"]

#: Rows per keyset page.
PAGE: Final = 1000


def pages(conn: sa.Connection, stmt: Any, key: Any) -> Iterator[Any]:
    """Every row of ``stmt`` (whose first column is ``key``, unique), in key order, a page at a
    time."""
    last: Any = None
    while True:
        page = stmt if last is None else stmt.where(key > last)
        rows = conn.execute(page.order_by(key).limit(PAGE)).all()
        yield from rows
        if len(rows) < PAGE:
            return
        last = rows[-1][0]


def pairs(conn: sa.Connection, stmt: Any, first: Any, second: Any) -> Iterator[Any]:
    """Every row of ``stmt`` (whose first two columns are ``first`` and ``second``), in
    (first, second) order, a page at a time: a keyset on a two-column key."""
    last: tuple[Any, Any] | None = None
    while True:
        page = stmt if last is None else stmt.where(
            sa.or_(first > last[0], sa.and_(first == last[0], second > last[1])))
        rows = conn.execute(page.order_by(first, second).limit(PAGE)).all()
        yield from rows
        if len(rows) < PAGE:
            return
        last = (rows[-1][0], rows[-1][1])


def _id_pages(conn: sa.Connection, stmt: sa.Select[Any]) -> Iterator[list[int]]:
    """The frame ids ``stmt`` selects, in lists of :data:`PAGE`."""
    page: list[int] = []
    for row in pages(conn, stmt, FrameRow.id):
        page.append(int(row[0]))
        if len(page) == PAGE:
            yield page
            page = []
    if page:
        yield page


def _count(conn: sa.Connection, stmt: sa.Select[*tuple[Any, ...]]) -> int:
    return int(conn.execute(select(func.count()).select_from(stmt.subquery())).scalar() or 0)


class MindExportRows:
    """One mind's rows, table by table, for an export on ``conn``."""

    def __init__(self, conn: sa.Connection, mind_id: int) -> None:
        self.conn = conn
        self.mind_id = mind_id

    def _frames(self) -> sa.Select[Any]:
        return select(FrameRow.id).where(FrameRow.mind_id == self.mind_id)

    def _ready(self) -> sa.Select[int | None, int, str, str]:
        """The (model id, frame id, content hash, text form) of the mind's current vectors."""
        e = FrameEmbeddingRow
        return (select(e.model_id, e.frame_id, e.content_hash, e.text_form)
                .join(FrameRow, FrameRow.id == e.frame_id)
                .where(FrameRow.mind_id == self.mind_id, e.status == "ready",
                       e.model_id.is_not(None), e.content_hash == FrameRow.content_hash))

    def record_count(self) -> int:
        """How many rows the memory, graph, kv and harvest tables hold for the mind (what
        :meth:`identity` through :meth:`tombstones` yield)."""
        mid = self.mind_id
        return sum(_count(self.conn, stmt) for stmt in (
            select(IdentityRow.mind_id).where(IdentityRow.mind_id == mid),
            select(AwarenessRow.id).where(AwarenessRow.mind_id == mid),
            select(SessionRow.id).where(SessionRow.mind_id == mid),
            self._frames(),
            select(EntityRow.id).where(EntityRow.mind_id == mid),
            select(RelationRow.id).where(RelationRow.mind_id == mid),
            select(EntityMentionRow.frame_id)
            .join(FrameRow, FrameRow.id == EntityMentionRow.frame_id)
            .where(FrameRow.mind_id == mid),
            select(KVRow.key).where(KVRow.mind_id == mid),
            select(HarvestSourceRow.id).where(HarvestSourceRow.mind_id == mid),
            select(AliasRow.alias_key).where(AliasRow.mind_id == mid),
            select(EntityVersionRow.entity_id).where(EntityVersionRow.mind_id == mid),
            select(RelationVersionRow.relation_id).where(RelationVersionRow.mind_id == mid),
            select(PendingExtractionRow.frame_id).where(PendingExtractionRow.mind_id == mid),
            select(HarvestTombstoneRow.source).where(HarvestTombstoneRow.mind_id == mid),
        ))

    def model_ids(self) -> list[int]:
        """The ids of the embedding models the mind holds current vectors of, ascending."""
        ready = self._ready().with_only_columns(FrameEmbeddingRow.model_id).distinct()
        return sorted(int(m) for m in self.conn.execute(ready).scalars() if m is not None)

    def vector_count(self) -> int:
        """How many current vectors the mind holds (of every model)."""
        return _count(self.conn, self._ready())

    def vectors(self, model_id: int) -> Iterator[Any]:
        """(frame_id, content_hash, text_form) of the frames with a current vector of
        ``model_id``, by frame id."""
        e = FrameEmbeddingRow
        ready = self._ready().with_only_columns(e.frame_id, e.content_hash, e.text_form)
        return pages(self.conn, ready.where(e.model_id == model_id), e.frame_id)

    def settings(self) -> dict[str, Any]:
        """The mind's settings (empty when it has none)."""
        found = self.conn.scalar(select(MindRow.settings).where(MindRow.id == self.mind_id))
        return dict(found or {})

    def identity(self) -> Iterator[sa.RowMapping]:
        yield from self.conn.execute(
            select(IdentityRow).where(IdentityRow.mind_id == self.mind_id)).mappings()

    def awareness(self) -> Iterator[Any]:
        """(id, category, content, priority, metadata, created_at, expires_at)."""
        t = AwarenessRow
        return pages(self.conn, select(t.id, t.category, t.content, t.priority, t.meta,
                                       t.created_at, t.expires_at).where(t.mind_id == self.mind_id),
                     t.id)

    def sessions(self) -> Iterator[Any]:
        """(id, gop_id, project_id, status, kind, started_at, ended_at, summary)."""
        s = SessionRow
        return pages(self.conn, select(s.id, s.gop_id, s.project_id, s.status, s.kind,
                                       s.started_at, s.ended_at, s.summary)
                     .where(s.mind_id == self.mind_id), s.id)

    def frames(self) -> Iterator[Any]:
        """(id, frame_type, gop_id, t, base_frame_id, content, importance, source,
        access_count, created_at, last_accessed, salience, metadata)."""
        f = FrameRow
        return pages(self.conn, select(f.id, f.frame_type, f.gop_id, f.t, f.base_frame_id,
                                       f.content, f.importance, f.source, f.access_count,
                                       f.created_at, f.last_accessed, f.salience, f.meta)
                     .where(f.mind_id == self.mind_id), f.id)

    def _active_entities(self) -> sa.Select[Any]:
        return select(EntityRow.id).where(EntityRow.mind_id == self.mind_id,
                                          EntityRow.valid_to.is_(None))

    def entities(self, *, active: bool = False) -> Iterator[Any]:
        """(id, entity_type, name, properties, valid_from, valid_to, recorded_at, version); with
        ``active`` only the entities not superseded (no ``valid_to``)."""
        e = EntityRow
        stmt = select(e.id, e.entity_type, e.name, e.properties, e.valid_from, e.valid_to,
                      e.recorded_at, e.version).where(e.mind_id == self.mind_id)
        return pages(self.conn, stmt.where(e.valid_to.is_(None)) if active else stmt, e.id)

    def relations(self, *, active: bool = False) -> Iterator[Any]:
        """(id, source_id, target_id, relation_type, confidence, properties, valid_from,
        valid_to, recorded_at, version); with ``active`` only the relations not superseded whose
        both ends are active entities."""
        x = RelationRow
        stmt = select(x.id, x.source_id, x.target_id, x.relation_type, x.confidence,
                      x.properties, x.valid_from, x.valid_to, x.recorded_at,
                      x.version).where(x.mind_id == self.mind_id)
        if active:
            ends = self._active_entities()
            stmt = stmt.where(x.valid_to.is_(None), x.source_id.in_(ends), x.target_id.in_(ends))
        return pages(self.conn, stmt, x.id)

    def mentions(self) -> Iterator[Any]:
        """(frame_id, entity_id) of the mind's frames, paged by frame."""
        m = EntityMentionRow
        for ids in _id_pages(self.conn, self._frames()):
            yield from self.conn.execute(select(m.frame_id, m.entity_id)
                                         .where(m.frame_id.in_(ids))
                                         .order_by(m.frame_id, m.entity_id))

    def kv_count(self) -> int:
        return int(self.conn.scalar(select(func.count()).select_from(KVRow)
                                    .where(KVRow.mind_id == self.mind_id)) or 0)

    def kv(self) -> Iterator[Any]:
        """(key, value, updated_at), by key."""
        return pages(self.conn, select(KVRow.key, KVRow.value, KVRow.updated_at).where(
            KVRow.mind_id == self.mind_id), KVRow.key)

    def harvest_sources(self) -> Iterator[Any]:
        """(id, source, display_name, source_path, last_synced_at, items_imported,
        frames_created, auto_sync, sync_interval_hours, last_content_hash, created_at, kind)."""
        h = HarvestSourceRow
        return pages(self.conn, select(h.id, h.source, h.display_name, h.source_path,
                                       h.last_synced_at, h.items_imported, h.frames_created,
                                       h.auto_sync, h.sync_interval_hours, h.last_content_hash,
                                       h.created_at, h.kind).where(h.mind_id == self.mind_id),
                     h.id)

    def tombstones(self) -> Iterator[Any]:
        """(source, content_hash, forgotten_at) of the mind's forgotten harvested memories."""
        t = HarvestTombstoneRow
        return pairs(self.conn, select(t.source, t.content_hash, t.forgotten_at)
                     .where(t.mind_id == self.mind_id), t.source, t.content_hash)

    def aliases(self) -> Iterator[Any]:
        """(alias_key, alias, canonical_name, canonical_key, created_at), by alias key."""
        a = AliasRow
        return pages(self.conn, select(a.alias_key, a.alias, a.canonical_name, a.canonical_key,
                                       a.created_at).where(a.mind_id == self.mind_id),
                     a.alias_key)

    def entity_versions(self) -> Iterator[Any]:
        """(entity_id, version, entity_type, name, properties, valid_from, valid_to,
        recorded_from, recorded_to): the earlier recorded states of the mind's entities."""
        v = EntityVersionRow
        return pairs(self.conn, select(v.entity_id, v.version, v.entity_type, v.name,
                                       v.properties, v.valid_from, v.valid_to, v.recorded_from,
                                       v.recorded_to).where(v.mind_id == self.mind_id),
                     v.entity_id, v.version)

    def relation_versions(self) -> Iterator[Any]:
        """(relation_id, version, source_id, target_id, relation_type, confidence, properties,
        valid_from, valid_to, recorded_from, recorded_to): earlier states of its relations."""
        v = RelationVersionRow
        return pairs(self.conn, select(v.relation_id, v.version, v.source_id, v.target_id,
                                       v.relation_type, v.confidence, v.properties, v.valid_from,
                                       v.valid_to, v.recorded_from, v.recorded_to)
                     .where(v.mind_id == self.mind_id), v.relation_id, v.version)

    def pending_extractions(self) -> Iterator[Any]:
        """(frame_id, error, attempts, updated_at) of the frames whose extraction failed."""
        p = PendingExtractionRow
        return pages(self.conn, select(p.frame_id, p.error, p.attempts, p.updated_at)
                     .where(p.mind_id == self.mind_id), p.frame_id)

    def models(self, model_ids: Sequence[int]) -> Iterator[sa.RowMapping]:
        yield from self.conn.execute(select(EmbeddingModelRow).where(
            EmbeddingModelRow.id.in_(model_ids)).order_by(EmbeddingModelRow.id)).mappings()
