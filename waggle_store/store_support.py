"""What :func:`~waggle_store.store.open_store` and ``Store.health()`` need beside the Store
class: bringing the schema to head on open, and the minds whose model differs from the
store's embedder. Plain functions on an engine or a session, so ``store.py`` stays the facade.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.orm import Session

from waggle_store import schema_version
from waggle_store.dialects import spec_of
from waggle_store.dialects.base import SearchAdapter
from waggle_store.embeddings.base import Embedder
from waggle_store.engine import connect, read_only
from waggle_store.errors import MigrationError, WaggleStoreWarning, warn_at_caller
from waggle_store.repositories.mind_models import mismatch_reason, models_in_use, registered
from waggle_store.repositories.minds import mind_names
from waggle_store.repositories.vectors import model_key


def migrate_on_open(engine: sa.Engine, schema: str, *, upgrade: bool) -> None:
    """Bring the schema to head, or (``upgrade=False``) check that it is there.

    A store opened at head costs one query (:mod:`waggle_store.schema_version`): Alembic, its
    locks and its imports are only for a database that has something to migrate (or whose
    version table cannot be read: Alembic then decides, and reports what is wrong). The
    connection also proves the database reachable (DatabaseUnavailableError otherwise).
    """
    in_schema = schema if spec_of(engine).has_schemas else None
    with connect(read_only(engine)) as conn:
        revisions = schema_version.read_revisions(conn, in_schema)
    if schema_version.at_head(revisions):
        return
    from waggle_store import migrate  # Alembic is imported only to migrate (~80 ms)

    if upgrade:
        migrate.upgrade(engine, schema=schema)
        return
    at, head = schema_version.describe(revisions), migrate.head()
    raise MigrationError(
        f"the database schema is at revision {at}, the code needs {head}: "
        "run `alembic upgrade head` or open_store(..., upgrade=True)"
    )


def model_mismatches(session: Session, embedder: Embedder | None,
                     bound_mind_id: int | None) -> list[str]:
    """A reason per mind whose active model is not this store's embedder's (its vector search
    is off through this store); a bound store reports its own mind only. An "auto" embedder
    not chosen yet is not resolved here: health() never probes a provider."""
    if embedder is None or not getattr(embedder, "resolved", True):
        return []
    key = model_key(embedder)
    keys = registered(session)
    names = mind_names(session)
    return [mismatch_reason(names[mind_id], keys[model_id], key)
            for mind_id, model_id in sorted(models_in_use(session).items())
            if keys[model_id] != key and mind_id in names
            and (bound_mind_id is None or mind_id == bound_mind_id)]


__all__ = ["migrate_on_open", "model_mismatches"]


_vector_warnings: set[str] = set()


def warn_without_vectors(adapter: SearchAdapter, session: Session) -> None:
    """A store given an embedder on a database without a vector backend (PostgreSQL without
    pgvector, SQLite without sqlite-vec) warns once per process and reason: its memories stay
    ``pending`` and its searches keyword-only until the backend is there."""
    reason = adapter.vector_off(session)
    if reason is None:
        return
    if reason not in _vector_warnings:
        _vector_warnings.add(reason)
        warn_at_caller(reason, WaggleStoreWarning)
