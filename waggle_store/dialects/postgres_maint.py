"""Postgres vector-table maintenance: the DDL and the row writes/reads behind ``PostgresAdapter``.

Split out of :mod:`waggle_store.dialects.postgres` (the house rule keeps modules under 400 lines)
along the seam between *searching* and *maintaining* the derived vector tables: the adapter keeps
the lanes (every lane statement goes through ``run_lane``, which the benchmarks patch in that
module) and its per-engine caches, and its maintenance methods delegate here to plain functions
that take those caches as arguments. Nothing here is part of the public API; the adapter's methods
(the ``SearchAdapter`` protocol) are.

Vector tables are ``waggle_frame_vectors_N(frame_id → waggle_memory_frames ON DELETE CASCADE,
mind_id, embedding vector(d), gop_id, created_at)`` with an HNSW index. Vectors travel in
pgvector's binary form (:func:`vector_param`): a dumper for waggle_store's own
:class:`BinaryVector` class is added to each psycopg connection that binds one, nothing else; the
host's own types and adapters are untouched.
"""

from __future__ import annotations

import struct
import sys
import weakref
from array import array
from collections.abc import Callable, Sequence
from typing import Any, Final

from sqlalchemy import Connection, Engine, bindparam, text
from sqlalchemy.orm import Session

from waggle_store.dialects.base import T_FRAMES, Executor, VectorRow, vector_table_name
from waggle_store.dialects.common import connection_of, raise_driver_error
from waggle_store.dialects.host import NO_DDL_OPTION
from waggle_store.dialects.postgres_engine import BOUND_MIND_SETTING
from waggle_store.errors import VectorTableMissingError
from waggle_store.models.base import UTCDateTime
from waggle_store.models.idioms import rowcount

#: pgvector's HNSW indexes ``vector`` up to this many dimensions, ``halfvec`` up to 4,000.
HNSW_MAX_VECTOR_DIMS: Final = 2000
_TS = UTCDateTime()


def vec_literal(vector: Sequence[float]) -> str:
    """pgvector's text form; repr of a float round-trips it exactly."""
    return "[" + ",".join(map(repr, map(float, vector))) + "]"


class BinaryVector:
    """A vector bound in pgvector's binary form (``vector_recv``: the dimension and a reserved
    zero as int16, then each element as a big-endian float4), which the server takes as is.

    Its text form cost a search 27 µs for a hashing vector and 147 µs for a dense one of 384
    dimensions (``repr`` of every float, then the server's parse); this packing costs ~6 µs. The
    elements are rounded to float4 here rather than by the server's parse of the text: the same
    float4 but in rare double-rounding cases, one unit in the last place of a float4."""

    __slots__ = ("payload",)

    def __init__(self, vector: Sequence[float]) -> None:
        values = array("f", vector)
        if sys.byteorder == "little":
            values.byteswap()
        self.payload = struct.pack(">HH", len(values), 0) + values.tobytes()


#: psycopg connections -> whether their adapters dump :class:`BinaryVector` (False: the
#: database has no ``vector`` type, and vectors go as text). Weak: a pool's connections come
#: and go.
_DUMPS_BINARY: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()


def vector_param(executor: Executor) -> Callable[[Sequence[float]], BinaryVector | str]:
    """How to bind a vector for ``CAST(:p AS vector)`` on ``executor``'s connection: binary where
    the connection knows pgvector's type (looked up once per connection), else as text."""
    conn = connection_of(executor)
    dbapi = conn.connection.dbapi_connection
    ready = _DUMPS_BINARY.get(dbapi)
    if ready is None:
        try:
            ready = dumps_binary_vectors(dbapi)
        except conn.dialect.loaded_dbapi.Error as exc:
            # The type's lookup is the connection's first query in a search's vector lane (on a
            # connection of its own, beside the keyword lane): a connection found lost here is
            # invalidated and said so, as by any statement, and the search runs once more.
            raise_driver_error(conn, exc, "TypeInfo.fetch('vector')", None)
        _DUMPS_BINARY[dbapi] = ready
    return BinaryVector if ready else vec_literal


