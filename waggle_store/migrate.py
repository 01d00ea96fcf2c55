"""Run, inspect and check waggle_store's Alembic migrations from code, including from a host
application's own Alembic ``env.py``.

Works on a URL, an Engine, or a caller's Connection. The scripts are in the installed package
(``waggle_store/_alembic``) or, in a source checkout, in the repo's ``alembic/`` folder.

Host safety:

* :func:`upgrade` never runs ``env.py`` and never leaves Alembic's module proxies
  (``alembic.context``, ``alembic.op``) changed: it drives an
  :class:`~alembic.runtime.environment.EnvironmentContext` directly and puts back whatever
  proxies the caller had, so a host may call it from its ``env.py`` before or after its own
  ``context.run_migrations()``.
* On a Connection already in a transaction it runs inside that transaction (it commits or rolls
  back with the host's); otherwise it begins and commits its own.
* On PostgreSQL it takes an advisory lock on the schema for the transaction (concurrent first
  starts serialise), and the ``search_path`` it sets for the migration is put back afterwards.
  On SQLite the write lock is taken first (``BEGIN IMMEDIATE``; waggle_store's engines begin
  every write that way, a host's lazily-beginning connection gets it explicitly), before the
  version is read: concurrent first starts queue on the lock.
* :func:`include_name` / :func:`include_object` are the filters a host passes to its own
  ``context.configure`` so that its autogenerate (``alembic check``) ignores every waggle_store
  object; :func:`check` in turn ignores every table that is not waggle_store's.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterator, Mapping, MutableMapping
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext
from alembic.operations import Operations
from alembic.runtime.environment import EnvironmentContext
from alembic.script import ScriptDirectory
from sqlalchemy.orm import Session as OrmSession

from waggle_store.config import StoreConfig
from waggle_store.dialects import check_schema, get_adapter, spec_of
from waggle_store.embeddings.base import Embedder
from waggle_store.embeddings.chain import resolve_embedder
from waggle_store.engine import parse_url, unavailable_error
from waggle_store.errors import (
    DatabaseUnavailableError,
    InvalidInputError,
    MigrationError,
    MissingExtensionError,
)
from waggle_store.migrate_filters import include_name as include_name
from waggle_store.migrate_filters import include_object as include_object
from waggle_store.models.base import TABLE_PREFIX, schema_translate_map
from waggle_store.repositories.vectors import model_key, register_model
from waggle_store.schema_version import VERSION_TABLE as VERSION_TABLE  # its public home here
from waggle_store.unitofwork import storage_cause

# Derived-index objects the dialect adapters own, which autogenerate must not try to "fix".
_DERIVED_TABLE_PREFIXES = (TABLE_PREFIX + "memory_frames_fts", TABLE_PREFIX + "frame_vectors")
_DERIVED_COLUMNS = {(TABLE_PREFIX + "memory_frames", c) for c in ("content_tsv", "context_tsv")}
_DERIVED_INDEXES = {f"ix_{TABLE_PREFIX}memory_frames_content_tsv",
                    f"ix_{TABLE_PREFIX}memory_frames_context_tsv",
                    # a length expression per dialect (0008); PostgreSQL's metadata GIN (0014)
                    f"ix_{TABLE_PREFIX}memory_frames_mind_id_text_bytes",
                    f"ix_{TABLE_PREFIX}memory_frames_metadata"}

Bind = str | sa.URL | sa.Engine | sa.Connection
#: A database role name :func:`grant_runtime` accepts (then quoted by the dialect).
_ROLE_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_$-]{0,62}$")


# -- filters for waggle_store's own autogenerate / check -----------------------------------------
def _own_tables() -> set[str]:
    from waggle_store.models import Base

    return {t.name for t in Base.metadata.tables.values()}


def _own_include_name(name: str | None, type_: str, parent_names: Mapping[str, Any]) -> bool:
    if type_ == "table":
        return name in _own_tables()
    return not (type_ == "index" and name in _DERIVED_INDEXES)


def _own_include_object(obj: Any, name: str | None, type_: str, reflected: bool,
                        compare_to: Any) -> bool:
    if type_ == "column" and (getattr(obj.table, "name", None), name) in _DERIVED_COLUMNS:
        return False
    if type_ == "index" and name in _DERIVED_INDEXES:
        return False
    return not (type_ == "table" and (name not in _own_tables()
                                      or str(name).startswith(_DERIVED_TABLE_PREFIXES)))


@lru_cache(maxsize=1)
def compare_metadata_target() -> sa.MetaData:
    """The models' tables without a schema: migrations and checks run with the store's schema
    first on the ``search_path`` (PostgreSQL) or in a file without schemas (SQLite)."""
    from waggle_store.models import Base

    target = sa.MetaData(naming_convention=Base.metadata.naming_convention)
    for table in Base.metadata.sorted_tables:
        # schema=None: the target's (none); SQLAlchemy's stub types only str | RETAIN_SCHEMA.
        table.to_metadata(target, schema=None,  # type: ignore[arg-type]
                          referred_schema_fn=lambda *_: None)
    return target


# -- running Alembic -----------------------------------------------------------------------------

def script_location() -> Path:
    package_dir = Path(__file__).resolve().parent
    for candidate in (package_dir / "_alembic", package_dir.parent / "alembic"):
        if (candidate / "env.py").is_file():
            return candidate
    raise MigrationError(
        "waggle_store's migration scripts are missing: neither waggle_store/_alembic (installed "
        "wheel) nor alembic/ (source checkout) was found"
    )


def _alembic_config() -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(script_location()))
    return cfg


@contextmanager
def _alembic_proxies_kept() -> Iterator[None]:
    """Put ``alembic.context`` and ``alembic.op`` back as they were: entering an
    EnvironmentContext installs it as the module proxy and leaving removes it, which took a
    host's own context away in the middle of its ``env.py`` (``KeyError: 'config'``)."""
    saved: list[tuple[MutableMapping[str, Any], dict[str, Any], set[str]]] = []
    for cls in (EnvironmentContext, Operations):
        attr_names, modules = cls._setups[cls]
        keys = {*attr_names, "_proxy"}
        for globals_, _locals in modules:
            saved.append((globals_, {k: globals_[k] for k in keys if k in globals_}, keys))
    try:
        yield
    finally:
        for globals_, values, keys in saved:
            for key in keys:
                if key in values:
                    globals_[key] = values[key]
                else:
                    globals_.pop(key, None)


