"""A query holding a *common* term (one most frames hold, as a speaker's name) makes the keyword
lane read every frame holding it, unless that term's ``df`` is known: then the lane's candidates
are the frames holding another term, and the common term only adds its weight to them
(``dialects/keyword_rank.py: TermCounts``). On both dialects: the page is the one the whole
lane gives, the lane falls back to the whole statement when the page so ranked could miss a frame
holding only the common term, and nothing is pruned without a known, fresh ``df``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

import waggle_store as ws
from waggle_store.dialects import keyword_rank
from waggle_store.pipeline.embed import embed_frames

COMMON = "kestrel"  # in every frame, as a speaker's name
#: Words of each frame besides the common one: "harbour" in 14 frames, "lantern" in 3.
MANY, FEW = "harbour", "lantern"


def _seed(store: ws.Store) -> ws.Mind:
    """48 frames in two sessions; each frame's context (the keyword lane indexes it at half
    weight) is the frame before it in its session."""
    mind = store.mind("m")
    gops = [mind.sessions.ensure(name).gop_id for name in ("morning", "evening")]
    ids = []
    for i in range(48):
        words = [f"item{i}", f"colour{i % 5}"]
        if i % 3 == 0 and i < 42:
            words.append(MANY)
        if i in (7, 20, 33):
            words.append(FEW)
        ids.append(mind.frames.create_i(gops[i % 2], f"{COMMON}: " + " ".join(words)).id)
    assert embed_frames(store.context, ids).embedded == len(ids)
    return mind


class _Statements:
    """The ``common`` terms (position -> df) each keyword statement of the adapter ran with."""

    def __init__(self, store: ws.Store, monkeypatch: pytest.MonkeyPatch) -> None:
        self.runs: list[dict[int, int]] = []
        adapter: Any = store.adapter
        real = adapter._keyword_rows

        def keyword_rows(session: Any, values: Any, where: Any, limit: int,
                         common: Mapping[int, int]) -> Any:
            self.runs.append(dict(common))
            return real(session, values, where, limit, common)

        monkeypatch.setattr(adapter, "_keyword_rows", keyword_rows)


def _page(mind: ws.Mind, query: str, **options: Any
          ) -> list[tuple[int, float, float, float, str]]:
    """Each result's frame, scores and the keyword lane's raw score (its idf sum); the lane's
    own page (no expansion: it would bring in turns the lane did not find)."""
    options.setdefault("expand", False)
    return [(r.frame.id, r.explain["lanes"]["keyword"]["score"], r.rrf_score, r.final_score,
             r.frame.content)
            for r in mind.search(query, limit=5, lanes=["keyword"], **options)]


@pytest.fixture
def common_from_40(monkeypatch: pytest.MonkeyPatch) -> None:
    """Terms 40 frames hold are common (the library's threshold is 1,000 frames): "kestrel"
    (48), not "harbour" (its 14 frames and the frames after them)."""
    monkeypatch.setattr(keyword_rank, "COMMON_TERM_FRAMES", 40)


def _reference(store: ws.Store, mind: ws.Mind, monkeypatch: pytest.MonkeyPatch, query: str,
               **options: Any) -> list[tuple[int, float, float, float, str]]:
    """The page of the whole lane: no term known, none becoming common."""
    with monkeypatch.context() as patch:
        patch.setattr(keyword_rank, "COMMON_TERM_FRAMES", 10**9)
        patch.setattr(store.adapter, "term_counts", keyword_rank.TermCounts())
        return _page(mind, query, **options)


@pytest.mark.parametrize("options", [{}, {"gop_id": "morning"}], ids=["mind", "session"])
def test_a_known_common_term_finds_no_candidates_and_the_page_is_the_whole_lanes(
        store: ws.Store, monkeypatch: pytest.MonkeyPatch, common_from_40: None,
        options: dict[str, Any]) -> None:
    mind = _seed(store)
    if options:
        options = {"gop_id": mind.sessions.ensure("morning").gop_id}
    query = f"{COMMON} {MANY}"
    expected = _reference(store, mind, monkeypatch, query, **options)
    assert expected
    assert all(MANY in content for *_, content in expected)
    statements = _Statements(store, monkeypatch)
    assert _page(mind, query, **options) == expected  # counts both terms: "kestrel" is common
    assert _page(mind, query, **options) == expected  # "kestrel" known: candidates by "harbour"
    assert statements.runs == [{}, {0: 48}]  # the pruned page held: no second statement


def test_a_page_that_could_miss_a_frame_of_the_common_term_alone_runs_the_whole_lane(
        store: ws.Store, monkeypatch: pytest.MonkeyPatch, common_from_40: None) -> None:
    mind = _seed(store)
    query = f"{COMMON} {FEW}"
    expected = _reference(store, mind, monkeypatch, query)
    # Three frames hold "lantern" (and three more in their context): the page of five needs
    # frames that hold only "kestrel".
    assert any(FEW not in content for *_, content in expected)
    statements = _Statements(store, monkeypatch)
    assert _page(mind, query) == expected
    assert _page(mind, query) == expected
    assert statements.runs == [{}, {0: 48}, {}]  # pruned, did not hold, whole lane again


def test_nothing_is_pruned_when_every_term_is_common(
        store: ws.Store, monkeypatch: pytest.MonkeyPatch, common_from_40: None) -> None:
    mind = _seed(store)
    statements = _Statements(store, monkeypatch)
    _page(mind, COMMON)
    _page(mind, COMMON)  # "kestrel" known, but no other term to find candidates by
    # No statement whose candidates no term finds: the page is walked for instead
    # (test_keyword_common_only.py).
    assert statements.runs == [{}]


def test_an_expired_count_is_counted_again_by_the_next_search(
        store: ws.Store, monkeypatch: pytest.MonkeyPatch, common_from_40: None) -> None:
    """As the frame count: a search more than a TTL after the count does not prune with it; its
    statement counts the term's frames again (two frames added meanwhile), its page is the whole
    lane's, and the next search prunes with the new count, on the searching thread alone."""
    import threading

    mind = _seed(store)
    query = f"{COMMON} {MANY}"
    _page(mind, query)  # counts "kestrel": 48 frames
    gop = mind.sessions.ensure("morning").gop_id
    mind.frames.create_i(gop, f"{COMMON}: item48 colour0")
    mind.frames.create_i(gop, f"{COMMON}: item49 colour1")
    expected = _reference(store, mind, monkeypatch, query)
    threads = set(threading.enumerate())
    statements = _Statements(store, monkeypatch)
    with monkeypatch.context() as expired:
        expired.setattr(keyword_rank, "FRAME_COUNT_TTL", 0.0)  # every known count expired
        assert _page(mind, query) == expected  # the whole lane: counts "kestrel" again
    assert _page(mind, query) == expected  # the new count, fresh: pruned, and the page held
    assert statements.runs == [{}, {0: 50}]
    assert set(threading.enumerate()) == threads


def test_in_a_hosts_transaction_an_expired_count_is_not_used(
        store: ws.Store, monkeypatch: pytest.MonkeyPatch, common_from_40: None) -> None:
    """A store joined to a host's transaction counts an expired count in the statement too, as
    the frame count is."""
    mind = _seed(store)
    query = f"{COMMON} {MANY}"
    _page(mind, query)
    monkeypatch.setattr(keyword_rank, "FRAME_COUNT_TTL", 0.0)
    statements = _Statements(store, monkeypatch)
    with store.engine.connect() as host:
        host.begin()
        assert _page(store.within(host).mind(mind.name), query)
    assert statements.runs == [{}]


def test_a_hybrid_search_with_a_common_term_returns_the_whole_lanes_page(
        store: ws.Store, monkeypatch: pytest.MonkeyPatch, common_from_40: None) -> None:
    mind = _seed(store)
    query = f"{COMMON} {MANY} colour3"

    def page() -> list[tuple[int, float, float]]:
        return [(r.frame.id, r.rrf_score, r.final_score) for r in mind.search(query, limit=5)]

    with monkeypatch.context() as patch:
        patch.setattr(keyword_rank, "COMMON_TERM_FRAMES", 10**9)
        patch.setattr(store.adapter, "term_counts", keyword_rank.TermCounts())
        expected = page()
    statements = _Statements(store, monkeypatch)
    assert page() == expected
    assert page() == expected
    assert statements.runs[1] == {0: 48}


def test_a_term_under_a_sixteenth_of_the_frames_is_not_common(
        store: ws.Store, monkeypatch: pytest.MonkeyPatch) -> None:
    mind = _seed(store)
    monkeypatch.setattr(keyword_rank, "COMMON_TERM_FRAMES", 1)
    _page(mind, f"{COMMON} {MANY} {FEW} colour3 item7")  # 48, 28, 6, 18 and 2 of 48 frames
    known = store.adapter.term_counts._known
    assert sorted(df for df, _, _ in known.values()) == [6, 18, 28, 48]  # 3 frames: 1/16
