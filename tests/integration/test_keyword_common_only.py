"""A query made only of common terms (a speaker's name alone) has no rarer term to find
candidates by: every frame holding its terms in its own words scores the most a frame can, and
the page is the shortest of them. The keyword lane walks the mind's frames shortest first for
them (``dialects/keyword_rank.py: shortest_page_sql``, the index of migration 0008) instead of
reading every frame holding the terms. On both dialects: the page is the whole lane's (frames,
scores, order), the walk gives way to the whole lane when it does not fill the page (a narrow
filter, a rare combination, its bound), and the index can serve the walk's order."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

import pytest

import waggle_store as ws
from tests.conftest import KeywordIndexProbe
from tests.integration.test_keyword_common_terms import COMMON, _page, _reference
from waggle_store.dialects import keyword_rank
from waggle_store.dialects.base import LaneFilter
from waggle_store.pipeline.embed import embed_frames

#: The index of migration 0008.
INDEX = "ix_waggle_memory_frames_mind_id_text_bytes"


def _seed(store: ws.Store) -> ws.Mind:
    """48 frames in two sessions, of varied lengths (the walk's order); each frame's context is
    the frame before it in its session."""
    mind = store.mind("m")
    gops = [mind.sessions.ensure(name).gop_id for name in ("morning", "evening")]
    ids = []
    for i in range(48):
        filler = " ".join(f"w{i}x{j}" for j in range((i * 7) % 4))
        ids.append(mind.frames.create_i(
            gops[i % 2], f"{COMMON}: item{i} colour{i % 5} {filler}".strip()).id)
    assert embed_frames(store.context, ids).embedded == len(ids)
    return mind


class _Lane:
    """Which statements the adapter's keyword lane ran: the whole lane's (with its known common
    terms) or the walk's (with the rows it found), and the walk's text and binds."""

    def __init__(self, store: ws.Store, monkeypatch: pytest.MonkeyPatch) -> None:
        self.runs: list[tuple[str, Any]] = []
        self.walks: list[tuple[str, dict[str, Any]]] = []
        adapter: Any = store.adapter
        whole, walk = adapter._keyword_rows, adapter._shortest_rows

        def keyword_rows(session: Any, values: Any, where: Any, limit: int,
                         common: Mapping[int, int]) -> Any:
            self.runs.append(("whole", dict(common)))
            return whole(session, values, where, limit, common)

        def shortest_rows(session: Any, values: Any, where: Any, limit: int,
                          dfs: Mapping[int, int]) -> Any:
            rows, counting = walk(session, values, where, limit, dfs)
            self.runs.append(("walk", len(rows)))
            return rows, counting

        monkeypatch.setattr(adapter, "_keyword_rows", keyword_rows)
        monkeypatch.setattr(adapter, "_shortest_rows", shortest_rows)
        # The walk's statement as the adapter's keyword module hands it to run_lane.
        module = sys.modules[type(adapter).__module__ + "_keyword"]
        run_lane = module.run_lane

        def recording(executor: Any, sql: str, params: dict[str, Any]) -> Any:
            if "walk" in params:
                self.walks.append((sql, dict(params)))
            return run_lane(executor, sql, params)

        monkeypatch.setattr(module, "run_lane", recording)


@pytest.fixture
def common_from_9(monkeypatch: pytest.MonkeyPatch) -> None:
    """Terms 9 frames hold are common (the library's threshold is 1,000 frames): ``kestrel``
    (48) and each ``colourN`` (its 9–10 frames and the frames after them)."""
    monkeypatch.setattr(keyword_rank, "COMMON_TERM_FRAMES", 9)


@pytest.mark.parametrize("known", [False, True], ids=["counted", "known-count"])
@pytest.mark.parametrize("query", [COMMON, f"{COMMON} colour0"], ids=["one", "two"])
def test_a_query_of_common_terms_only_walks_to_the_whole_lanes_page(
        store: ws.Store, monkeypatch: pytest.MonkeyPatch, common_from_9: None,
        query: str, known: bool) -> None:
    """``known``: the mind's frame count is remembered (as above 5,000 frames), so the walk
    binds it rather than counting, and knows each term's share (SQLite looks a term most frames
    hold up per walked frame rather than reading its list)."""
    if known:
        monkeypatch.setattr(keyword_rank, "FRAME_COUNT_EXACT_BELOW", 1)
    mind = _seed(store)
    expected = _reference(store, mind, monkeypatch, query)
    assert len(expected) == 5
    assert len({score for _, score, *_ in expected}) == 1  # tied: the shortest frames first
    lane = _Lane(store, monkeypatch)
    assert _page(mind, query) == expected  # counts the terms: they become common
    assert _page(mind, query) == expected  # every term known common: the walk
    assert lane.runs == [("whole", {}), ("walk", 10)]  # the lane's page: twice the limit
    hybrid = [(r.frame.id, r.final_score) for r in mind.search(query, limit=5)]
    with monkeypatch.context() as patch:
        patch.setattr(keyword_rank, "COMMON_TERM_FRAMES", 10**9)
        patch.setattr(store.adapter, "term_counts", keyword_rank.TermCounts())
        assert hybrid == [(r.frame.id, r.final_score) for r in mind.search(query, limit=5)]


def test_a_walk_within_a_session(store: ws.Store, monkeypatch: pytest.MonkeyPatch,
                                 common_from_9: None) -> None:
    mind = _seed(store)
    options = {"gop_id": mind.sessions.ensure("evening").gop_id}
    expected = _reference(store, mind, monkeypatch, COMMON, **options)
    lane = _Lane(store, monkeypatch)
    assert _page(mind, COMMON, **options) == expected
    assert _page(mind, COMMON, **options) == expected
    assert lane.runs == [("whole", {}), ("walk", 10)]
    assert all(r.frame.gop_id == options["gop_id"]
               for r in mind.search(COMMON, limit=5, lanes=["keyword"], **options))


def test_a_walk_that_does_not_fill_the_page_gives_way_to_the_whole_lane(
        store: ws.Store, monkeypatch: pytest.MonkeyPatch, common_from_9: None) -> None:
    """In the morning session five frames hold both terms in their own words: the page of ten
    needs frames holding fewer (or holding one only in their context)."""
    mind = _seed(store)
    query, options = f"{COMMON} colour0", {"gop_id": mind.sessions.ensure("morning").gop_id}
    expected = _reference(store, mind, monkeypatch, query, **options)
    lane = _Lane(store, monkeypatch)
    assert _page(mind, query, **options) == expected
    assert _page(mind, query, **options) == expected
    assert lane.runs == [("whole", {}), ("walk", 5), ("whole", {})]


def test_the_walk_goes_no_further_than_its_bound(
        store: ws.Store, monkeypatch: pytest.MonkeyPatch, common_from_9: None) -> None:
    """With a walk of one page's frames (the shortest ten of the mind), fewer than ten hold
    both terms: the whole lane ranks the page (the 48 frames hold ten)."""
    mind = _seed(store)
    query = f"{COMMON} colour0"
    expected = _reference(store, mind, monkeypatch, query)
    monkeypatch.setattr(keyword_rank, "SHORTEST_WALK", 1)
    lane = _Lane(store, monkeypatch)
    assert _page(mind, query) == expected
    assert _page(mind, query) == expected
    (_, walked), = [run for run in lane.runs if run[0] == "walk"]
    assert 0 < walked < 10
    assert lane.runs[-1] == ("whole", {})


def test_the_index_serves_the_walks_order(
        store: ws.Store, monkeypatch: pytest.MonkeyPatch, common_from_9: None,
        keyword_index: KeywordIndexProbe) -> None:
    """The walk orders by the dialect's length expression, which must be the very expression
    the index of migration 0008 holds: else each walk reads and sorts the whole mind."""
    mind = _seed(store)
    lane = _Lane(store, monkeypatch)
    _page(mind, COMMON)
    _page(mind, COMMON)
    (sql, params), = lane.walks
    plan = keyword_index.plan(sql, params)
    assert INDEX in plan, plan
    assert not keyword_index.sorts(plan), plan


def test_nothing_walks_across_several_minds(
        store: ws.Store, monkeypatch: pytest.MonkeyPatch, common_from_9: None) -> None:
    """The index orders one mind's frames: the lane over several minds (the adapter's API; a
    search reads one) ranks with the whole statement."""
    mind, other = _seed(store), store.mind("other")
    other.frames.create_i(other.sessions.ensure("s").gop_id, f"{COMMON}: elsewhere")
    where = LaneFilter((mind.context.id, other.context.id))

    def lane_ids() -> list[tuple[int, float]]:
        with store.read_connection() as conn:
            return [(h.frame_id, h.score) for h in store.adapter.keyword_search(
                conn, terms=[COMMON], where=where, limit=10)]

    first = lane_ids()
    lane = _Lane(store, monkeypatch)
    assert lane_ids() == first
    assert [run[0] for run in lane.runs] == ["whole"]
