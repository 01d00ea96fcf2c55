"""The reads of an export: every table of one mind, in keyset pages (``WHERE id > last ORDER BY
id LIMIT n``), so memory stays one page whatever the mind's size. Rows come back as tuples in
the column order each method names; ``pipeline/transfer/export_rows.py`` turns them into
records.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy import select

from waggle_store.models import (
    AwarenessRow,
    EmbeddingModelRow,
    EntityMentionRow,
    EntityRow,
    FrameRow,
    HarvestSourceRow,
    IdentityRow,
    KVRow,
    RelationRow,
    SessionRow,
)

__all__ = ["PAGE", "MindExportRows", "id_pages", "pages"]

#: Rows per keyset page.
PAGE: Final = 1000


def pages(conn: sa.Connection, stmt: Any, key: Any) -> Iterator[Any]:
    """Every row of ``stmt`` (whose first column is ``key``), in key order, a page at a time."""
    last: int | None = None
    while True:
        page = stmt if last is None else stmt.where(key > last)
        rows = conn.execute(page.order_by(key).limit(PAGE)).all()
        yield from rows
        if len(rows) < PAGE:
            return
        last = int(rows[-1][0])


def id_pages(conn: sa.Connection, stmt: sa.Select[Any]) -> Iterator[list[int]]:
    """The frame ids ``stmt`` selects, in lists of :data:`PAGE`."""
    page: list[int] = []
    for row in pages(conn, stmt, FrameRow.id):
        page.append(int(row[0]))
        if len(page) == PAGE:
            yield page
            page = []
    if page:
        yield page


class MindExportRows:
    """One mind's rows, table by table, for an export on ``conn``."""

    def __init__(self, conn: sa.Connection, mind_id: int) -> None:
        self.conn = conn
        self.mind_id = mind_id

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

    def entities(self) -> Iterator[Any]:
        """(id, entity_type, name, properties, valid_from, valid_to, recorded_at)."""
        e = EntityRow
        return pages(self.conn, select(e.id, e.entity_type, e.name, e.properties, e.valid_from,
                                       e.valid_to, e.recorded_at).where(e.mind_id == self.mind_id),
                     e.id)

    def relations(self) -> Iterator[Any]:
        """(id, source_id, target_id, relation_type, confidence, properties, valid_from,
        valid_to, recorded_at)."""
        x = RelationRow
        return pages(self.conn, select(x.id, x.source_id, x.target_id, x.relation_type,
                                       x.confidence, x.properties, x.valid_from, x.valid_to,
                                       x.recorded_at).where(x.mind_id == self.mind_id), x.id)

    def mentions(self, frames_of_mind: sa.Select[Any]) -> Iterator[Any]:
        """(frame_id, entity_id) of the frames ``frames_of_mind`` selects, paged by frame."""
        m = EntityMentionRow
        for ids in id_pages(self.conn, frames_of_mind):
            yield from self.conn.execute(select(m.frame_id, m.entity_id)
                                         .where(m.frame_id.in_(ids))
                                         .order_by(m.frame_id, m.entity_id))

    def kv(self) -> Iterator[Any]:
        """(key, value, updated_at), by key."""
        last: str | None = None
        while True:
            stmt = select(KVRow.key, KVRow.value, KVRow.updated_at).where(
                KVRow.mind_id == self.mind_id)
            if last is not None:
                stmt = stmt.where(KVRow.key > last)
            rows = self.conn.execute(stmt.order_by(KVRow.key).limit(PAGE)).all()
            yield from rows
            if len(rows) < PAGE:
                return
            last = str(rows[-1][0])

    def harvest_sources(self) -> Iterator[Any]:
        """(id, source, display_name, source_path, last_synced_at, items_imported,
        frames_created, auto_sync, sync_interval_hours, last_content_hash, created_at)."""
        h = HarvestSourceRow
        return pages(self.conn, select(h.id, h.source, h.display_name, h.source_path,
                                       h.last_synced_at, h.items_imported, h.frames_created,
                                       h.auto_sync, h.sync_interval_hours, h.last_content_hash,
                                       h.created_at).where(h.mind_id == self.mind_id), h.id)

    def models(self, model_ids: Sequence[int]) -> Iterator[sa.RowMapping]:
        yield from self.conn.execute(select(EmbeddingModelRow).where(
            EmbeddingModelRow.id.in_(model_ids)).order_by(EmbeddingModelRow.id)).mappings()
