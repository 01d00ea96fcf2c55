"""Bound stores: ``open_store(bound_mind=NAME)`` sees and writes one mind. On PostgreSQL the
server enforces it as well (row-level security installed by the migrations, the mind set per
transaction), so raw SQL on the bound store's own connections sees only that mind's rows."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from pg_roles import login_role

import waggle_store as ws
from tests.conftest import Target, only_postgres
from waggle_store import migrate
from waggle_store.embeddings import HashingEmbedder

#: Tables holding mind rows, counted by raw SQL below (each gets a row of each mind).
MIND_TABLES = ("waggle_minds", "waggle_memory_frames", "waggle_knowledge_entities",
               "waggle_kv_store", "waggle_awareness", "waggle_identity")


def _fill(store: ws.Store, name: str) -> None:
    mind = store.mind(name)
    mind.cognify(f"{name} keeps a secret: the launch code of {name}")
    mind.knowledge.create_entity("person", f"{name} person", {"owner": name})
    mind.kv.set("secret", name)
    mind.awareness.add("task", f"{name}'s private task")
    mind.identity.set(name=name)


def test_a_bound_store_sees_and_writes_only_its_mind(target: Target) -> None:
    with target.open(embedder="hashing") as admin:
        _fill(admin, "alice")
        _fill(admin, "bob")
    with target.open(embedder="hashing", bound_mind="alice") as bound:
        assert [m.name for m in bound.list_minds()] == ["alice"]
        for call in (lambda: bound.mind("bob"), lambda: bound.mind("carol"),
                     lambda: bound.drop_mind("bob"), lambda: bound.reconcile(mind="bob")):
            with pytest.raises(ws.NotFoundError):
                call()
        alice = bound.mind("alice")
        assert [h.frame.content for h in alice.search("launch code", limit=10)] == [
            "alice keeps a secret: the launch code of alice"]
        assert bound.reconcile().vectors_fixed == 0
    with target.open(embedder="hashing") as admin:
        assert sorted(m.name for m in admin.list_minds()) == ["alice", "bob"]  # nothing created


def test_a_bound_store_exports_and_imports_only_its_mind(target: Target,
                                                         tmp_path: Path) -> None:
    with target.open(embedder="hashing") as admin:
        _fill(admin, "alice")
        _fill(admin, "bob")
        admin.export_mind("bob", tmp_path / "bob.jsonl")
        bob_frames = len(admin.mind("bob").search("launch code", limit=50))
    with target.open(embedder="hashing", bound_mind="alice") as bound:
        with pytest.raises(ws.NotFoundError):
            bound.export_mind("bob", tmp_path / "stolen.jsonl")
        with pytest.raises(ws.NotFoundError):
            bound.import_mind(tmp_path / "bob.jsonl", into="bob")
        # The file names bob: it lands in alice, which holds data already (merge=True).
        bound.import_mind(tmp_path / "bob.jsonl", merge=True)
    assert not (tmp_path / "stolen.jsonl").exists()
    with target.open(embedder="hashing") as admin:
        assert len(admin.mind("bob").search("launch code", limit=50)) == bob_frames
        assert "bob keeps a secret: the launch code of bob" in [
            h.frame.content for h in admin.mind("alice").search("launch code", limit=50)]


def test_a_bound_store_creates_its_mind(target: Target) -> None:
    with target.open(embedder="hashing", bound_mind="newcomer") as bound:
        assert [m.name for m in bound.list_minds()] == ["newcomer"]
        assert bound.mind("newcomer").cognify("first memory").vector_status == "ready"


@pytest.fixture
def runtime(target: Target) -> Iterator[tuple[str, sa.URL]]:
    with login_role(target.url) as found:
        yield found


def _counts(conn: sa.Connection) -> dict[str, int]:
    return {t: int(conn.exec_driver_sql(f"SELECT count(*) FROM {t}").scalar() or 0)
            for t in MIND_TABLES}


@only_postgres
def test_raw_sql_on_a_bound_store_sees_only_its_mind(target: Target,
                                                     runtime: tuple[str, sa.URL]) -> None:
    role, url = runtime
    migrate.upgrade(target.url, schema=target.schema)
    migrate.ensure_vector_table(target.url, "hashing", schema=target.schema)
    migrate.grant_runtime(target.url, role, schema=target.schema)
    with ws.open_store(url, schema=target.schema, embedder="hashing", upgrade=False) as admin:
        _fill(admin, "alice")
        _fill(admin, "bob")
        with admin.engine.connect() as conn:
            conn.exec_driver_sql(f'SET search_path TO "{target.schema}", public')
            unbound = _counts(conn)
        bob_id = admin.mind("bob").id
    assert unbound == dict.fromkeys(MIND_TABLES, 2)

    with ws.open_store(url, schema=target.schema, embedder="hashing", upgrade=False,
                       bound_mind="alice") as bound:
        with bound.engine.connect() as conn:  # the store's own engine: its hook sets the mind
            conn.exec_driver_sql(f'SET search_path TO "{target.schema}", public')
            assert _counts(conn) == dict.fromkeys(MIND_TABLES, 1)
            owners = conn.exec_driver_sql(
                "SELECT DISTINCT m.name FROM waggle_memory_frames f "
                "JOIN waggle_minds m ON m.id = f.mind_id").scalars().all()
            assert owners == ["alice"]
            vectors = conn.exec_driver_sql(
                "SELECT count(*) FROM waggle_frame_vectors_1").scalar()
            assert vectors == 1
        with bound.read() as session:  # and its sessions
            assert session.execute(sa.text("SELECT count(*) FROM waggle_kv_store")).scalar() == 1
        with pytest.raises(ws.StorageError), bound.write() as session:
            session.execute(sa.text(
                "INSERT INTO waggle_kv_store (mind_id, key, value, updated_at) "
                "VALUES (:m, 'planted', '\"x\"', now())"), {"m": bob_id})
        with pytest.raises(ws.StorageError), bound.write() as session:
            session.execute(sa.text("UPDATE waggle_memory_frames SET mind_id = :m"),
                            {"m": bob_id})
        assert bound.mind("alice").kv.get("secret") == "alice"
        assert [h.frame.content for h in bound.mind("alice").search("launch code")] == [
            "alice keeps a secret: the launch code of alice"]

    with ws.open_store(url, schema=target.schema, embedder="hashing", upgrade=False) as admin:
        assert admin.mind("bob").kv.get("planted") is None
        assert len(admin.mind("bob").search("launch code")) == 1


def _without_policy(url: str, schema: str | None) -> list[str]:
    """Tables of ``schema`` with a mind_id column that lack row security and the policy."""
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            return list(conn.execute(sa.text(
                "SELECT c.relname FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid "
                "JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname = :s AND c.relkind = 'r' AND a.attname = 'mind_id' "
                "AND NOT (c.relrowsecurity AND EXISTS ("
                "  SELECT 1 FROM pg_policy p WHERE p.polrelid = c.oid "
                "  AND p.polname = 'waggle_bound_mind')) ORDER BY 1"), {"s": schema}).scalars())
    finally:
        engine.dispose()


@only_postgres
def test_every_table_with_mind_rows_has_the_policy(target: Target) -> None:
    """A table added later with a mind_id column and no policy would fail here; a vector table
    made before migration 0011 gets the policy from it, and loses it on a downgrade."""
    migrate.upgrade(target.url, schema=target.schema)
    migrate.ensure_vector_table(target.url, "hashing", schema=target.schema)
    assert _without_policy(target.url, target.schema) == []
    migrate.downgrade(target.url, "0009", schema=target.schema)
    assert "waggle_frame_vectors_1" in _without_policy(target.url, target.schema)
    migrate.upgrade(target.url, schema=target.schema)
    assert _without_policy(target.url, target.schema) == []
    assert migrate.current(target.url, schema=target.schema) == migrate.head()


def test_a_bound_store_knows_only_its_own_agent(target: Target) -> None:
    with target.open(embedder="hashing") as admin:
        _fill(admin, "bob")
        admin.agents.save("bob", {"model": "m"}, state={"token": "bob's secret"})
        admin.agents.save("Alice", {"model": "m"}, state={"token": "another mind's agent"})
    with target.open(embedder="hashing", bound_mind="alice") as bound:
        assert bound.agents.list() == []
        assert bound.agents.get("bob") is None
        assert bound.agents.get("alice") is None  # "Alice" is the agent of mind "Alice"
        for call in (lambda: bound.agents.save("bob", {"model": "stolen"}),
                     lambda: bound.agents.save("alice", {"model": "over Alice's"}),
                     lambda: bound.agents.set_state("bob", {}),
                     lambda: bound.agents.delete("bob", drop_mind=True),
                     lambda: bound.agents.delete("Alice")):
            with pytest.raises(ws.NotFoundError):
                call()
    with target.open(embedder="hashing") as admin:  # nothing changed, nothing dropped
        assert {a.name: a.state for a in admin.agents.list()} == {
            "Alice": {"token": "another mind's agent"}, "bob": {"token": "bob's secret"}}
        assert sorted(m.name for m in admin.list_minds()) == ["alice", "bob"]  # bob's kept
        admin.agents.delete("Alice")
    with target.open(embedder="hashing", bound_mind="alice") as bound:
        own = bound.agents.save("alice", {"model": "m"}, state={"turns": 1})
        assert (own.name, own.mind) == ("alice", "alice")
        assert bound.agents.list() == [own]
        assert bound.agents.get("ALICE") is None  # a bound store names its mind exactly
        assert bound.agents.set_state("alice", {"turns": 2}).state == {"turns": 2}
        bound.agents.delete("alice", drop_mind=True)
        assert bound.agents.list() == []


def test_a_bound_store_reads_and_writes_only_its_own_usage(target: Target) -> None:
    with target.open(embedder="hashing") as admin:
        for name, cost in (("alice", 1.0), ("bob", 5.0)):
            admin.mind(name)
            admin.usage.record(name, "gpt", prompt_tokens=10, cost_usd=cost,
                               at="2020-01-01T00:00:00+00:00")
            admin.usage.record(name, "gpt", prompt_tokens=10, cost_usd=cost)
        admin.usage.set_budget("bob", 100.0)
    with target.open(embedder="hashing", bound_mind="alice") as bound:
        usage = bound.usage
        assert usage.totals().cost_usd == pytest.approx(2.0)  # its own mind, not the store's
        assert usage.totals().mind == "alice"
        assert [t.mind for t in usage.ranking()] == ["alice"]
        assert sum(d.cost_usd for d in usage.daily(days=36_500)) == pytest.approx(2.0)
        assert list(usage.by_model()) == ["gpt"]
        for call in (lambda: usage.totals("bob"), lambda: usage.by_model("bob"),
                     lambda: usage.daily("bob"), lambda: usage.monthly("bob"),
                     lambda: usage.budget_status("bob"), lambda: usage.set_budget("bob", 0.0),
                     lambda: usage.record("bob", "gpt", cost_usd=1.0)):
            with pytest.raises(ws.NotFoundError):
                call()
        assert usage.cleanup(older_than_days=30) == 1  # alice's old row only
    with target.open(embedder="hashing") as admin:  # bob's rows and budget untouched
        assert admin.usage.totals("bob").cost_usd == pytest.approx(10.0)
        assert admin.usage.budget_status("bob").budget_usd == 100.0
        assert admin.usage.totals("alice").cost_usd == pytest.approx(1.0)


class _PaidEmbedder(HashingEmbedder):
    provider = "openai"  # a paid provider as far as tiers and quotas are concerned


def test_a_bound_store_reads_only_its_own_users_quota(target: Target) -> None:
    with target.open(embedder=_PaidEmbedder(), user_id="carol", tier="PRO") as admin:
        admin.mind("alice").cognify("carol's embedded memory")  # counted for carol
        assert admin.quota_status().used == 1
    with target.open(embedder="hashing", user_id="dave", tier="PRO", bound_mind="alice") as bound:
        assert bound.quota_status().used == 0  # its own user: dave
        assert bound.quota_status("dave").used == 0
        with pytest.raises(ws.NotFoundError):
            bound.quota_status("carol")
    with target.open(embedder="hashing", user_id="dave", tier="PRO") as admin:  # unbound: any user
        assert admin.quota_status("carol").used == 1


def test_a_bound_store_exports_its_own_mind(target: Target, tmp_path: Path) -> None:
    with target.open(embedder="hashing") as admin:
        _fill(admin, "alice")
        _fill(admin, "bob")
    with target.open(embedder="hashing", bound_mind="alice") as bound:
        report = bound.export_mind("alice", tmp_path / "alice.jsonl")
        assert report.frames == 1
        bound.export_openfang("alice", tmp_path / "alice.json")
    exported = (tmp_path / "alice.jsonl").read_text(encoding="utf-8")
    assert "launch code of alice" in exported
    assert "bob" not in exported
    assert "launch code of alice" in (tmp_path / "alice.json").read_text(encoding="utf-8")


def test_an_export_carries_only_its_own_minds_agent(target: Target, tmp_path: Path) -> None:
    """Agent names match case-insensitively, mind names do not: the agent "Alice" is mind
    "Alice"'s, and an export of mind "alice" (bound or not) must not carry its state."""
    with target.open(embedder="hashing") as admin:
        _fill(admin, "alice")
        admin.mind("Alice").kv.set("owner", "Alice")
        admin.agents.save("Alice", {"model": "m"}, state={"token": "Alice's agent secret"})
        report = admin.export_mind("alice", tmp_path / "admin.jsonl")
        assert report.agents == 0
        assert admin.export_mind("Alice", tmp_path / "Alice.jsonl").agents == 1
    with target.open(embedder="hashing", bound_mind="alice") as bound:
        assert bound.export_mind("alice", tmp_path / "bound.jsonl").agents == 0
    for name in ("admin.jsonl", "bound.jsonl"):
        assert "Alice's agent secret" not in (tmp_path / name).read_text(encoding="utf-8")
    assert "Alice's agent secret" in (tmp_path / "Alice.jsonl").read_text(encoding="utf-8")
    with target.open(embedder="hashing") as admin:  # mind "Alice"'s agent back into mind "alice"
        report = admin.import_mind(tmp_path / "Alice.jsonl", into="alice", merge=True)
        assert report.agents_imported == 0
        assert any("taken by another mind's agent" in p and "'Alice'" in p
                   for p in report.problems)
        assert admin.agents.get("Alice").state == {"token": "Alice's agent secret"}
