"""Rebuild the derived indexes (keyword index, vectors) from the tables they derive from.

What drifts and how it is repaired:

* keyword index: SQLite's FTS5 rows are kept by triggers, but a bulk load with triggers off, a
  restore, or an older writer can leave frames unindexed or stale, and delete paths that bypass
  the triggers leave orphans. Postgres indexes a generated column, which cannot drift (0).
* vectors: a frame whose manifest is not ``ready`` for the active model (pending after an embedder
  outage, failed, written by a different model, content changed since it was embedded, or made
  in a text form the embedder no longer makes: ``embeddings/sentences.py``), or whose vector row
  is gone, is embedded again, in batches of :data:`EMBED_BATCH_SIZE`, each embedded
  outside any transaction and stored in one write transaction. The frames to embed are read in
  pages of :data:`PAGE_SIZE` ids (keyset, by id), so memory does not grow with the store.
* orphans: keyword or vector rows whose frame no longer exists are deleted.
* conversation counters: a conversation whose message count or last ``seq`` disagrees with its
  message rows (rows changed behind the API) is listed in ``problems``; ``repair=True`` sets
  the counters from the rows.
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
from collections.abc import Callable, Iterator
from typing import Final

from waggle_store.context import StoreContext
from waggle_store.dialects.common import frames_missing_vectors
from waggle_store.embeddings.sentences import text_form_of
from waggle_store.errors import VectorTableMissingError
from waggle_store.pipeline.embed import EMBED_BATCH_SIZE, embed_frames
from waggle_store.records import ReconcileReport
from waggle_store.repositories.conversations import counter_drift
from waggle_store.repositories.frame_upkeep import StaleFrames, last_frame_id
from waggle_store.repositories.vectors import model_key, register_model

__all__ = ["reconcile"]

log = logging.getLogger(__name__)


#: Frame ids read per page while walking the frames to embed: memory is a page, whatever the
#: store's size (a million ids held at once cost tens of MB, and grew with the store).
PAGE_SIZE: Final = 20 * EMBED_BATCH_SIZE


class _StaleFrames:
    """The frames without a current vector in ``model_id``, read page by page in id order.

    Two disjoint sets: by the manifest alone (none, not ready, another model, another content
    hash, another text form than ``text_form``) and, through the adapter, a ready manifest
    whose vector row is missing. Only frames of the minds that use ``model_id`` or have no
    model yet (a mind on another model is switched explicitly, never by reconcile), and only
    those that existed when the walk began (``up_to``): frames written meanwhile were embedded
    by their writer or wait for the next run, and the total stays what it said.
    """

    def __init__(self, store: StoreContext, model_id: int, mind_id: int | None,
                 text_form: str) -> None:
        self.store, self.model_id, self.mind_id = store, model_id, mind_id
        self.text_form = text_form
        with store.read() as session:
            self.up_to = last_frame_id(session)
            self.query = StaleFrames(model_id, mind_id, text_form, self.up_to)
            self.total = self.query.count(session)
        self.total += sum(len(page) for page in self._missing_pages())

    def _missing_pages(self) -> Iterator[list[int]]:
        after = 0
        while True:
            with self.store.read() as session:
                page = frames_missing_vectors(
                    session, self.store.adapter.dialect, self.model_id, self.mind_id,
                    after=after, limit=PAGE_SIZE, up_to=self.up_to)
            if not page:
                return
            yield page
            after = page[-1]

    def pages(self) -> Iterator[list[int]]:
        """Keyset pages (``id > last``): a frame that fails to embed is passed, not re-read."""
        after = 0
        while True:
            with self.store.read() as session:
                page = self.query.page(session, after=after, limit=PAGE_SIZE)
            if not page:
                break
            yield page
            after = page[-1]
        # Embedding the pages above never adds to this set: it writes ready manifests with
        # their vector rows.
        yield from self._missing_pages()


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
        # Broken derived objects, then rows whose mind (or other parent) a host deleted with
        # foreign keys off: reported, and recreated or removed with repair=True. The keyword
        # index's rows and the vector rows are brought in step either way.
        found = store.adapter.verify_derived(session)
        fixed = store.adapter.repair_derived(session, found if repair else [], mind_id=mind_id)
        objects = [p for p in found if p.lane != "rows"]
        stray = [str(p) for p in found if p.lane == "rows"]
        remaining = [p for p in (fixed.remaining if repair else found) if p.lane != "rows"]
        for problem in remaining:
            log.warning("reconcile: %s%s", problem, "" if repair else " (repair=True recreates it)")
        for sentence in stray:
            log.warning("reconcile: %s", sentence)
        fts_fixed, orphans = fixed.keyword_fixed, fixed.orphans
        vector_backend = store.adapter.vector_off(session) is None
        still = set(map(str, remaining))
        # ReconcileReport's problems and repaired, in that order.
        problems = ([*map(str, objects), *stray],
                    [str(p) for p in objects if str(p) not in still] + (stray if repair else []))
        # Conversation counters that disagree with their message rows: listed, and set from
        # the rows with repair=True (a cheap UPDATE of the counters, no lock on the messages).
        drift = counter_drift(session, mind_id, repair=repair)
        problems[0].extend(drift)
        if repair:
            problems[1].extend(drift)
        if fixed.metadata_fixed:  # brought in step either way, like the keyword index's rows
            drifted = (f"{fixed.metadata_fixed} frame(s) had metadata-filter entries out of step "
                       "with their metadata: written again")
            log.warning("reconcile: %s", drifted)
            problems[0].append(drifted)
            problems[1].append(drifted)

    vectors_fixed = 0
    if store.embedder is not None and vector_backend:
        try:
            key = model_key(store.embedder)  # may probe a remote provider: outside any transaction
        except Exception as exc:  # noqa: BLE001 - provider down: the keyword repairs still count
            log.warning("reconcile cannot embed: the embedder failed: %s", exc)
            return ReconcileReport(fts_fixed, 0, orphans, *problems)
        try:
            with store.write() as session:
                model_id = register_model(session, store.adapter, key, repair=True)
        except VectorTableMissingError as exc:  # a runtime role: the owner's step comes first
            log.warning("reconcile cannot embed: %s", exc)
            return ReconcileReport(fts_fixed, 0, orphans, *problems)
        stale = _StaleFrames(store, model_id, mind_id, text_form_of(store.embedder))
        done = 0
        for page in stale.pages():
            stop = False
            for start in range(0, len(page), EMBED_BATCH_SIZE):
                batch = page[start : start + EMBED_BATCH_SIZE]
                report = embed_frames(store, batch)
                vectors_fixed += report.embedded
                done += len(batch)
                if progress is not None:
                    progress(done, stale.total)
                if report.error is not None and report.embedded == 0:
                    log.warning("reconcile stopped embedding: %s", report.error)
                    stop = True
                    break
            if stop:
                break
    return ReconcileReport(fts_fixed, vectors_fixed, orphans, *problems)
