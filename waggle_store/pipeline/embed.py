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

from sqlalchemy.orm import Session

from waggle_store.context import StoreContext
from waggle_store.embeddings.base import validate_vector
from waggle_store.embeddings.sentences import text_form_of
from waggle_store.errors import (
    InvalidInputError,
    VectorTableMissingError,
    WaggleStoreError,
    scrub_secrets,
)
from waggle_store.models import FrameRow
from waggle_store.repositories.mind_models import (
    MindModelRepository,
    mismatch_reason,
    models_in_use,
    registered,
)
from waggle_store.repositories.minds import mind_names
from waggle_store.repositories.vectors import (
    ModelKey,
    frame_rows,
    mark_pending,
    model_key,
    model_key_of,
    register_model,
    store_vectors,
)

__all__ = ["EMBED_BATCH_SIZE", "EmbedReport", "embed_frames"]

log = logging.getLogger(__name__)

#: Texts per embedding request.
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

    Frames of a mind whose active model is another are not embedded (no provider call): they
    stay pending with the reason (:func:`~waggle_store.repositories.mind_models.mismatch_reason`)
    until the mind is switched explicitly. A mind without a model gets this one.
    """
    embedder = store.embedder
    ids = list(dict.fromkeys(int(i) for i in frame_ids))
    if embedder is None or not ids:
        return EmbedReport(0, 0)
    with store.read() as session:
        if store.adapter.vector_off(session) is not None:
            return EmbedReport(0, 0)
    key = model_key(embedder)  # may resolve an "auto" embedder: outside any transaction
    form = text_form_of(embedder)
    embedded = failed = 0
    error: str | None = None
    for start in range(0, len(ids), max(1, batch_size)):
        batch = ids[start : start + batch_size]
        with store.read() as session:
            rows = frame_rows(session, batch)
            texts = {row.id: (row.content, row.content_hash) for row in rows.values()}
            refused = _other_model_frames(session, key, rows)
        if refused:
            with store.write() as session:
                for why, fids in refused.items():
                    mark_pending(session, fids, why)
        skip = {fid for fids in refused.values() for fid in fids}
        order = [fid for fid in batch if fid in texts and fid not in skip]
        if not order:
            continue
        try:
            vectors = embedder.embed_documents([texts[fid][0] for fid in order])
            if len(vectors) != len(order):
                raise WaggleStoreError(
                    f"the embedder returned {len(vectors)} vectors for {len(order)} texts"
                )
        except Exception as exc:  # noqa: BLE001 - any provider failure: recorded, never a fake vector
            error = scrub_secrets(f"{type(exc).__name__}: {exc}")
            log.warning("embedding %d frames failed: %s", len(order), error)
            with store.write() as session:
                mark_pending(session, order, error)
            failed += len(order)
            break
        good: list[tuple[int, str, Sequence[float]]] = []
        bad: dict[int, str] = {}
        for fid, vec in zip(order, vectors, strict=True):
            try:
                unit = validate_vector(vec, key.dimensions, normalize=True)
                good.append((fid, texts[fid][1], unit))
            except InvalidInputError as exc:
                bad[fid] = f"{type(exc).__name__}: {exc}"
        with store.write() as session:
            try:
                model_id = register_model(session, store.adapter, key)
            except VectorTableMissingError as exc:  # a runtime role: the admin step is named
                mark_pending(session, order, str(exc))
                failed, error = failed + len(order), str(exc)
                break
            lost = _claim(session, key, model_id, {fid: rows[fid].mind_id for fid, _, _ in good})
            for why, fids in lost.items():
                mark_pending(session, fids, why)
            lost_ids = {fid for fids in lost.values() for fid in fids}
            embedded += store_vectors(session, store.adapter, model_id,
                                      [g for g in good if g[0] not in lost_ids], text_form=form)
            for fid, why in bad.items():
                mark_pending(session, [fid], why, status="failed", model_id=model_id)
        if bad:
            failed += len(bad)
            error = next(iter(bad.values()))
    return EmbedReport(embedded, failed, error)


def _other_model_frames(session: Session, key: ModelKey,
                        rows: dict[int, FrameRow]) -> dict[str, list[int]]:
    """Frames (by reason) whose mind's active model is not ``key``."""
    in_use = models_in_use(session)
    keys = registered(session)
    refused: dict[str, list[int]] = {}
    minds = {row.mind_id for row in rows.values()}
    other = {m for m in minds if m in in_use and keys[in_use[m]] != key}
    if not other:
        return refused
    names = mind_names(session, other)
    for fid, row in rows.items():
        if row.mind_id in other:
            why = mismatch_reason(names[row.mind_id], keys[in_use[row.mind_id]], key)
            refused.setdefault(why, []).append(fid)
    return refused


def _claim(session: Session, key: ModelKey, model_id: int,
           mind_of: dict[int, int]) -> dict[str, list[int]]:
    """Make ``model_id`` the active model of the minds that have none; the frames of a mind
    that got another one meanwhile are returned by reason (they are not stored)."""
    lost: dict[str, list[int]] = {}
    for mind_id in set(mind_of.values()):
        active = MindModelRepository(session, mind_id).claim(model_id)
        if active != model_id:
            why = mismatch_reason(mind_names(session, [mind_id])[mind_id],
                                  model_key_of(session, active), key)
            lost[why] = [fid for fid, m in mind_of.items() if m == mind_id]
    return lost
