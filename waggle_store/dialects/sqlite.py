"""SQLite adapter: FTS5 for keywords, sqlite-vec ``vec0`` for vectors."""

from __future__ import annotations

from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from waggle_store.dialects.base import Capabilities
from waggle_store.engine import engine_info


class SQLiteAdapter:
    dialect = "sqlite"

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def capabilities(self, session: Session) -> Capabilities:
        info = engine_info(self.engine)
        reasons: list[str] = []
        versions: dict[str, str] = {"sqlite": info.sqlite_version or "?"}
        fts = session.execute(
            text("SELECT 1 FROM sqlite_master WHERE name = 'memory_frames_fts'")
        ).scalar() is not None
        if not fts:
            reasons.append("keyword search off: the FTS5 table memory_frames_fts is missing (run the migrations)")
        vec = bool(info.vector_extension)
        if vec:
            versions["sqlite_vec"] = str(session.execute(text("SELECT vec_version()")).scalar())
        else:
            reasons.append(f"vector search off: {info.vector_reason or 'sqlite-vec is not loaded'}")
        reasons.extend(info.warnings)
        return Capabilities("sqlite", keyword_search=fts, vector_backend=vec, reasons=reasons,
                            versions=versions)

    def __getattr__(self, name: str) -> Any:
        raise NotImplementedError(f"SQLiteAdapter.{name} is not implemented yet")
