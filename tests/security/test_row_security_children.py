"""Row-level security through the parent row (revision 0015). On PostgreSQL a bound store's
runtime role sees and writes only its mind's rows of the tables without a ``mind_id`` column
(frame manifests, staged re-embeddings, entity mentions); an unbound runtime role and the owner
see every row; every other table of the store is either under the policy or store-wide."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from pg_roles import login_role

import waggle_store as ws
from tests.conftest import Target, only_postgres
from waggle_store import migrate
from waggle_store.dialects.postgres_rls import CHILD_TABLES, STORE_WIDE_TABLES
from waggle_store.embeddings import HashingEmbedder
from waggle_store.models import EmbeddingModelRow, EmbeddingStagingRow, FrameRow

MANIFESTS, STAGING, MENTIONS = ("waggle_frame_embeddings", "waggle_frame_embedding_staging",
                                "waggle_entity_mentions")
RLS_ERROR = "row-level security"


class _FirstWord:
    """Extracts the memory's first word as a person, so each memory mentions one entity."""

    def extract(self, text: str) -> ws.Extraction:
        return ws.Extraction([ws.ExtractedEntity(text.split()[0], "person")], [])


@pytest.fixture
def runtime(target: Target) -> Iterator[sa.URL]:
    """The runtime role's URL, granted on a migrated schema with the hashing vector table."""
    with login_role(target.url) as (role, url):
        migrate.upgrade(target.url, schema=target.schema)
        migrate.ensure_vector_table(target.url, "hashing", schema=target.schema)
        migrate.grant_runtime(target.url, role, schema=target.schema)
        yield url


def _open(url: str | sa.URL, target: Target, **kwargs: Any) -> ws.Store:
    kwargs.setdefault("embedder", "hashing")
    return ws.open_store(url, schema=target.schema, upgrade=False, extractor=_FirstWord(),
                         **kwargs)


def _fill(store: ws.Store, name: str) -> None:
    """Two memories of the mind, each mentioning its own entity, and a staged re-embedding of
    each (as a model switch writes them)."""
    mind = store.mind(name)
    frames = [mind.cognify(f"{name.title()}{i} keeps the launch code of {name}").frame_id
              for i in (1, 2)]
    with store.write() as s:
        model_id = s.scalar(sa.select(sa.func.min(EmbeddingModelRow.id)))
        for frame in s.scalars(sa.select(FrameRow).where(FrameRow.id.in_(frames))):
            s.add(EmbeddingStagingRow(frame_id=frame.id, model_id=model_id,
                                      content_hash=frame.content_hash))


def _rows(conn: sa.Connection) -> dict[str, list[int]]:
    """The frame ids of the rows each child table shows this connection."""
    return {t: list(conn.exec_driver_sql(f"SELECT frame_id FROM {t} ORDER BY 1").scalars())
            for t in CHILD_TABLES}


def _on_schema(conn: sa.Connection, target: Target) -> sa.Connection:
    conn.exec_driver_sql(f'SET search_path TO "{target.schema}", public')
    return conn


def _owner_rows(target: Target) -> tuple[dict[str, list[int]], dict[str, list[int]]]:
    """As the owner (exempt from row security): every child table's frame ids, and each mind's
    frame ids."""
    engine = sa.create_engine(target.url)
    try:
        with engine.connect() as conn:
            rows = _rows(_on_schema(conn, target))
            minds: dict[str, list[int]] = {}
            for name, frame_id in conn.exec_driver_sql(
                    "SELECT m.name, f.id FROM waggle_memory_frames f "
                    "JOIN waggle_minds m ON m.id = f.mind_id ORDER BY f.id"):
                minds.setdefault(name, []).append(frame_id)
            return rows, minds
    finally:
        engine.dispose()


def _as_owner(target: Target, sql: str, params: dict[str, object] | None = None) -> None:
    engine = sa.create_engine(target.url)
    try:
        with engine.begin() as conn:
            _on_schema(conn, target).execute(sa.text(sql), params or {})
    finally:
        engine.dispose()


