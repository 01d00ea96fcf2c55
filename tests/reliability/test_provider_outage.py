"""Embedding provider outage, then recovery (issue 12, finding 7), on both dialects.

A real HTTP provider client (Ollama's) talks to the scriptable local server of
``tests/embedding_http.py``. During the outage every memory is still stored, with its vector
pending; once the provider answers again the status and ``health()`` stop reporting the old
error, and ``reconcile()`` embeds what the outage left pending.
"""

from __future__ import annotations

import os

import sqlalchemy as sa

import waggle_store as ws
from tests.conftest import Target
from tests.embedding_http import EmbeddingServer, Reply, embedding_server
from waggle_store.embeddings.ollama import OllamaEmbedder
from waggle_store.embeddings.retry import RetryPolicy

__all__ = ["embedding_server"]  # the fixture, imported for pytest

FAST = RetryPolicy(max_attempts=2, initial_wait=0.0, max_wait=0.0)
#: Outage/recovery cycles; WAGGLE_RELIABILITY_LONG=1 runs more.
CYCLES = 5 if os.environ.get("WAGGLE_RELIABILITY_LONG") else 1


def _pending(store: ws.Store) -> int:
    with store.read() as s:
        return int(s.scalar(sa.text(
            "SELECT count(*) FROM waggle_frame_embeddings WHERE status <> 'ready'")) or 0)


def test_outage_then_recovery(target: Target, embedding_server: EmbeddingServer) -> None:
    embedder = OllamaEmbedder(host=embedding_server.url, retry=FAST)
    with target.open(embedder=embedder) as store:
        mind = store.mind("outage")
        first = mind.cognify("Sarah Chen leads Project Apollo.")
        assert first.vector_status == "ready"
        assert store.embedding_status().last_error is None

        for cycle in range(CYCLES):
            embedding_server.script(*[Reply.error(503, f"outage {cycle}")] * 1000)
            during = [mind.cognify(f"Outage {cycle} memory {i}: Ravi fixes Pipeline{i}.")
                      for i in range(3)]
            assert {r.vector_status for r in during} == {"pending"}
            status = store.embedding_status()
            assert status.last_error is not None
            assert f"outage {cycle}" in status.last_error
            assert status.last_error_at is not None
            health = store.health()
            assert any("embedder:" in r for r in health.reasons), health.reasons
            assert _pending(store) == 3

            embedding_server.reset()  # the provider answers again
            after = mind.cognify(f"Recovered {cycle}: Maya ships Feature{cycle}.")
            assert after.vector_status == "ready"
            status = store.embedding_status()
            assert status.last_error is None
            assert status.last_error_at is None
            assert status.recovered_at is not None
            assert not [r for r in store.health().reasons if "embedder" in r]

            report = store.reconcile()
            assert report.vectors_fixed == 3
            assert _pending(store) == 0
            hits = mind.search(f"Outage {cycle} Ravi Pipeline1", limit=10)
            assert during[1].frame_id in {h.frame.id for h in hits}
