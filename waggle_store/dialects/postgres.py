"""Postgres adapter: generated tsvector + GIN for keywords, pgvector (HNSW) for vectors."""

from __future__ import annotations

from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from waggle_store.dialects.base import Capabilities


class PostgresAdapter:
    dialect = "postgresql"

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def capabilities(self, session: Session) -> Capabilities:
        reasons: list[str] = []
        versions = {"postgresql": str(session.execute(text("SHOW server_version")).scalar())}
        tsv = session.execute(
            text(
                "SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema() "
                "AND table_name = 'memory_frames' AND column_name = 'content_tsv'"
            )
        ).scalar() is not None
        if not tsv:
            reasons.append("keyword search off: memory_frames.content_tsv is missing (run the migrations)")
        vec_version = session.execute(
            text("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        ).scalar()
        if vec_version:
            versions["pgvector"] = str(vec_version)
        else:
            available = session.execute(
                text("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
            ).scalar()
            reasons.append(
                "vector search off: the pgvector extension is "
                + ("available but not installed (run the migrations as a role allowed to CREATE EXTENSION)"
                   if available else "not installed on this PostgreSQL server")
            )
        return Capabilities("postgresql", keyword_search=tsv, vector_backend=bool(vec_version),
                            reasons=reasons, versions=versions)

    def __getattr__(self, name: str) -> Any:
        raise NotImplementedError(f"PostgresAdapter.{name} is not implemented yet")
