"""cognify's contract: one billable embedding per memory, validation before any provider call,
and "an exception means nothing was stored; a return means it was" — on both dialects."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import pytest
import sqlalchemy as sa

import waggle_store as ws
from waggle_store.embeddings import HashingEmbedder
from waggle_store.embeddings.tiers import TierPolicy


class CountingEmbedder(HashingEmbedder):
    """A deterministic embedder that presents itself as a billable provider and counts calls."""

    def __init__(self) -> None:
        super().__init__(64)
        self.texts = 0
        self._lock = threading.Lock()

    @property
    def provider(self) -> str:
        return "openai"

    @property
    def model(self) -> str:
        return "counting-64"

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        with self._lock:
            self.texts += len(texts)
        return super().embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        with self._lock:
            self.texts += 1
        return super().embed_query(text)


def _count(store: ws.Store, sql: str) -> int:
    with store.read() as s:
        return int(s.execute(sa.text(sql)).scalar_one())


def test_quota_of_40_gives_exactly_40_vectors_for_60_memories(
        store_factory: Callable[..., ws.Store]) -> None:
    policy = TierPolicy.default().with_quota("TEAMS", 40)
    embedder = CountingEmbedder()
    store = store_factory(embedder=embedder, tier="TEAMS", user_id="quota-user",
                          tier_policy=policy)
    mind = store.mind("quota")
    mind.sessions.ensure_active()
    errors: list[BaseException] = []
    results: list[ws.CognifyResult] = []
    lock = threading.Lock()

    def work(worker: int) -> None:
        for i in range(worker, 60, 8):
            try:
                result = mind.cognify(f"Memory number {i}: Person{i} visited City{i} on day {i}.")
            except BaseException as exc:  # noqa: BLE001 - collected and asserted below
                errors.append(exc)
                continue
            with lock:
                results.append(result)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(results) == 60
    assert _count(store, "SELECT count(*) FROM waggle_memory_frames") == 60
    ready = _count(store, "SELECT count(*) FROM waggle_frame_embeddings WHERE status = 'ready'")
    assert ready == 40
    assert sum(r.vector_status == "ready" for r in results) == 40
    assert store.quota_status().used == 40
    # Only the 40 billed embeddings reached the provider: no second (linker) embedding.
    assert embedder.texts == 40


def test_unknown_session_is_refused_before_the_provider_is_called(
        store_factory: Callable[..., ws.Store]) -> None:
    embedder = CountingEmbedder()
    mind = store_factory(embedder=embedder).mind("m")
    with pytest.raises(ws.NotFoundError):
        mind.cognify("Sarah Chen leads Project Apollo.", gop_id="no-such-session")
    assert embedder.texts == 0


def test_cognify_embeds_each_memory_once(store_factory: Callable[..., ws.Store]) -> None:
    embedder = CountingEmbedder()
    mind = store_factory(embedder=embedder).mind("m")
    mind.cognify("Sarah Chen leads Project Apollo.")
    result = mind.cognify("Project Apollo launches in May with Sarah Chen.")
    assert embedder.texts == 2
    assert result.related_frames  # the linker ran, on the memory's own vector


def test_a_linker_failure_after_commit_is_reported_not_raised(
        store: ws.Store, monkeypatch: pytest.MonkeyPatch) -> None:
    mind = store.mind("m")
    mind.cognify("Sarah Chen leads Project Apollo.")

    def broken_search(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("search index unavailable")

    monkeypatch.setattr(store.searcher, "search", broken_search)
    result = mind.cognify("Project Apollo launches in May.")
    assert result.link_error is not None
    assert "search index unavailable" in result.link_error
    assert result.related_frames == []
    frame = mind.frames.get(result.frame_id)
    assert frame is not None
    assert frame.content == "Project Apollo launches in May."


class Counting32(CountingEmbedder):
    """Another billable model (another dimension): the target of a switch."""

    def __init__(self) -> None:
        HashingEmbedder.__init__(self, 32)
        self.texts = 0
        self._lock = threading.Lock()

    @property
    def model(self) -> str:
        return "counting-32"


def test_a_switch_to_a_given_embedder_is_billed_and_tier_checked(
        store_factory: Callable[..., ws.Store]) -> None:
    policy = TierPolicy.default().with_quota("TEAMS", 1000)
    store = store_factory(embedder=CountingEmbedder(), tier="TEAMS", user_id="switcher",
                          tier_policy=policy)
    mind = store.mind("m")
    for i in range(3):
        mind.cognify(f"Memory {i}: Person{i} met Team{i}.")
    used = store.quota_status().used
    report = mind.switch_embedding_model(Counting32())
    assert report.switched
    assert report.frames_embedded == 3
    # The switch's embeddings count against the store's quota like any other.
    assert store.quota_status().used == used + 3
    # A tier that does not allow the provider refuses the switch before any embedding.
    free = store_factory(embedder="hashing", tier="FREE", user_id="free-user")
    target = Counting32()
    with pytest.raises(ws.TierError):
        free.mind("f").switch_embedding_model(target)
    assert target.texts == 0
