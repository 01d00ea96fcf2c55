"""``mind.sessions``: groups of frames, one active auto session per (mind, project)."""

from __future__ import annotations


from waggle_store.context import MindContext
from waggle_store.records import Session
from waggle_store.repositories.sessions import SessionRepository


class SessionsAPI:
    def __init__(self, mind: MindContext) -> None:
        self.mind = mind

    def ensure_active(self, project_id: str | None = None) -> Session:
        """The one active auto session of (mind, project), created if needed; race-free."""
        with self.mind.write() as s:
            return SessionRepository(s, self.mind.id).ensure_active(project_id)

    def create(self, project_id: str | None = None) -> Session:
        """Start a new auto session; the project's previous active auto session is closed."""
        with self.mind.write() as s:
            return SessionRepository(s, self.mind.id).create(project_id)

    def ensure(self, gop_id: str, *, project_id: str | None = None,
               summary: str | None = None) -> Session:
        """A named session (harvest, day sessions): get it, or create it active."""
        with self.mind.write() as s:
            return SessionRepository(s, self.mind.id).ensure(gop_id, project_id=project_id,
                                                             summary=summary)

    def get(self, gop_id: str) -> Session | None:
        with self.mind.read() as s:
            return SessionRepository(s, self.mind.id).get(gop_id)

    def close(self, gop_id: str, summary: str | None = None) -> Session:
        with self.mind.write() as s:
            return SessionRepository(s, self.mind.id).close(gop_id, summary)

    def archive(self, gop_id: str) -> Session:
        with self.mind.write() as s:
            return SessionRepository(s, self.mind.id).archive(gop_id)

    def list(self, *, project_id: str | None = None, status: str | None = None) -> list[Session]:
        """Newest first (started_at, then id); project_id=None means every project."""
        with self.mind.read() as s:
            return SessionRepository(s, self.mind.id).list(project_id=project_id, status=status)
