"""The derived objects each backend keeps beside the tables: their DDL, in one place, and the checks
that find them missing or broken.

Derived objects are what the search reads but no ORM model describes, so Alembic's autogenerate
cannot see them; this module is what notices a dropped one:

* SQLite: the FTS5 table ``memory_frames_fts`` and the three triggers that keep it in step with
  ``memory_frames`` (a dropped insert trigger silently stops new writes from being
  keyword-searchable);
* Postgres: the generated column ``memory_frames.content_tsv`` and its GIN index (a dropped index
  makes every keyword search a sequential scan; an invalid one, left by a failed
  ``CREATE INDEX CONCURRENTLY``, is never used);
* the objects of the search's metadata filter (:mod:`.frame_metadata`): SQLite's side table
  and its triggers, Postgres's GIN index on ``metadata``;
* both: each registered, not retired embedding model's vector table and what keeps it usable
  (SQLite: the ``vec0`` table and its delete trigger; Postgres: the table, its HNSW and ``mind_id``
  indexes). Their DDL stays in the adapters' ``ensure_vector_table``, which repair re-runs.

The migrations create the same objects (0001 under the unprefixed names, 0004 renames them to
``waggle_*``); the migrations keep their own frozen statements, as migrations must, and the
tests check that a freshly migrated and an upgraded store report no problem here. Changing a
statement below means a new migration that applies the change.

The checks only read catalogues (``sqlite_master``, ``pg_attribute``, ``pg_index``): cheap enough
for every ``health()`` call.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, Literal

from sqlalchemy import text
from sqlalchemy.orm import Session

from waggle_store.dialects.base import (
    T_EMBEDDINGS,
    T_FRAMES,
    T_FTS,
    T_MODELS,
    DerivedProblem,
    Executor,
    SearchAdapter,
    vector_table_name,
)
from waggle_store.dialects.common import T_FRAME_METADATA
from waggle_store.dialects.context_index import (
    CONTEXT_COLUMN,
    CONTEXT_GIN_INDEX,
    CONTEXT_TSV_COLUMN,
    PG_AFTER_TRIGGER,
    PG_BEFORE_TRIGGER,
    PG_CONTEXT_DDL,
    SQLITE_CONTEXT_TRIGGERS,
    SQLITE_INSERT_BODY,
)
from waggle_store.dialects.frame_metadata import PG_METADATA_INDEX, SQLITE_METADATA_TRIGGERS

FTS_TABLE: Final = T_FTS

#: The FTS5 table keeps its own copy of the text so that reconcile can compare it with
#: ``memory_frames``; the triggers keep it in step in the same transaction as every write. Two
#: columns: the frame's own words and its conversational context (``context_index``), weighted
#: apart by the keyword lane (``keyword_rank``: each term asked of each column). Migration 0006
#: rebuilt the one-column table of 0001.
FTS5_TABLE_DDL: Final = (
    f"CREATE VIRTUAL TABLE IF NOT EXISTS {FTS_TABLE} "
    "USING fts5(content, context, tokenize='porter unicode61')"
)
_FTS5_WRITE: Final = (
    f"INSERT INTO {FTS_TABLE}(rowid, content, context) "
    f"VALUES (new.id, new.content, new.{CONTEXT_COLUMN});"
)
FTS5_TRIGGERS: Final[dict[str, str]] = {
    # The insert trigger sets the new frame's context; that update fires ``_au``, which writes
    # the FTS row (one FTS write per new frame, with its context).
    f"{T_FTS}_ai": (
        f"CREATE TRIGGER IF NOT EXISTS {T_FTS}_ai AFTER INSERT ON {T_FRAMES} BEGIN "
        f"{SQLITE_INSERT_BODY} END"
    ),
    f"{T_FTS}_ad": (
        f"CREATE TRIGGER IF NOT EXISTS {T_FTS}_ad AFTER DELETE ON {T_FRAMES} BEGIN "
        f"DELETE FROM {FTS_TABLE} WHERE rowid = old.id; END"
    ),
    f"{T_FTS}_au": (
        f"CREATE TRIGGER IF NOT EXISTS {T_FTS}_au "
        f"AFTER UPDATE OF content, {CONTEXT_COLUMN} ON {T_FRAMES} "
        f"BEGIN DELETE FROM {FTS_TABLE} WHERE rowid = old.id; {_FTS5_WRITE} END"
    ),
    **SQLITE_CONTEXT_TRIGGERS,
}
#: Every statement that builds SQLite's keyword index, in order (repair runs these).
FTS5_DDL: Final = (FTS5_TABLE_DDL, *FTS5_TRIGGERS.values())

TSV_COLUMN: Final = "content_tsv"
GIN_INDEX: Final = f"ix_{T_FRAMES}_content_tsv"
TSVECTOR_COLUMN_DDL: Final = (
    f"ALTER TABLE {T_FRAMES} ADD COLUMN IF NOT EXISTS {TSV_COLUMN} tsvector "
    "GENERATED ALWAYS AS (to_tsvector('english', content)) STORED"
)
GIN_INDEX_DDL: Final = (
    f"CREATE INDEX IF NOT EXISTS {GIN_INDEX} ON {T_FRAMES} USING gin ({TSV_COLUMN})"
)
#: Every statement that builds Postgres's keyword index, in order (repair runs these).
TSVECTOR_DDL: Final = (TSVECTOR_COLUMN_DDL, GIN_INDEX_DDL, *PG_CONTEXT_DDL)

Lane = Literal["keyword", "vector", "metadata"]

__all__ = [
    "FTS5_DDL",
    "TSVECTOR_DDL",
    "broken",
    "derived_reasons",
    "live_models",
    "postgres_problems",
    "registered_models",
    "repair_vector_tables",
    "sqlite_has_table",
    "sqlite_problems",
    "vector_table_exists",
    "vector_tables",
]


def registered_models(session: Executor) -> list[int]:
    """Every registered embedding model's id."""
    return [int(r[0]) for r in session.execute(text(f"SELECT id FROM {T_MODELS}")).all()]