@only_postgres
def test_a_bound_runtime_role_reads_only_its_minds_child_rows(target: Target,
                                                               runtime: sa.URL) -> None:
    with _open(runtime, target) as unbound:
        _fill(unbound, "alice")
        _fill(unbound, "bob")
        with unbound.engine.connect() as conn:
            unbound_rows = _rows(_on_schema(conn, target))
    owner_rows, minds = _owner_rows(target)
    every = sorted(minds["alice"] + minds["bob"])
    assert len(minds["alice"]) == len(minds["bob"]) == 2
    assert owner_rows == unbound_rows == dict.fromkeys(CHILD_TABLES, every)

    with _open(runtime, target, bound_mind="alice") as bound:
        with bound.engine.connect() as conn:  # the store's own engine: its hook sets the mind
            assert _rows(_on_schema(conn, target)) == dict.fromkeys(CHILD_TABLES,
                                                                    minds["alice"])
            # Through the entity as well: only alice's mentions, of alice's entities.
            assert conn.exec_driver_sql(
                f"SELECT DISTINCT e.name FROM {MENTIONS} m "
                "JOIN waggle_knowledge_entities e ON e.id = m.entity_id ORDER BY 1"
            ).scalars().all() == ["Alice1", "Alice2"]
        with bound.read() as session:  # and its sessions
            assert session.execute(sa.text(f"SELECT count(*) FROM {MANIFESTS}")).scalar() == 2
    assert _owner_rows(target)[0] == owner_rows  # reading changed nothing


def _ids(target: Target) -> dict[str, int]:
    """Ids the bound role must not reach: bob's frames and entities, alice's too."""
    engine = sa.create_engine(target.url)
    try:
        with engine.connect() as conn:
            rows = _on_schema(conn, target).exec_driver_sql(
                "SELECT e.name, e.id, m.frame_id FROM waggle_knowledge_entities e "
                f"JOIN {MENTIONS} m ON m.entity_id = e.id").all()
    finally:
        engine.dispose()
    found = {f"{name}.entity": entity for name, entity, _ in rows}
    found.update({f"{name}.frame": frame for name, _, frame in rows})
    return found


@only_postgres
def test_a_bound_runtime_role_cannot_write_other_minds_child_rows(target: Target,
                                                                   runtime: sa.URL) -> None:
    with _open(runtime, target) as unbound:
        _fill(unbound, "alice")
        _fill(unbound, "bob")
    ids = _ids(target)
    # A bob frame without its manifest and staged row, so inserting one meets the policy, not
    # the key.
    for table in (MANIFESTS, STAGING):
        _as_owner(target, f"DELETE FROM {table} WHERE frame_id = :f", {"f": ids["Bob2.frame"]})
    before, _ = _owner_rows(target)
    refused = [
        ((f"INSERT INTO {STAGING} (frame_id, model_id, content_hash, updated_at, text_form) "
          "VALUES (:f, (SELECT min(id) FROM waggle_embedding_models), 'h', now(), 'whole')"),
         {"f": ids["Bob2.frame"]}),
        ((f"INSERT INTO {MANIFESTS} (frame_id, content_hash, status, updated_at, text_form) "
          "VALUES (:f, 'h', 'pending', now(), 'whole')"), {"f": ids["Bob2.frame"]}),
        # bob's entity in bob's frame; then bob's entity in alice's own frame (the check goes
        # through every parent, though a read goes through the frame)
        (f"INSERT INTO {MENTIONS} (entity_id, frame_id) VALUES (:e, :f)",
         {"e": ids["Bob1.entity"], "f": ids["Bob2.frame"]}),
        (f"INSERT INTO {MENTIONS} (entity_id, frame_id) VALUES (:e, :f)",
         {"e": ids["Bob1.entity"], "f": ids["Alice1.frame"]}),
        (f"UPDATE {MENTIONS} SET frame_id = :f WHERE frame_id = :mine",
         {"f": ids["Bob2.frame"], "mine": ids["Alice1.frame"]}),
        (f"UPDATE {STAGING} SET frame_id = :f WHERE frame_id = :mine",
         {"f": ids["Bob2.frame"], "mine": ids["Alice1.frame"]}),
    ]
    with _open(runtime, target, bound_mind="alice") as bound:
        for sql, params in refused:
            with pytest.raises(ws.StorageError, match=RLS_ERROR), bound.write() as session:
                session.execute(sa.text(sql), params)
        # Statements over every row reach alice's rows only.
        with bound.write() as session:
            failed = session.execute(sa.text(f"UPDATE {MANIFESTS} SET status = 'failed'"))
            unstaged = session.execute(sa.text(f"DELETE FROM {STAGING}"))
            unmentioned = session.execute(sa.text(
                f"DELETE FROM {MENTIONS} WHERE frame_id IN (:a, :b)"),
                {"a": ids["Alice2.frame"], "b": ids["Bob1.frame"]})
            assert (failed.rowcount, unstaged.rowcount, unmentioned.rowcount) == (2, 2, 1)
    after, _ = _owner_rows(target)
    assert after == {MANIFESTS: before[MANIFESTS], STAGING: [ids["Bob1.frame"]],
                     MENTIONS: [f for f in before[MENTIONS] if f != ids["Alice2.frame"]]}
    engine = sa.create_engine(target.url)
    try:
        with engine.connect() as conn:
            statuses = dict(_on_schema(conn, target).exec_driver_sql(
                f"SELECT frame_id, status FROM {MANIFESTS}").all())
    finally:
        engine.dispose()
    assert statuses == {ids["Alice1.frame"]: "failed", ids["Alice2.frame"]: "failed",
                        ids["Bob1.frame"]: "ready"}


