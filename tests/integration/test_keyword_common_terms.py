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

        def keyword_rows(session: Any, values: Any, where: Any, limit: int, expired: bool,
                         common: Mapping[int, int]) -> Any:
            self.runs.append(dict(common))
            return real(session, values, where, limit, expired, common)

        monkeypatch.setattr(adapter, "_keyword_rows", keyword_rows)


def _page(mind: ws.Mind, query: str, **options: Any
          ) -> list[tuple[int, float, float, float, str]]:
    """Each result's frame, scores and the keyword lane's raw score (its idf sum)."""
    return [(r.frame.id, r.explain["lanes"]["keyword"]["score"], r.rrf_score, r.final_score,
             r.frame.content)
            for r in mind.search(query, limit=5, lanes=["keyword"], **options)]


@pytest.fixture
def common_from_40(monkeypatch: pytest.MonkeyPatch) -> None:
    """Terms 40 frames hold are common (the library's threshold is 1,000 frames): "kestrel"
    (48), not "harbour" (its 14 frames and the frames after them)."""
    monkeypatch.setattr(keyword_rank, "COMMON_TERM_FRAMES", 40)


def _reference(mind: ws.Mind, monkeypatch: pytest.MonkeyPatch, query: str,
               **options: Any) -> list[tuple[int, float, float, float, str]]:
    """The page of the whole lane: no term is common, nothing cached."""
    with monkeypatch.context() as patch:
        patch.setattr(keyword_rank, "COMMON_TERM_FRAMES", 10**9)
        return _page(mind, query, **options)


@pytest.mark.parametrize("options", [{}, {"gop_id": "morning"}], ids=["mind", "session"])
def test_a_known_common_term_finds_no_candidates_and_the_page_is_the_whole_lanes(
        store: ws.Store, monkeypatch: pytest.MonkeyPatch, common_from_40: None,
        options: dict[str, Any]) -> None:
    mind = _seed(store)
    if options:
        options = {"gop_id": mind.sessions.ensure("morning").gop_id}
    query = f"{COMMON} {MANY}"
    expected = _reference(mind, monkeypatch, query, **options)
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
    expected = _reference(mind, monkeypatch, query)
    # Three frames hold "lantern" (and three more in their context): the page of five needs
    # frames that hold only "kestrel".
    assert any(FEW not in content for *_, content in expected)
    statements = _Statements(store, monkeypatch)
    assert _page(mind, query) == expected
    assert _page(mind, query) == expected
    assert statements.runs == [{}, {0: 48}, {}]  # pruned, did not hold, whole lane again


def test_nothing_is_pruned_when_every_term_is_common_or_the_count_has_expired(
        store: ws.Store, monkeypatch: pytest.MonkeyPatch, common_from_40: None) -> None:
    mind = _seed(store)
    statements = _Statements(store, monkeypatch)
    expected = _page(mind, f"{COMMON} {MANY}")
    _page(mind, COMMON)  # no other term to find candidates by
    _page(mind, COMMON)
    monkeypatch.setattr(keyword_rank, "FRAME_COUNT_TTL", 0.0)  # every known df expired
    assert _page(mind, f"{COMMON} {MANY}") == expected
    assert statements.runs == [{}, {}, {}, {}]


def test_a_hybrid_search_with_a_common_term_returns_the_whole_lanes_page(
        store: ws.Store, monkeypatch: pytest.MonkeyPatch, common_from_40: None) -> None:
    mind = _seed(store)
    query = f"{COMMON} {MANY} colour3"

    def page() -> list[tuple[int, float, float]]:
        return [(r.frame.id, r.rrf_score, r.final_score) for r in mind.search(query, limit=5)]

    with monkeypatch.context() as patch:
        patch.setattr(keyword_rank, "COMMON_TERM_FRAMES", 10**9)
        expected = page()
    statements = _Statements(store, monkeypatch)
    assert page() == expected
    assert page() == expected
    assert statements.runs[1] == {0: 48}