def vector_table_exists(session: Executor, dialect: str, model_id: int) -> bool:
    """Whether model ``model_id``'s vector table exists: a vec0 table is listed in
    ``sqlite_master`` as a table, like its shadow tables; on PostgreSQL ``to_regclass`` answers
    without an error for a missing table (a catalog probe would not see the search path)."""
    name = vector_table_name(model_id)
    if dialect == "sqlite":
        sql = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = :name"
    else:
        sql = "SELECT 1 WHERE to_regclass(:name) IS NOT NULL"
    return session.execute(text(sql), {"name": name}).scalar() is not None


def vector_tables(session: Executor, dialect: str) -> list[int]:
    """The registered models whose vector table exists (reconcile removes their orphan rows)."""
    return [m for m in registered_models(session) if vector_table_exists(session, dialect, m)]


def live_models(session: Executor) -> list[tuple[int, int]]:
    """``(model id, dimensions)`` of every model that must have its vector table: the active one(s)
    and any other holding ready vectors (a model being switched to). A retired model, or a
    registered one with nothing embedded yet, needs none."""
    rows = session.execute(
        text(
            f"SELECT m.id, m.dimensions FROM {T_MODELS} m WHERE m.status = 'active' "
            f"OR (m.status <> 'retired' AND EXISTS (SELECT 1 FROM {T_EMBEDDINGS} e "
            "WHERE e.model_id = m.id AND e.status = 'ready')) ORDER BY m.id"
        )
    ).all()
    return [(int(r[0]), int(r[1])) for r in rows]


# -- SQLite ------------------------------------------------------------------------------------


#: What goes wrong while each FTS5 trigger is missing (the health() reason says it).
_FTS5_TRIGGER_EFFECTS: Final = {
    f"{T_FTS}_ai": "new frames are not keyword-searchable",
    f"{T_FTS}_ad": "deleted frames stay in the keyword index",
    f"{T_FTS}_au": "edited frames are found by their old text",
    f"{T_FRAMES}_ctx_ad": "a deleted frame's text stays searchable through the frame after it",
    f"{T_FRAMES}_ctx_au": "an edited frame's old text stays searchable through the frame after it",
}
assert set(_FTS5_TRIGGER_EFFECTS) == set(FTS5_TRIGGERS)


def _sqlite_objects(session: Executor) -> dict[str, tuple[str, str]]:
    """``name -> (type, table it belongs to)`` of the schema's tables and triggers."""
    rows = session.execute(
        text("SELECT name, type, tbl_name FROM sqlite_master WHERE type IN ('table', 'trigger')")
    ).all()
    return {str(r[0]): (str(r[1]), str(r[2])) for r in rows}


def sqlite_problems(session: Executor, *, vectors: bool) -> list[DerivedProblem]:
    """What is missing of the FTS5 index and (``vectors``: sqlite-vec is loaded) the vector
    tables."""
    objects = _sqlite_objects(session)
    problems: list[DerivedProblem] = []
    if objects.get(FTS_TABLE, ("", ""))[0] != "table":
        problems.append(DerivedProblem("keyword", FTS_TABLE, "(the FTS5 table) is missing"))
    problems.extend(
        DerivedProblem("keyword", name, f"(trigger) is missing: {effect}")
        for name, effect in _FTS5_TRIGGER_EFFECTS.items()
        if objects.get(name) != ("trigger", T_FRAMES)
    )
    if vectors:
        for model_id, _dims in live_models(session):
            table = vector_table_name(model_id)
            if objects.get(table, ("", ""))[0] != "table":
                problems.append(
                    DerivedProblem("vector", table, "(vector table) is missing", model_id))
            if objects.get(f"{table}_ad") != ("trigger", T_FRAMES):
                problems.append(DerivedProblem(
                    "vector", f"{table}_ad",
                    "(trigger) is missing: deleted frames keep their vectors", model_id))
    return [*problems, *_sqlite_metadata_problems(objects)]


