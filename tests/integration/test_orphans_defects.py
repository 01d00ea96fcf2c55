"""A host's own ``DELETE FROM waggle_minds`` on a SQLite connection with foreign keys off (the
driver's default) cascades nothing: the rows of that mind are orphans, which ``health()``,
``migrate.check()`` and ``reconcile()`` report and ``reconcile(repair=True)`` removes."""

from __future__ import annotations

import sqlalchemy as sa

from waggle_store import migrate
from waggle_store.engine import pick_sqlite_driver
from waggle_store.models import FrameRow

from conftest import Target, only_sqlite


@only_sqlite
def test_orphans_of_a_host_delete_without_foreign_keys_are_reported_and_repaired(
        target: Target) -> None:
    with target.open(embedder="hashing") as store:
        mind = store.mind("gone")
        for text in ("Priya chose PostgreSQL for billing", "Marco prefers green tea"):
            mind.cognify(text)
        store.mind("kept").cognify("the kept mind's memory")
        host = sa.create_engine(target.url, module=pick_sqlite_driver()[0])
        with host.begin() as conn:  # the driver's default: PRAGMA foreign_keys is off
            assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 0
            conn.exec_driver_sql("DELETE FROM waggle_minds WHERE name = 'gone'")
        host.dispose()

        reasons = [r for r in store.health().reasons if "deleted parent" in r]
        assert any("waggle_memory_frames" in r for r in reasons), store.health().reasons
        assert any(d[0] == "orphan_rows" for d in migrate.check(target.url))
        report = store.reconcile()
        assert any("waggle_memory_frames" in p for p in report.problems)
        assert report.repaired == []

        repaired = store.reconcile(repair=True)
        assert repaired.orphans_removed >= 2
        with store.read() as session:
            assert session.scalar(sa.select(sa.func.count()).select_from(FrameRow)) == 1
        assert not [r for r in store.health().reasons if "deleted parent" in r]
        assert migrate.check(target.url) == []
        assert store.reconcile().problems == []
        assert [h.frame.content for h in store.mind("kept").search("kept mind")] == [
            "the kept mind's memory"]
        assert [m.name for m in store.list_minds()] == ["kept"]