def dumps_binary_vectors(dbapi: Any) -> bool:
    """Teach one psycopg connection to send :class:`BinaryVector` as pgvector's ``vector``
    (False, nothing changed, where the database has no such type)."""
    from psycopg.adapt import Dumper
    from psycopg.pq import Format
    from psycopg.types import TypeInfo

    info = TypeInfo.fetch(dbapi, "vector")
    if info is None:
        return False

    class _Dumper(Dumper):
        format = Format.BINARY
        oid = info.oid

        def dump(self, obj: Any) -> bytes:
            payload: bytes = obj.payload
            return payload

    dbapi.adapters.register_dumper(BinaryVector, _Dumper)
    return True


def has_filter_columns(session: Executor, model_id: int, known: set[int]) -> bool:
    """Whether ``frame_vectors_N`` carries ``gop_id``/``created_at`` (added in place by
    :func:`create_vector_table`; columns are never dropped, so a yes is cached in ``known``,
    the adapter's per-engine set)."""
    if model_id in known:
        return True
    found = (
        session.execute(
            text(
                "SELECT count(*) FROM pg_attribute WHERE attrelid = to_regclass(:name) "
                "AND attname IN ('gop_id', 'created_at') AND NOT attisdropped"
            ),
            {"name": vector_table_name(model_id)},
        ).scalar()
        == 2
    )
    if found:
        known.add(model_id)
    return found


#: The row-level security policy on every table holding mind rows (migration ``0011``, and
#: each vector table when it is created): all rows while the setting is unset or empty (an
#: unbound store, a migration), only the bound mind's rows when a bound store has set it.
RLS_POLICY: Final = "waggle_bound_mind"
RLS_CONDITION: Final = (
    f"coalesce(current_setting('{BOUND_MIND_SETTING}', true), '') = '' "
    f"OR {{column}} = nullif(current_setting('{BOUND_MIND_SETTING}', true), '')::bigint"
)


def rls_statements(table: str, column: str = "mind_id") -> list[str]:
    """Enable row-level security on ``table`` (an identifier the caller quoted or built from
    constants) with the bound-mind policy on ``column``. It is not forced: the owner (the role
    that migrates) is exempt, so a store run by the owner keeps the GIN index for its keyword
    lane; the runtime roles of ``grant_runtime`` are held to it."""
    condition = RLS_CONDITION.format(column=column)
    return [
        f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY",
        f"DROP POLICY IF EXISTS {RLS_POLICY} ON {table}",
        f"CREATE POLICY {RLS_POLICY} ON {table} USING ({condition}) WITH CHECK ({condition})",
    ]