def _sqlite_metadata_problems(objects: dict[str, tuple[str, str]]) -> list[DerivedProblem]:
    """The frame-metadata side table and its triggers (``frame_metadata``)."""
    problems: list[DerivedProblem] = []
    if objects.get(T_FRAME_METADATA, ("", ""))[0] != "table":
        problems.append(DerivedProblem("metadata", T_FRAME_METADATA,
                                       "(the frame-metadata table) is missing"))
    problems.extend(
        DerivedProblem("metadata", name, f"(trigger) is missing: {effect}")
        for name, (_, effect) in SQLITE_METADATA_TRIGGERS.items()
        if objects.get(name) != ("trigger", T_FRAMES))
    return problems


def sqlite_has_table(session: Executor, name: str) -> bool:
    return _sqlite_objects(session).get(name, ("", ""))[0] == "table"


def sqlite_repair_keyword(session: Executor) -> None:
    """Recreate whatever is missing of the FTS5 index (``IF NOT EXISTS``: present parts stay)."""
    for statement in FTS5_DDL:
        session.execute(text(statement))


# -- Postgres ----------------------------------------------------------------------------------


def _pg_index(session: Executor, name: str) -> tuple[bool, str] | None:
    """``(valid, definition)`` of the index ``name`` in the current schema, None if missing."""
    row = session.execute(
        text(
            "SELECT i.indisvalid, pg_get_indexdef(i.indexrelid) FROM pg_index i "
            "WHERE i.indexrelid = to_regclass(quote_ident(current_schema()) || '.' || :name)"
        ),
        {"name": name},
    ).first()
    return None if row is None else (bool(row[0]), str(row[1]))


def _pg_index_problem(session: Executor, name: str, lane: Lane, must_contain: str,
                      model_id: int | None = None) -> DerivedProblem | None:
    index = _pg_index(session, name)
    if index is None:
        return DerivedProblem(lane, name, "(index) is missing", model_id)
    valid, definition = index
    if not valid:
        return DerivedProblem(lane, name, "(index) is invalid (a failed build): it is never used",
                              model_id)
    if must_contain not in definition:
        return DerivedProblem(lane, name, f"(index) is not the expected one: {definition}",
                              model_id)
    return None


def _pg_generated(session: Executor, column: str = TSV_COLUMN) -> str | None:
    """``attgenerated`` of ``memory_frames.<column>`` (``'s'``: stored generated), None if
    missing."""
    value = session.execute(
        text(
            "SELECT attgenerated FROM pg_attribute WHERE attrelid = "
            f"to_regclass(quote_ident(current_schema()) || '.{T_FRAMES}') "
            "AND attname = :name AND NOT attisdropped"
        ),
        {"name": column},
    ).scalar()
    return None if value is None else str(value)


def postgres_problems(session: Executor, *, vectors: bool) -> list[DerivedProblem]:
    """What is missing or broken of the tsvector index and (``vectors``: pgvector is installed)
    the vector tables."""
    problems: list[DerivedProblem] = []
    generated = _pg_generated(session)
    if generated is None:
        problems.append(
            DerivedProblem("keyword", f"{T_FRAMES}.{TSV_COLUMN}", "(column) is missing"))
    elif generated != "s":
        problems.append(DerivedProblem(
            "keyword", f"{T_FRAMES}.{TSV_COLUMN}",
            "(column) is not generated from content: it does not follow writes"))
    gin = _pg_index_problem(session, GIN_INDEX, "keyword", f"USING gin ({TSV_COLUMN})")
    if gin is not None:
        problems.append(gin)
    problems.extend(_pg_context_problems(session))
    metadata = _pg_index_problem(session, PG_METADATA_INDEX, "metadata",
                                 "USING gin (metadata jsonb_path_ops)")
    if metadata is not None:
        problems.append(metadata)
    if vectors:
        for model_id, _dims in live_models(session):
            table = vector_table_name(model_id)
            exists = session.execute(
                text("SELECT to_regclass(quote_ident(current_schema()) || '.' || :name) "
                     "IS NOT NULL"),
                {"name": table},
            ).scalar()
            if not exists:
                problems.append(
                    DerivedProblem("vector", table, "(vector table) is missing", model_id))
                continue
            for name, must in ((f"{table}_hnsw", "USING hnsw"), (f"{table}_mind_id", "(mind_id)")):
                problem = _pg_index_problem(session, name, "vector", must, model_id)
                if problem is not None:
                    problems.append(problem)
    return problems


