"""The protocol every dialect adapter implements; all dialect-specific SQL lives behind it.

Naming contract shared with the migrations: the keyword index is ``memory_frames_fts`` (SQLite FTS5)
or the generated column ``memory_frames.content_tsv`` (Postgres); the vector index of embedding
model N is the table ``frame_vectors_N``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from sqlalchemy.orm import Session


def vector_table_name(model_id: int) -> str:
    return f"frame_vectors_{int(model_id)}"


@dataclass
class Capabilities:
    """What this backend can do right now, and why not where it cannot."""

    dialect: str
    keyword_search: bool
    vector_backend: bool
    reasons: list[str] = field(default_factory=list)
    versions: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class LaneHit:
    frame_id: int
    score: float  # the backend's raw score (bm25, ts_rank_cd, cosine distance)


class SearchAdapter(Protocol):
    dialect: str

    def capabilities(self, session: Session) -> Capabilities: ...

    def keyword_search(
        self,
        session: Session,
        *,
        mind_ids: Sequence[int],
        terms: Sequence[str],
        limit: int,
        gop_id: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> list[LaneHit]: ...

    def vector_search(
        self,
        session: Session,
        *,
        model_id: int,
        mind_ids: Sequence[int],
        vector: Sequence[float],
        limit: int,
        gop_id: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> list[LaneHit]: ...

    def ensure_vector_table(self, session: Session, model_id: int, dimensions: int) -> None: ...

    def upsert_vectors(
        self, session: Session, model_id: int, rows: Sequence[tuple[int, int, Sequence[float]]]
    ) -> None:
        """rows: (frame_id, mind_id, unit vector)."""
        ...

    def delete_vectors(self, session: Session, model_id: int, frame_ids: Sequence[int]) -> None: ...
