"""Store and Mind: the facade that owns the unit of work and wires the layers for callers.

Repositories take a Session and never commit; the facade opens one short transaction per API call
(``Store.write()`` / ``Store.read()``), commits it, and turns driver errors into waggle_store
errors, so that after any exception nothing of that call remains.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from functools import cached_property
from importlib.metadata import PackageNotFoundError, version

import sqlalchemy as sa
from sqlalchemy import select
from sqlalchemy.orm import Session as OrmSession

from waggle_store import migrate
from waggle_store.config import StoreConfig
from waggle_store.context import MindContext, StoreContext
from waggle_store.dialects import SearchAdapter, get_adapter, spec_of
from waggle_store.embeddings.base import Embedder
from waggle_store.embeddings.chain import resolve_embedder
from waggle_store.embeddings.metered import MeteredEmbedder, QuotaMeter
from waggle_store.embeddings.quota import quota_status
from waggle_store.embeddings.tiers import TierPolicy
from waggle_store.engine import create_engine, engine_info, read_only
from waggle_store.errors import MigrationError, NotFoundError
from waggle_store.facade.usage import UsageAPI
from waggle_store.mind import Mind
from waggle_store.models import MindRow
from waggle_store.pipeline.reconcile import reconcile
from waggle_store.records import (
    EmbedderStatus,
    Health,
    MindInfo,
    QuotaStatus,
    ReconcileReport,
    SwitchReport,
)
from waggle_store.repositories.mind_models import mismatch_reason, models_in_use, registered
from waggle_store.repositories.minds import MindRepository, check_mind_kind, check_mind_name
from waggle_store.repositories.vectors import model_key
from waggle_store.search.engine import HybridSearch
from waggle_store.store_transfer import TransferMixin
from waggle_store.unitofwork import Database


def _package_version() -> str:
    try:
        return version("waggle-store")
    except PackageNotFoundError:
        return "0+unknown"


class Store(TransferMixin):
    """One database: a SQLite file or a Postgres schema. Open it with :func:`open_store`.

    It owns the unit of work (:class:`~waggle_store.unitofwork.Database`), the dialect adapter,
    the embedder and the search engine, and hands its layers a :class:`StoreContext` (and each
    mind a :class:`MindContext`), never itself.
    """

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
    ) -> None:
        self.engine = engine
        spec = spec_of(engine)  # an Engine of an unsupported backend fails here, first
        adapter = get_adapter(engine)
        self.db = Database(engine, read_only(engine))
        self.context = StoreContext(self.db, adapter, embedder,
                                    schema=schema if spec.has_schemas else None)
        self.tier = tier
        self.user_id = user_id
        self.tier_policy = tier_policy
        self._owns_engine = owns_engine
        self.searcher = HybridSearch(self.context)

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
    def usage(self) -> UsageAPI:
        """The LLM/embedding usage log of every mind, its totals and monthly budgets."""
        return UsageAPI(self.context)

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
        """Get the mind called ``name``, creating it (race-free) if it does not exist."""
        check_mind_name(name)
        check_mind_kind(kind)
        with self.write() as session:
            row, _ = MindRepository(session).get_or_create(name, kind)
            return Mind(MindContext(self.context, row.id, row.name, row.kind), self.searcher)

    def list_minds(self) -> list[MindInfo]:
        with self.read() as session:
            return MindRepository(session).list()

    def drop_mind(self, name: str) -> None:
        """Delete every row of one mind (its vectors included) and nothing else."""
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
        versions["schema_revision"] = str(migrate.current(self.engine, schema=self.schema))
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
        """A reason per mind whose active model is not this store's embedder's (its vector
        search is off through this store). An "auto" embedder not chosen yet is not resolved
        here: health() never probes a provider."""
        embedder = self.embedder
        if embedder is None or not getattr(embedder, "resolved", True):
            return []
        key = model_key(embedder)
        with self.read() as session:
            keys = registered(session)
            names = dict(session.execute(select(MindRow.id, MindRow.name)).all())
            return [mismatch_reason(names[mind_id], keys[model_id], key)
                    for mind_id, model_id in sorted(models_in_use(session).items())
                    if keys[model_id] != key]

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
        with self.read() as session:
            return quota_status(
                session, user_id or self.user_id, self.tier, self.tier_policy or TierPolicy.default()
            )

    def reconcile(self, *, mind: str | Mind | None = None,
                  progress: Callable[[int, int], None] | None = None,
                  repair: bool = False) -> ReconcileReport:
        """Repair the keyword and vector indexes of one mind (or all); see
        :mod:`waggle_store.pipeline.reconcile`. ``repair=True`` first recreates missing or
        broken derived objects (``health().reasons`` lists them); off by default because on
        Postgres that can rewrite or scan ``memory_frames`` under a lock that blocks writers."""
        mind_id = None
        if isinstance(mind, Mind):
            mind_id = mind.id
        elif mind is not None:
            with self.read() as session:
                found = MindRepository(session).get(mind)
                if found is None:
                    raise NotFoundError(f"no mind named {mind!r}")
                mind_id = int(found.id)
        return reconcile(self.context, mind_id=mind_id, progress=progress, repair=repair)

    # -- lifecycle ----------------------------------------------------------------------------

    def close(self) -> None:
        if not self.db.closed and self._owns_engine:
            self.engine.dispose()
        self.db.closed = True

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Store {self.engine.dialect.name} {self.engine.url.render_as_string(hide_password=True)}>"


def open_store(
    url: str | sa.URL | None = None,
    *,
    embedder: str | Embedder | None = "auto",
    schema: str | None = None,
    upgrade: bool = True,
    tier: str | None = None,
    user_id: str = "local",
    tier_policy: TierPolicy | None = None,
) -> Store:
    """Open (and by default migrate) a store; see API.md for every argument."""
    config = StoreConfig.from_env(str(url) if url is not None else None, schema)
    engine = create_engine(config.url, config=config)
    try:
        if upgrade:
            migrate.upgrade(engine, schema=config.schema)
        else:
            at, head = migrate.current(engine, schema=config.schema), migrate.head()
            if at != head:
                raise MigrationError(
                    f"the database schema is at revision {at}, the code needs {head}: "
                    "run `alembic upgrade head` or open_store(..., upgrade=True)"
                )
        resolved = (None if embedder is None
                    else resolve_embedder(embedder, tier=tier, tier_policy=tier_policy))
    except BaseException:
        engine.dispose()
        raise
    store = Store(engine, embedder=resolved, tier=tier, user_id=user_id, tier_policy=tier_policy,
                  schema=config.schema)
    if tier is not None and resolved is not None:
        meter = QuotaMeter(store.db, user_id=user_id, tier=tier, policy=tier_policy)
        store.embedder = MeteredEmbedder(resolved, meter)
    return store