def store_schema(connection: sa.Connection, schema: str | None) -> str | None:
    """The schema waggle_store's objects live in on this backend, ``None`` where there are none;
    the name (given, or from ``WAGGLE_PG_SCHEMA``) is checked before any SQL uses it."""
    if not spec_of(connection).has_schemas:
        check_schema(connection, schema)
        return None
    return check_schema(connection, schema or StoreConfig.from_env().schema)


def run_in_context(context: Any, connection: sa.Connection, schema: str | None) -> None:
    """Configure ``context`` (the ``alembic.context`` module in ``env.py``, or an
    EnvironmentContext) on ``connection`` and run its migrations: lock, schema, ``search_path``
    entered and put back. The one body behind ``env.py`` and :func:`upgrade`/:func:`downgrade`.

    No SQL runs before ``context.begin_transaction()``: SQL issued earlier opens an implicit
    transaction that Alembic then takes for the caller's and never commits (a silent no-op).
    """
    spec = spec_of(connection)  # an unsupported backend fails here, before any SQL
    schema = store_schema(connection, schema)
    context.configure(
        connection=connection,
        target_metadata=compare_metadata_target(),
        version_table=VERSION_TABLE,
        version_table_schema=schema,
        include_name=_own_include_name,
        include_object=_own_include_object,
        render_as_batch=spec.batch_alter,
        transactional_ddl=True,
        compare_type=True,
    )
    with context.begin_transaction():
        if spec.write_lock is not None:
            spec.write_lock(connection)
        ops = spec.schemas
        if ops is None or schema is None:
            context.run_migrations()
            return
        ops.lock(connection, schema)
        ops.create(connection, schema)
        previous = ops.enter(connection, schema)
        context.run_migrations()
        ops.leave(connection, previous)


