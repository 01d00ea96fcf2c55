"""Derived objects (issue 12, finding 8): a dropped FTS trigger, GIN index, keyword index or
vector-table index is reported by ``health()`` and ``migrate.check()`` and recreated by
``reconcile(repair=True)``, after which writes made meanwhile are found again."""

from __future__ import annotations

import sqlalchemy as sa

import waggle_store as ws
from tests.conftest import KeywordIndexProbe, Target
from waggle_store import migrate


def _derived_diffs(store: ws.Store, target: Target) -> list[tuple[str, str, str]]:
    return [d for d in migrate.check(store.engine, schema=target.schema)
            if d[0] == "broken_derived_object"]


def _assert_clean(store: ws.Store, target: Target) -> None:
    health = store.health()
    assert health.keyword_search
    assert not [r for r in health.reasons if "degraded" in r], health.reasons
    assert migrate.check(store.engine, schema=target.schema) == []


def test_a_fresh_store_has_every_derived_object(store: ws.Store, target: Target) -> None:
    store.mind("m").cognify("Sarah Chen leads Project Apollo.")  # registers a model: vector table
    _assert_clean(store, target)
    report = store.reconcile()
    assert report.problems == []
    assert report.repaired == []


def test_dropped_keyword_part_is_reported_and_repaired(
    store: ws.Store, target: Target, keyword_index: KeywordIndexProbe
) -> None:
    mind = store.mind("m")
    mind.cognify("Sarah Chen leads Project Apollo.")
    keyword_index.drop_part()
    # Written while the trigger (SQLite) or the GIN index (Postgres) is gone.
    during = mind.cognify("Zephyrine audits the quarterly ledger.").frame_id

    health = store.health()
    assert not health.keyword_search
    assert any("keyword search degraded" in r for r in health.reasons), health.reasons
    diffs = _derived_diffs(store, target)
    assert len(diffs) == 1
    assert "keyword index" in diffs[0][2]

    plain = store.reconcile()  # without repair: reported, not fixed
    assert len(plain.problems) == 1
    assert plain.repaired == []
    assert len(_derived_diffs(store, target)) == 1

    fixed = store.reconcile(repair=True)
    assert fixed.problems == fixed.repaired
    assert len(fixed.repaired) == 1
    _assert_clean(store, target)
    assert during in keyword_index.ids("Zephyrine")
    # And the repaired objects keep working for writes after the repair.
    after = mind.cognify("Zephyrine closes the ledger review.").frame_id
    assert {during, after} <= keyword_index.ids("Zephyrine")
    hits = mind.search("Zephyrine ledger", limit=5)
    assert {during, after} <= {h.frame.id for h in hits}


def test_dropped_keyword_index_is_rebuilt_with_every_frame(
    store: ws.Store, target: Target, keyword_index: KeywordIndexProbe
) -> None:
    mind = store.mind("m")
    before = mind.cognify("Quillon drafts the migration plan.").frame_id
    keyword_index.drop()
    assert not store.health().keyword_search
    assert _derived_diffs(store, target)
    report = store.reconcile()  # the broken index is skipped, not a raw error
    assert report.problems
    assert report.repaired == []
    store.reconcile(repair=True)
    _assert_clean(store, target)
    after = mind.cognify("Quillon reviews the migration plan.").frame_id
    assert {before, after} <= keyword_index.ids("Quillon")


def test_dropped_vector_table_part_is_reported_and_repaired(
    store: ws.Store, target: Target, keyword_index: KeywordIndexProbe
) -> None:
    mind = store.mind("m")
    mind.cognify("Sarah Chen leads Project Apollo.")
    with store.read() as s:
        model_id = s.scalar(
            sa.text("SELECT id FROM waggle_embedding_models WHERE status = 'active'")
        )
    table = ws.dialects.vector_table_name(int(model_id))
    keyword_index.drop_vector_part(table)
    health = store.health()
    assert any(table in r for r in health.reasons), health.reasons
    assert [d[1][: len(table)] for d in _derived_diffs(store, target)] == [table]
    store.reconcile(repair=True)
    _assert_clean(store, target)


def test_dropped_vector_table_is_recreated_and_refilled(store: ws.Store, target: Target) -> None:
    mind = store.mind("m")
    frame_id = mind.cognify("Sarah Chen leads Project Apollo.").frame_id
    with store.read() as s:
        model_id = s.scalar(
            sa.text("SELECT id FROM waggle_embedding_models WHERE status = 'active'")
        )
    table = ws.dialects.vector_table_name(int(model_id))
    with store.write() as s:
        s.execute(sa.text(f"DROP TABLE {table}"))
    assert any(f"{table} (vector table) is missing" in r for r in store.health().reasons)
    report = store.reconcile(repair=True)
    assert report.vectors_fixed == 1
    _assert_clean(store, target)
    assert store.reconcile().vectors_fixed == 0  # the vector row is back
    assert frame_id in {h.frame.id for h in mind.search("Apollo", limit=5)}
