"""Foundation: migrations, engines, minds and health on both dialects."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic.script import ScriptDirectory
from sqlalchemy.orm import Session

import waggle_store as ws
from waggle_store import migrate
from waggle_store.models import Base, FrameRow, MindRow, SessionRow

REPO = Path(__file__).resolve().parents[2]
ALEMBIC = [sys.executable, "-m", "alembic"]


def _tables(engine: sa.Engine, schema: str | None) -> set[str]:
    return set(sa.inspect(engine).get_table_names(schema=schema))


def _alembic(target, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, WAGGLE_DATABASE_URL=target.url)
    if target.schema:
        env["WAGGLE_PG_SCHEMA"] = target.schema
    return subprocess.run(
        [*ALEMBIC, *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )


def test_alembic_cli_upgrade_downgrade_upgrade(target) -> None:
    up = _alembic(target, "upgrade", "head")
    assert up.returncode == 0, up.stderr
    assert target.url.split("@")[-1] not in up.stdout + up.stderr  # never prints the URL
    engine = sa.create_engine(target.url)
    try:
        tables = _tables(engine, target.schema)
        assert {t.name for t in Base.metadata.tables.values()} <= tables
        check = _alembic(target, "check")
        assert check.returncode == 0, check.stderr
        assert "No new upgrade operations detected" in check.stdout + check.stderr
        down = _alembic(target, "downgrade", "base")
        assert down.returncode == 0, down.stderr
        left = _tables(engine, target.schema) - {"waggle_alembic_version", "sqlite_sequence"}
        assert left == set()
        again = _alembic(target, "upgrade", "head")
        assert again.returncode == 0, again.stderr
        assert {t.name for t in Base.metadata.tables.values()} <= _tables(engine, target.schema)
    finally:
        engine.dispose()
    # The keyword index the migration built (FTS5 table or tsvector column) serves a search by
    # itself: the store does not fall back to LIKE.
    with target.open(upgrade=False, embedder=None) as store:
        mind = store.mind("probe")
        frame = mind.frames.create_i(mind.sessions.ensure("g").gop_id, "pelican sighting")
        (hit,) = mind.search("pelican", lanes=("keyword",))
    assert hit.frame.id == frame.id
    assert hit.explain["keyword_backend"] != "like"


def test_check_reports_no_difference(engine, target) -> None:
    assert migrate.check(engine, schema=target.schema) == []
    assert migrate.current(engine, schema=target.schema) == migrate.head()


def test_exactly_one_head() -> None:
    """The scripts form one line of revisions, whose head is the newest script's number."""
    heads = ScriptDirectory.from_config(migrate._alembic_config()).get_heads()
    newest = max(p.name[:4] for p in migrate.script_location().joinpath("versions").glob("0*.py"))
    assert heads == [newest]


