"""Guarantees of the write path that hold only while one mechanism does its job, on both dialects.

- Concurrent cognify of one text stores one frame (the per-mind graph lock taken before the
  dedup read).
- Two first writers with different embedders: the mind keeps the first writer's model, and the
  other's frame is stored with a pending vector and no vector row (the model claim, and the
  mismatch check before the provider is called).
- A store whose embedder is not the mind's model makes no provider call for it and bills nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

import sqlalchemy as sa

import waggle_store as ws
from waggle_store.dialects.derived import vector_table_exists
from waggle_store.embeddings import HashingEmbedder
from waggle_store.embeddings.tiers import TierPolicy
from waggle_store.models import EmbeddingModelRow, FrameEmbeddingRow

THREADS = 8
ROUNDS = 10


def _copies(store: ws.Store, text: str) -> int:
    with store.read() as s:
        return int(s.execute(
            sa.text("SELECT count(*) FROM waggle_memory_frames WHERE content = :c"),
            {"c": text}).scalar_one())


def test_eight_threads_cognifying_one_text_store_one_frame(store: ws.Store) -> None:
    """8 threads, each in its own session (no session lock serialises them), released together
    by a barrier, cognify the same text; 10 rounds. Every call returns the one frame."""
    mind = store.mind("cognify-race")
    sessions = [mind.sessions.ensure(f"s{w}").gop_id for w in range(THREADS)]
    barrier = threading.Barrier(THREADS)
    errors: list[BaseException] = []
    got: list[int] = []
    lock = threading.Lock()

    def writer(gop: str, text: str) -> None:
        barrier.wait()
        try:
            frame_id = mind.cognify(text, gop_id=gop, link=False).frame_id
        except BaseException as exc:  # noqa: BLE001 - asserted below
            errors.append(exc)
            return
        with lock:
            got.append(frame_id)

    for round_ in range(ROUNDS):
        got.clear()
        text = f"Mara Quill reviews the ledger with Otto Brand, round {round_}."
        threads = [threading.Thread(target=writer, args=(gop, text)) for gop in sessions]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        copies = _copies(store, text)
        assert copies == 1, f"round {round_}: {copies} frames for one text"
        assert len(got) == THREADS
        assert len(set(got)) == 1


class _GatedEmbedder(HashingEmbedder):
    """Hashing vectors that wait, once embedded, until ``go`` is set (``reached`` says they are
    made): the store holding it passes the model check and embeds, then the other writes first.
    Counts the texts it embeds."""

    def __init__(self, dimensions: int) -> None:
        super().__init__(dimensions)
        self.reached = threading.Event()
        self.go = threading.Event()
        self.texts = 0

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        self.texts += len(texts)
        vectors = super().embed_documents(texts)
        self.reached.set()
        assert self.go.wait(60)
        return vectors


def _vector_rows(store: ws.Store, frame_id: int) -> dict[int, list[float]]:
    """The vector rows of ``frame_id`` in every model's vector table: model id -> vector."""
    found: dict[int, list[float]] = {}
    adapter = store.adapter
    with store.read() as s:
        for model_id in s.scalars(sa.select(EmbeddingModelRow.id)):
            if vector_table_exists(s, adapter.dialect, model_id):
                vector = adapter.read_vectors(s, model_id, [frame_id]).get(frame_id)
                if vector is not None:
                    found[model_id] = vector
    return found


def test_two_first_writers_with_different_embedders(
        store_factory: Callable[..., ws.Store]) -> None:
    """Store B checks the mind's model (none yet) and embeds; store A then writes the mind's
    first vector; B's write must find A's model: B's frame is pending, no vector row anywhere.
    A second write through B is not embedded at all."""
    first = store_factory(embedder=HashingEmbedder(32))
    gated = _GatedEmbedder(64)
    late = store_factory(embedder=gated)
    first.mind("race")
    outcome: list[ws.CognifyResult] = []
    errors: list[BaseException] = []

    def late_writer() -> None:
        try:
            outcome.append(late.mind("race").cognify("Bob repairs bicycles.", link=False))
        except BaseException as exc:  # noqa: BLE001 - asserted below
            errors.append(exc)

    thread = threading.Thread(target=late_writer)
    thread.start()
    assert gated.reached.wait(60)
    won = first.mind("race").cognify("Alice plants tomatoes.", link=False)
    gated.go.set()
    thread.join(60)
    assert errors == []
    lost = outcome[0]
    assert won.vector_status == "ready"
    assert lost.vector_status == "pending"
    assert lost.vector_error is not None
    assert "race" in lost.vector_error
    assert first.mind("race").embedding_model() == ws.EmbeddingModelInfo(
        "hashing", "blake2b-signed-words-v1", 32, "active")
    assert _vector_rows(first, lost.frame_id) == {}
    assert len(_vector_rows(first, won.frame_id)) == 1
    with first.read() as s:
        manifest = s.get(FrameEmbeddingRow, lost.frame_id)
        assert manifest is not None
        assert (manifest.status, manifest.model_id) == ("pending", None)
    # Now that the mind has a model, a write through B is not embedded (no provider call).
    before = gated.texts
    again = late.mind("race").cognify("Bob also builds wheels.", link=False)
    assert again.vector_status == "pending"
    assert gated.texts == before
    assert _vector_rows(first, again.frame_id) == {}


class _Billable(HashingEmbedder):
    """A deterministic embedder that presents itself as a billable provider and counts calls."""

    def __init__(self) -> None:
        super().__init__(64)
        self.calls = 0
        self._lock = threading.Lock()

    @property
    def provider(self) -> str:
        return "openai"

    @property
    def model(self) -> str:
        return "counting-64"

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        with self._lock:
            self.calls += 1
        return super().embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        with self._lock:
            self.calls += 1
        return super().embed_query(text)


def test_a_mind_on_another_model_costs_no_call_and_no_quota(
        store_factory: Callable[..., ws.Store]) -> None:
    owner = store_factory(embedder=HashingEmbedder(32))
    owner.mind("owned").cognify("Priya sets the design system.", link=False)
    counting = _Billable()
    billed = store_factory(embedder=counting, tier="TEAMS", user_id="payer",
                           tier_policy=TierPolicy.default().with_quota("TEAMS", 1000))
    # The counting store works for a mind of its own: its calls are billed and logged.
    billed.mind("own").cognify("Marcus tunes PostgreSQL.", link=False)
    assert counting.calls == 1
    used, logged = billed.quota_status().used, billed.usage.totals().calls
    assert (used, logged) == (1, 1)
    mind = billed.mind("owned")
    one = mind.cognify("Priya also reviews the launch plan.", link=False)
    batch = mind.cognify_batch(["Zoe writes the checklist.", "Ian runs the load test."])
    assert one.vector_status == "pending"
    assert batch.failures == []
    assert billed.quota_status().used == used
    assert billed.usage.totals().calls == logged
    assert counting.calls == 1
    assert owner.mind("owned").embedding_model() == ws.EmbeddingModelInfo(
        "hashing", "blake2b-signed-words-v1", 32, "active")