def _pg_context_problems(session: Executor) -> list[DerivedProblem]:
    """The context column's tsvector, its GIN index and the two triggers that keep contexts
    right (``context_index``)."""
    problems: list[DerivedProblem] = []
    if _pg_generated(session, CONTEXT_TSV_COLUMN) != "s":
        problems.append(DerivedProblem(
            "keyword", f"{T_FRAMES}.{CONTEXT_TSV_COLUMN}",
            "(column) is missing or not generated: frames are not found by their context"))
    gin = _pg_index_problem(session, CONTEXT_GIN_INDEX, "keyword",
                            f"USING gin ({CONTEXT_TSV_COLUMN})")
    if gin is not None:
        problems.append(gin)
    found = {
        str(r[0]) for r in session.execute(
            text("SELECT tgname FROM pg_trigger WHERE tgrelid = "
                 f"to_regclass(quote_ident(current_schema()) || '.{T_FRAMES}') "
                 "AND NOT tgisinternal")
        ).all()
    }
    problems.extend(
        DerivedProblem("keyword", name, "(trigger) is missing: frame contexts do not follow writes")
        for name in (PG_BEFORE_TRIGGER, PG_AFTER_TRIGGER)
        if name not in found
    )
    return problems


def postgres_repair_keyword(session: Executor, problems: Sequence[DerivedProblem]) -> None:
    """Rebuild the broken parts of the tsvector index: a column that is not the generated one is
    dropped and added again (which drops its index too), a broken index is dropped and built.
    Both rewrite or scan the whole table under a lock that blocks writes: that is why reconcile
    only does it when asked (``repair=True``)."""
    names = {p.name for p in problems if p.lane == "keyword"}
    column = f"{T_FRAMES}.{TSV_COLUMN}"
    if column in names:
        session.execute(text(f"ALTER TABLE {T_FRAMES} DROP COLUMN IF EXISTS {TSV_COLUMN}"))
        names.add(GIN_INDEX)
    if GIN_INDEX in names:
        session.execute(text(f"DROP INDEX IF EXISTS {GIN_INDEX}"))
    context = f"{T_FRAMES}.{CONTEXT_TSV_COLUMN}"
    if context in names:
        session.execute(text(f"ALTER TABLE {T_FRAMES} DROP COLUMN IF EXISTS {CONTEXT_TSV_COLUMN}"))
        names.add(CONTEXT_GIN_INDEX)
    if CONTEXT_GIN_INDEX in names:
        session.execute(text(f"DROP INDEX IF EXISTS {CONTEXT_GIN_INDEX}"))
    for statement in TSVECTOR_DDL:
        session.execute(text(statement))


def postgres_drop_broken_vector_indexes(session: Executor,
                                        problems: Sequence[DerivedProblem]) -> None:
    """Drop the vector indexes found invalid or wrong, so ``ensure_vector_table``'s
    ``CREATE INDEX IF NOT EXISTS`` builds them again."""
    for problem in problems:
        broken = "(index)" in problem.problem and "missing" not in problem.problem
        if problem.lane == "vector" and broken:
            session.execute(text(f"DROP INDEX IF EXISTS {problem.name}"))


def repair_vector_tables(adapter: SearchAdapter, session: Session,
                         problems: Sequence[DerivedProblem]) -> None:
    """Run ``ensure_vector_table`` again (``repair=True``) for every model with a broken object:
    the adapter owns that DDL. Vectors lost with a dropped table are re-embedded by reconcile
    (their manifests say ready, their rows are missing: ``frames_missing_vectors``)."""
    dims = dict(live_models(session))
    for model_id in sorted({p.model_id for p in problems if p.model_id is not None}):
        if model_id in dims:
            adapter.ensure_vector_table(session, model_id, dims[model_id], repair=True)


def broken(problems: Sequence[DerivedProblem], lane: str) -> bool:
    """Whether ``problems`` name an object of ``lane`` ("keyword", "metadata", ...)."""
    return any(p.lane == lane for p in problems)


def derived_reasons(problems: Sequence[DerivedProblem]) -> list[str]:
    """``health().reasons`` lines: one per problem, with what repairs it (an orphan rows
    problem says it itself)."""
    return [str(p) if p.lane == "rows" else
            f"{p.lane} search degraded: {p} (store.reconcile(repair=True) recreates it)"
            for p in problems]