def _fill_every_table(engine: sa.Engine) -> dict[str, int]:
    from waggle_store.models import (
        AgentRow,
        AliasRow,
        AwarenessRow,
        ConversationRow,
        EmbeddingModelRow,
        EmbeddingStagingRow,
        EmbeddingUsage,
        EntityMentionRow,
        EntityRow,
        EntityVersionRow,
        FrameEmbeddingRow,
        HarvestSourceRow,
        HarvestTombstoneRow,
        IdentityRow,
        KVRow,
        MessageRow,
        MindEmbeddingModelRow,
        PendingExtractionRow,
        RelationRow,
        RelationVersionRow,
        StoreMeta,
        UsageLogRow,
    )

    with Session(engine) as s, s.begin():
        mind = MindRow(name="m", kind="personal", settings={"a": 1})
        s.add(mind)
        s.flush()
        s.add(IdentityRow(mind_id=mind.id, name="Hive"))
        s.add(AwarenessRow(mind_id=mind.id, category="task", content="do it", meta={"k": "v"}))
        s.add(SessionRow(mind_id=mind.id, gop_id="g1"))
        s.flush()
        frame = FrameRow(
            mind_id=mind.id,
            frame_type="I",
            gop_id="g1",
            t=0,
            content="hello world",
            content_hash="h",
            meta={"k": "v"},  # also fills SQLite's metadata side table (its triggers)
        )
        s.add(frame)
        s.flush()
        a = EntityRow(mind_id=mind.id, entity_type="person", name="Ann", name_key="ann")
        b = EntityRow(mind_id=mind.id, entity_type="project", name="Apollo", name_key="apollo")
        s.add_all([a, b])
        s.flush()
        s.add(RelationRow(mind_id=mind.id, source_id=a.id, target_id=b.id, relation_type="leads"))
        s.add(EntityMentionRow(entity_id=a.id, frame_id=frame.id))
        s.flush()
        when = datetime.now(UTC)
        s.add(EntityVersionRow(entity_id=a.id, version=0, mind_id=mind.id, entity_type="person",
                               name="Anne", valid_from=when, valid_to=None, recorded_from=when,
                               recorded_to=when))
        edge = s.scalars(sa.select(RelationRow)).one()
        s.add(RelationVersionRow(relation_id=edge.id, version=0, mind_id=mind.id,
                                 source_id=a.id, target_id=b.id, relation_type="leads",
                                 valid_from=when, valid_to=None, recorded_from=when,
                                 recorded_to=when))
        s.add(AliasRow(mind_id=mind.id, alias_key="annie", alias="Annie", canonical_key="ann",
                       canonical_name="Ann"))
        s.add(PendingExtractionRow(frame_id=frame.id, mind_id=mind.id, error="offline"))
        model = EmbeddingModelRow(provider="hashing", model="h", dimensions=8)
        s.add(model)
        s.flush()
        s.add(FrameEmbeddingRow(frame_id=frame.id, model_id=model.id, content_hash="h"))
        s.add(MindEmbeddingModelRow(mind_id=mind.id, model_id=model.id, status="active"))
        s.add(EmbeddingStagingRow(frame_id=frame.id, model_id=model.id, content_hash="h"))
        s.add(EmbeddingUsage(user_id="u", year_month="2026-11", count=3))
        s.add(UsageLogRow(mind_id=mind.id, model="gpt", total_tokens=5))
        s.add(KVRow(mind_id=mind.id, key="k", value={"x": [1, 2]}))
        s.add(HarvestSourceRow(mind_id=mind.id, source="chatgpt", display_name="ChatGPT"))
        s.add(HarvestTombstoneRow(mind_id=mind.id, source="chatgpt", content_hash="h"))
        s.add(StoreMeta(key="k", value="v"))
        conversation = ConversationRow(mind_id=mind.id, channel="web")
        s.add(conversation)
        s.flush()
        s.add(MessageRow(conversation_id=conversation.id, seq=1, role="user", content="hi"))
        s.add(AgentRow(name="m", name_key="m", manifest={}, state={}))
    with engine.connect() as conn:
        return {
            t: conn.execute(
                sa.select(sa.func.count()).select_from(Base.metadata.tables[t])
            ).scalar_one()
            for t in Base.metadata.tables
        }


def test_rows_survive_upgrade_after_partial_downgrade_cycle(engine, target) -> None:
    """Upgrading an already-migrated database with rows in every table loses nothing."""
    counts = _fill_every_table(engine)
    assert all(n >= 1 for n in counts.values()), counts
    migrate.upgrade(engine, schema=target.schema)  # idempotent at head
    with engine.connect() as conn:
        after = {
            t: conn.execute(
                sa.select(sa.func.count()).select_from(Base.metadata.tables[t])
            ).scalar_one()
            for t in Base.metadata.tables
        }
    assert after == counts
    assert migrate.check(engine, schema=target.schema) == []
    # The full cycle: downgrade drops exactly the waggle_store tables, upgrade rebuilds them.
    migrate.downgrade(engine, "base", schema=target.schema)
    assert migrate.current(engine, schema=target.schema) is None
    migrate.upgrade(engine, schema=target.schema)
    assert migrate.check(engine, schema=target.schema) == []


def test_timestamps_round_trip_as_aware_utc(engine) -> None:
    written = datetime(2026, 5, 13, 10, 0, 0, 123456, tzinfo=timezone(timedelta(hours=2)))
    with Session(engine) as s, s.begin():
        s.add(MindRow(name="tz", kind="workspace", created_at=written))
    with Session(engine) as s:
        got = s.scalar(sa.select(MindRow.created_at).where(MindRow.name == "tz"))
    assert got == written
    assert got.tzinfo == UTC
    assert got.hour == 8


def test_the_store_reads_times_as_the_utc_singleton(store: ws.Store) -> None:
    """Both dialects' fast paths (SQLite's fixed-width string, Postgres sessions in UTC) give
    ``datetime.UTC`` itself, at the instant written."""
    written = datetime(2026, 5, 13, 10, 0, 0, 123456, tzinfo=timezone(timedelta(hours=2)))
    mind = store.mind("tz")
    frame = mind.frames.create_i(mind.sessions.ensure("s").gop_id, "a timed memory",
                                 created_at=written)
    got = mind.frames.get(frame.id)
    assert got is not None
    assert got.created_at == written
    assert got.created_at.tzinfo is UTC
    assert got.last_accessed.tzinfo is UTC
    if store.engine.dialect.name == "postgresql":
        with store.engine.connect() as conn:
            assert conn.exec_driver_sql("SHOW TimeZone").scalar_one() == "UTC"


