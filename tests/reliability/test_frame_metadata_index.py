"""The objects that answer a search's metadata filter (SQLite: the side table of each frame's
metadata entries and its triggers; PostgreSQL: the GIN index on ``metadata``) are derived data:
a dropped one is reported by ``health()`` and ``migrate.check()`` and recreated by
``reconcile(repair=True)``, and SQLite side-table rows that drifted from the frames' metadata
are found and written again by ``reconcile``."""

from __future__ import annotations

import sqlalchemy as sa

import waggle_store as ws
from tests.conftest import Target
from waggle_store import migrate

PRICING = {"metadata": {"topic": "pricing"}}


def _fill(mind: ws.Mind) -> tuple[int, int]:
    gop = mind.sessions.ensure("notes").gop_id
    first = mind.frames.create_i(gop, "Apollo pricing keyframe", metadata={"topic": "pricing"})
    second = mind.frames.create_i(gop, "Hermes pricing draft",
                                  metadata={"topic": "roadmap", "rank": 2})
    return first.id, second.id


def _found(mind: ws.Mind, where: dict[str, object] = PRICING) -> set[int]:
    return {h.frame.id for h in mind.search("pricing", lanes=("keyword",), where=where)}


def _execute(store: ws.Store, *statements: str) -> None:
    with store.engine.begin() as conn:
        for statement in statements:
            conn.exec_driver_sql(statement)


def _drop_statement(target: Target) -> str:
    """What breaks the metadata filter's upkeep: SQLite's insert trigger, Postgres's index."""
    if target.dialect == "sqlite":
        return "DROP TRIGGER waggle_frame_metadata_ai"
    return f'DROP INDEX "{target.schema}".ix_waggle_memory_frames_metadata'


def test_a_dropped_metadata_object_is_reported_and_recreated(
        store: ws.Store, target: Target) -> None:
    mind = store.mind("m")
    first, _ = _fill(mind)
    assert store.reconcile().problems == []
    _execute(store, _drop_statement(target))
    # Written while the object is gone (on SQLite: no side-table rows for it).
    during = mind.frames.create_i(mind.sessions.ensure("notes").gop_id, "Zeus pricing memo",
                                  metadata={"topic": "pricing"}).id

    health = store.health()
    assert any("metadata search degraded" in r for r in health.reasons), health.reasons
    diffs = [d for d in migrate.check(store.engine, schema=target.schema)
             if d[0] == "broken_derived_object"]
    assert len(diffs) == 1
    assert "metadata index" in diffs[0][2]

    fixed = store.reconcile(repair=True)
    assert fixed.repaired[0] == fixed.problems[0]
    assert "metadata index" in fixed.repaired[0]
    assert not [r for r in store.health().reasons if "degraded" in r]
    assert migrate.check(store.engine, schema=target.schema) == []
    assert _found(mind) == {first, during}
    # And the recreated objects keep working for the writes after the repair.
    after = mind.frames.create_i(mind.sessions.ensure("notes").gop_id, "Ares pricing memo",
                                 metadata={"topic": "pricing"}).id
    assert _found(mind) == {first, during, after}
    assert store.reconcile().problems == []


def test_sqlite_side_table_rows_that_drift_are_found_and_rewritten(
        store: ws.Store, target: Target) -> None:
    mind = store.mind("m")
    first, second = _fill(mind)
    other = store.mind("other")
    kept, _ = _fill(other)
    if target.dialect != "sqlite":
        # PostgreSQL filters on the column itself: nothing beside it can drift.
        assert store.reconcile(repair=True).problems == []
        assert _found(mind) == {first}
        return
    _execute(store,
             f"DELETE FROM waggle_frame_metadata WHERE frame_id = {first}",  # lost
             f"UPDATE waggle_frame_metadata SET value = 'pricing' WHERE frame_id = {second} "
             "AND key = 'topic'",  # stale
             "INSERT INTO waggle_frame_metadata (frame_id, mind_id, key, type, value) "
             "VALUES (999999, 1, 'topic', 'text', 'pricing')")  # its frame is gone
    assert _found(mind) == {second}  # the drift is what the filter answers from

    report = store.reconcile(mind="m")
    drift = [p for p in report.problems if "metadata-filter entries" in p]
    assert drift == [("3 frame(s) had metadata-filter entries out of step with their "
                      "metadata: written again")]
    assert drift[0] in report.repaired
    assert _found(mind) == {first}
    assert _found(mind, {"metadata": {"rank": 2}}) == {second}
    assert _found(other) == {kept}  # the other mind's entries were not touched
    with store.engine.connect() as conn:
        rows = conn.execute(sa.text("SELECT count(*) FROM waggle_frame_metadata")).scalar()
    assert rows == 6  # topic for each frame, and rank for each "Hermes" frame
    assert store.reconcile().problems == []
