"""Rebuild the derived indexes (DESIGN §4) from the tables they derive from.

What drifts and how it is repaired:

* keyword index: SQLite's FTS5 rows are kept by triggers, but a bulk load with triggers off, a
  restore, or an older writer can leave frames unindexed or stale, and delete paths that bypass
  the triggers leave orphans. Postgres indexes a generated column, which cannot drift (0).
* vectors: a frame whose manifest is not ``ready`` for the active model (pending after an embedder
  outage, failed, written by a different model, content changed since it was embedded), or whose
  vector row is gone, is embedded again, in batches of :data:`EMBED_BATCH_SIZE`, each embedded
  outside any transaction and stored in one write transaction.
* orphans: keyword or vector rows whose frame no longer exists are deleted.
* derived objects (FTS5 table and triggers, tsvector column and GIN index, vector tables and
  their index/trigger): checked on every run and listed in ``ReconcileReport.problems``;
  recreated only with ``repair=True`` (by the adapter, with the DDL the migration used). Why not
  always: on Postgres re-adding the generated column rewrites ``memory_frames`` and building the
  GIN index scans it, both under a lock that blocks every writer for as long as that takes,
  which a routine "reindex what drifted" call must not do unasked. (The store's own model's
  vector table is ensured on every run, as before: reconcile embeds into it.) The row-level
  steps above still run where they can (a missing FTS5 table has no rows to fix: 0), so after
  a repair they re-index what the missing triggers let through.

Running it twice in a row returns zeros the second time. Without an embedder (or a vector
backend) the vector step does nothing and frames stay pending; search stays keyword-only for them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from sqlalchemy import exists, or_, select

from waggle_store.context import StoreContext
from waggle_store.models import (
    EmbeddingModelRow,
    FrameEmbeddingRow,
    FrameRow,
    MindEmbeddingModelRow,
)
from waggle_store.pipeline.embed import EMBED_BATCH_SIZE, embed_frames
from waggle_store.records import ReconcileReport
from waggle_store.repositories.vectors import model_key, register_model

__all__ = ["reconcile"]

log = logging.getLogger(__name__)


def _stale_frames(store: StoreContext, model_id: int, mind_id: int | None) -> list[int]:
    """Frames without a current vector in ``model_id``: no manifest, not ready, another model,
    another content hash, or a ready manifest whose vector row is missing — of the minds that
    use ``model_id`` or have no model yet (a mind on another model is switched explicitly,
    never by reconcile)."""
    uses = MindEmbeddingModelRow
    ours = or_(
        FrameRow.mind_id.in_(select(uses.mind_id).where(uses.model_id == model_id,
                                                        uses.status == "active")),
        ~exists().where(uses.mind_id == FrameRow.mind_id, uses.status == "active"),
    )
    with store.read() as session:
        query = (
            select(FrameRow.id)
            .outerjoin(FrameEmbeddingRow, FrameEmbeddingRow.frame_id == FrameRow.id)
            .where(
                or_(
                    FrameEmbeddingRow.frame_id.is_(None),
                    FrameEmbeddingRow.status != "ready",
                    FrameEmbeddingRow.model_id.is_(None),
                    FrameEmbeddingRow.model_id != model_id,
                    FrameEmbeddingRow.content_hash != FrameRow.content_hash,
                )
            )
            .where(ours)
            .order_by(FrameRow.id)
        )
        if mind_id is not None:
            query = query.where(FrameRow.mind_id == mind_id)
        ids = list(session.scalars(query))
        missing = store.adapter.frames_missing_vectors(session, model_id, mind_id)
    return sorted(set(ids) | set(missing))


def reconcile(
    store: StoreContext,
    *,
    mind_id: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    repair: bool = False,
) -> ReconcileReport:
    """Repair the keyword and vector indexes of one mind (or all, ``mind_id=None``); see the
    module docstring.

    ``progress(done, total)`` is called after each embedding batch. Orphan rows belong to no mind
    any more, so they are removed store-wide even when a mind is given. ``repair`` recreates
    missing or broken derived objects first (store-wide: they belong to no mind).
    """
    with store.write() as session:
        found = store.adapter.verify_derived(session)
        remaining = store.adapter.repair_derived(session, found) if repair and found else found
        for problem in remaining:
            log.warning("reconcile: %s%s", problem, "" if repair else " (repair=True recreates it)")
        fts_fixed = store.adapter.repair_keyword_index(session, mind_id)
        orphans = store.adapter.remove_keyword_orphans(session)
        vector_backend = store.adapter.vector_backend_available(session)
        still = set(map(str, remaining))
        # ReconcileReport's problems and repaired, in that order.
        problems = ([str(p) for p in found], [str(p) for p in found if str(p) not in still])
        if vector_backend:
            model_ids = list(session.scalars(select(EmbeddingModelRow.id)))
            for model_id in model_ids:
                if store.adapter.vector_table_exists(session, model_id):
                    orphans += store.adapter.remove_vector_orphans(session, model_id)

    vectors_fixed = 0
    if store.embedder is not None and vector_backend:
        try:
            key = model_key(store.embedder)  # may probe a remote provider: outside any transaction
        except Exception as exc:  # noqa: BLE001 - provider down: the keyword repairs still count
            log.warning("reconcile cannot embed: the embedder failed: %s", exc)
            return ReconcileReport(fts_fixed, 0, orphans, *problems)
        with store.write() as session:
            model_id = register_model(session, store.adapter, key, repair=True)
        todo = _stale_frames(store, model_id, mind_id)
        done = 0
        for start in range(0, len(todo), EMBED_BATCH_SIZE):
            batch = todo[start : start + EMBED_BATCH_SIZE]
            report = embed_frames(store, batch)
            vectors_fixed += report.embedded
            done += len(batch)
            if progress is not None:
                progress(done, len(todo))
            if report.error is not None and report.embedded == 0:
                log.warning("reconcile stopped embedding: %s", report.error)
                break
    return ReconcileReport(fts_fixed, vectors_fixed, orphans, *problems)