def _migrate(connection: sa.Connection, schema: str | None, destination: str, *, up: bool) -> None:
    cfg = _alembic_config()
    script = ScriptDirectory.from_config(cfg)

    def steps(rev: Any, _context: Any) -> Any:
        if up:
            return script._upgrade_revs(destination, rev)
        return script._downgrade_revs(destination, rev)

    with _alembic_proxies_kept(), EnvironmentContext(
        cfg, script, fn=steps, destination_rev=destination
    ) as env:
        run_in_context(env, connection, schema)


@contextmanager
def _connection(bind: Bind, schema: str | None) -> Iterator[sa.Connection]:
    if isinstance(bind, sa.Connection):
        yield bind
        return
    if isinstance(bind, sa.Engine):
        with bind.connect() as conn:
            yield conn
            if conn.in_transaction():
                conn.commit()
        return
    from waggle_store.engine import create_engine

    engine = create_engine(bind, config=StoreConfig.from_env(None, schema))
    try:
        with engine.connect() as conn:
            yield conn
            if conn.in_transaction():
                conn.commit()
    finally:
        engine.dispose()


def _run(what: str, bind: Bind, schema: str | None, fn: Any) -> Any:
    # The schema name is checked first, before a connection exists or any SQL is sent.
    check_schema(parse_url(bind) if isinstance(bind, str | sa.URL) else bind, schema)
    try:
        with _connection(bind, schema) as conn:
            return fn(conn)
    except (MigrationError, InvalidInputError, MissingExtensionError, DatabaseUnavailableError):
        raise
    except Exception as exc:
        found = storage_cause(exc)
        if found is not None and found[0] is DatabaseUnavailableError:
            url = (bind.engine.url if isinstance(bind, sa.Connection)
                   else bind.url if isinstance(bind, sa.Engine) else parse_url(bind))
            raise unavailable_error(url, exc) from exc
        raise MigrationError(f"migration {what} failed: {exc}") from exc


def upgrade(bind: Bind, revision: str = "head", *, schema: str | None = None) -> None:
    """Upgrade waggle_store's schema to ``revision``. ``bind``: a URL, an Engine, or a
    Connection (a host's, in its own transaction or not: see the module docstring)."""
    _run("upgrade", bind, schema, lambda c: _migrate(c, schema, revision, up=True))


def downgrade(bind: Bind, revision: str, *, schema: str | None = None) -> None:
    """Downgrade to ``revision`` (``"base"`` drops every waggle_store table: it must be asked
    for by name, there is no default)."""
    def _down(conn: sa.Connection) -> None:
        _migrate(conn, schema, revision, up=False)
        if revision == "base":  # nothing of the store is left, its version table included
            sa.Table(VERSION_TABLE, sa.MetaData(), schema=store_schema(conn, schema)).drop(
                conn, checkfirst=True)

    _run("downgrade", bind, schema, _down)


def _migration_context(conn: sa.Connection, schema: str | None) -> MigrationContext:
    return MigrationContext.configure(
        conn,
        opts={
            "version_table": VERSION_TABLE,
            "version_table_schema": store_schema(conn, schema),
            "include_name": _own_include_name,
            "include_object": _own_include_object,
            "compare_type": True,
            "target_metadata": None,
        },
    )


def current(bind: Bind, *, schema: str | None = None) -> str | None:
    """The revision the database is at, or None for an empty (never migrated) database."""
    return _run("current", bind, schema,  # type: ignore[no-any-return]
                lambda c: _migration_context(c, schema).get_current_revision())


def head() -> str:
    heads = ScriptDirectory.from_config(_alembic_config()).get_heads()
    if len(heads) != 1:
        raise MigrationError(f"expected exactly one migration head, found {heads}")
    return heads[0]


