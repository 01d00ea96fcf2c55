"""The entity ↔ frame links (mentions) that the contextual search score joins through.

``entity_mentions`` has no ``mind_id`` column: a mention belongs to the mind of its entity (and
of its frame). Writes take ids the caller got from this mind's repositories, and the foreign
keys refuse ids that do not exist; reads are confined to the mind through the entity.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc
from sqlalchemy.orm import Session

from waggle_store.errors import NotFoundError
from waggle_store.models.knowledge import EntityMentionRow, EntityRow
from waggle_store.repositories.common import get_or_create

_CHUNK = 500


class MentionRepository:
    def __init__(self, session: Session, mind_id: int) -> None:
        self.session = session
        self.mind_id = mind_id

    def add(self, entity_id: int, frame_id: int) -> bool:
        """Record that a frame mentions an entity; True if new, False if it was already recorded."""
        try:
            _, created = get_or_create(
                self.session, lambda: self.session.get(EntityMentionRow, (entity_id, frame_id)),
                lambda: EntityMentionRow(entity_id=entity_id, frame_id=frame_id))
        except sa_exc.IntegrityError as exc:
            # Not a lost race (get_or_create found no row afterwards): a foreign key is missing.
            raise NotFoundError(f"entity {entity_id} or frame {frame_id} does not exist") from exc
        return created

    def add_many(self, frame_id: int, entity_ids: Sequence[int]) -> int:
        """Record that the frame mentions these entities; returns how many were new."""
        return self.add_missing([(frame_id, e) for e in entity_ids])

    def add_missing(self, pairs: Sequence[tuple[int, int]],
                    new_frames: Collection[int] = ()) -> int:
        """Record the ``(frame id, entity id)`` mentions not recorded yet; returns how many.

        One SELECT per 500 frames (only frames not in ``new_frames``, inserted by this
        transaction, can have some) and one INSERT, whatever the number (the bulk writers:
        cognify, import). Not race-free on its own: the caller holds the per-mind graph lock,
        which serialises the bulk writers of this mind's mentions.
        """
        wanted = list(dict.fromkeys(pairs))
        old_frames = sorted({f for f, _ in wanted if f not in new_frames})
        have: set[tuple[int, int]] = set()
        for start in range(0, len(old_frames), _CHUNK):
            have.update((int(f), int(e)) for f, e in self.session.execute(
                sa.select(EntityMentionRow.frame_id, EntityMentionRow.entity_id)
                .where(EntityMentionRow.frame_id.in_(old_frames[start:start + _CHUNK]))))
        missing = [{"entity_id": e, "frame_id": f} for f, e in wanted if (f, e) not in have]
        if missing:
            self.session.execute(sa.insert(EntityMentionRow), missing)
        return len(missing)

    def entity_ids_by_frame(self, frame_ids: Sequence[int]) -> dict[int, list[int]]:
        """Frame id → ids of this mind's entities it mentions."""
        out: dict[int, list[int]] = {}
        ids = list(dict.fromkeys(frame_ids))
        for start in range(0, len(ids), _CHUNK):
            rows = self.session.execute(
                sa.select(EntityMentionRow.frame_id, EntityMentionRow.entity_id)
                .join(EntityRow, EntityRow.id == EntityMentionRow.entity_id)
                .where(EntityMentionRow.frame_id.in_(ids[start:start + _CHUNK]),
                       EntityRow.mind_id == self.mind_id)
                .order_by(EntityMentionRow.frame_id, EntityMentionRow.entity_id)
            )
            for frame_id, entity_id in rows:
                out.setdefault(frame_id, []).append(entity_id)
        return out
