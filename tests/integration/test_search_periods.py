"""A query that names a date ranks the frames of it first — created within it, or naming a
calendar date within it (search/periods.py, search/explain.py: ``rank_results``) — on both
dialects: nothing dropped, frames without evidence not lifted, the order within each group
kept."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

import waggle_store as ws

ASKED = "What painting of a sunset over the lake did Melanie show"


def _create(mind: ws.Mind, frames: dict[str, tuple[str, datetime]]) -> dict[str, int]:
    """Each frame (name -> content, naive UTC time) in a session of its own: no frame is the
    context of another (the keyword lane indexes the turn before a frame with it)."""
    return {name: mind.frames.create_i(mind.sessions.ensure(name).gop_id, text,
                                       created_at=when.replace(tzinfo=UTC)).id
            for name, (text, when) in frames.items()}


def _seed(store: ws.Store) -> dict[str, int]:
    ids = _create(store.mind("periods"), {
        # The best match of the query's words, on another day.
        "best": ("Melanie: my painting of a sunset over the lake", datetime(2023, 8, 1, 15, 0)),
        # A weaker match, on the day the query names.
        "that day": ("Melanie: look at this painting", datetime(2023, 10, 13, 18, 30)),
        # Nothing of the query but its stop words (the hashing embedder reads them), on that day.
        "unrelated": ("Caroline: what did the kayaks do over there", datetime(2023, 10, 13, 19, 0)),
        "other": ("Melanie: a sunset walk", datetime(2022, 10, 2, 9, 0)),
    })
    store.reconcile()
    return ids


def _order(store: ws.Store, query: str, **options: object) -> list[ws.SearchResult]:
    return store.mind("periods").search(query, limit=10, **options)  # type: ignore[arg-type]


@pytest.mark.parametrize("lanes", [["keyword"], None], ids=["keyword", "hybrid"])
def test_a_frame_of_the_named_day_ranks_first_and_nothing_is_dropped(
        store: ws.Store, lanes: list[str] | None) -> None:
    ids = _seed(store)
    undated = [r.frame.id for r in _order(store, ASKED + "?", lanes=lanes)]
    assert undated[0] == ids["best"]
    dated = _order(store, ASKED + " on October 13, 2023?", lanes=lanes)
    got = [r.frame.id for r in dated]
    assert got[0] == ids["that day"]
    assert set(got) >= set(undated) - {ids["unrelated"]}  # the others follow, none dropped
    # Apart from the frame of that day, the order is the undated query's.
    assert [i for i in got[1:] if i in undated] == [i for i in undated if i != ids["that day"]
                                                    and i in got[1:]]
    first = dated[0].explain
    assert first["periods"] == ["October 13, 2023"]
    assert first["in_period"] is True
    assert all(r.explain["in_period"] is False for r in dated[1:])


def test_a_frame_of_that_day_without_evidence_is_not_lifted(store: ws.Store) -> None:
    ids = _seed(store)
    results = _order(store, ASKED + " on October 13, 2023?")
    by_id = {r.frame.id: r for r in results}
    # The vector lane's candidates are every frame here; this one's similarity is below the
    # lane's median, so it has no evidence from any lane.
    unrelated = by_id[ids["unrelated"]]
    assert unrelated.final_score == 0.0
    assert unrelated.explain["in_period"] is False
    assert results.index(unrelated) > results.index(by_id[ids["best"]])


def test_a_month_without_a_year_is_that_month_of_any_year(store: ws.Store) -> None:
    ids = _seed(store)
    got = [r.frame.id for r in _order(store, ASKED + " in October?", lanes=["keyword"])]
    # Both October frames with evidence come first, in their undated order, then the August one.
    assert got[:2] == [ids["that day"], ids["other"]] or got[:2] == [ids["other"],
                                                                     ids["that day"]]
    assert got.index(ids["best"]) == 2


def test_a_query_naming_a_date_no_frame_has_keeps_its_order(store: ws.Store) -> None:
    _seed(store)
    undated = [r.frame.id for r in _order(store, ASKED + "?")]
    assert [r.frame.id for r in _order(store, ASKED + " on May 3, 2021?")] == undated
    assert [r.frame.id for r in _order(store, ASKED + " last week?")] == undated


def test_a_frame_whose_words_name_the_date_counts_as_of_it(store: ws.Store) -> None:
    """A date in a question may be the date of what a frame tells, not of when it was written;
    only calendar dates of a frame's words count (its "yesterday" is not read)."""
    mind = store.mind("told")
    ids = _create(mind, {
        # Written in February about March 3.
        "plan": ("Ada: the budget review is on March 3, 2024", datetime(2024, 2, 20, 9, 0)),
        # Written on March 3 of another year, a weaker match.
        "that day": ("Ada: budget notes", datetime(2023, 3, 3, 9, 0)),
        # The best match, neither written on nor naming March 3.
        "best": ("Ada: the budget review board met", datetime(2024, 1, 9, 9, 0)),
        # Written the day after, about "yesterday": not read.
        "after": ("Ada: yesterday's budget review went well", datetime(2024, 3, 4, 9, 0)),
    })
    results = mind.search("budget review board on March 3", limit=10, lanes=["keyword"])
    got = [r.frame.id for r in results]
    assert got == [ids["plan"], ids["that day"], ids["best"], ids["after"]]
    assert [r.explain["in_period"] for r in results] == [True, True, False, False]
    # Without the date the best match is first, and "plan" before "that day" as above.
    undated = [r.frame.id for r in mind.search("budget review board", limit=10,
                                                   lanes=["keyword"])]
    assert undated[0] == ids["best"]
    assert undated.index(ids["plan"]) < undated.index(ids["that day"])
