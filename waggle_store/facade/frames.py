"""``mind.frames``: layer 2, I/P/B memory frames.

Vectors: the frame tables and the manifest are handled by the repository. The per-model vector
rows live in tables the dialect adapter owns; when frames are deleted or their content changes,
their vectors are removed here through ``adapter.delete_vectors`` for every registered model, if
the adapter implements it. An adapter that does not (yet) is expected to make vector rows follow
frame deletes itself (triggers / FKs); a changed frame's stale vector is then superseded when
reconcile re-embeds the ``pending`` manifest row.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from waggle_store.context import MindContext
from waggle_store.errors import InvalidInputError
from waggle_store.pipeline.embed import embed_frames
from waggle_store.records import CompactionReport, Frame, FrameStats, GopState
from waggle_store.repositories.frame_upkeep import drop_vectors
from waggle_store.repositories.frames import FrameRepository


class FramesAPI:
    def __init__(self, mind: MindContext) -> None:
        self.mind = mind

    def _repo(self, s: Session) -> FrameRepository:
        return FrameRepository(s, self.mind.id)

    def _drop_vectors(self, s: Session, frame_ids: Sequence[int]) -> None:
        drop_vectors(s, self.mind.adapter, frame_ids)

    # -- writes -------------------------------------------------------------------------------

    def create_i(self, gop_id: str, content: str, *, importance: str = "normal",
                 source: str = "user_stated", created_at: datetime | str | None = None,
                 metadata: dict[str, Any] | None = None) -> Frame:
        """A keyframe; an I-frame of this mind with the same memory is touched and returned
        instead (with its own metadata)."""
        with self.mind.write() as s:
            return (
                self._repo(s)
                .create_i(
                    gop_id, content, importance=importance, source=source, created_at=created_at,
                    metadata=metadata,
                )
                .frame
            )

    def create_p(
        self,
        gop_id: str,
        content: str,
        base_frame_id: int,
        *,
        importance: str = "normal",
        source: str = "user_stated",
        metadata: dict[str, Any] | None = None,
    ) -> Frame:
        with self.mind.write() as s:
            return self._repo(s).create_p(
                gop_id, content, base_frame_id, importance=importance, source=source,
                metadata=metadata,
            )

    def create_b(
        self, gop_id: str, description: str, base_frame_id: int, referenced_frame_ids: Sequence[int]
    ) -> Frame:
        with self.mind.write() as s:
            return self._repo(s).create_b(gop_id, description, base_frame_id, referenced_frame_ids)

    def update(self, frame_id: int, content: str, *, importance: str | None = None) -> Frame:
        """New content: the keyword index follows in the same transaction; the old vector is
        dropped and the frame re-embedded right after (it stays pending if that fails)."""
        with self.mind.write() as s:
            frame, changed = self._repo(s).update(frame_id, content, importance=importance)
            if changed:
                self._drop_vectors(s, [frame.id])
        if changed:
            self._reembed([frame.id])
        return frame

    def _reembed(self, frame_ids: Sequence[int]) -> None:
        """Embed outside the write transaction; a failure leaves the manifest pending for
        reconcile."""
        if frame_ids:
            embed_frames(self.mind.store, frame_ids)

    def delete(self, frame_id: int) -> None:
        """Delete a frame; frames based on it keep working with base_frame_id = None."""
        with self.mind.write() as s:
            self._repo(s).delete(frame_id)
            self._drop_vectors(s, [frame_id])

    def touch(self, frame_id: int) -> None:
        with self.mind.write() as s:
            self._repo(s).touch(frame_id)

    def touch_many(self, frame_ids: Sequence[int]) -> int:
        if isinstance(frame_ids, (str, bytes)) or not isinstance(frame_ids, Iterable):
            raise InvalidInputError(f"frame_ids must be a list of ids, got {frame_ids!r:.80}")
        with self.mind.write() as s:
            return self._repo(s).touch_many(frame_ids)

    def compact(
        self, *, max_temp_age_days: int = 30, max_deprecated_age_days: int = 90
    ) -> CompactionReport:
        with self.mind.write() as s:
            result = self._repo(s).compact(
                max_temp_age_days=max_temp_age_days, max_deprecated_age_days=max_deprecated_age_days
            )
            self._drop_vectors(s, result.deleted_ids + result.rewritten_ids)
        self._reembed(result.rewritten_ids)
        return result.report

    # -- reads --------------------------------------------------------------------------------

    def get(self, frame_id: int) -> Frame | None:
        with self.mind.read() as s:
            return self._repo(s).get(frame_id)

    def latest_i(self, gop_id: str) -> Frame | None:
        with self.mind.read() as s:
            return self._repo(s).latest_i(gop_id)

    def gop(self, gop_id: str) -> list[Frame]:
        with self.mind.read() as s:
            return self._repo(s).gop(gop_id)

    def reconstruct_state(self, gop_id: str) -> GopState:
        with self.mind.read() as s:
            return self._repo(s).reconstruct_state(gop_id)

    def recent(
        self,
        limit: int = 50,
        *,
        since: datetime | str | None = None,
        until: datetime | str | None = None,
    ) -> list[Frame]:
        with self.mind.read() as s:
            return self._repo(s).recent(limit, since=since, until=until)

    def stats(self) -> FrameStats:
        with self.mind.read() as s:
            return self._repo(s).stats()

    def references(self, frame_id: int) -> list[int]:
        """The frame ids a B-frame references ([] for other frames)."""
        with self.mind.read() as s:
            return self._repo(s).references(frame_id)