def grant_runtime(connection: Connection, schema: str, role: str, version_table: str) -> None:
    """Grant ``role`` what a store needs at run time in ``schema`` and nothing else: USAGE on
    the schema, SELECT/INSERT/UPDATE/DELETE on its tables (read-only on the version table),
    USAGE/SELECT on its sequences; and the same on tables and sequences the calling role
    (the owner) creates there later, such as a new model's vector table. No CREATE, no
    TRUNCATE, no ownership: the role cannot run DDL."""
    preparer = connection.dialect.identifier_preparer
    s, r = preparer.quote_schema(schema), preparer.quote(role)
    for statement in (
        f"GRANT USAGE ON SCHEMA {s} TO {r}",
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {s} TO {r}",
        f"REVOKE INSERT, UPDATE, DELETE ON {s}.{preparer.quote(version_table)} FROM {r}",
        f"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA {s} TO {r}",
        (f"ALTER DEFAULT PRIVILEGES IN SCHEMA {s} "
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO {r}"),
        f"ALTER DEFAULT PRIVILEGES IN SCHEMA {s} GRANT USAGE, SELECT ON SEQUENCES TO {r}",
    ):
        connection.exec_driver_sql(statement)


def _vector_table_complete(session: Session, table: str) -> bool:
    """One catalog query: the table exists with its filter columns, both indexes are valid,
    and row-level security is on with the bound-mind policy. Nothing to create then, so a
    role that may not run DDL (DML only) uses it as it is."""
    row = session.execute(
        text(
            "SELECT to_regclass(:t) IS NOT NULL, "
            "(SELECT count(*) FROM pg_attribute WHERE attrelid = to_regclass(:t) "
            " AND attname IN ('gop_id', 'created_at') AND NOT attisdropped), "
            "(SELECT count(*) FROM pg_index WHERE indrelid = to_regclass(:t) AND indisvalid "
            " AND indexrelid IN (to_regclass(:t || '_mind_id'), to_regclass(:t || '_hnsw'))), "
            "(SELECT relrowsecurity FROM pg_class "
            " WHERE oid = to_regclass(:t)), "
            "EXISTS (SELECT 1 FROM pg_policy WHERE polrelid = to_regclass(:t) "
            " AND polname = :policy)"
        ),
        {"t": table, "policy": RLS_POLICY},
    ).one()
    return bool(row[0]) and row[1] == 2 and row[2] == 2 and bool(row[3]) and bool(row[4])


def create_vector_table(
    session: Session, model_id: int, dimensions: int, filter_columns: set[int]
) -> None:
    """Create (or complete) ``frame_vectors_N``, its indexes and its row-level security;
    idempotent, so the adapter's "already ensured" cache only saves round trips.

    A complete table costs one catalog query and no DDL. An incomplete one on a store that
    runs no DDL (:data:`NO_DDL_OPTION`) raises :class:`VectorTableMissingError` naming the
    admin step: the runtime role of a least-privilege deployment cannot create tables, and
    must not try (a DML-only role fails with "must be owner")."""
    table = vector_table_name(model_id)
    dims = int(dimensions)
    if _vector_table_complete(session, table):
        return
    if connection_of(session).get_execution_options().get(NO_DDL_OPTION):
        raise VectorTableMissingError(
            f"the vector table {table} of embedding model {model_id} ({dims} dimensions) is "
            "missing or incomplete, and this store runs no DDL (opened with upgrade=False): "
            "create it as the schema's owner with `waggle-store --embedder NAME migrate "
            "vector-table`, waggle_store.migrate.ensure_vector_table(url, embedder), or "
            "open_store(..., upgrade=True); then store.reconcile() embeds the pending memories"
        )
    # Two processes registering the same model must not race on CREATE TABLE.
    session.execute(text("SELECT pg_advisory_xact_lock(hashtext(:key))"), {"key": table})
    session.execute(
        text(
            f"CREATE TABLE IF NOT EXISTS {table} ("
            f"frame_id bigint PRIMARY KEY REFERENCES {T_FRAMES}(id) ON DELETE CASCADE, "
            f"mind_id bigint NOT NULL, embedding vector({dims}) NOT NULL, "
            "gop_id text, created_at timestamptz)"
        )
    )
    if not has_filter_columns(session, model_id, filter_columns):
        # A table created before the filter columns existed: add and fill them once.
        session.execute(
            text(
                f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS gop_id text, "
                "ADD COLUMN IF NOT EXISTS created_at timestamptz"
            )
        )
        session.execute(
            text(
                f"UPDATE {table} v SET gop_id = f.gop_id, created_at = f.created_at "
                f"FROM {T_FRAMES} f WHERE f.id = v.frame_id"
            )
        )
        filter_columns.add(model_id)
    session.execute(text(f"CREATE INDEX IF NOT EXISTS {table}_mind_id ON {table} (mind_id)"))
    if dims > HNSW_MAX_VECTOR_DIMS:
        index = f"((embedding::halfvec({dims})) halfvec_cosine_ops)"
    else:
        index = "(embedding vector_cosine_ops)"
    session.execute(
        text(f"CREATE INDEX IF NOT EXISTS {table}_hnsw ON {table} USING hnsw {index}")
    )
    for statement in rls_statements(table):
        session.execute(text(statement))


def upsert_vectors(session: Session, model_id: int, rows: Sequence[VectorRow]) -> None:
    """One ``INSERT .. ON CONFLICT`` batch; the filter columns are copied from the frame so the
    KNN can filter on the vector table alone."""
    if not rows:
        return
    table = vector_table_name(model_id)
    bind_vector = vector_param(session)
    session.execute(
        text(
            f"INSERT INTO {table} (frame_id, mind_id, embedding, gop_id, created_at) "
            "VALUES (:id, :mind_id, CAST(:embedding AS vector), :gop_id, :created_at) "
            "ON CONFLICT (frame_id) DO UPDATE SET mind_id = excluded.mind_id, "
            "embedding = excluded.embedding, gop_id = excluded.gop_id, "
            "created_at = excluded.created_at"
        ).bindparams(bindparam("created_at", type_=_TS)),
        [
            {
                "id": int(r.frame_id),
                "mind_id": int(r.mind_id),
                "embedding": bind_vector(r.vector),
                "gop_id": r.gop_id,
                "created_at": r.created_at,
            }
            for r in rows
        ],
    )


def delete_vectors(session: Session, model_id: int, frame_ids: Sequence[int]) -> None:
    """Drop the given frames' vectors (an empty list is a no-op, not an empty ``IN``)."""
    if not frame_ids:
        return
    session.execute(
        text(f"DELETE FROM {vector_table_name(model_id)} WHERE frame_id IN :ids").bindparams(
            bindparam("ids", expanding=True)
        ),
        {"ids": [int(i) for i in frame_ids]},
    )


def read_vectors(
    session: Executor, model_id: int, frame_ids: Sequence[int]
) -> dict[int, list[float]]:
    """The stored vectors, read in batches of 500 ids."""
    # As text ("[0.1,0.2,...]"): no pgvector adapter needs registering on the driver.
    found: dict[int, list[float]] = {}
    ids = [int(i) for i in frame_ids]
    for start in range(0, len(ids), 500):
        rows = session.execute(
            text(
                f"SELECT frame_id, embedding::text FROM {vector_table_name(model_id)} "
                "WHERE frame_id IN :ids"
            ).bindparams(bindparam("ids", expanding=True)),
            {"ids": ids[start : start + 500]},
        )
        for frame_id, literal in rows:
            found[int(frame_id)] = [float(x) for x in str(literal).strip("[]").split(",")]
    return found


def remove_vector_orphans(session: Session, model_id: int) -> int:
    """The foreign key cascades, so orphans cannot exist; the statement proves it cheaply."""
    result = session.execute(
        text(
            f"DELETE FROM {vector_table_name(model_id)} v WHERE NOT EXISTS "
            f"(SELECT 1 FROM {T_FRAMES} f WHERE f.id = v.frame_id)"
        )
    )
    return rowcount(result)


# -- purge -----------------------------------------------------------------------------------

_SCHEMA_TABLES = text(
    "SELECT c.oid::regclass::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
    "WHERE n.nspname = :schema AND c.relkind IN ('r', 'm') ORDER BY c.relname"
)
_SCHEMA_BYTES = text(
    "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
    "JOIN pg_namespace n ON n.oid = c.relnamespace "
    "WHERE n.nspname = :schema AND c.relkind IN ('r', 'm')"
)


def purge(engine: Engine, schema: str) -> tuple[int, int]:
    """Make deleted rows unrecoverable from the store's table files; (bytes before, bytes
    after) of the schema's tables with their indexes and TOAST.

    ``VACUUM (FULL)`` of each table of the schema, outside a transaction: each table is
    rewritten into new files from its live rows, with its indexes and TOAST table, and the old
    files are removed (a plain ``VACUUM`` only marks dead rows' space reusable; their bytes stay
    in the pages). Each table is locked ACCESS EXCLUSIVE while it is rewritten, so a purge
    blocks that table's readers and writers for as long. The server's WAL and its backups
    are outside what a store controls."""
    with engine.connect() as conn:
        auto = conn.execution_options(isolation_level="AUTOCOMMIT")
        before = int(auto.execute(_SCHEMA_BYTES, {"schema": schema}).scalar() or 0)
        tables = [str(t) for t in auto.execute(_SCHEMA_TABLES, {"schema": schema}).scalars()]
        for table in tables:  # regclass text: already quoted and schema-qualified as needed
            auto.exec_driver_sql(f"VACUUM (FULL, ANALYZE) {table}")
        after = int(auto.execute(_SCHEMA_BYTES, {"schema": schema}).scalar() or 0)
    return before, after
