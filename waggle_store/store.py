"""Store and Mind: the facade that owns the unit of work and wires the layers for callers.

Repositories take a Session and never commit; the facade opens one short transaction per API call
(``Store.write()`` / ``Store.read()``), commits it, and turns driver errors into waggle_store
errors, so that after any exception nothing of that call remains.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from functools import cached_property
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any, NoReturn

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc
from sqlalchemy import select
from sqlalchemy.orm import Session as OrmSession

from waggle_store import migrate
from waggle_store.config import StoreConfig
from waggle_store.dialects import SearchAdapter, get_adapter
from waggle_store.engine import create_engine, engine_info, read_only
from waggle_store.errors import (
    ConflictError,
    InvalidInputError,
    MigrationError,
    NotFoundError,
    StorageError,
    WaggleStoreError,
)
from waggle_store.models import MIND_KINDS, MindRow
from waggle_store.records import (
    EmbedderStatus,
    Health,
    MindInfo,
    QuotaStatus,
    ReconcileReport,
    SearchResult,
)

if TYPE_CHECKING:
    from waggle_store.facade.awareness import AwarenessAPI
    from waggle_store.facade.frames import FramesAPI
    from waggle_store.facade.identity import IdentityAPI
    from waggle_store.facade.knowledge import KnowledgeAPI
    from waggle_store.facade.kv import KVAPI
    from waggle_store.facade.sessions import SessionsAPI
    from waggle_store.records import BatchResult, CognifyResult, MemoryInput


def _package_version() -> str:
    try:
        return version("waggle-store")
    except PackageNotFoundError:
        return "0+unknown"


class Store:
    """One database: a SQLite file or a Postgres schema. Open it with :func:`open_store`."""

    def __init__(
        self,
        engine: sa.Engine,
        *,
        embedder: Any = None,
        tier: str | None = None,
        user_id: str = "local",
        tier_policy: Any = None,
        owns_engine: bool = True,
        schema: str | None = None,
    ) -> None:
        self.engine = engine
        self.schema = schema if engine.dialect.name == "postgresql" else None
        self._read_engine = read_only(engine)
        self.embedder = embedder
        self.tier = tier
        self.user_id = user_id
        self.tier_policy = tier_policy
        self._owns_engine = owns_engine
        self.adapter: SearchAdapter = get_adapter(engine)
        self._closed = False

    # -- unit of work -------------------------------------------------------------------------

    @contextmanager
    def write(self) -> Iterator[OrmSession]:
        """One write transaction (BEGIN IMMEDIATE on SQLite); commits on success."""
        with self._session(self.engine) as session:
            yield session

    @contextmanager
    def read(self) -> Iterator[OrmSession]:
        """One read transaction (BEGIN DEFERRED on SQLite). It refuses to flush (a read that
        writes is a bug) and ends with COMMIT, which for a transaction that wrote nothing is the
        same as ROLLBACK, except that psycopg keeps its prepared statements (see
        :meth:`read_connection`)."""
        with self._session(self._read_engine, session_class=_ReadSession) as session:
            yield session

    @contextmanager
    def read_connection(self) -> Iterator[sa.Connection]:
        """One read transaction on a Core connection (BEGIN DEFERRED on SQLite), for read paths
        made only of statements (search): an ORM Session's bookkeeping cost a search about as
        much as one of its queries.

        It ends with COMMIT, not ROLLBACK (the same for a transaction that wrote nothing):
        psycopg discards every prepared statement of the connection on ROLLBACK, so searches
        that rolled back were parsed and planned afresh every time (``benchmarks/README.md``).
        An exception still rolls back.
        """
        if self._closed:
            raise WaggleStoreError("this store is closed")
        try:
            with self._read_engine.connect() as conn:
                yield conn
                if conn.in_transaction():
                    conn.commit()
        except BaseException as exc:
            _raise_translated(exc)

    @contextmanager
    def _session(self, bind: sa.Engine, *,
                 session_class: type[OrmSession] = OrmSession) -> Iterator[OrmSession]:
        if self._closed:
            raise WaggleStoreError("this store is closed")
        session = session_class(bind, expire_on_commit=False, autoflush=True)
        try:
            yield session
            session.commit()
        except BaseException as exc:
            session.rollback()
            _raise_translated(exc)
        finally:
            session.close()

    # -- minds --------------------------------------------------------------------------------

    def mind(self, name: str = "default", *, kind: str = "workspace") -> Mind:
        """Get the mind called ``name``, creating it (race-free) if it does not exist."""
        if not isinstance(name, str) or not name.strip() or len(name) > 200 or "\x00" in name:
            raise InvalidInputError("a mind name must be a non-empty string of at most 200 characters")
        if kind not in MIND_KINDS:
            raise InvalidInputError(f"mind kind must be one of {MIND_KINDS}, got {kind!r}")
        with self.write() as session:
            row = session.scalar(select(MindRow).where(MindRow.name == name))
            if row is None:
                try:
                    with session.begin_nested():
                        row = MindRow(name=name, kind=kind)
                        session.add(row)
                except sa_exc.IntegrityError:
                    row = session.scalar(select(MindRow).where(MindRow.name == name))
                    if row is None:
                        raise
            return Mind(self, row.id, row.name, row.kind)

    def list_minds(self) -> list[MindInfo]:
        with self.read() as session:
            rows = session.scalars(select(MindRow).order_by(MindRow.name)).all()
            return [MindInfo(r.name, r.kind, r.created_at) for r in rows]

    def drop_mind(self, name: str) -> None:
        """Delete every row of one mind (its vectors included) and nothing else."""
        with self.write() as session:
            row = session.scalar(select(MindRow).where(MindRow.name == name))
            if row is None:
                raise NotFoundError(f"no mind named {name!r}")
            # Every table hangs off minds with ON DELETE CASCADE; the FTS rows follow through
            # triggers, the per-model vector rows through the adapter's triggers / foreign keys.
            session.execute(sa.delete(MindRow).where(MindRow.id == row.id))

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
        from waggle_store.embeddings.quota import quota_status
        from waggle_store.embeddings.tiers import TierPolicy

        with self.read() as session:
            return quota_status(
                session, user_id or self.user_id, self.tier, self.tier_policy or TierPolicy.default()
            )

    def reconcile(self, *, mind: str | Mind | None = None,
                  progress: Callable[[int, int], None] | None = None) -> ReconcileReport:
        from waggle_store.pipeline.reconcile import reconcile

        return reconcile(self, mind=mind, progress=progress)

    # -- lifecycle ----------------------------------------------------------------------------

    def close(self) -> None:
        if not self._closed and self._owns_engine:
            self.engine.dispose()
        self._closed = True

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Store {self.engine.dialect.name} {self.engine.url.render_as_string(hide_password=True)}>"


class Mind:
    """One memory namespace of a store. Every read and write through it is scoped to ``id``."""

    def __init__(self, store: Store, mind_id: int, name: str, kind: str) -> None:
        self.store = store
        self.id = mind_id
        self.name = name
        self.kind = kind

    def __repr__(self) -> str:
        return f"<Mind {self.name!r} id={self.id}>"

    @cached_property
    def identity(self) -> IdentityAPI:
        from waggle_store.facade.identity import IdentityAPI

        return IdentityAPI(self)

    @cached_property
    def awareness(self) -> AwarenessAPI:
        from waggle_store.facade.awareness import AwarenessAPI

        return AwarenessAPI(self)

    @cached_property
    def sessions(self) -> SessionsAPI:
        from waggle_store.facade.sessions import SessionsAPI

        return SessionsAPI(self)

    @cached_property
    def frames(self) -> FramesAPI:
        from waggle_store.facade.frames import FramesAPI

        return FramesAPI(self)

    @cached_property
    def knowledge(self) -> KnowledgeAPI:
        from waggle_store.facade.knowledge import KnowledgeAPI

        return KnowledgeAPI(self)

    @cached_property
    def kv(self) -> KVAPI:
        from waggle_store.facade.kv import KVAPI

        return KVAPI(self)

    def search(self, query: str, *, limit: int = 20, gop_id: str | None = None,
               profile: str = "balanced", since: datetime | str | None = None,
               until: datetime | str | None = None,
               context: Mapping[int, int] | None = None,
               lanes: Collection[str] | None = None) -> list[SearchResult]:
        """Hybrid keyword + vector search of this mind (DESIGN §5).

        ``lanes`` restricts the lanes that run ({"keyword"}, {"vector"}; default both), for
        evaluation and debugging.
        """
        from waggle_store.search.engine import search

        return search(self, query, limit=limit, gop_id=gop_id, profile=profile, since=since,
                      until=until, context=context, lanes=lanes)

    def recall(self, query: str, *, limit: int = 20, gop_id: str | None = None,
               profile: str = "balanced", since: datetime | str | None = None,
               until: datetime | str | None = None,
               context: Mapping[int, int] | None = None,
               lanes: Collection[str] | None = None) -> list[SearchResult]:
        """search() that also counts an access (touch) of every frame it returns."""
        from waggle_store.search.engine import recall

        return recall(self, query, limit=limit, gop_id=gop_id, profile=profile, since=since,
                      until=until, context=context, lanes=lanes)

    def cognify(self, content: str, *, importance: str = "normal", gop_id: str | None = None,
                created_at: datetime | str | None = None, source: str = "user_stated",
                link: bool = True) -> CognifyResult:
        """Store a memory: frame, entities, relations and vector in one transaction (DESIGN §6).

        ``link=False`` skips the related-frames search when the caller does not need it.
        """
        from waggle_store.pipeline.cognify import cognify

        return cognify(self, content, importance=importance, gop_id=gop_id,
                       created_at=created_at, source=source, link=link)

    def cognify_batch(self, items: Iterable[str | MemoryInput], *, importance: str = "normal",
                      gop_id: str | None = None,
                      progress: Callable[[int, int], None] | None = None) -> BatchResult:
        """Cognify many memories: embedded in batches, written in few transactions."""
        from waggle_store.pipeline.cognify import cognify_batch

        return cognify_batch(self, items, importance=importance, gop_id=gop_id, progress=progress)


class _ReadSession(OrmSession):
    """The session of :meth:`Store.read`: ORM changes are refused at flush time."""


@sa.event.listens_for(_ReadSession, "before_flush")
def _refuse_flush(session: OrmSession, flush_context: Any, instances: Any) -> None:
    if session.new or session.dirty or session.deleted:
        raise WaggleStoreError("a read transaction cannot write: use store.write()")


def _raise_translated(exc: BaseException) -> NoReturn:
    """Re-raise ``exc`` (being handled by the caller), as a waggle_store error if it is a
    driver error."""
    translated = _translate(exc)
    if translated is exc:
        raise exc
    raise translated from exc


def _translate(exc: BaseException) -> BaseException:
    """Driver errors become waggle_store errors; everything else passes through unchanged."""
    if isinstance(exc, WaggleStoreError) or not isinstance(exc, sa_exc.SQLAlchemyError):
        return exc
    orig = getattr(exc, "orig", None)
    if isinstance(exc, sa_exc.StatementError) and isinstance(orig, ValueError) and not isinstance(
        exc, sa_exc.DBAPIError
    ):
        return InvalidInputError(str(orig))
    if isinstance(exc, sa_exc.IntegrityError):
        return ConflictError(f"the database refused the write: {orig or exc}")
    return StorageError(f"database error: {orig or exc}")


def open_store(
    url: str | sa.URL | None = None,
    *,
    embedder: Any = "auto",
    schema: str | None = None,
    upgrade: bool = True,
    tier: str | None = None,
    user_id: str = "local",
    tier_policy: Any = None,
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
        resolved = _resolve_embedder(embedder, tier=tier, tier_policy=tier_policy)
    except BaseException:
        engine.dispose()
        raise
    store = Store(engine, embedder=resolved, tier=tier, user_id=user_id, tier_policy=tier_policy,
                  schema=config.schema)
    if tier is not None and resolved is not None:
        from waggle_store.embeddings.metered import MeteredEmbedder

        store.embedder = MeteredEmbedder(resolved, store, user_id=user_id, tier=tier,
                                         policy=tier_policy)
    return store


def _resolve_embedder(spec: Any, *, tier: str | None, tier_policy: Any) -> Any:
    if spec is None:
        return None
    from waggle_store.embeddings.chain import resolve_embedder

    return resolve_embedder(spec, tier=tier, tier_policy=tier_policy)
