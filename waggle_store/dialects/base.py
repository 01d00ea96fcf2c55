"""The protocol every dialect adapter implements; all dialect-specific SQL lives behind it.

Naming contract shared with the migrations: every table name comes from
:func:`waggle_store.models.base.table_name` (``waggle_`` + its short name; the constants below).
The keyword index is ``waggle_memory_frames_fts`` (SQLite FTS5) or the generated column
``waggle_memory_frames.content_tsv`` (Postgres); the vector index of embedding model N is the
table ``waggle_frame_vectors_N``. Raw SQL names tables unqualified: on PostgreSQL the store's
schema is first on the ``search_path`` of every transaction waggle_store runs (see
``waggle_store.dialects.postgres_engine``).

Lane contract: every filter (minds, session, since/until, and for the vector lane "the manifest
says ready for this model") is applied *inside* the lane, so a lane returns ``limit`` hits whenever
that many matching frames exist. Callers therefore never post-filter and never come up short.
Lanes return each hit's frame columns (``LaneHit.frame``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final, Literal, Protocol, TypeAlias

from sqlalchemy import ColumnElement, Connection, any_, bindparam, event
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.orm import Session
from sqlalchemy.types import TypeEngine

from waggle_store.models.base import table_name

#: What the read-side methods run on: searches use a bare Core connection (cheaper per search than
#: an ORM Session); maintenance runs inside a write Session.
Executor: TypeAlias = Session | Connection


T_FRAMES: Final = table_name("memory_frames")
T_FTS: Final = table_name("memory_frames_fts")
T_EMBEDDINGS: Final = table_name("frame_embeddings")
T_MODELS: Final = table_name("embedding_models")
T_MENTIONS: Final = table_name("entity_mentions")
T_MIND_MODELS: Final = table_name("mind_embedding_models")


def vector_table_name(model_id: int) -> str:
    return table_name(f"frame_vectors_{int(model_id)}")


def vector_key(dialect: str) -> str:
    """The column of a vector table holding the frame id: vec0's ``rowid`` on SQLite."""
    return "rowid" if dialect == "sqlite" else "frame_id"


def in_values(dialect: str, column: ColumnElement[Any], name: str,
              type_: TypeEngine[Any]) -> ColumnElement[bool]:
    """``column IN <the list bound as name>``, in the form ``dialect`` runs cheapest: on
    PostgreSQL one array parameter (the statement text does not change with the list's length,
    so psycopg prepares it and the server plans it once; an expanded IN is re-parsed,
    re-rendered and re-planned on every search), elsewhere an expanding ``IN``."""
    if dialect == "postgresql":
        return column == any_(bindparam(name, type_=ARRAY(type_)))
    return column.in_(bindparam(name, expanding=True, type_=type_))


@dataclass
class Capabilities:
    """What this backend can do right now, and why not where it cannot."""

    dialect: str
    keyword_search: bool
    vector_backend: bool
    reasons: list[str] = field(default_factory=list)
    versions: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class LaneHit:
    """One hit of a lane. Treated as immutable, not declared frozen: a frozen dataclass's
    ``__init__`` sets each field through ``object.__setattr__`` (several times slower), and a
    search builds ~120 hits (both lanes, then the vector lane's settled copy). Nothing changes a
    hit after its lane returned it."""

    frame_id: int
    score: float  # the backend's raw score (idf sum, cosine distance)
    #: The frame's columns in :class:`waggle_store.records.Frame` order: every lane joins the frame
    #: anyway (filters, manifest), so the search needs no second statement to fetch them.
    frame: tuple[Any, ...]
    #: Whether the frame mentions any entity (only such frames can have a graph distance).
    mentions: bool = False


@dataclass(frozen=True)
class DerivedProblem:
    """One missing or broken derived object (:mod:`waggle_store.dialects.derived`): the FTS5 table
    or a trigger, the tsvector column or its GIN index, a vector table or its index/trigger
    (``model_id`` set for those), SQLite's frame-metadata side table or a trigger of it,
    PostgreSQL's metadata GIN index (``lane`` "metadata"); or (``lane`` "rows") the rows of
    table ``name`` whose parent row is gone (a host's delete on a SQLite connection with
    foreign keys off skips the cascades; PostgreSQL always enforces them), ``problem`` saying
    so in a sentence."""

    lane: Literal["keyword", "vector", "rows", "metadata"]
    name: str
    problem: str
    model_id: int | None = None

    def __str__(self) -> str:
        if self.lane == "rows":
            return self.problem
        return f"{self.lane} index: {self.name} {self.problem}"


@dataclass(frozen=True)
class DerivedRepair:
    """What :meth:`SearchAdapter.repair_derived` did."""

    #: Of the problems it was given, what is still broken afterwards (a fresh
    #: :meth:`SearchAdapter.verify_derived`; empty when it was given none).
    remaining: list[DerivedProblem]
    #: Frames re-indexed in the keyword index (missing or stale there, or a stale context).
    keyword_fixed: int
    #: Rows removed: orphan rows named by the problems, and keyword-index and vector rows whose
    #: frame is gone.
    orphans: int
    #: Frames whose frame-metadata side-table rows (SQLite) differed from their metadata and
    #: were written again.
    metadata_fixed: int = 0


class ModelNotActiveError(Exception):
    """The vector lane was asked for a model that is no longer the active one (another process
    registered another): the caller looks the model up again."""


