"""Frames: creation, dedup, reads, on sqlite and postgres."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from sqlalchemy import select

import waggle_store as ws
from waggle_store.models import FrameEmbeddingRow
from waggle_store.repositories.frames import FrameRepository


@pytest.fixture
def gop(mind: ws.Mind) -> str:
    return mind.sessions.ensure("gop-test").gop_id


def test_first_iframe(mind: ws.Mind, gop: str) -> None:
    frame = mind.frames.create_i(gop, "First keyframe")
    assert (frame.frame_type, frame.t, frame.base_frame_id, frame.importance, frame.source) == (
        "I", 0, None, "normal", "user_stated")
    assert frame.access_count == 0
    second = mind.frames.create_i(gop, "Second keyframe")
    assert (second.t, second.id > frame.id) == (1, True)


def test_every_new_frame_has_a_pending_manifest_row(
    store: ws.Store, mind: ws.Mind, gop: str
) -> None:
    i = mind.frames.create_i(gop, "body")
    p = mind.frames.create_p(gop, "delta", i.id)
    b = mind.frames.create_b(gop, "links", i.id, [p.id])
    with store.read() as s:
        rows = {r.frame_id: r for r in s.scalars(select(FrameEmbeddingRow))}
    assert set(rows) == {i.id, p.id, b.id}
    assert all(
        r.status == "pending" and r.model_id is None and len(r.content_hash) == 64
        for r in rows.values()
    )


def test_created_at_cases(mind: ws.Mind, gop: str) -> None:
    given = mind.frames.create_i(gop, "imported", created_at="2025-12-01T14:32:00Z")
    assert given.created_at == given.last_accessed == datetime(2025, 12, 1, 14, 32, tzinfo=UTC)
    offset = mind.frames.create_i(gop, "offset", created_at="2025-12-01T14:32:00.123+0200")
    assert offset.created_at == datetime(2025, 12, 1, 12, 32, 0, 123000, tzinfo=UTC)
    aware = mind.frames.create_i(
        gop, "aware", created_at=datetime(2025, 1, 1, 9, tzinfo=timezone(timedelta(hours=9)))
    )
    assert aware.created_at == datetime(2025, 1, 1, 0, tzinfo=UTC)
    default = mind.frames.create_i(gop, "now")
    assert abs(default.created_at - datetime.now(UTC)) < timedelta(seconds=5)
    # Waggle silently replaced junk with "now"; here it is refused with a clear message.
    for junk in (
        "not-a-valid-iso-string",
        "2025-12-01T14:32:00",
        "2025-12-01 14:32:00Z",
        "2025-13-01T00:00:00Z",
        "2025-02-30T00:00:00Z",
        datetime(2025, 12, 1),
        1700000000,
    ):
        with pytest.raises(ws.InvalidInputError, match="created_at"):
            mind.frames.create_i(gop, f"junk {junk}", created_at=junk)  # type: ignore[arg-type]
    assert mind.frames.stats().total == 4


def test_pframes_and_bframes(mind: ws.Mind, gop: str) -> None:
    i = mind.frames.create_i(gop, "keyframe")
    ps = [mind.frames.create_p(gop, f"delta {n}", i.id) for n in (1, 2, 3)]
    assert [(p.frame_type, p.base_frame_id, p.t) for p in ps] == [
        ("P", i.id, 1),
        ("P", i.id, 2),
        ("P", i.id, 3),
    ]
    other = mind.sessions.ensure("other").gop_id
    j = mind.frames.create_i(other, "elsewhere")
    b = mind.frames.create_b(other, "links a-b-c", i.id, [ps[0].id, j.id])
    assert (b.frame_type, b.base_frame_id, b.t) == ("B", i.id, 1)
    assert b.content == f'{{"description":"links a-b-c","references":[{ps[0].id},{j.id}]}}'
    assert mind.frames.references(b.id) == [ps[0].id, j.id]
    assert mind.frames.references(i.id) == []


def test_reads_latest_gop_reconstruct(mind: ws.Mind, gop: str) -> None:
    assert mind.frames.reconstruct_state(gop) == ws.GopState(None, [])
    assert mind.frames.latest_i(gop) is None
    assert mind.frames.gop(gop) == []
    i1 = mind.frames.create_i(gop, "First keyframe: buy eggs")
    mind.frames.create_p(gop, "Old delta", i1.id)
    i2 = mind.frames.create_i(gop, "Second keyframe: buy milk")
    mind.frames.create_p(gop, "New delta 1", i2.id)
    mind.frames.create_p(gop, "New delta 2", i2.id)
    assert mind.frames.latest_i(gop).content == "Second keyframe: buy milk"
    state = mind.frames.reconstruct_state(gop)
    assert "buy milk" in state.iframe.content
    assert [p.content for p in state.pframes] == ["New delta 1", "New delta 2"]
    assert [f.t for f in mind.frames.gop(gop)] == [0, 1, 2, 3, 4]


def test_touch(mind: ws.Mind, gop: str) -> None:
    frame = mind.frames.create_i(gop, "touch me")
    for _ in range(3):
        mind.frames.touch(frame.id)
    after = mind.frames.get(frame.id)
    assert after.access_count == 3
    assert after.last_accessed > frame.last_accessed
    with pytest.raises(ws.NotFoundError):
        mind.frames.touch(frame.id + 1000)


def test_importance_levels_roundtrip(mind: ws.Mind, gop: str) -> None:
    for level in ("critical", "important", "normal", "temporary", "deprecated"):
        assert mind.frames.create_i(gop, f"level {level}", importance=level).importance == level
    for source in ("user_stated", "tool_verified", "agent_inferred", "import", "system"):
        assert mind.frames.create_i(gop, f"source {source}", source=source).source == source


def test_recent_orders_by_time_and_filters_real_times(mind: ws.Mind, gop: str) -> None:
    assert mind.frames.recent() == []
    first = mind.frames.create_i(gop, "First")
    mind.frames.create_i(gop, "Second")
    third = mind.frames.create_i(gop, "Third")
    assert [f.content for f in mind.frames.recent(2)] == ["Third", "Second"]
    assert len(mind.frames.recent(100)) == 3
    late = mind.frames.create_i(gop, "late evening", created_at="2025-12-01T23:30:00Z")
    early = mind.frames.create_i(gop, "imported older", created_at="2025-12-01T10:00:00Z")
    # created_at order, not id order: imported memories sit at their own time.
    assert [f.id for f in mind.frames.recent(5)][-2:] == [late.id, early.id]
    # 00:15+01:00 is 23:15Z on the 1st: string comparison would drop the 23:30Z frame.
    window = mind.frames.recent(10, since="2025-12-02T00:15:00+01:00", until="2025-12-02T00:00:00Z")
    assert [f.id for f in window] == [late.id]
    since_now = mind.frames.recent(10, since=first.created_at)
    assert {f.id for f in since_now} >= {first.id, third.id}
    assert late.id not in {f.id for f in since_now}
    for bad in ({"since": "yesterday"}, {"until": datetime(2025, 1, 1)}):
        with pytest.raises(ws.InvalidInputError):
            mind.frames.recent(10, **bad)
    with pytest.raises(ws.InvalidInputError):
        mind.frames.recent(0)


def test_stats(mind: ws.Mind, gop: str) -> None:
    i = mind.frames.create_i(gop, "a", importance="critical")
    mind.frames.create_i(gop, "b")
    mind.frames.create_i(gop, "c", importance="important")
    mind.frames.create_p(gop, "d", i.id)
    stats = mind.frames.stats()
    assert stats == ws.FrameStats(4, {"I": 3, "P": 1}, {"critical": 1, "important": 1, "normal": 2})


# -- dedup (per mind, by content, no recency window) ----------------------------------------------


def test_repeated_content_is_deduped_and_touched(mind: ws.Mind, gop: str) -> None:
    first = mind.frames.create_i(gop, "repeated content")
    again = mind.frames.create_i(gop, "  repeated content\n")
    assert again.id == first.id
    assert again.access_count == 1  # the post-touch state (Waggle returned the stale row)
    assert mind.frames.get(first.id).access_count == 1
    assert mind.frames.stats().total == 1


def test_hm_prefix_variants_collapse_into_the_first(mind: ws.Mind, gop: str) -> None:
    a = mind.frames.create_i(
        gop, "[hm session:openclaw-gateway:c1 src:openclaw event:stop] the shared turn body"
    )
    b = mind.frames.create_i(gop, "[hm session:s2 src:claude-code event:stop] the shared turn body")
    c = mind.frames.create_i(gop, "the shared turn body")
    assert a.id == b.id == c.id
    assert mind.frames.get(a.id).content.startswith("[hm session:openclaw-gateway:c1")
    assert mind.frames.get(a.id).access_count == 2
    mind.frames.create_i(gop, "[hm src:x event:stop] body one")
    mind.frames.create_i(gop, "[hm src:x event:stop] body two")
    assert mind.frames.stats().total == 3


def test_plain_then_prefixed_keeps_plain(mind: ws.Mind, gop: str) -> None:
    plain = mind.frames.create_i(gop, "plain body")
    prefixed = mind.frames.create_i(gop, "[hm src:claude-code] plain body")
    assert prefixed.id == plain.id
    assert prefixed.content == "plain body"


def test_dedup_has_no_window_and_spans_sessions(store: ws.Store, mind: ws.Mind, gop: str) -> None:
    body = mind.frames.create_i(gop, "the body")
    with store.write() as s:  # 550 fillers in one transaction, through the repository
        repo = FrameRepository(s, mind.id)
        for n in range(550):
            assert repo.create_i(gop, f"filler-{n}").created
    other = mind.sessions.ensure("another-session").gop_id
    again = mind.frames.create_i(other, "the body")
    assert again.id == body.id
    assert again.gop_id == gop
    assert mind.frames.stats().total == 551


def test_pframes_and_bframes_never_dedup(mind: ws.Mind, gop: str) -> None:
    i = mind.frames.create_i(gop, "base")
    p1 = mind.frames.create_p(gop, "same delta", i.id)
    p2 = mind.frames.create_p(gop, "same delta", i.id)
    assert p1.id != p2.id
    # An I-frame with a P-frame's text is a new keyframe: create_i always returns an I-frame.
    assert mind.frames.create_i(gop, "same delta").frame_type == "I"
