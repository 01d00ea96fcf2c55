"""Cognify: the write pipeline, on both dialects."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
import sqlalchemy as sa

import waggle_store as ws
from waggle_store.embeddings import HashingEmbedder
from waggle_store.models import EntityMentionRow, FrameEmbeddingRow, FrameRow, RelationRow

PEOPLE = ["Sarah Chen", "Marcus Webb", "Priya Nair", "Elena Rossi", "David Kim"]
PROJECTS = ["Project Apollo", "Project Hermes", "Project Zephyr", "Project Orion", "Project Vega"]
TOPICS = ["the launch checklist", "the search latency", "the budget review", "the load test",
          "the design system", "the onboarding flow", "the release notes", "the data migration",
          "the on-call rotation", "the customer interviews"]


def conversation(turns: int = 50) -> list[str]:
    """A deterministic conversation: who leads what, who works on what, what was decided."""
    out: list[str] = []
    for i in range(turns):
        person, project, topic = PEOPLE[i % 5], PROJECTS[i % 5], TOPICS[i % 10]
        other = PEOPLE[(i + 2) % 5]
        if i < 5:
            out.append(f"{person} leads {project}, and {other} reviews its plans.")
        elif i % 3 == 0:
            out.append(f"Turn {i}: {person} asked {other} about {topic} for {project}.")
        elif i % 3 == 1:
            out.append(f"Turn {i}: decision on {topic} in {project} was approved by {person}.")
        else:
            out.append(f"Turn {i}: {other} will follow up on {topic} next week.")
    return out


def _counts(store: ws.Store, mind: ws.Mind) -> tuple[int, int, int, int]:
    with store.read() as s:
        frames = s.scalar(
            sa.select(sa.func.count()).select_from(FrameRow).where(FrameRow.mind_id == mind.id)
        )
        relations = s.scalar(
            sa.select(sa.func.count())
            .select_from(RelationRow)
            .where(RelationRow.mind_id == mind.id)
        )
        mentions = s.scalar(sa.select(sa.func.count()).select_from(EntityMentionRow))
    entities = sum(mind.knowledge.entity_type_counts().values())
    return int(frames or 0), entities, int(relations or 0), int(mentions or 0)


def test_conversation_cognified_twice_creates_nothing_new(store: ws.Store, mind: ws.Mind) -> None:
    turns = conversation(50)
    first = [mind.cognify(t, link=False) for t in turns]
    after_first = _counts(store, mind)
    assert after_first[0] == 50
    assert after_first[1] >= 10
    assert after_first[2] >= 10
    second = [mind.cognify(t, link=False) for t in turns]
    assert _counts(store, mind) == after_first
    assert [r.frame_id for r in second] == [r.frame_id for r in first]
    assert all(r.relations_created == 0 for r in second)
    assert all(r.vector_status == "ready" for r in first + second)


def test_batch_is_idempotent_too(store: ws.Store, mind: ws.Mind) -> None:
    turns = conversation(50)
    one = mind.cognify_batch(turns)
    counts = _counts(store, mind)
    two = mind.cognify_batch(turns)
    assert _counts(store, mind) == counts
    assert one.frame_ids == two.frame_ids
    assert one.failures == two.failures == []


def test_graph_links_people_to_the_projects_they_lead(mind: ws.Mind) -> None:
    mind.cognify_batch(conversation(50))
    sarah = next(e for e in mind.knowledge.search_entities("Sarah Chen") if e.name == "Sarah Chen")
    apollo = next(
        e for e in mind.knowledge.search_entities("Project Apollo") if e.name == "Project Apollo"
    )
    distances = mind.knowledge.bfs_distances(sarah.id, max_depth=3)
    assert distances.get(apollo.id) == 1
    led = [r for r in mind.knowledge.relations_to(sarah.id, "led_by") if r.source_id == apollo.id]
    assert len(led) == 1  # "Sarah Chen leads Project Apollo" → Apollo led_by Sarah


def test_connected_profile_prefers_frames_about_query_entity_neighbours(mind: ws.Mind) -> None:
    mind.cognify("Sarah Chen leads Project Apollo.", link=False)
    mind.cognify("Project Zephyr belongs to another company entirely.", link=False)
    near = mind.cognify("Project Apollo checklist review is scheduled.", link=False).frame_id
    far = mind.cognify("Project Zephyr checklist review is scheduled.", link=False).frame_id
    results = mind.search("Sarah Chen checklist review", profile="connected", limit=10)
    ranked = [r.frame.id for r in results]
    assert near in ranked
    assert far in ranked
    assert ranked.index(near) < ranked.index(far)
    by_id = {r.frame.id: r for r in results}
    assert (
        by_id[near].explain["subscores"]["contextual"]
        > by_id[far].explain["subscores"]["contextual"]
    )


def test_batch_failure_of_one_item_keeps_the_others(store: ws.Store, mind: ws.Mind) -> None:
    items = [
        "first good memory about Apollo",
        "",
        42,
        "bad\x00byte",
        ws.MemoryInput("dated memory", created_at="2025-12-01T14:32:00Z"),
        ws.MemoryInput("bad time", created_at="2025-12-01 14:32:00"),
        "last good memory",
    ]
    result = mind.cognify_batch(items)  # type: ignore[arg-type]
    assert [i for i, _ in result.failures] == [1, 2, 3, 5]
    assert all(why for _, why in result.failures)
    assert [f is not None for f in result.frame_ids] == [
        True,
        False,
        False,
        False,
        True,
        False,
        True,
    ]
    dated = mind.frames.get(result.frame_ids[4])  # type: ignore[arg-type]
    assert dated is not None
    assert dated.created_at.isoformat() == "2025-12-01T14:32:00+00:00"


def test_batch_streams_chunks_of_a_generator_in_order(
    store: ws.Store, mind: ws.Mind, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Items are prepared and written a chunk at a time (bounded memory): with chunks of 3, a
    generator's items, bad ones among them, land at their positions, and progress counts every
    item once against the whole total."""
    from waggle_store.pipeline import cognify as cognify_module

    monkeypatch.setattr(cognify_module, "BATCH_CHUNK", 3)
    texts = [f"streamed memory {n} about Project Apollo" if n % 4 else "" for n in range(10)]
    calls: list[tuple[int, int]] = []
    result = mind.cognify_batch((t for t in texts),
                                progress=lambda done, total: calls.append((done, total)))
    assert calls == [(3, 10), (6, 10), (9, 10), (10, 10)]
    assert [i for i, _ in result.failures] == [0, 4, 8]
    for n, frame_id in enumerate(result.frame_ids):
        if n % 4 == 0:
            assert frame_id is None
            continue
        assert frame_id is not None
        frame = mind.frames.get(frame_id)
        assert frame is not None
        assert frame.content == texts[n]