@dataclass(frozen=True)
class LaneFilter:
    """The filters every lane applies inside its query."""

    mind_ids: Sequence[int]
    gop_id: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    #: The frame attributes a search's ``where`` asks for (:class:`Attributes`), or None.
    attributes: Attributes | None = None

    @property
    def narrowed(self) -> bool:
        """True when more than the mind restricts the lane (the vector lane may need exact
        scans)."""
        return self.gop_id is not None or self.since is not None or self.until is not None


@dataclass(frozen=True)
class Attributes:
    """Filters on the frame's own columns, every one of which must hold: its source and its
    importance among the given ones, its salience at least ``min_salience`` (a frame never
    consolidated has none and fails it), and each ``metadata`` key holding a JSON scalar equal
    to the given one (``(key, value)`` pairs; numbers compare as numbers, ``True`` is not 1)."""

    sources: tuple[str, ...] | None = None
    importances: tuple[str, ...] | None = None
    min_salience: float | None = None
    metadata: tuple[tuple[str, Any], ...] = ()


@dataclass(frozen=True)
class VectorRow:
    """One vector to store: the frame, its mind (the partition), its time and session (filters)."""

    frame_id: int
    mind_id: int
    gop_id: str
    created_at: datetime
    vector: Sequence[float]


class VectorTables:
    """The vector tables this store has already ensured, per model id.

    ``CREATE ... IF NOT EXISTS`` still takes its table locks (Postgres: the advisory lock and the
    ShareLock of ``CREATE INDEX``) until the transaction ends, so running it in every write
    transaction would serialise every concurrent writer, whatever its mind. A model counts as
    ensured only after the transaction that ensured it committed: a rolled-back CREATE leaves no
    table.
    """

    def __init__(self) -> None:
        self._ready: set[int] = set()

    def ready(self, model_id: int) -> bool:
        return model_id in self._ready

    def ensured_in(self, session: Session, model_id: int) -> None:
        def committed(session: Session) -> None:
            if not session.in_nested_transaction():  # "after_commit" fires for savepoints too
                self._ready.add(model_id)

        event.listen(session, "after_commit", committed)


class SearchAdapter(Protocol):
    """What differs between the SQL dialects: the three lanes, the vector rows, and the derived
    objects (keyword index, vector tables) with their checks and repairs."""

    dialect: str

    def capabilities(self, session: Session) -> Capabilities:
        """What this backend can do right now, and why not (``health()``)."""
        ...

    def vector_off(self, session: Executor) -> str | None:
        """None when the vector backend is usable; else why not, and how to fix it, in one line.
        Cheap (cached): checked on every search and write."""
        ...

    # -- lanes ------------------------------------------------------------------------------

    def keyword_search(
        self, session: Executor, *, terms: Sequence[str], where: LaneFilter, limit: int
    ) -> list[LaneHit]:
        """Best first. ``terms`` come from :func:`waggle_store.search.query.keyword_terms`."""
        ...

    def like_search(
        self, session: Executor, *, patterns: Sequence[str], where: LaneFilter, limit: int
    ) -> list[LaneHit]:
        """The fallback when the keyword index errors: escaped ``LIKE`` patterns, newest first."""
        ...

    def vector_search(
        self,
        session: Executor,
        *,
        model_id: int,
        vector: Sequence[float],
        where: LaneFilter,
        limit: int,
    ) -> list[LaneHit]:
        """Nearest first (score = cosine distance), only frames whose manifest is ready for
        ``model_id`` with the frame's current content hash; :class:`ModelNotActiveError` when
        ``model_id`` is no longer the active model."""
        ...

    # -- vector rows --------------------------------------------------------------------------

    def ensure_vector_table(
        self, session: Session, model_id: int, dimensions: int, *, repair: bool = False
    ) -> None:
        """Create the model's vector table and what keeps it in step (indexes, trigger) if
        missing. Once per store and model (see :class:`VectorTables`); ``repair`` runs it again."""
        ...

    def upsert_vectors(self, session: Session, model_id: int, rows: Sequence[VectorRow]) -> None:
        """Replace the vectors of these frames (already validated and unit-normalised)."""
        ...

    def delete_vectors(self, session: Session, model_id: int, frame_ids: Sequence[int]) -> None: ...

    def read_vectors(
        self, session: Executor, model_id: int, frame_ids: Sequence[int]
    ) -> dict[int, list[float]]:
        """The stored vectors of those of these frames that have one (export, consolidation);
        as stored, i.e. unit-normalised. Frames without one are left out."""
        ...

    # -- derived objects (waggle_store.dialects.derived) -------------------------------------

    def verify_derived(self, session: Executor) -> list[DerivedProblem]:
        """What is missing or broken of the keyword index and of each live model's vector
        table, then the store tables with orphan rows (lane "rows"); empty when everything is
        in place. Reads catalogues (and on SQLite ``PRAGMA foreign_key_check``): ``health()``
        runs it."""
        ...

    def repair_derived(
        self, session: Session, problems: Sequence[DerivedProblem], *, mind_id: int | None = None
    ) -> DerivedRepair:
        """Recreate what ``problems`` (from :meth:`verify_derived`) names, with the same DDL the
        migration and ``ensure_vector_table`` use, and delete the orphan rows it names; then
        bring the derived rows in step with the frames: re-index the frames of ``mind_id`` (or
        all) missing from or stale in the keyword index, and delete keyword-index and vector
        rows whose frame is gone (store-wide). Vectors lost with a dropped table are re-embedded
        by reconcile, not here."""
        ...
