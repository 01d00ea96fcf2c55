"""Frame upkeep across a store: the reads and writes of consolidation (salience, merged access
counts), reconcile (frames without a current vector), extraction run again on a stored frame and
the removal of deleted frames' vectors.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Select, exists, func, or_, select, update
from sqlalchemy.orm import Session

from waggle_store.dialects.base import SearchAdapter
from waggle_store.dialects.derived import registered_models
from waggle_store.models import (
    FrameEmbeddingRow,
    FrameRow,
    MindEmbeddingModelRow,
)

__all__ = ["StaleFrames", "drop_vectors", "frame_content", "last_frame_id",
           "salience_inputs", "set_accesses", "set_salience", "vector_status"]


def frame_content(session: Session, frame_id: int,
                  mind_id: int | None) -> tuple[int, str] | None:
    """(mind id, content) of the frame, or None when there is none (in ``mind_id``, if given)."""
    query = select(FrameRow.mind_id, FrameRow.content).where(FrameRow.id == frame_id)
    if mind_id is not None:
        query = query.where(FrameRow.mind_id == mind_id)
    row = session.execute(query).one_or_none()
    return None if row is None else (int(row[0]), str(row[1]))


def vector_status(session: Session, frame_id: int) -> str | None:
    """The status of the frame's vector manifest (``ready``, ``pending`` ...), None without one."""
    return session.scalar(select(FrameEmbeddingRow.status)
                          .where(FrameEmbeddingRow.frame_id == frame_id))


def last_frame_id(session: Session) -> int:
    """The highest frame id of the store (0 when it has none)."""
    return int(session.scalar(select(func.max(FrameRow.id))) or 0)


def drop_vectors(session: Session, adapter: SearchAdapter, frame_ids: Sequence[int]) -> None:
    """Delete these frames' vectors from every model's vector table. An adapter whose
    ``delete_vectors`` raises NotImplementedError cleans up after deleted frames itself."""
    if not frame_ids:
        return
    for model_id in registered_models(session):
        try:
            adapter.delete_vectors(session, model_id, list(frame_ids))
        except NotImplementedError:
            return


# -- consolidation ----------------------------------------------------------------------------

def salience_inputs(session: Session, mind_id: int) -> list[Any]:
    """The I- and P-frames of a mind by id, with what their salience depends on and their
    manifest: (id, source, importance, access_count, last_accessed, created_at, salience,
    content_hash, content, manifest status, manifest model id, manifest content hash)."""
    manifest = FrameEmbeddingRow
    return list(session.execute(
        select(FrameRow.id, FrameRow.source, FrameRow.importance, FrameRow.access_count,
               FrameRow.last_accessed, FrameRow.created_at, FrameRow.salience,
               FrameRow.content_hash, FrameRow.content, manifest.status, manifest.model_id,
               manifest.content_hash)
        .outerjoin(manifest, manifest.frame_id == FrameRow.id)
        .where(FrameRow.mind_id == mind_id, FrameRow.frame_type.in_(("I", "P")))
        .order_by(FrameRow.id)))


def set_accesses(session: Session, accesses: Mapping[int, tuple[int, datetime]]) -> None:
    """Set frames' (access count, last accessed): frame id → the pair."""
    for frame_id, (count, last) in accesses.items():
        session.execute(update(FrameRow).where(FrameRow.id == frame_id)
                        .values(access_count=count, last_accessed=last)
                        .execution_options(synchronize_session=False))


def set_salience(session: Session, values: Mapping[int, float]) -> None:
    """Store frames' salience: frame id → value (one bulk UPDATE by primary key)."""
    if values:
        session.execute(update(FrameRow), [{"id": fid, "salience": v} for fid, v in values.items()])


# -- reconcile --------------------------------------------------------------------------------

class StaleFrames:
    """The frames (id ≤ ``up_to``) whose manifest says they have no current vector in
    ``model_id``: none, not ready, another model, another content hash or another text form
    than ``text_form``. Only frames of the minds that use ``model_id`` or have no model yet (a
    mind on another model is switched explicitly), and of ``mind_id`` when given."""

    def __init__(self, model_id: int, mind_id: int | None, text_form: str, up_to: int) -> None:
        uses = MindEmbeddingModelRow
        ours = or_(
            FrameRow.mind_id.in_(select(uses.mind_id).where(uses.model_id == model_id,
                                                            uses.status == "active")),
            ~exists().where(uses.mind_id == FrameRow.mind_id, uses.status == "active"),
        )
        query = (
            select(FrameRow.id)
            .outerjoin(FrameEmbeddingRow, FrameEmbeddingRow.frame_id == FrameRow.id)
            .where(or_(
                FrameEmbeddingRow.frame_id.is_(None),
                FrameEmbeddingRow.status != "ready",
                FrameEmbeddingRow.model_id.is_(None),
                FrameEmbeddingRow.model_id != model_id,
                FrameEmbeddingRow.content_hash != FrameRow.content_hash,
                FrameEmbeddingRow.text_form != text_form,
            ))
            .where(ours, FrameRow.id <= up_to)
        )
        if mind_id is not None:
            query = query.where(FrameRow.mind_id == mind_id)
        self._query: Select[int] = query

    def count(self, session: Session) -> int:
        return int(session.scalar(select(func.count()).select_from(self._query.subquery())) or 0)

    def page(self, session: Session, *, after: int, limit: int) -> list[int]:
        """The next ids after ``after`` (keyset), at most ``limit``."""
        return [int(i) for i in session.scalars(
            self._query.where(FrameRow.id > after).order_by(FrameRow.id).limit(limit))]
