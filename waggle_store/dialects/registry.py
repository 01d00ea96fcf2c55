"""The dialect registry: a dialect name -> everything waggle_store needs to run on that backend.

Every question "which backend is this?" outside ``dialects/`` is answered here, by name, and a name
that is not registered raises :class:`~waggle_store.errors.UnsupportedDialectError`. Before the
registry, the code asked "is it SQLite?" and took everything else for Postgres, so a ``mysql://``
URL got as far as importing a MySQL driver, and an Engine of another backend got Postgres SQL.

Adding a dialect: a module in ``dialects/`` with its adapter (:class:`SearchAdapter`) and engine
factory, one :func:`register_dialect` line in ``dialects/__init__.py``, and one branch in the
migrations (``alembic/versions/``) for its keyword index and derived objects. Nothing else asks
for a dialect by name: the migrations' environment and ``waggle_store.migrate`` read the traits
below (:attr:`DialectSpec.has_schemas`, :attr:`DialectSpec.batch_alter`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from sqlalchemy import URL, Connection
from sqlalchemy.engine import Engine

from waggle_store.config import StoreConfig
from waggle_store.dialects.base import SearchAdapter
from waggle_store.errors import InvalidInputError, UnsupportedDialectError


class EngineFactory(Protocol):
    """Builds a configured engine for a URL of its dialect (driver, connect hooks, pool)."""

    def __call__(self, url: URL, config: StoreConfig, /, **kwargs: Any) -> Engine: ...


@dataclass(frozen=True)
class SchemaOps:
    """How a backend with schemas keeps waggle_store's objects in one (``StoreConfig.schema``)."""

    #: Create the schema if missing (migrations only: it is a write).
    create: Callable[[Connection, str], None]
    #: Make the schema the connection's default for the current transaction only, so unqualified
    #: names in the migrations resolve there and nothing leaks to the pooled connection's next user;
    #: returns the previous default for :attr:`leave`.
    enter: Callable[[Connection, str], str]
    #: Put back what :attr:`enter` returned, so a caller's transaction keeps its own default.
    leave: Callable[[Connection, str], None]
    #: Serialise migrations of a schema across processes until the transaction ends.
    lock: Callable[[Connection, str], None]
    #: Return a schema name if the backend accepts it, else raise InvalidInputError; runs
    #: before any SQL on every path that takes a schema name.
    check: Callable[[object], str]


@dataclass(frozen=True)
class DialectSpec:
    """What one backend brings: its adapter, its engine factory, and the traits the dialect-free
    code (migrations, store) branches on instead of on the dialect's name."""

    #: The adapter class (called with the engine): every dialect-specific statement lives there.
    adapter: Callable[[Engine], SearchAdapter]
    #: Builds the engine for a URL of this dialect.
    create_engine: EngineFactory
    #: A URL users would write, for error messages.
    example_url: str
    #: ``None`` for a backend without schemas (SQLite: one file, one namespace).
    schemas: SchemaOps | None = None
    #: Alembic must rebuild a table to alter it (``render_as_batch``), as SQLite does.
    batch_alter: bool = False
    #: Other backend names of URLs that mean this dialect (``postgres://``).
    url_aliases: tuple[str, ...] = ()
    #: The DBAPI drivers waggle_store runs on (``postgresql+<driver>://``); a URL without one
    #: gets the first. Any other is refused with the fix in the message.
    drivers: tuple[str, ...] = ()
    #: The extra that installs the driver: ``pip install 'waggle-store[<extra>]'``.
    extra: str | None = None
    #: Take the database's write lock at the start of a migration's transaction when the
    #: connection has not (SQLite: ``BEGIN IMMEDIATE`` on a host's connection whose driver
    #: begins lazily), so concurrent migrators queue instead of racing on the version.
    write_lock: Callable[[Connection], None] | None = None
    #: Confine the current transaction to one mind (its id) on the server as well, where the
    #: backend has row-level security (PostgreSQL: the policies of migration 0011 read the
    #: setting this sets). ``None``: the library alone confines a bound store (SQLite).
    bind_mind: Callable[[Connection, int], None] | None = None
    #: Grant a database role the run-time privileges on a schema's store:
    #: ``(connection, schema, role, version_table)``. ``None``: the backend has no roles.
    grant_runtime: Callable[[Connection, str, str, str], None] | None = None

    @property
    def has_schemas(self) -> bool:
        """Whether waggle_store's objects live in a named schema (and its version table with
        them)."""
        return self.schemas is not None


