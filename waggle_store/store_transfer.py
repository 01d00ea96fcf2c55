"""The store's export/import methods and ``purge``, kept out of ``store.py`` to keep it small.

Part of the store layer: :class:`TransferMixin` is a base of :class:`waggle_store.store.Store`
and only resolves names and hands a context to :mod:`waggle_store.pipeline.transfer`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from waggle_store.context import MindContext, StoreContext
from waggle_store.errors import InvalidInputError, NotFoundError
from waggle_store.pipeline.transfer import export_mind, jsonl_records, run_import
from waggle_store.pipeline.transfer.export import Destination
from waggle_store.pipeline.transfer.importer import Source
from waggle_store.records import ExportReport, ImportReport, PurgeReport
from waggle_store.repositories.minds import MindRepository, check_mind_name
from waggle_store.unitofwork import JoinedDatabase

if TYPE_CHECKING:
    from waggle_store.mind import Mind

__all__ = ["TransferMixin"]

Progress = Callable[[int, int], None]


class TransferMixin:
    """``export_mind``, ``import_mind``, ``import_waggle_mind``, ``import_openfang``,
    ``export_openfang``, and ``purge`` (what the store's files keep of deleted data)."""

    context: StoreContext

    def _mind_context(self, mind: str | Mind) -> MindContext:
        if not isinstance(mind, str):
            return mind.context
        with self.context.read() as session:
            row = MindRepository(session).get(check_mind_name(mind))
            if row is None:
                raise NotFoundError(f"no mind named {mind!r}")
            return MindContext(self.context, int(row.id), str(row.name), str(row.kind))

    def export_mind(self, name: str | Mind, dest: Destination, *, include_vectors: bool = False,
                    progress: Progress | None = None) -> ExportReport:
        """Write the mind as ``waggle-mind`` JSONL (``docs/export-format.md``) to a path or an
        open file. ``include_vectors`` adds each frame's current vector (large: one line of
        floats per frame). ``progress(done, total)`` is called as records are written."""
        return export_mind(self._mind_context(name), dest, include_vectors=include_vectors,
                           progress=progress)

    def import_mind(self, src: Source, *, into: str | None = None, merge: bool = False,
                    progress: Progress | None = None) -> ImportReport:
        """Import a ``waggle-mind`` JSONL export into the mind ``into`` (default: the name the
        file gives), created if missing. A mind that already holds anything is refused with
        ``ConflictError`` unless ``merge=True``. Every record is checked first, with the API's
        caps: a bad line raises ``InvalidInputError`` naming it and nothing is imported.
        Imported harvest sources arrive with ``auto_sync`` off."""
        with jsonl_records(src) as (header, records):
            name = check_mind_name(into) if into is not None else header["mind"]
            return run_import(self.context, name, header["kind"], records, progress=progress,
                              merge=merge)

    def import_waggle_mind(self, path: str | os.PathLike[str], *, into: str, merge: bool = True,
                           progress: Progress | None = None) -> ImportReport:
        """Import a Waggle ``.mind`` SQLite file into the mind ``into``; the old app's known data
        bugs are repaired and listed in ``problems``, never fatal. ``merge=False`` refuses a
        mind that already holds data (ConflictError). The file is opened read-only and
        immutable, without trusting its schema (``docs/export-format.md``)."""
        from waggle_store.pipeline.transfer.waggle_mind import waggle_mind_records

        with waggle_mind_records(path) as (records, problems):
            return run_import(self.context, check_mind_name(into), "workspace", records,
                              progress=progress, problems=problems, merge=merge)

    def import_openfang(self, src: Source, *, into: str, merge: bool = True,
                        progress: Progress | None = None) -> ImportReport:
        """Import an OpenFang memory JSON export (fragments, entities, relations, kv);
        ``merge`` as :meth:`import_waggle_mind`'s."""
        from waggle_store.pipeline.transfer.openfang import openfang_records

        with openfang_records(src) as (records, problems):
            return run_import(self.context, check_mind_name(into), "workspace", records,
                              progress=progress, problems=problems, merge=merge)

    def export_openfang(
        self, name: str | Mind, dest: Destination, *,
        progress: Callable[[int, int], None] | None = None,
    ) -> ExportReport:
        """Write the mind in OpenFang's memory JSON export shape; ``progress(done, total)`` as
        :meth:`export_mind`'s."""
        from waggle_store.pipeline.transfer.openfang import export_openfang

        return export_openfang(self._mind_context(name), dest, progress)

    def purge(self) -> PurgeReport:
        """Make forgotten (deleted) text unrecoverable from the database's files.

        SQLite: the keyword index merged, ``VACUUM`` with ``secure_delete`` on, the WAL
        checkpointed and truncated. PostgreSQL: ``VACUUM (FULL)`` of each of the store's
        tables (each locked while it is rewritten). Run it after deleting what must not stay
        on disk; it takes as long as rewriting the database. A store joined to a host's
        transaction (``store.within``) cannot purge: VACUUM runs outside transactions."""
        db = self.context.db
        if isinstance(db, JoinedDatabase):
            raise InvalidInputError("purge() needs the store's own engine, not a joined "
                                    "connection (VACUUM cannot run inside a transaction)")
        engine = db.engine
        if engine.dialect.name == "sqlite":
            from waggle_store.dialects.sqlite_maint import purge as purge_sqlite

            before, after = purge_sqlite(engine)
        else:
            from waggle_store.dialects.postgres_maint import purge as purge_postgres

            before, after = purge_postgres(engine, self.context.schema or "public")
        return PurgeReport(before, after)
