"""The vector lane's recall@k against an exact KNN over the same stored vectors is at least 0.98
for pages of 5, 10 and 20, on a mind of near-alike frames (hashing vectors of sentences that
differ in a number or two). On PostgreSQL the HNSW candidate list (``hnsw.ef_search``) follows the
page: a fixed 40 missed a frame searched by its own exact text for small pages. Both dialects."""

from __future__ import annotations

import random

import numpy as np
import sqlalchemy as sa

import waggle_store as ws
from waggle_store.dialects.base import LaneFilter
from waggle_store.models import MindEmbeddingModelRow

FRAMES = 3000
PROBES = 60
def _text(i: int) -> str:
    """Sentences that differ in two or three numbers: hashing vectors 0.1–0.3 apart."""
    return (f"the nightly deploy of service {i % 50} failed at step {i % 17} on host {i % 23} "
            "and the on call engineer restarted the queue worker")


def test_vector_lane_recall_at_k_is_at_least_098_on_near_alike_frames(store: ws.Store) -> None:
    mind = store.mind("alike")
    done = mind.cognify_batch([_text(i) for i in range(FRAMES)])
    assert not done.failures
    ids = list(done.frame_ids)
    adapter, embedder = store.adapter, store.embedder
    assert embedder is not None
    with store.read() as session:
        model_id = int(session.scalar(sa.select(MindEmbeddingModelRow.model_id).where(
            MindEmbeddingModelRow.mind_id == mind.id, MindEmbeddingModelRow.status == "active")))
        stored = adapter.read_vectors(session, model_id, ids)
    matrix = np.array([stored[i] for i in ids], dtype=np.float64)
    frame_ids = np.array(ids)
    probes = random.Random(7).sample(range(FRAMES), PROBES)
    for k in (5, 10, 20):
        found = 0
        own_found = 0
        for p in probes:
            query = embedder.embed_query(_text(p))
            q = np.asarray(query, dtype=np.float64)
            distance = 1.0 - matrix @ (q / np.linalg.norm(q))
            kth = np.sort(distance)[k - 1]
            with store.context.read_connection() as conn:
                hits = adapter.vector_search(conn, model_id=model_id, vector=query,
                                             where=LaneFilter([mind.id]), limit=k)
            assert len(hits) == k
            exact = {int(f) for f, d in zip(frame_ids, distance, strict=True) if d <= kth + 1e-6}
            found += sum(1 for h in hits if h.frame_id in exact)
            own_found += ids[p] in {h.frame_id for h in hits}
        recall = found / (k * len(probes))
        print(f"recall@{k} = {recall:.4f}, own text found {own_found}/{len(probes)}")
        assert recall >= 0.98, (k, recall)
        assert own_found == len(probes), (k, own_found)  # its own text: distance 0, always found