_SPECS: dict[str, DialectSpec] = {}
_URL_NAMES: dict[str, str] = {}


def register_dialect(name: str, spec: DialectSpec) -> None:
    """Register ``spec`` under SQLAlchemy's dialect name (``engine.dialect.name``, which is also
    the backend name of its URLs). Registering a name twice with another spec is refused: two
    adapters for one backend would make which one runs depend on import order."""
    known = _SPECS.get(name)
    if known is not None and known is not spec:
        raise ValueError(f"dialect {name!r} is already registered")
    _SPECS[name] = spec
    _URL_NAMES[name] = name
    for alias in spec.url_aliases:
        _URL_NAMES[alias] = name


def supported_dialects() -> tuple[str, ...]:
    """The registered dialect names, sorted."""
    return tuple(sorted(_SPECS))


def _unsupported(what: str) -> UnsupportedDialectError:
    examples = ", ".join(_SPECS[name].example_url for name in supported_dialects())
    return UnsupportedDialectError(
        f"waggle_store does not support {what}: it runs on {', '.join(supported_dialects())} "
        f"(URLs such as {examples})"
    )


def dialect_spec(name: str) -> DialectSpec:
    """The spec of dialect ``name``; :class:`UnsupportedDialectError` for an unregistered one."""
    spec = _SPECS.get(name)
    if spec is None:
        raise _unsupported(f"the {name!r} database backend")
    return spec


def spec_for_url(url: URL) -> DialectSpec:
    """The spec of the dialect a URL names, without importing any driver: ``mysql://`` and
    ``duckdb:///x`` fail here with :class:`UnsupportedDialectError`, not with a missing module.
    The message names the URL's scheme only (the URL may hold a password)."""
    name = _URL_NAMES.get(url.get_backend_name())
    if name is None:
        raise _unsupported(f"{url.drivername!r} URLs")
    return _SPECS[name]


def check_driver(url: URL) -> None:
    """Refuse a driver waggle_store does not run on (``postgresql+psycopg2://``), naming the one
    it does and how to install it; the message never repeats the URL (it may hold a password)."""
    spec = spec_for_url(url)
    driver = url.get_driver_name()
    if spec.drivers and "+" in url.drivername and driver not in spec.drivers:
        backend = url.get_backend_name()
        install = f" (pip install 'waggle-store[{spec.extra}]')" if spec.extra else ""
        raise UnsupportedDialectError(
            f"waggle_store does not support the {driver!r} driver for {backend}: use "
            f"{backend}+{spec.drivers[0]}:// (or plain {backend}://){install}"
        )


def spec_of(bind: Engine | Connection) -> DialectSpec:
    """The spec of the backend an Engine or Connection talks to."""
    return dialect_spec(bind.dialect.name)


def check_schema(bind: URL | Engine | Connection, schema: object) -> str | None:
    """``schema`` checked by the backend ``bind`` talks to (None stays None; a backend without
    schemas still refuses a name that is not a string)."""
    if schema is None:
        return None
    spec = spec_for_url(bind) if isinstance(bind, URL) else spec_of(bind)
    if spec.schemas is not None:
        return spec.schemas.check(schema)
    if not isinstance(schema, str):
        raise InvalidInputError(f"a schema name must be a string, got {type(schema).__name__}")
    return schema


def get_adapter(engine: Engine) -> SearchAdapter:
    """A new adapter for ``engine``; :class:`UnsupportedDialectError` for another backend (an
    adapter for the wrong backend would only fail later, on its first statement)."""
    return spec_of(engine).adapter(engine)
