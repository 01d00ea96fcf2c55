"""The frame write path's statements, built once at import.

``frames.create_i`` is called once per memory by agents and importers; building its four
statements afresh on every call (expression coercion, cache-key generation) cost more than the
database spent executing them. Each statement here is built once, takes every value
as a bound parameter, and its compiled form stays in the engine's cache.
"""

from __future__ import annotations

from typing import Final, cast

from sqlalchemy import Table, bindparam, func, insert, select

from waggle_store.models import FrameEmbeddingRow, FrameRow, MindRow, SessionRow

__all__ = ["DUPLICATE_I", "INSERT_FRAME", "INSERT_MANIFEST", "LOCK_MIND_AND_SESSION",
           "LOCK_SESSION"]

# Table columns, not ORM attributes: a statement of plain columns skips the ORM's result
# loading when a Session executes it.
_FRAMES = cast(Table, FrameRow.__table__)
_MANIFESTS = cast(Table, FrameEmbeddingRow.__table__)
_SESSIONS = cast(Table, SessionRow.__table__)
_MINDS = cast(Table, MindRow.__table__)
_F = _FRAMES.c

#: The session row, locked (FOR NO KEY UPDATE on Postgres; SQLite's BEGIN IMMEDIATE already
#: serialises writers): params ``mind_id``, ``gop_id``.
LOCK_SESSION: Final = (
    select(_SESSIONS.c.gop_id)
    .where(_SESSIONS.c.mind_id == bindparam("mind_id"),
           _SESSIONS.c.gop_id == bindparam("gop_id"))
    .with_for_update(key_share=True)
)

#: :data:`LOCK_SESSION` with the mind row locked first, in one statement (one round trip less
#: for ``create_i``, which takes both): the session's index scan needs the mind's id from the
#: locking subquery, so Postgres runs that subquery (an InitPlan) and holds the mind row before it
#: reads the session row: the lock order of every write path (``knowledge_common.lock_graph``).
#: No row: no such session (or no such mind). Params ``mind_id``, ``gop_id``.
LOCK_MIND_AND_SESSION: Final = (
    select(_SESSIONS.c.gop_id)
    .where(_SESSIONS.c.mind_id == select(_MINDS.c.id)
           .where(_MINDS.c.id == bindparam("mind_id"))
           .with_for_update(key_share=True).scalar_subquery(),
           _SESSIONS.c.gop_id == bindparam("gop_id"))
    .with_for_update(key_share=True)
)

#: The newest I-frame of the mind with this content hash: params ``mind_id``, ``content_hash``.
DUPLICATE_I: Final = (
    select(_F.id)
    .where(_F.mind_id == bindparam("mind_id"), _F.content_hash == bindparam("content_hash"),
           _F.frame_type == "I")
    .order_by(_F.id.desc()).limit(1)
)

_NEXT_T = select(func.coalesce(func.max(_F.t), -1) + 1).where(
    _F.mind_id == bindparam("q_mind"), _F.gop_id == bindparam("q_gop")
).scalar_subquery()

#: One frame with ``t`` = the session's MAX(t) + 1 (the caller holds the session lock); returns
#: (id, t). Params: the frame's columns as ``v_<column>``, plus ``q_mind`` and ``q_gop``.
INSERT_FRAME: Final = insert(_FRAMES).values(
    {name: bindparam(f"v_{name}") for name in (
        "mind_id", "frame_type", "gop_id", "base_frame_id", "content", "content_hash",
        "importance", "source", "access_count", "created_at", "last_accessed", "metadata")}
    | {"t": _NEXT_T}
).returning(_FRAMES.c.id, _FRAMES.c.t)

#: A new frame's manifest (no vector yet): params ``frame_id``, ``content_hash``, ``updated_at``.
INSERT_MANIFEST: Final = insert(_MANIFESTS).values(
    frame_id=bindparam("frame_id"), model_id=None, content_hash=bindparam("content_hash"),
    status="pending", error=None, updated_at=bindparam("updated_at"))