@only_postgres
def test_a_bound_runtime_store_works_under_the_policies(target: Target,
                                                         runtime: sa.URL) -> None:
    """The write paths of the tables under the new policies, by a bound store's runtime role:
    a keyframe with its manifest, mentions, a model switch's staging, deletes, reconcile."""
    migrate.ensure_vector_table(target.url, HashingEmbedder(48), schema=target.schema)
    with _open(runtime, target) as unbound:
        _fill(unbound, "bob")
    with _open(runtime, target, bound_mind="alice") as bound:
        alice = bound.mind("alice")
        session = alice.sessions.create()
        keyframe = alice.frames.create_i(session.gop_id, "Alice wrote a keyframe by hand")
        written = alice.cognify("Carol reviewed the launch plan with Alice")
        assert written.entities_extracted == 1
        assert written.vector_status == "ready"
        assert alice.recognify(keyframe.id).entities_extracted == 1
        assert [h.frame.id for h in alice.search("launch plan", lanes=("vector",))][:1] == [
            written.frame_id]
        assert alice.switch_embedding_model(HashingEmbedder(48)).switched
    with _open(runtime, target, bound_mind="alice", embedder=HashingEmbedder(48)) as bound:
        alice = bound.mind("alice")
        assert alice.embedding_model() == ws.EmbeddingModelInfo(
            "hashing", "blake2b-signed-words-v1", 48, "active")
        assert [h.frame.id for h in alice.search("keyframe by hand", lanes=("vector",))][:1] == [
            keyframe.id]
        alice.frames.delete(keyframe.id)
        assert bound.reconcile().vectors_fixed == 0
    rows, minds = _owner_rows(target)
    assert rows[MANIFESTS] == sorted(minds["alice"] + minds["bob"])
    assert rows[MENTIONS] == sorted(minds["alice"] + minds["bob"])


def _uncovered(target: Target) -> list[str]:
    """The store's tables with neither row security nor the bound-mind policy."""
    engine = sa.create_engine(target.url)
    try:
        with engine.connect() as conn:
            return list(conn.execute(sa.text(
                "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname = :s AND c.relkind IN ('r', 'p') AND c.relname LIKE 'waggle%' "
                "AND NOT (c.relrowsecurity AND EXISTS (SELECT 1 FROM pg_policy p "
                "  WHERE p.polrelid = c.oid AND p.polname = 'waggle_bound_mind')) ORDER BY 1"),
                {"s": target.schema}).scalars())
    finally:
        engine.dispose()


def test_revision_0015_round_trips(target: Target) -> None:
    """Downgrading below 0015 removes the policies through the parent (nothing on SQLite) and
    keeps every row; upgrading puts them back. At head, each table of the store is under the
    policy or one of the store-wide tables."""
    with target.open(embedder="hashing", extractor=_FirstWord()) as store:
        _fill(store, "alice")
    store_wide = sorted(STORE_WIDE_TABLES)
    if target.dialect == "postgresql":
        assert _uncovered(target) == store_wide
    migrate.downgrade(target.url, "0014", schema=target.schema)
    assert migrate.current(target.url, schema=target.schema) == "0014"
    if target.dialect == "postgresql":
        assert _uncovered(target) == sorted([*store_wide, *CHILD_TABLES])
    migrate.upgrade(target.url, schema=target.schema)
    assert migrate.current(target.url, schema=target.schema) == migrate.head() == "0015"
    if target.dialect == "postgresql":
        assert _uncovered(target) == store_wide
    with target.open(embedder="hashing") as store:
        mind = store.mind("alice")
        assert [e.name for e in mind.knowledge.entities()] == ["Alice1", "Alice2"]
        assert len(mind.search("launch code", lanes=("vector",))) == 2
