"""Embedding stored frames: the write side of the vector lane.

Network calls never hold a database lock: :func:`embed_frames` reads the texts in one short read
transaction, embeds with no transaction open, then writes every vector in one write transaction.
The vectors and their manifest rows are written through :mod:`waggle_store.repositories.vectors`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from waggle_store.context import StoreContext
from waggle_store.embeddings.base import validate_vector
from waggle_store.errors import InvalidInputError, WaggleStoreError
from waggle_store.repositories.vectors import (
    frame_rows,
    mark_pending,
    model_key,
    register_model,
    store_vectors,
)

__all__ = ["EMBED_BATCH_SIZE", "EmbedReport", "embed_frames"]

log = logging.getLogger(__name__)

#: Texts per embedding request (the seed's reconcile batch).
EMBED_BATCH_SIZE: Final = 50


@dataclass(frozen=True)
class EmbedReport:
    """What :func:`embed_frames` did: vectors stored, frames left pending/failed, last error."""

    embedded: int
    failed: int
    error: str | None = None


def embed_frames(store: StoreContext, frame_ids: Sequence[int], *,
                 batch_size: int = EMBED_BATCH_SIZE) -> EmbedReport:
    """Embed these frames with the store's embedder and store their vectors.

    Per batch: read texts (short read transaction), embed (no transaction), write vectors and
    manifests (one write transaction). A provider failure leaves the batch ``pending`` with the
    error and stops: the provider is down, and reconcile will retry. No embedder or no vector
    backend → nothing happens (the frames stay pending; search runs keyword-only).
    """
    embedder = store.embedder
    ids = list(dict.fromkeys(int(i) for i in frame_ids))
    if embedder is None or not ids:
        return EmbedReport(0, 0)
    with store.read() as session:
        if not store.adapter.vector_backend_available(session):
            return EmbedReport(0, 0)
    embedded = failed = 0
    error: str | None = None
    for start in range(0, len(ids), max(1, batch_size)):
        batch = ids[start : start + batch_size]
        with store.read() as session:
            texts = {
                row.id: (row.content, row.content_hash)
                for row in frame_rows(session, batch).values()
            }
        order = [fid for fid in batch if fid in texts]
        if not order:
            continue
        try:
            vectors = embedder.embed_documents([texts[fid][0] for fid in order])
            key = model_key(embedder)
            if len(vectors) != len(order):
                raise WaggleStoreError(
                    f"the embedder returned {len(vectors)} vectors for {len(order)} texts"
                )
        except Exception as exc:  # any provider failure: record it, never invent a vector
            error = f"{type(exc).__name__}: {exc}"
            log.warning("embedding %d frames failed: %s", len(order), error)
            with store.write() as session:
                mark_pending(session, order, error)
            failed += len(order)
            break
        good: list[tuple[int, str, Sequence[float]]] = []
        bad: dict[int, str] = {}
        for fid, vec in zip(order, vectors, strict=True):
            try:
                good.append((fid, texts[fid][1], validate_vector(vec, key.dimensions, normalize=True)))
            except InvalidInputError as exc:
                bad[fid] = f"{type(exc).__name__}: {exc}"
        with store.write() as session:
            model_id = register_model(session, store.adapter, key)
            embedded += store_vectors(session, store.adapter, model_id, good)
            for fid, why in bad.items():
                mark_pending(session, [fid], why, status="failed", model_id=model_id)
        if bad:
            failed += len(bad)
            error = next(iter(bad.values()))
    return EmbedReport(embedded, failed, error)