def test_naive_datetime_is_refused(store) -> None:
    with pytest.raises(ws.InvalidInputError), store.write() as s:
        s.add(MindRow(name="naive", kind="workspace", created_at=datetime(2026, 1, 1)))
    assert "naive" not in [m.name for m in store.list_minds()]


def test_minds_get_or_create_list_and_drop(store) -> None:
    a = store.mind("alpha")
    assert store.mind("alpha").id == a.id
    b = store.mind("beta", kind="personal")
    assert [(m.name, m.kind) for m in store.list_minds()] == [
        ("alpha", "workspace"),
        ("beta", "personal"),
    ]
    with store.write() as s:
        for mind in (a, b):
            s.add(SessionRow(mind_id=mind.id, gop_id="shared-name"))
        s.flush()
        for mind in (a, b):
            s.add(
                FrameRow(
                    mind_id=mind.id,
                    frame_type="I",
                    gop_id="shared-name",
                    t=0,
                    content=f"frame of {mind.name}",
                    content_hash="x",
                )
            )
    store.drop_mind("alpha")
    assert [m.name for m in store.list_minds()] == ["beta"]
    with store.read() as s:
        frames = s.scalars(sa.select(FrameRow.content)).all()
        sessions = s.scalars(sa.select(SessionRow.mind_id)).all()
    assert frames == ["frame of beta"]
    assert sessions == [b.id]
    with pytest.raises(ws.NotFoundError):
        store.drop_mind("alpha")


@pytest.mark.parametrize("bad", ["", "   ", "x" * 201, "a\x00b"])
def test_bad_mind_names(store, bad: str) -> None:
    with pytest.raises(ws.InvalidInputError):
        store.mind(bad)


def test_bad_mind_kind(store) -> None:
    with pytest.raises(ws.InvalidInputError):
        store.mind("ok", kind="team")


# A stdlib sqlite3 that cannot load extensions (this machine's) is replaced by a driver that can.
_SQLITE_DRIVERS = ("sqlean", "pysqlite3") + (
    ("sqlite3",) if hasattr(sqlite3.Connection, "enable_load_extension") else ()
)


@pytest.mark.parametrize(
    ("target", "drivers", "vector_extension"),
    [("sqlite", _SQLITE_DRIVERS, "sqlite_vec"), ("postgres", ("psycopg",), "pgvector")],
    indirect=["target"],
)
def test_health_reports_backends(
    store, target, drivers: tuple[str, ...], vector_extension: str
) -> None:
    health = store.health()
    assert health.dialect == target.dialect
    assert health.driver in drivers
    assert health.keyword_search is True
    assert health.vector_search is True
    assert vector_extension in health.versions
    assert health.versions["schema_revision"] == migrate.head()


def test_store_without_embedder_says_why(store_factory) -> None:
    store = store_factory(embedder=None)
    health = store.health()
    assert health.vector_search is False
    assert any("no embedder" in r for r in health.reasons)


def test_upgrade_false_refuses_an_unmigrated_database(target) -> None:
    with pytest.raises(ws.MigrationError, match="alembic upgrade head"):
        target.open(upgrade=False, embedder=None)


def test_closed_store_refuses_work(store_factory) -> None:
    store = store_factory(embedder=None)
    store.close()
    with pytest.raises(ws.WaggleStoreError, match="closed"):
        store.mind("x")


def test_context_manager_closes(target) -> None:
    with target.open(embedder=None) as store:
        store.mind("x")
    with pytest.raises(ws.WaggleStoreError):
        store.list_minds()


def test_a_read_transaction_refuses_to_write(store: ws.Store) -> None:
    """store.read() ends with COMMIT (psycopg keeps its prepared statements), so it must not be
    able to commit a change: ORM writes are refused at flush time, and nothing lands."""
    from waggle_store.models import MindRow

    with (
        pytest.raises(ws.WaggleStoreError, match="read transaction cannot write"),
        store.read() as session,
    ):
        session.add(MindRow(name="sneaky", kind="workspace"))
    assert "sneaky" not in {m.name for m in store.list_minds()}
