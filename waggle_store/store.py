"""Store: the facade that owns the unit of work and wires the layers for callers. It opens one
short transaction per API call, commits it, and turns driver errors into waggle_store errors,
so that after any exception nothing of that call remains (repositories never commit).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import replace
from functools import cached_property
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session as OrmSession

from waggle_store import schema_version
from waggle_store.config import StoreConfig
from waggle_store.context import MindContext, StoreContext
from waggle_store.dialects import SearchAdapter, check_schema, get_adapter, release_caches, spec_of
from waggle_store.dialects.host import bound_engine, waggle_engine, without_ddl
from waggle_store.embeddings.base import Embedder
from waggle_store.embeddings.chain import resolve_embedder
from waggle_store.embeddings.metered import MeteredEmbedder, QuotaMeter
from waggle_store.embeddings.quota import quota_status
from waggle_store.embeddings.tiers import TierPolicy
from waggle_store.engine import connect, create_engine, engine_info, read_only
from waggle_store.errors import InvalidInputError, NotFoundError
from waggle_store.facade.agents import AgentsAPI
from waggle_store.facade.usage import UsageAPI
from waggle_store.knowledge.extract import Extractor
from waggle_store.mind import Mind
from waggle_store.models.base import schema_translate_map
from waggle_store.pipeline.extraction import check_extractor, retry_pending
from waggle_store.pipeline.reconcile import reconcile
from waggle_store.records import (
    EmbedderStatus,
    Health,
    MindInfo,
    QuotaStatus,
    ReconcileReport,
    SwitchReport,
)
from waggle_store.repositories.embedding_usage import EmbeddingUsageRepository
from waggle_store.repositories.minds import MindRepository, check_mind_kind, check_mind_name
from waggle_store.search.engine import HybridSearch
from waggle_store.store_bound import BoundMixin
from waggle_store.store_support import migrate_on_open, model_mismatches, warn_without_vectors
from waggle_store.unitofwork import Database, JoinedDatabase


def _package_version() -> str:
    try:
        return version("waggle-store")
    except PackageNotFoundError:
        return "0+unknown"


class Store(BoundMixin):
    """One database (a SQLite file or a Postgres schema), opened by :func:`open_store`: it owns
    the unit of work, the dialect adapter, the embedder and the search engine, and hands its
    layers a :class:`StoreContext` (each mind a :class:`MindContext`), never itself."""

    def __init__(
        self,
        engine: sa.Engine,
        *,
        embedder: Embedder | None = None,
        tier: str | None = None,
        user_id: str = "local",
        tier_policy: TierPolicy | None = None,
        owns_engine: bool = True,
        schema: str | None = None,
        ddl: bool = True,
        bound_mind: tuple[int, str] | None = None,
    ) -> None:
        spec = spec_of(engine)  # an Engine of an unsupported backend fails here, first
        #: ``(id, name)`` of the one mind this store sees and writes (``open_store(bound_mind=)``).
        self.bound_mind = bound_mind
        if bound_mind is not None:
            # A copy of the engine (same pool) whose transactions carry the mind: raw SQL on
            # ``store.engine`` is confined by the server's row-level security too (PostgreSQL).
            engine = bound_engine(engine, bound_mind[0])
        self.engine = engine
        adapter = get_adapter(engine)
        check_schema(engine, schema)  # a host's Engine reaches here without create_engine's check
        in_schema = (check_schema(engine, schema or StoreConfig.from_env().schema)
                     if spec.has_schemas else None)
        # A copy of the engine (same pool) that maps the models' schema to the store's.
        runner = waggle_engine(engine, in_schema)
        if not ddl:
            runner = without_ddl(runner)  # opened with upgrade=False: no DDL at run time
        self.db = Database(runner, read_only(runner))
        self.db.begins_transactions = bound_mind is not None and spec.bind_mind is not None
        self.tier = tier
        self.user_id = user_id
        self.tier_policy = tier_policy
        self.context = StoreContext(self.db, adapter, embedder, schema=in_schema,
                                    prepare_embedder=self.prepare_embedder)
        self._owns_engine = owns_engine
        #: A view (:meth:`within`) shares its store's adapter: closing it frees none of its caches.
        self._owns_adapter = True
        self.searcher = HybridSearch(self.context)

    def prepare_embedder(self, spec: str | Embedder) -> Embedder | None:
        """``spec`` (a provider name or an Embedder) as this store uses an embedder: resolved and
        checked against the store's tier (TierError), and with a tier, counted against the
        user's quota."""
        return self.metered(resolve_embedder(spec, tier=self.tier, tier_policy=self.tier_policy))

    def metered(self, embedder: Embedder | None) -> Embedder | None:
        """``embedder`` counted against the user's monthly quota when the store has a tier."""
        if self.tier is None or embedder is None:
            return embedder
        meter = QuotaMeter(self.db, EmbeddingUsageRepository, user_id=self.user_id,
                           tier=self.tier, policy=self.tier_policy)
        return MeteredEmbedder(embedder, meter)

    @property
    def adapter(self) -> SearchAdapter:
        return self.context.adapter

    @property
    def schema(self) -> str | None:
        return self.context.schema

    @property
    def embedder(self) -> Embedder | None:
        return self.context.embedder

    @embedder.setter
    def embedder(self, value: Embedder | None) -> None:
        self.context.embedder = value

    @cached_property
    def agents(self) -> AgentsAPI:
        """The agents registry (a bound store's: its own mind's agent only)."""
        return AgentsAPI(self.context, None if self.bound_mind is None else self.bound_mind[1])

    @cached_property
    def usage(self) -> UsageAPI:
        """The LLM/embedding usage log, totals and monthly budgets (a bound store's: its mind's)."""
        return UsageAPI(self.context, None if self.bound_mind is None else self.bound_mind[1])

    # -- a host's transaction ---------------------------------------------------------------------

    def within(self, connection_or_session: sa.Connection | OrmSession) -> Store:
        """A view of this store whose operations run inside the host's open transaction on
        ``connection_or_session`` (each in a SAVEPOINT): they commit or roll back with it.

        No embedding provider is called while the host holds its transaction: the view has no
        embedder, so frames written through it are stored with a ``pending`` vector and
        searches through it run without the vector lane. After the host commits, call
        ``store.reconcile()`` (on this store, outside the host's transaction) to embed them.
        Closing the view closes nothing of the host's.
        """
        conn = connection_or_session
        if isinstance(conn, OrmSession):
            conn = conn.connection()
        if not isinstance(conn, sa.Connection):
            raise InvalidInputError(
                "store.within() takes a SQLAlchemy Connection or Session the host owns, "
                f"got {type(connection_or_session).__name__}"
            )
        spec_of(conn)  # a connection of another backend fails here
        view = Store.__new__(Store)
        view.engine = self.engine
        view.db = JoinedDatabase(conn, self.schema, schema_translate_map(self.schema))
        view.context = StoreContext(view.db, self.adapter, None, schema=self.schema)
        view.tier, view.user_id, view.tier_policy = self.tier, self.user_id, self.tier_policy
        view._owns_engine = False
        view._owns_adapter = False
        view.bound_mind = self.bound_mind  # confined by the library (the host's connection)
        view.searcher = HybridSearch(view.context)
        return view

    # -- unit of work (see waggle_store.unitofwork) ---------------------------------------------

    def write(self) -> AbstractContextManager[OrmSession]:
        """One write transaction (BEGIN IMMEDIATE on SQLite); commits on success."""
        return self.db.write()

    def read(self) -> AbstractContextManager[OrmSession]:
        """One read transaction that refuses ORM writes and ends with COMMIT."""
        return self.db.read()

    def read_connection(self) -> AbstractContextManager[sa.Connection]:
        """One read transaction on a Core connection (searches)."""
        return self.db.read_connection()

    # -- minds --------------------------------------------------------------------------------

    def mind(self, name: str = "default", *, kind: str = "workspace") -> Mind:
        """Get the mind called ``name``, creating it (race-free) if it does not exist.

        An existing mind is looked up in a read transaction: getting a mind is what every
        front-end call does first (each MCP tool call, each CLI command), and a write
        transaction there would queue a search behind another process's ingest for SQLite's
        write lock. Only a missing mind takes the write path (race-free through the unique
        name: processes creating it at once all get the one row)."""
        check_mind_name(name)
        check_mind_kind(kind)
        self._check_bound(name)
        with self.read() as session:
            row = MindRepository(session).get(name)
        if row is None:
            with self.write() as session:
                row, _ = MindRepository(session).get_or_create(name, kind)
        return Mind(MindContext(self.context, row.id, row.name, row.kind), self.searcher)

    def list_minds(self) -> list[MindInfo]:
        with self.read() as session:
            minds = MindRepository(session).list()
        if self.bound_mind is not None:
            minds = [m for m in minds if m.name == self.bound_mind[1]]
        return minds

    def drop_mind(self, name: str) -> None:
        """Delete every row of one mind (its vectors included) and nothing else."""
        self._check_bound(name)
        with self.write() as session:
            MindRepository(session).delete(name)

    # -- status -------------------------------------------------------------------------------

    def health(self) -> Health:
        with self.read() as session:
            caps = self.adapter.capabilities(session)
        info = engine_info(self.engine)
        reasons = list(caps.reasons)
        status = self.embedding_status() if self.embedder is not None else None
        if self.embedder is None:
            reasons.append("vector search off: no embedder configured (embedder=None)")
        elif status is not None and status.last_error:
            reasons.append(f"embedder: {status.last_error}")
        reasons.extend(self._model_mismatches())
        versions = dict(caps.versions)
        versions["waggle_store"] = _package_version()
        versions["sqlalchemy"] = sa.__version__
        with connect(read_only(self.engine)) as conn:
            revisions = schema_version.read_revisions(conn, self.schema)
        versions["schema_revision"] = str(schema_version.describe(revisions))
        return Health(
            dialect=caps.dialect,
            versions=versions,
            keyword_search=caps.keyword_search,
            vector_search=caps.vector_backend and self.embedder is not None,
            reasons=reasons,
            embedder=status,
            driver=info.driver,
        )

    def _model_mismatches(self) -> list[str]:
        with self.read() as session:
            return model_mismatches(session, self.embedder,
                                    None if self.bound_mind is None else self.bound_mind[0])

    def switch_embedding_model(self, embedder: str | Embedder | None = None, *,
                               progress: Callable[[int, int], None] | None = None
                               ) -> list[SwitchReport]:
        """:meth:`Mind.switch_embedding_model` for every mind of the store, one after another."""
        return [self.mind(info.name).switch_embedding_model(embedder, progress=progress)
                for info in self.list_minds()]

    def embedding_status(self) -> EmbedderStatus:
        if self.embedder is None:
            return EmbedderStatus(None, None, None, [], "no embedder configured", self.tier)
        status = getattr(self.embedder, "status", None)
        if callable(status):
            return status()  # type: ignore[no-any-return]
        return EmbedderStatus(
            getattr(self.embedder, "provider", type(self.embedder).__name__),
            getattr(self.embedder, "model", None),
            getattr(self.embedder, "dimensions", None),
            [getattr(self.embedder, "provider", type(self.embedder).__name__)],
            None,
            self.tier,
        )

    def quota_status(self, user_id: str | None = None) -> QuotaStatus:
        """The embedding quota of ``user_id`` (default: the store's user; a bound store's only)."""
        self._check_user(user_id)
        with self.read() as session:
            return quota_status(EmbeddingUsageRepository(session), user_id or self.user_id,
                                self.tier, self.tier_policy or TierPolicy.default())

    def reconcile(
        self,
        *,
        mind: str | Mind | None = None,
        progress: Callable[[int, int], None] | None = None,
        repair: bool = False,
    ) -> ReconcileReport:
        """Repair the keyword and vector indexes of one mind (or all); see
        :mod:`waggle_store.pipeline.reconcile`. ``repair=True`` first recreates missing or
        broken derived objects (``health().reasons`` lists them); off by default because on
        Postgres that can rewrite or scan ``memory_frames`` under a lock that blocks writers."""
        mind_id = None if self.bound_mind is None else self.bound_mind[0]
        if isinstance(mind, Mind):
            self._check_bound(mind.name)
            mind_id = mind.id
        elif mind is not None:
            self._check_bound(mind)
            with self.read() as session:
                found = MindRepository(session).get(mind)
                if found is None:
                    raise NotFoundError(f"no mind named {mind!r}")
                mind_id = int(found.id)
        report = reconcile(self.context, mind_id=mind_id, progress=progress, repair=repair)
        return replace(report, extractions_fixed=retry_pending(self.context, mind_id))

    # -- lifecycle ----------------------------------------------------------------------------

    def close(self) -> None:
        if not self.db.closed and self._owns_engine:
            self.engine.dispose()
        self.db.closed = True
        if self._owns_adapter:
            release_caches(self.adapter)  # e.g. SQLite's in-memory vector index

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        url = self.engine.url.render_as_string(hide_password=True)
        return f"<Store {self.engine.dialect.name} {url}>"