def test_cognify_rejects_bad_input_and_writes_nothing(store: ws.Store, mind: ws.Mind) -> None:
    before = _counts(store, mind)
    for bad in ["", "   ", "a\x00b"]:
        with pytest.raises(ws.InvalidInputError):
            mind.cognify(bad)
    with pytest.raises(ws.InvalidInputError):
        mind.cognify("fine", importance="urgent")
    with pytest.raises(ws.NotFoundError):
        mind.cognify("fine", gop_id="no-such-session")
    assert _counts(store, mind) == before


class FlakyEmbedder:
    """A real embedder (hashing) behind a switch: off = the provider is down."""

    provider = "flaky"
    model = "flaky-hash"

    def __init__(self) -> None:
        self.inner = HashingEmbedder(dimensions=64)
        self.dimensions = 64
        self.up = True
        self.calls = 0

    @property
    def model_id(self) -> str:
        return f"{self.provider}/{self.model}/{self.dimensions}"

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls += 1
        if not self.up:
            raise ws.EmbeddingProviderError("provider down", provider="flaky", status=503)
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        if not self.up:
            raise ws.EmbeddingProviderError("provider down", provider="flaky", status=503)
        return self.inner.embed_query(text)


def test_outage_at_write_time_then_reconcile(store_factory) -> None:
    flaky = FlakyEmbedder()
    store = store_factory(embedder=flaky)
    mind = store.mind("outage")
    flaky.up = False
    result = mind.cognify("The zebra migration report is due Friday.", link=False)
    assert result.vector_status == "pending"
    with store.read() as s:
        manifest = s.get(FrameEmbeddingRow, result.frame_id)
        assert manifest is not None
        assert manifest.status == "pending"
        assert "provider down" in (manifest.error or "")
    hits = mind.search("zebra migration")
    assert [h.frame.id for h in hits] == [result.frame_id]
    assert "vector" not in hits[0].explain["lanes"] or hits[0].explain["lanes"]["vector"] is None
    flaky.up = True
    report = store.reconcile()
    assert report.vectors_fixed == 1
    with store.read() as s:
        assert s.get(FrameEmbeddingRow, result.frame_id).status == "ready"
    hits = mind.search("zebra migration")
    assert hits[0].frame.id == result.frame_id
    assert hits[0].explain["lanes"]["vector"]["rank"] == 0
    assert store.reconcile().vectors_fixed == 0


def test_quota_is_enforced_on_real_embeddings(store_factory) -> None:
    flaky = FlakyEmbedder()
    flaky.provider = "openai"  # a paid provider as far as tiers and quotas are concerned
    policy = ws.TierPolicy.default().with_quota("PRO", 3)
    store = store_factory(embedder=flaky, tier="PRO", tier_policy=policy, user_id="alice")
    mind = store.mind("quota")
    mind.cognify_batch(["one memory", "two memory"])
    assert store.quota_status("alice").used == 2
    mind.cognify("three memory", link=False)
    assert store.quota_status("alice").used == 3
    calls = flaky.calls
    over = mind.cognify("four memory", link=False)
    assert over.vector_status == "pending"  # stored, not lost; the vector waits for quota
    assert flaky.calls == calls  # an exhausted quota costs no provider call
    assert store.quota_status("alice").used == 3
    with store.read() as s:
        assert "quota" in (s.get(FrameEmbeddingRow, over.frame_id).error or "").lower()
