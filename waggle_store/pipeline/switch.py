"""Switching a mind to another embedding model, explicitly, while the old one keeps serving.

1. The target model is registered (its vector table created) and recorded as the mind's
   ``switching`` model; the active model is untouched, so searches keep their vector lane.
2. Batch by batch, the mind's frames that have no current staged vector in the target are read
   (short read transaction), embedded with no transaction open, and written into the target's
   vector table with a staging row each (one write transaction per batch). A crash (even
   kill -9) loses at most the batch in flight: running the switch again resumes from the
   staging rows.
3. When no frame is left, one transaction flips: staged vectors become the manifest, frames
   written since the last batch are left pending for reconcile, the old model is retired and its
   vectors of this mind dropped — only now.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Final

from waggle_store.context import MindContext
from waggle_store.dialects.base import VectorRow
from waggle_store.embeddings.base import Embedder, validate_vector
from waggle_store.embeddings.sentences import text_form_of
from waggle_store.errors import EmbeddingProviderError, WaggleStoreError
from waggle_store.records import SwitchReport
from waggle_store.repositories.knowledge_common import lock_graph
from waggle_store.repositories.mind_models import MindModelRepository, describe
from waggle_store.repositories.minds import mind_exists
from waggle_store.repositories.vectors import (
    frame_rows,
    model_key,
    model_key_of,
    register_model,
)

__all__ = ["SWITCH_BATCH_SIZE", "switch_embedding_model"]

log = logging.getLogger(__name__)

#: Frames per embedding request and per write transaction of a switch.
SWITCH_BATCH_SIZE: Final = 128


def switch_embedding_model(mind: MindContext, embedder: Embedder, *,
                           progress: Callable[[int, int], None] | None = None,
                           batch_size: int = SWITCH_BATCH_SIZE) -> SwitchReport:
    """Re-embed ``mind`` into ``embedder``'s model and make it the mind's active model; see the
    module docstring. ``progress(done, total)`` after each batch. A provider failure raises
    (:class:`EmbeddingProviderError`) with the switch left resumable and the old model serving.
    """
    key = model_key(embedder)  # may resolve an "auto" embedder: outside any transaction
    form = text_form_of(embedder)
    with mind.write() as session:
        lock_graph(session, mind.id)  # the mind row first, as every write path
        target = register_model(session, mind.adapter, key)
        models = MindModelRepository(session, mind.id)
        active = models.active()
        from_model = describe(model_key_of(session, active)) if active is not None else None
        if active == target:
            return SwitchReport(mind.name, from_model, describe(key), 0, False)
        models.begin_switch(target)
        total = models.count_frames()
    embedded = 0
    while True:
        with mind.read() as session:
            todo = MindModelRepository(session, mind.id).unstaged(target, max(1, batch_size),
                                                                  form)
        if not todo:
            break
        try:
            vectors = embedder.embed_documents([content for _, content, _ in todo])
            if len(vectors) != len(todo):
                raise WaggleStoreError(
                    f"the embedder returned {len(vectors)} vectors for {len(todo)} texts")
            units = [validate_vector(v, key.dimensions, normalize=True) for v in vectors]
        except Exception as exc:
            log.warning("switching mind %r stopped (resumable): %s", mind.name, exc)
            raise EmbeddingProviderError(
                f"switching mind {mind.name!r} to {describe(key)} stopped after {embedded} "
                f"frames: {type(exc).__name__}: {exc}; the old model still serves, and running "
                "the switch again resumes it") from exc
        with mind.write() as session:
            rows = frame_rows(session, [fid for fid, _, _ in todo])
            current = [(fid, chash, unit) for (fid, _, chash), unit in zip(todo, units, strict=True)
                       if fid in rows and rows[fid].content_hash == chash]
            mind.adapter.upsert_vectors(session, target, [
                VectorRow(fid, mind.id, rows[fid].gop_id, rows[fid].created_at, unit)
                for fid, _, unit in current])
            MindModelRepository(session, mind.id).stage(target, [(f, h) for f, h, _ in current],
                                                        form)
        embedded += len(current)
        if progress is not None:
            progress(embedded, total)
    with mind.write() as session:
        lock_graph(session, mind.id)
        if not mind_exists(session, mind.id):
            raise WaggleStoreError(f"mind {mind.name!r} was dropped during the switch")
        MindModelRepository(session, mind.id).flip(mind.adapter, target, form)
    log.info("mind %r switched from %s to %s (%d frames embedded)", mind.name, from_model,
             describe(key), embedded)
    return SwitchReport(mind.name, from_model, describe(key), embedded, True)
