"""The vector side of cognify: whether to embed, the embedding call, and the vectors' writes.

Embedding runs before cognify's write transaction, with no transaction open (a network call
never holds a database lock); the vectors are written in that transaction
(:func:`write_vectors`). A mind whose active model is not the store's embedder is not embedded
at all (:func:`vector_plan`): its frames are stored with a pending vector and the reason.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from sqlalchemy.orm import Session

from waggle_store.context import MindContext
from waggle_store.embeddings.sentences import text_form_of
from waggle_store.errors import scrub_secrets
from waggle_store.repositories.frame_writer import FrameWriter
from waggle_store.repositories.mind_models import MindModelRepository, mismatch_reason
from waggle_store.repositories.vectors import (
    frame_rows,
    mark_pending,
    model_key,
    model_key_of,
    store_vectors,
)

__all__ = ["embed_texts", "vector_plan", "write_vectors"]

log = logging.getLogger(__name__)


def embed_texts(mind: MindContext,
                texts: Sequence[str]) -> tuple[list[list[float]] | None, str | None]:
    """Embed outside any transaction; on failure return the reason instead of vectors."""
    embedder = mind.embedder
    if embedder is None:
        return None, None
    try:
        vectors = embedder.embed_documents(list(texts))
    except Exception as exc:  # noqa: BLE001 - provider down, quota, bad response: frames go in pending
        reason = scrub_secrets(f"{type(exc).__name__}: {exc}")
        log.warning("embedding %d text(s) failed; frames stored as pending: %s", len(texts), reason)
        return None, reason
    if len(vectors) != len(texts):
        return None, f"the embedder returned {len(vectors)} vectors for {len(texts)} texts"
    return vectors, None


def write_vectors(session: Session, mind: MindContext, vectors: dict[int, list[float] | None],
                   model_id: int | None, embed_error: str | None) -> set[int]:
    """Store the frames' vectors (skipping those already current); returns the ready frame ids."""
    if not vectors:
        return set()
    rows = frame_rows(session, list(vectors))
    manifests = FrameWriter(session, mind.id).manifests(list(vectors))
    form = text_form_of(mind.embedder)
    ready: set[int] = set()
    todo: list[tuple[int, str, list[float]]] = []
    missing: list[int] = []
    for frame_id, vector in vectors.items():
        row, manifest = rows[frame_id], manifests.get(frame_id)
        if (model_id is not None and manifest is not None and manifest.status == "ready"
                and manifest.model_id == model_id and manifest.content_hash == row.content_hash
                and manifest.text_form == form):
            ready.add(frame_id)  # a dedup hit whose vector is current: nothing to write
        elif vector is not None and model_id is not None:
            todo.append((frame_id, row.content_hash, vector))
        else:
            missing.append(frame_id)
    if todo and model_id is not None:
        store_vectors(session, mind.adapter, model_id, todo, text_form=form)
        ready.update(frame_id for frame_id, _, _ in todo)
    if missing and embed_error:
        mark_pending(session, missing, embed_error)
    return ready


def vector_plan(mind: MindContext) -> tuple[bool, str | None]:
    """Whether to embed at all, and if not, why (recorded on the pending manifest rows).

    A mind whose active model is not this store's embedder is never embedded through it: no
    provider call (and no bill) for a vector that could not be stored. Reading the embedder's
    model key may resolve an "auto" embedder: outside any transaction."""
    embedder = mind.embedder
    if embedder is None:
        return False, None
    with mind.read() as session:
        off = mind.adapter.vector_off(session)
        if off is not None:
            return False, off
        active = MindModelRepository(session, mind.id).active()
        active_key = model_key_of(session, active) if active is not None else None
    key = model_key(embedder)
    if active_key is not None and active_key != key:
        reason = mismatch_reason(mind.name, active_key, key)
        log.warning("%s", reason)
        return False, reason
    return True, None