def open_store(
    url: str | sa.URL | sa.Engine | None = None,
    *,
    embedder: str | Embedder | None = "auto",
    schema: str | None = None,
    upgrade: bool = True,
    tier: str | None = None,
    user_id: str = "local",
    tier_policy: TierPolicy | None = None,
    connect_timeout: float | None = None,
    bound_mind: str | None = None,
    prepared_statements: bool = True,
    extractor: Extractor | None = None,
) -> Store:
    """Open (and by default migrate) a store; ``docs/api.md`` describes every argument.

    ``url``: a URL (string or ``sqlalchemy.URL``; default ``WAGGLE_DATABASE_URL``, then
    ``./waggle.db``) or a host's Engine, used as is and never disposed by ``close()``.
    ``upgrade=False``: no migration and no DDL at run time (a DML-only role may run it).
    """
    check_extractor(extractor)
    if bound_mind is not None:
        check_mind_name(bound_mind)
    config = StoreConfig.from_env(None, schema)
    if connect_timeout is not None:
        config = replace(config, connect_timeout=float(connect_timeout))
    if not prepared_statements:
        config = replace(config, prepared_statements=False)
    owns_engine = not isinstance(url, sa.Engine)
    if isinstance(url, sa.Engine):
        if connect_timeout is not None:  # the host's engine has made its connect arguments
            raise InvalidInputError(
                "connect_timeout applies to a store opened from a URL; give a host's Engine its "
                "timeout in create_engine(connect_args={'connect_timeout'|'timeout': N})")
        engine = url
        check_schema(engine, config.schema)  # UnsupportedDialectError first, then the name
    else:
        engine = create_engine(url if url is not None else config.url, config=config)
    settings: dict[str, Any] = {"tier": tier, "user_id": user_id, "tier_policy": tier_policy,
                                "schema": config.schema, "ddl": upgrade}
    try:
        migrate_on_open(engine, config.schema, upgrade=upgrade)
        resolved = (None if embedder is None
                    else resolve_embedder(embedder, tier=tier, tier_policy=tier_policy))
        bound = None if bound_mind is None else _bound_mind(engine, bound_mind, settings)
    except BaseException:
        if owns_engine:
            engine.dispose()
        raise
    store = Store(engine, embedder=resolved, owns_engine=owns_engine, bound_mind=bound,
                  **settings)
    store.embedder = store.metered(resolved)
    store.context.extractor = extractor
    if resolved is not None:
        with store.read() as session:
            warn_without_vectors(store.adapter, session)
    return store


def _bound_mind(engine: sa.Engine, name: str, settings: dict[str, Any]) -> tuple[int, str]:
    """The id of the mind a bound store is confined to, created (race-free) if missing, looked
    up by an unbound view of the engine (the mind's id is what the bound one then sets)."""
    finder = Store(engine, owns_engine=False, **settings)
    try:
        mind = finder.mind(name)
        return mind.id, mind.name
    finally:
        finder.close()
