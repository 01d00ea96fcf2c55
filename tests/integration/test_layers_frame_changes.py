"""Frame update, delete and compaction keep the keyword index, manifest and FKs consistent."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa
from sqlalchemy import func, select

import waggle_store as ws
from waggle_store.models import FrameEmbeddingRow, FrameRow
from waggle_store.repositories.common import MAX_CONTENT_BYTES, content_hash

from conftest import KeywordIndexProbe


def manifest(store: ws.Store, frame_id: int) -> FrameEmbeddingRow | None:
    with store.read() as s:
        return s.get(FrameEmbeddingRow, frame_id)


@pytest.fixture
def gop(mind: ws.Mind) -> str:
    return mind.sessions.ensure("gop-test").gop_id


def test_update_reindexes_rehashes_and_reembeds(
    store: ws.Store, mind: ws.Mind, gop: str, keyword_index: KeywordIndexProbe
) -> None:
    frame = mind.frames.create_i(gop, "original wording")
    with store.write() as s:  # pretend the vector was computed
        s.get(FrameEmbeddingRow, frame.id).status = "ready"
    updated = mind.frames.update(frame.id, "revised wording", importance="critical")
    assert (updated.content, updated.importance) == ("revised wording", "critical")
    assert keyword_index.ids("revised") == {frame.id}
    assert keyword_index.ids("original") == set()
    row = manifest(store, frame.id)
    # The store has an embedder: update re-embeds the new text right after the write (with the
    # provider down it stays pending: tests/integration/test_frame_vectors.py).
    assert (row.status, row.content_hash) == ("ready", content_hash("revised wording"))
    # The dedup key follows the content: the new text dedups, the old one no longer does.
    assert mind.frames.create_i(gop, "revised wording").id == frame.id
    assert mind.frames.create_i(gop, "original wording").id != frame.id
    keep = mind.frames.update(frame.id, "revised wording")
    assert keep.importance == "critical"
    with pytest.raises(ws.NotFoundError):
        mind.frames.update(frame.id + 999, "x")
    with pytest.raises(ws.InvalidInputError):
        mind.frames.update(frame.id, "   ")
    assert mind.frames.get(frame.id).content == "revised wording"


def test_delete_base_keeps_dependents(
    store: ws.Store, mind: ws.Mind, gop: str, keyword_index: KeywordIndexProbe
) -> None:
    base = mind.frames.create_i(gop, "base frame")
    p = mind.frames.create_p(gop, "dependent delta", base.id)
    b = mind.frames.create_b(gop, "cross reference", base.id, [p.id])
    assert mind.frames.delete(base.id) is None
    assert mind.frames.get(base.id) is None
    assert mind.frames.get(p.id).base_frame_id is None
    assert mind.frames.get(b.id).base_frame_id is None
    assert keyword_index.ids("base") == set()
    assert keyword_index.orphans() == 0
    assert manifest(store, base.id) is None
    with pytest.raises(ws.NotFoundError):
        mind.frames.delete(base.id)
    # The session keeps a gapless-from-MAX sequence after a delete: new t is MAX + 1.
    assert mind.frames.create_i(gop, "after delete").t == 3


def test_compact_prunes_old_temporary_and_deprecated(
    store: ws.Store, mind: ws.Mind, gop: str, keyword_index: KeywordIndexProbe
) -> None:
    now = datetime.now(UTC)
    old_temp = mind.frames.create_i(
        gop, "old temporary base", importance="temporary", created_at=now - timedelta(days=100)
    )
    # An old temporary frame that another frame is based on: Waggle failed here with an FK error.
    dependent = mind.frames.create_p(gop, "delta on the temporary", old_temp.id)
    young_temp = mind.frames.create_i(
        gop, "young temporary", importance="temporary", created_at=now - timedelta(days=10)
    )
    old_dep = mind.frames.create_i(
        gop, "old deprecated", importance="deprecated", created_at=now - timedelta(days=100)
    )
    mid_dep = mind.frames.create_i(
        gop, "middle deprecated", importance="deprecated", created_at=now - timedelta(days=50)
    )
    normal_old = mind.frames.create_i(
        gop, "ancient but normal", created_at=now - timedelta(days=999)
    )
    report = mind.frames.compact(max_temp_age_days=30, max_deprecated_age_days=90)
    assert report == ws.CompactionReport(temporary_pruned=1, deprecated_pruned=1, pframes_merged=0)
    left = {f.id for f in mind.frames.gop(gop)}
    assert left == {dependent.id, young_temp.id, mid_dep.id, normal_old.id}
    assert old_dep.id not in left
    assert mind.frames.get(dependent.id).base_frame_id is None
    assert keyword_index.ids("old") == set()
    assert keyword_index.orphans() == 0


def test_compact_merges_pframes_into_the_latest_iframe(
    store: ws.Store, mind: ws.Mind, gop: str, keyword_index: KeywordIndexProbe
) -> None:
    iframe = mind.frames.create_i(gop, "keyframe")
    ps = [
        mind.frames.create_p(
            gop, f"delta{n:02d}", iframe.id, importance="important" if n == 3 else "normal"
        )
        for n in range(15)
    ]
    b = mind.frames.create_b(gop, "points at a merged delta", iframe.id, [ps[0].id])
    with store.write() as s:
        s.get(FrameEmbeddingRow, iframe.id).status = "ready"
    report = mind.frames.compact()
    assert report.pframes_merged == 10
    merged = mind.frames.get(iframe.id)
    assert merged.content == "\n---\n".join(["keyframe"] + [f"delta{n:02d}" for n in range(10)])
    assert merged.importance == "important"  # a merged important delta is not demoted
    state = mind.frames.reconstruct_state(gop)
    assert [p.content for p in state.pframes] == [f"delta{n:02d}" for n in range(10, 15)]
    assert all(mind.frames.get(p.id) is None for p in ps[:10])
    assert mind.frames.get(b.id) is not None
    assert keyword_index.ids("delta03") == {iframe.id}  # re-indexed, no orphan rows left
    assert keyword_index.orphans() == 0
    assert manifest(store, iframe.id).status == "ready"  # re-embedded after the merge
    assert manifest(store, iframe.id).content_hash == content_hash(merged.content)
    assert mind.frames.compact().pframes_merged == 0  # 5 left: nothing more to do


def test_compact_counts_only_pframes_after_the_latest_iframe(mind: ws.Mind, gop: str) -> None:
    i1 = mind.frames.create_i(gop, "first keyframe")
    for n in range(6):
        mind.frames.create_p(gop, f"early {n}", i1.id)
    i2 = mind.frames.create_i(gop, "second keyframe")
    for n in range(6):
        mind.frames.create_p(gop, f"late {n}", i2.id)
    assert mind.frames.compact().pframes_merged == 0
    assert mind.frames.stats().total == 14


def test_compact_never_grows_a_frame_past_the_limit(
    store: ws.Store, mind: ws.Mind, gop: str
) -> None:
    iframe = mind.frames.create_i(gop, "k" * (MAX_CONTENT_BYTES - 100))
    for n in range(12):
        mind.frames.create_p(gop, f"delta {n} " + "x" * 60, iframe.id)
    report = mind.frames.compact()
    assert report.pframes_merged == 1
    assert len(mind.frames.get(iframe.id).content.encode()) <= MAX_CONTENT_BYTES


def test_compact_refuses_bad_ages(mind: ws.Mind) -> None:
    for bad in ({"max_temp_age_days": -1}, {"max_deprecated_age_days": "90"}):
        with pytest.raises(ws.InvalidInputError):
            mind.frames.compact(**bad)


def test_schema_rules_behind_the_api(
    engine: sa.Engine, store: ws.Store, mind: ws.Mind, gop: str
) -> None:
    """The schema's rules behind the API: CHECKs refuse bad enums, and (unlike Waggle) a duplicate t
    too."""
    frame = mind.frames.create_i(gop, "row")
    good = {
        "mind_id": mind.id,
        "frame_type": "I",
        "gop_id": gop,
        "t": 7,
        "content": "x",
        "content_hash": "h",
        "importance": "normal",
        "source": "user_stated",
        "access_count": 0,
    }
    for bad in (
        {"frame_type": "X"},
        {"importance": "urgent"},
        {"source": "team_sync"},
        {"t": frame.t},
        {"gop_id": "no-such-session"},
    ):
        with pytest.raises(sa.exc.IntegrityError), sa.orm.Session(engine) as s, s.begin():
            s.execute(sa.insert(FrameRow).values(**(good | bad)))
    with sa.orm.Session(engine) as s:
        assert s.scalar(select(func.count()).select_from(FrameRow)) == 1
    names = {
        ix["name"]
        for ix in sa.inspect(engine).get_indexes("waggle_memory_frames", schema=store.schema)
    }
    assert {
        "ix_waggle_memory_frames_mind_id_content_hash", "ix_waggle_memory_frames_base_frame_id"
    } <= names
