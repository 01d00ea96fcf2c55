"""The embedding-model registry and the vector manifest: the one path by which vectors enter a
store.

Vectors of different models are never compared: each registered (provider, model, dimensions)
triple gets its own vector table, and a mind is only searched in its own active model
(:mod:`waggle_store.repositories.mind_models`).

The manifest (``frame_embeddings``) is the truth about a frame's vector: ``ready`` with the
content hash that was embedded, or ``pending``/``failed`` with the error. A frame whose embedding
failed is never given a stand-in vector.

These functions run inside a caller's Session and never call a provider: embedding happens in
:mod:`waggle_store.pipeline.embed` (network calls never hold a database lock).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import insert, select, update
from sqlalchemy.orm import Session

from waggle_store.dialects.base import SearchAdapter, VectorRow
from waggle_store.embeddings.base import DescribesModel, validate_vector
from waggle_store.errors import InvalidInputError, scrub_secrets
from waggle_store.models import EmbeddingModelRow, FrameEmbeddingRow, FrameRow
from waggle_store.models.idioms import get_or_create
from waggle_store.timeutil import utcnow

__all__ = [
    "ModelKey",
    "frame_rows",
    "mark_pending",
    "model_key",
    "model_key_of",
    "register_model",
    "store_vectors",
]


@dataclass(frozen=True)
class ModelKey:
    provider: str
    model: str
    dimensions: int


def model_key(embedder: DescribesModel) -> ModelKey:
    """The registration key of an embedder. Reading ``dimensions`` may probe a remote provider,
    so call this outside any transaction."""
    return ModelKey(str(embedder.provider), str(embedder.model), int(embedder.dimensions))


def _as_key(embedder: DescribesModel | ModelKey) -> ModelKey:
    return embedder if isinstance(embedder, ModelKey) else model_key(embedder)


def register_model(
    session: Session,
    adapter: SearchAdapter,
    embedder: DescribesModel | ModelKey,
    *,
    repair: bool = False,
) -> int:
    """Get or create the model row (race-free) and its vector table; returns the model id.

    Registering a model changes no mind: which model a mind is searched with is recorded per
    mind (:mod:`waggle_store.repositories.mind_models`). ``repair`` re-runs the vector table's
    DDL even if this store ensured it already (reconcile: a dropped index or trigger comes back).
    """
    key = _as_key(embedder)
    if key.dimensions < 1:
        raise InvalidInputError(
            f"an embedding model needs at least 1 dimension, got {key.dimensions}"
        )
    where = (
        EmbeddingModelRow.provider == key.provider,
        EmbeddingModelRow.model == key.model,
        EmbeddingModelRow.dimensions == key.dimensions,
    )
    row, _ = get_or_create(
        session,
        lambda: session.scalar(select(EmbeddingModelRow).where(*where)),
        lambda: EmbeddingModelRow(
            provider=key.provider,
            model=key.model,
            dimensions=key.dimensions,
            metric="cosine",
            status="active",
        ),
    )
    adapter.ensure_vector_table(session, row.id, key.dimensions, repair=repair)
    session.flush()
    return int(row.id)


def model_key_of(session: Session, model_id: int) -> ModelKey:
    """The (provider, model, dimensions) of a registered model."""
    row = session.get(EmbeddingModelRow, model_id)
    if row is None:
        raise InvalidInputError(f"no embedding model with id {model_id}")
    return ModelKey(row.provider, row.model, row.dimensions)


def _upsert_manifest(session: Session, values: list[dict[str, Any]]) -> None:
    """Insert or update manifest rows (``frame_id`` plus the columns to set)."""
    if not values:
        return
    ids = [v["frame_id"] for v in values]
    existing: set[int] = set()
    for start in range(0, len(ids), 500):
        existing.update(
            session.scalars(
                select(FrameEmbeddingRow.frame_id).where(
                    FrameEmbeddingRow.frame_id.in_(ids[start : start + 500])
                )
            )
        )
    updates = [v for v in values if v["frame_id"] in existing]
    inserts = [v for v in values if v["frame_id"] not in existing]
    if updates:
        session.execute(update(FrameEmbeddingRow), updates)
    if inserts:
        session.execute(insert(FrameEmbeddingRow), inserts)


def frame_rows(session: Session, frame_ids: Sequence[int]) -> dict[int, FrameRow]:
    found: dict[int, FrameRow] = {}
    ids = list(dict.fromkeys(int(i) for i in frame_ids))
    for start in range(0, len(ids), 500):
        for row in session.scalars(
            select(FrameRow).where(FrameRow.id.in_(ids[start : start + 500]))
        ):
            found[row.id] = row
    return found


def store_vectors(
    session: Session,
    adapter: SearchAdapter,
    model_id: int,
    rows: Sequence[tuple[int, str, Sequence[float]]],
    *,
    text_form: str,
) -> int:
    """Store ``(frame_id, content_hash_embedded, vector)`` rows and mark their manifests ready,
    made from the text in ``text_form`` (:data:`~waggle_store.embeddings.sentences.TEXT_FORMS`).

    Every vector is checked first (dimension, NaN, infinity, zero → DimensionMismatchError /
    InvalidVectorError) and nothing is written if one fails. A frame deleted meanwhile, or whose
    content changed since it was embedded (hash differs), is skipped: its manifest stays pending
    and the next reconcile embeds the new text. Returns how many vectors were stored.
    """
    model = session.get(EmbeddingModelRow, model_id)
    if model is None:
        raise InvalidInputError(f"no embedding model with id {model_id}; register it first")
    checked = [
        (int(fid), str(chash), validate_vector(vec, model.dimensions, normalize=True))
        for fid, chash, vec in rows
    ]
    frames = frame_rows(session, [fid for fid, _, _ in checked])
    current = [
        (fid, chash, vec)
        for fid, chash, vec in checked
        if fid in frames and frames[fid].content_hash == chash
    ]
    adapter.upsert_vectors(
        session,
        model_id,
        [
            VectorRow(fid, frames[fid].mind_id, frames[fid].gop_id, frames[fid].created_at, vec)
            for fid, _, vec in current
        ],
    )
    now = utcnow()
    _upsert_manifest(
        session,
        [
            {
                "frame_id": fid,
                "model_id": model_id,
                "content_hash": chash,
                "status": "ready",
                "error": None,
                "updated_at": now,
                "text_form": text_form,
            }
            for fid, chash, _ in current
        ],
    )
    return len(current)


def mark_pending(
    session: Session,
    frame_ids: Sequence[int],
    error: str | None,
    *,
    status: str = "pending",
    model_id: int | None = None,
) -> None:
    """Record that these frames have no current vector (``pending`` = retry later, ``failed`` =
    the provider returned something unstorable), with the reason."""
    frames = frame_rows(session, frame_ids)
    now = utcnow()
    _upsert_manifest(
        session,
        [
            {
                "frame_id": fid,
                "model_id": model_id,
                "content_hash": row.content_hash,
                "status": status,
                "error": scrub_secrets(error or "")[:2000] or None,
                "updated_at": now,
            }
            for fid, row in frames.items()
        ],
    )
