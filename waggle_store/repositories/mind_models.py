"""Which embedding model each mind uses (``mind_embedding_models``), and the switch between two.

A mind's *active* model is the one its vectors are searched and written in. It is set by the
mind's first embedded write (:meth:`MindModelRepository.claim`) and changed only explicitly, by a
switch: :meth:`begin_switch` records the target as ``switching``; the switch pipeline re-embeds
the mind's frames into the target's vector table, recording each in ``frame_embedding_staging``
(so a crashed switch resumes where it stopped) while the old model keeps serving; :meth:`flip`
then turns the staged vectors into the manifest, retires the old model and activates the new
one in one transaction. A store whose embedder is not the mind's active model never changes
it: its writes leave vectors pending (:func:`mismatch_reason` says why) and its searches run
keyword-only, saying so.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from sqlalchemy import Connection, bindparam, delete, exists, func, select, update
from sqlalchemy.orm import Session

from waggle_store.dialects.base import SearchAdapter
from waggle_store.dialects.derived import vector_table_exists
from waggle_store.models import (
    EmbeddingModelRow,
    EmbeddingStagingRow,
    FrameEmbeddingRow,
    FrameRow,
    MindEmbeddingModelRow,
)
from waggle_store.models.idioms import get_or_create
from waggle_store.records import EmbeddingModelInfo
from waggle_store.repositories.vectors import ModelKey, model_key_of
from waggle_store.timeutil import utcnow

__all__ = ["MindModelRepository", "active_model", "describe", "mismatch_reason", "models_in_use",
           "registered"]


def describe(key: ModelKey) -> str:
    return f"{key.provider}/{key.model}/{key.dimensions}"


def mismatch_reason(mind_name: str, active: ModelKey, embedder: ModelKey) -> str:
    """Why a mind's vectors are not written or searched through this store's embedder."""
    return (
        f"mind {mind_name!r} uses the embedding model {describe(active)}; this store embeds with "
        f"{describe(embedder)}: its vectors are left pending and its vector search is off until "
        "the mind is switched explicitly (mind.switch_embedding_model())"
    )


#: A mind's active model, its id and key, built once (search reads it on a Core connection).
_ACTIVE_MODEL: Final = select(
    MindEmbeddingModelRow.model_id, EmbeddingModelRow.provider, EmbeddingModelRow.model,
    EmbeddingModelRow.dimensions,
).join(EmbeddingModelRow, EmbeddingModelRow.id == MindEmbeddingModelRow.model_id).where(
    MindEmbeddingModelRow.mind_id == bindparam("mind_id"), MindEmbeddingModelRow.status == "active")


def active_model(conn: Connection, mind_id: int) -> tuple[int, ModelKey] | None:
    """The id and key of ``mind_id``'s active model, or None before its first embedded write:
    search compares the query (embedded by the store's embedder) only with vectors of that
    model."""
    row = conn.execute(_ACTIVE_MODEL, {"mind_id": mind_id}).first()
    if row is None:
        return None
    return int(row[0]), ModelKey(str(row[1]), str(row[2]), int(row[3]))


class MindModelRepository:
    """The embedding models of one mind."""

    def __init__(self, session: Session, mind_id: int) -> None:
        self.session = session
        self.mind_id = mind_id

    def _with(self, status: str) -> int | None:
        found = self.session.scalar(
            select(MindEmbeddingModelRow.model_id).where(
                MindEmbeddingModelRow.mind_id == self.mind_id,
                MindEmbeddingModelRow.status == status))
        return None if found is None else int(found)

    def active(self) -> int | None:
        """The id of the mind's active model, or None before its first embedded write."""
        return self._with("active")

    def switching(self) -> int | None:
        """The id of the model a switch in progress re-embeds into, or None."""
        return self._with("switching")

    def claim(self, model_id: int) -> int:
        """The mind's active model; ``model_id`` becomes it if the mind has none yet (race-free:
        the partial unique index lets one of two first writers win, the other reads the
        winner). The caller compares the result with ``model_id``."""
        row, _ = get_or_create(
            self.session,
            lambda: self.session.scalar(select(MindEmbeddingModelRow).where(
                MindEmbeddingModelRow.mind_id == self.mind_id,
                MindEmbeddingModelRow.status == "active")),
            lambda: MindEmbeddingModelRow(mind_id=self.mind_id, model_id=model_id,
                                          status="active", updated_at=utcnow()))
        return int(row.model_id)

    def info(self) -> EmbeddingModelInfo | None:
        """The active model as a record; status ``switching`` while a switch replaces it."""
        active = self.active()
        if active is None:
            return None
        key = model_key_of(self.session, active)
        status = "switching" if self.switching() is not None else "active"
        return EmbeddingModelInfo(key.provider, key.model, key.dimensions, status)

    # -- switching ----------------------------------------------------------------------------

    def begin_switch(self, target_id: int) -> None:
        """Record ``target_id`` as the model being switched to. A switch to another target that
        was left unfinished is abandoned (its staged vectors are dropped)."""
        current = self.switching()
        if current == target_id:
            return
        if current is not None:
            self._drop_staging(current)
            self.session.execute(delete(MindEmbeddingModelRow).where(
                MindEmbeddingModelRow.mind_id == self.mind_id,
                MindEmbeddingModelRow.model_id == current))
        row = self.session.get(MindEmbeddingModelRow, (self.mind_id, target_id))
        if row is None:
            self.session.add(MindEmbeddingModelRow(
                mind_id=self.mind_id, model_id=target_id, status="switching",
                updated_at=utcnow()))
        else:  # a model this mind used before
            row.status, row.updated_at = "switching", utcnow()
        self.session.flush()

    def unstaged(self, target_id: int, limit: int,
                 text_form: str) -> list[tuple[int, str, str]]:
        """Up to ``limit`` frames of the mind without a current staged vector in ``target_id``
        (of their content, made in ``text_form``): (id, content, content_hash), oldest first."""
        staged = exists().where(
            EmbeddingStagingRow.frame_id == FrameRow.id,
            EmbeddingStagingRow.model_id == target_id,
            EmbeddingStagingRow.content_hash == FrameRow.content_hash,
            EmbeddingStagingRow.text_form == text_form)
        rows = self.session.execute(
            select(FrameRow.id, FrameRow.content, FrameRow.content_hash)
            .where(FrameRow.mind_id == self.mind_id, ~staged)
            .order_by(FrameRow.id).limit(limit)).all()
        return [(int(r[0]), str(r[1]), str(r[2])) for r in rows]

    def count_frames(self) -> int:
        return int(self.session.scalar(
            select(func.count()).select_from(FrameRow).where(FrameRow.mind_id == self.mind_id))
            or 0)

    def stage(self, target_id: int, rows: Sequence[tuple[int, str]], text_form: str) -> None:
        """Record (frame id, content hash) as embedded into ``target_id``'s table in
        ``text_form``."""
        now = utcnow()
        for frame_id, content_hash in rows:
            existing = self.session.get(EmbeddingStagingRow, (frame_id, target_id))
            if existing is None:
                self.session.add(EmbeddingStagingRow(frame_id=frame_id, model_id=target_id,
                                                     content_hash=content_hash, updated_at=now,
                                                     text_form=text_form))
            else:
                existing.content_hash, existing.updated_at = content_hash, now
                existing.text_form = text_form
        self.session.flush()

    def flip(self, adapter: SearchAdapter, target_id: int,
             text_form: str) -> tuple[int | None, int]:
        """Make ``target_id`` the mind's active model, in the caller's transaction: every frame
        staged with its current content in ``text_form`` (the switching embedder's) becomes
        ``ready`` in it, every other frame ``pending``;
        the old model is retired and its vectors of this mind's frames dropped. Returns (the old
        model id, the number of frames ready in the new model)."""
        old = self.active()
        frame_ids = list(self.session.scalars(
            select(FrameRow.id).where(FrameRow.mind_id == self.mind_id)))
        staged = dict(self.session.execute(
            select(EmbeddingStagingRow.frame_id, EmbeddingStagingRow.content_hash)
            .join(FrameRow, FrameRow.id == EmbeddingStagingRow.frame_id)
            .where(FrameRow.mind_id == self.mind_id, EmbeddingStagingRow.model_id == target_id,
                   EmbeddingStagingRow.content_hash == FrameRow.content_hash,
                   EmbeddingStagingRow.text_form == text_form)).all())
        now = utcnow()
        ready = [{"frame_id": fid, "model_id": target_id, "content_hash": chash,
                  "status": "ready", "error": None, "updated_at": now, "text_form": text_form}
                 for fid, chash in staged.items()]
        if ready:  # ORM bulk UPDATE by primary key: one executemany
            self.session.execute(update(FrameEmbeddingRow), ready)
        rest = [fid for fid in frame_ids if fid not in staged]
        for start in range(0, len(rest), 500):
            self.session.execute(
                update(FrameEmbeddingRow)
                .where(FrameEmbeddingRow.frame_id.in_(rest[start:start + 500]))
                .values(model_id=target_id, status="pending",
                        error="written during the embedding-model switch: reconcile embeds it",
                        updated_at=now)
                .execution_options(synchronize_session=False))
        self.session.execute(
            update(MindEmbeddingModelRow)
            .where(MindEmbeddingModelRow.mind_id == self.mind_id,
                   MindEmbeddingModelRow.status == "active")
            .values(status="retired", updated_at=now))
        self.session.execute(
            update(MindEmbeddingModelRow)
            .where(MindEmbeddingModelRow.mind_id == self.mind_id,
                   MindEmbeddingModelRow.model_id == target_id)
            .values(status="active", updated_at=now))
        self._drop_staging(target_id)
        if (old is not None and old != target_id
                and vector_table_exists(self.session, adapter.dialect, old)):
            for start in range(0, len(frame_ids), 500):
                adapter.delete_vectors(self.session, old, frame_ids[start:start + 500])
        return old, len(ready)

    def _drop_staging(self, model_id: int) -> None:
        mine = select(FrameRow.id).where(FrameRow.mind_id == self.mind_id)
        self.session.execute(
            delete(EmbeddingStagingRow)
            .where(EmbeddingStagingRow.model_id == model_id,
                   EmbeddingStagingRow.frame_id.in_(mine))
            .execution_options(synchronize_session=False))


def models_in_use(session: Session) -> dict[int, int]:
    """Mind id -> active model id, for every mind that has one."""
    rows = session.execute(select(MindEmbeddingModelRow.mind_id, MindEmbeddingModelRow.model_id)
                           .where(MindEmbeddingModelRow.status == "active")).all()
    return {int(m): int(k) for m, k in rows}


def registered(session: Session) -> dict[int, ModelKey]:
    return {int(r.id): ModelKey(r.provider, r.model, r.dimensions)
            for r in session.scalars(select(EmbeddingModelRow))}
