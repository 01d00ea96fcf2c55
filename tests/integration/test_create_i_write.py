"""``frames.create_i``'s write path (issue 15): the checks in the INSERT, the locks in its round
trip, the statements on the DBAPI cursor (``dialects/frame_write.py``,
``dialects/common.run_statements``)."""

from __future__ import annotations

import threading
import time

import pytest
import sqlalchemy as sa

import waggle_store as ws
from tests.conftest import only_postgres
from waggle_store.dialects.common import run_statements
from waggle_store.models import FrameEmbeddingRow, FrameRow, MindRow, SessionRow


def _frames(store: ws.Store) -> list[tuple[str, int, str]]:
    with store.read() as s:
        return [(r.gop_id, r.t, r.content) for r in s.scalars(
            sa.select(FrameRow).order_by(FrameRow.id))]


def test_the_manifest_is_written_with_the_frame(store: ws.Store) -> None:
    mind = store.mind("m")
    gop = mind.sessions.ensure("g").gop_id
    frame = mind.frames.create_i(gop, "a keyframe", importance="important", source="agent_inferred",
                                 created_at="2025-01-02T03:04:05Z")
    with store.read() as s:
        row = s.get(FrameRow, frame.id)
        manifest = s.get(FrameEmbeddingRow, frame.id)
    assert row is not None
    assert manifest is not None
    assert (row.frame_type, row.t, row.base_frame_id, row.importance, row.source,
            row.access_count, row.created_at, row.last_accessed) == (
        "I", 0, None, "important", "agent_inferred", 0, frame.created_at, frame.created_at)
    assert (manifest.status, manifest.model_id, manifest.content_hash, manifest.text_form,
            manifest.error) == ("pending", None, row.content_hash, "whole", None)
    assert manifest.updated_at > row.created_at  # now, not the memory's own time


def test_a_missing_session_stores_nothing_and_a_duplicate_is_touched(store: ws.Store) -> None:
    mind = store.mind("m")
    gop = mind.sessions.ensure("g").gop_id
    first = mind.frames.create_i(gop, "the same memory")
    with pytest.raises(ws.NotFoundError, match="no session 'nowhere'"):
        mind.frames.create_i("nowhere", "a new memory")
    with pytest.raises(ws.NotFoundError, match="no session 'nowhere'"):
        mind.frames.create_i("nowhere", "the same memory")  # the session is checked first
    other = mind.sessions.ensure("other").gop_id
    again = mind.frames.create_i(other, "the same memory")  # dedup is per mind
    assert (again.id, again.gop_id, again.access_count) == (first.id, gop, 1)
    following = mind.frames.create_i(gop, "the next memory")
    assert _frames(store) == [(gop, 0, "the same memory"), (gop, 1, "the next memory")]
    assert following.t == 1


def test_several_statements_run_in_order_and_an_error_rolls_all_back(store: ws.Store) -> None:
    frames = FrameRow.__table__
    count = sa.select(sa.func.count()).select_from(frames)
    missing = sa.select(sa.column("x")).select_from(sa.table("waggle_no_such_table"))
    with store.write() as s:
        assert run_statements(s, [(count, {}), (count, {})]) == [[(0,)], [(0,)]]
    mind = store.mind("m")
    gop = mind.sessions.ensure("g").gop_id
    mind.frames.create_i(gop, "kept")
    with pytest.raises(ws.StorageError), store.write() as s:  # noqa: PT012 - the update, then the error
        s.execute(sa.update(frames).values(importance="temporary"))
        run_statements(s, [(count, {}), (missing, {}), (count, {})])
    with store.read() as s:
        assert s.scalars(sa.select(FrameRow.importance)).all() == ["normal"]
    assert mind.frames.create_i(gop, "after the error").t == 1  # the pool is still usable


@only_postgres
def test_create_i_waits_for_the_mind_row_before_it_locks_the_session(store: ws.Store) -> None:
    """One lock order everywhere: the mind row, then the session row. Sent in one round trip,
    the two locks must still be taken in that order: while another transaction holds the mind
    row, a waiting create_i holds nothing, so a writer that has the mind row can go on to lock
    the session (if create_i held it, the two would deadlock)."""
    mind = store.mind("m")
    gop = mind.sessions.ensure("g").gop_id
    finished: list[object] = []
    with store.engine.connect() as holder:
        # Core statements: the store's engine renders its schema (each test has its own; an
        # unqualified name could find another test's tables).
        holder.execute(sa.select(MindRow.id).where(MindRow.id == mind.id)
                       .with_for_update(key_share=True))
        holder_pid = holder.exec_driver_sql("SELECT pg_backend_pid()").scalar()

        def write() -> None:
            try:
                finished.append(mind.frames.create_i(gop, "written after the wait"))
            except Exception as exc:  # noqa: BLE001 - asserted below
                finished.append(exc)

        writer = threading.Thread(target=write)
        writer.start()
        deadline = time.monotonic() + 30
        with store.engine.connect() as watcher:
            while True:
                # Blocked by the holder: no other backend of the server (another test's) counts.
                blocked = watcher.exec_driver_sql(
                    "SELECT count(*) FROM pg_stat_activity "
                    "WHERE %s = ANY(pg_blocking_pids(pid))", (holder_pid,)).scalar()
                # A transaction reads pg_stat_activity once: each look needs a new one.
                watcher.rollback()
                if blocked:
                    break
                assert time.monotonic() < deadline, "create_i never waited for the mind row"
                time.sleep(0.02)
        # The holder (with the mind row) locks the session row: free, create_i has not taken it.
        holder.exec_driver_sql("SET LOCAL lock_timeout = '5s'")
        holder.execute(sa.select(SessionRow.id).where(SessionRow.mind_id == mind.id,
                                                      SessionRow.gop_id == gop)
                       .with_for_update(key_share=True))
        assert finished == []
        holder.rollback()
    writer.join(30)
    assert len(finished) == 1, finished
    assert isinstance(finished[0], ws.Frame), finished
    assert _frames(store) == [(gop, 0, "written after the wait")]