def check(bind: Bind, *, schema: str | None = None) -> list[Any]:
    """Differences between the models and the migrated schema; an empty list means none.

    Tables that are not waggle_store's (a host's, in the same file or schema) are ignored.
    Besides Alembic's diffs (tuples such as ``("add_table", table)``) it lists each missing or
    broken derived object (FTS5 table and triggers, tsvector column and GIN index, vector tables
    and their index/trigger), which autogenerate cannot see, as
    ``("broken_derived_object", name, problem)``; ``store.reconcile(repair=True)`` recreates them.
    """

    def _diff(conn: sa.Connection) -> list[Any]:
        with warnings.catch_warnings():
            # SQLite cannot reflect expression indexes, which SQLAlchemy and Alembic say on
            # every compare; those indexes are checked among the derived objects below.
            warnings.filterwarnings("ignore", message=r".*expression-based index")
            return _compare(conn)

    def _compare(conn: sa.Connection) -> list[Any]:
        ops, in_schema = spec_of(conn).schemas, store_schema(conn, schema)
        begun = None if conn.in_transaction() else conn.begin()
        previous = None
        if ops is not None and in_schema is not None:
            previous = ops.enter(conn, in_schema)  # reflect waggle_store's schema, then put back
        try:
            diffs: list[Any] = list(compare_metadata(_migration_context(conn, schema),
                                                     compare_metadata_target()))
            if current(conn, schema=schema) is not None:  # an empty database has nothing derived
                problems = get_adapter(conn.engine).verify_derived(conn)
                diffs.extend(("orphan_rows", str(p)) if p.lane == "rows"  # listed last
                             else ("broken_derived_object", p.name, str(p)) for p in problems)
            return diffs
        finally:
            if ops is not None and previous is not None:
                ops.leave(conn, previous)
            if begun is not None:
                begun.rollback()

    return _run("check", bind, schema, _diff)  # type: ignore[no-any-return]


# -- least privilege: the admin steps ------------------------------------------------------------

def ensure_vector_table(bind: Bind, embedder: str | Embedder, *,
                        schema: str | None = None) -> int | None:
    """Register ``embedder``'s model and create its vector table (indexes and, on PostgreSQL,
    row-level security): the admin step a store opened with ``upgrade=False`` (a runtime role
    that runs no DDL) needs to store that model's vectors. Run it as the schema's owner, after
    :func:`upgrade`; idempotent. Returns the model's id (None where the database has no vector
    support, e.g. PostgreSQL without pgvector: nothing to create). On a caller's Connection it
    joins the open transaction and puts back the connection's ``schema_translate_map``."""
    chain = resolve_embedder(embedder)
    if chain is None:
        raise InvalidInputError("ensure_vector_table needs an embedder (a name or an Embedder)")
    key = model_key(chain)  # may probe a provider: before any transaction

    def _create(conn: sa.Connection) -> int | None:
        in_schema, ops = store_schema(conn, schema), spec_of(conn).schemas
        translate = conn.get_execution_options().get("schema_translate_map")
        model_id = None
        with _transaction(conn):
            previous = ops.enter(conn, in_schema) if ops is not None and in_schema else None
            conn.execution_options(schema_translate_map=schema_translate_map(in_schema))
            try:
                with OrmSession(bind=conn) as session:
                    adapter = get_adapter(conn.engine)
                    if adapter.vector_off(session) is None:
                        model_id = register_model(session, adapter, key)
                        session.flush()
            finally:
                conn.execution_options(schema_translate_map=translate)
            if ops is not None and previous is not None:
                ops.leave(conn, previous)
        return model_id

    return _run("ensure_vector_table", bind, schema, _create)  # type: ignore[no-any-return]


def grant_runtime(bind: Bind, role: str, *, schema: str | None = None) -> None:
    """Grant database ``role`` what a store needs at run time and nothing else (DML on the
    store's tables, its sequences, USAGE on its schema; the same on vector tables the calling
    owner creates later): a store it opens with ``upgrade=False`` works fully and runs no DDL.
    Run it as the owner, after :func:`upgrade`. A no-op where there are no roles (SQLite)."""
    if not isinstance(role, str) or not _ROLE_RE.match(role):
        raise InvalidInputError(f"a role name must match {_ROLE_RE.pattern}, got {role!r}")

    def _grant(conn: sa.Connection) -> None:
        grant, in_schema = spec_of(conn).grant_runtime, store_schema(conn, schema)
        if grant is not None and in_schema is not None:
            with _transaction(conn):
                grant(conn, in_schema, role, VERSION_TABLE)

    _run("grant_runtime", bind, schema, _grant)


@contextmanager
def _transaction(conn: sa.Connection) -> Iterator[None]:
    """The caller's open transaction, or one begun (and committed) here."""
    if conn.in_transaction():
        yield
        return
    with conn.begin():
        yield
