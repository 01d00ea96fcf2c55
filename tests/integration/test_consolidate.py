"""mind.consolidate: decay, merge of near-duplicates (by vectors, and by edit distance without
them), pruning that spares critical/important frames; dry run = real run; a second run changes
nothing."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select, update

import waggle_store as ws
from waggle_store.models import EmbeddingModelRow, FrameRow
from waggle_store.pipeline.consolidate import MERGED_KEY_PREFIX

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
DEPLOY = "The deploy window is Tuesday at 10:00 UTC, agreed with the platform team"

# name: (content, importance, source, days since last access, access count)
FIXTURE: dict[str, tuple[str, str, str, int, int]] = {
    "dup_normal": (DEPLOY + ".", "normal", "user_stated", 2, 3),
    "dup_important": (DEPLOY + "!", "important", "user_stated", 3, 2),
    "other_source": (DEPLOY, "normal", "import", 0, 0),
    # The same words in another order: the same bag of words for the hashing embedder (a vector
    # near-duplicate), but far apart by edit distance.
    "reordered": (" ".join(reversed(DEPLOY.split())), "normal", "user_stated", 1, 0),
    "stale_normal": ("Old note about the cafeteria menu in March", "normal", "user_stated", 60, 0),
    "old_critical": ("Root password rotation policy is 90 days", "critical", "user_stated", 400, 0),
    "old_important": ("Quarterly OKR draft for the data team", "important", "user_stated", 400, 0),
    "scratch": ("Scratch: try the new linter on the monorepo", "temporary", "agent_inferred",
                30, 0),
    "recent": ("Customer Acme renewed their contract for three years", "normal", "user_stated",
               5, 1),
}


def _build(store: ws.Store, mind: ws.Mind) -> dict[str, int]:
    ids: dict[str, int] = {}
    for name, (content, importance, source, days, accesses) in FIXTURE.items():
        gop = mind.sessions.ensure(f"consolidation-{name}").gop_id
        frame = mind.frames.create_i(gop, content, importance=importance, source=source,
                                     created_at=NOW - timedelta(days=400))
        ids[name] = frame.id
        with store.write() as s:
            s.execute(update(FrameRow).where(FrameRow.id == frame.id).values(
                access_count=accesses, last_accessed=NOW - timedelta(days=days, minutes=5)))
    store.reconcile(mind=mind)  # embeds the frames when the store has an embedder
    return ids


def _snapshot(store: ws.Store, mind: ws.Mind) -> tuple[list[tuple[Any, ...]], list[Any]]:
    with store.read() as s:
        rows = s.execute(select(FrameRow.id, FrameRow.importance, FrameRow.access_count,
                                FrameRow.last_accessed, FrameRow.salience, FrameRow.content)
                         .where(FrameRow.mind_id == mind.id).order_by(FrameRow.id)).all()
    return [tuple(r) for r in rows], mind.kv.items()


@pytest.mark.parametrize("embedder", ["hashing", None])
def test_consolidation(store_factory: Callable[..., ws.Store], embedder: str | None) -> None:
    store = store_factory(embedder=embedder)
    mind = store.mind("aging")
    ids = _build(store, mind)
    if embedder is not None:
        assert mind.frames.stats().total == len(FIXTURE)
        assert store.health().vector_search

    if embedder is not None:
        # A vector row lost behind the manifest's back: that frame is compared by text instead.
        with store.write() as s:
            model_id = s.scalar(select(EmbeddingModelRow.id))
            assert model_id is not None
            store.adapter.delete_vectors(s, model_id, [ids["dup_normal"]])

    before = _snapshot(store, mind)
    dry = mind.consolidate(dry_run=True, now=NOW)
    assert _snapshot(store, mind) == before

    real = mind.consolidate(now=NOW)
    assert real == dry
    # Decayed: every surviving frame not accessed today (merged ones count as merged).
    by_vectors = embedder is not None
    merged = 2 if by_vectors else 1
    assert real == ws.ConsolidationReport(fragments_processed=9, fragments_decayed=8 - merged,
                                          fragments_merged=merged, fragments_deleted=2)
    assert (mind.frames.get(ids["reordered"]) is None) == by_vectors

    assert mind.frames.get(ids["dup_normal"]) is None  # merged into the more important twin
    keeper = mind.frames.get(ids["dup_important"])
    assert keeper is not None
    assert keeper.access_count == 5
    # The latest access among the merged frames.
    assert keeper.last_accessed == NOW - timedelta(days=1 if by_vectors else 2, minutes=5)
    record = mind.kv.get(f"{MERGED_KEY_PREFIX}{ids['dup_important']}")
    assert sorted(r["frame_id"] for r in record) == sorted(
        [ids["dup_normal"]] + ([ids["reordered"]] if by_vectors else []))
    assert mind.frames.get(ids["other_source"]) is not None  # same text, other source
    assert mind.frames.get(ids["stale_normal"]) is None
    assert mind.frames.get(ids["scratch"]) is None
    for protected in ("old_critical", "old_important"):  # far below the threshold, but kept
        assert mind.frames.get(ids[protected]) is not None

    hits = {r.frame.id for r in mind.search("deploy window Tuesday platform team", limit=10)}
    assert ids["dup_important"] in hits
    assert ids["dup_normal"] not in hits
    assert not {ids["stale_normal"], ids["scratch"]} & {
        r.frame.id for r in mind.search("cafeteria menu linter monorepo", limit=10)}
    report = store.reconcile(mind=mind)
    assert (report.fts_fixed, report.orphans_removed) == (0, 0)

    after = _snapshot(store, mind)
    again = mind.consolidate(now=NOW + timedelta(hours=1))
    assert again == ws.ConsolidationReport(9 - merged - 2, 0, 0, 0)
    assert _snapshot(store, mind) == after
    assert mind.consolidate(dry_run=True, now=NOW) == again


def test_decay_continues_on_later_days_and_arguments_are_checked(mind: ws.Mind) -> None:
    gop = mind.sessions.ensure("later").gop_id
    frame = mind.frames.create_i(gop, "A normal memory that nobody reads",
                                 created_at=NOW - timedelta(days=3))
    first = mind.consolidate(now=NOW)
    assert (first.fragments_decayed, first.fragments_deleted) == (1, 0)
    assert mind.consolidate(now=NOW).fragments_decayed == 0
    assert mind.consolidate(now=NOW + timedelta(days=1)).fragments_decayed == 1
    later = mind.consolidate(now=NOW + timedelta(days=60))
    assert later.fragments_deleted == 1
    assert mind.frames.get(frame.id) is None
    for bad in ({"decay_rate": 0}, {"decay_rate": 1.5}, {"prune_below": -0.1},
                {"merge_similarity": float("nan")}):
        with pytest.raises(ws.InvalidInputError):
            mind.consolidate(**bad)  # type: ignore[arg-type]


def test_a_frame_touched_while_the_plan_is_made_is_not_pruned(
        store_factory: Callable[..., ws.Store], monkeypatch: pytest.MonkeyPatch) -> None:
    from waggle_store.pipeline import consolidate as module

    store = store_factory(embedder=None)
    mind = store.mind("busy")
    ids = _build(store, mind)
    other = store_factory(embedder=None).mind("busy")  # another connection, another writer
    real_near_duplicates = module.near_duplicates
    calls: list[int] = []

    def near_duplicates_then_touch(*args: Any, **kwargs: Any) -> Any:
        edges = real_near_duplicates(*args, **kwargs)
        if not calls:  # while the read-only plan is made, someone recalls the stale memory
            other.frames.touch(ids["stale_normal"])
        calls.append(1)
        return edges

    monkeypatch.setattr(module, "near_duplicates", near_duplicates_then_touch)
    report = mind.consolidate(now=NOW)
    assert len(calls) == 2  # planned again under the write lock
    assert report.fragments_deleted == 1  # the scratch note only
    assert mind.frames.get(ids["stale_normal"]) is not None
    assert mind.frames.get(ids["scratch"]) is None
    assert mind.consolidate(now=NOW) == ws.ConsolidationReport(7, 0, 0, 0)
