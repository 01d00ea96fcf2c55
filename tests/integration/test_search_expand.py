"""The search's expansion (``waggle_store/search/expand.py``): the turns beside the best hits join
the results, the reply to a question that matched scores as the question does, the search's
filters hold for what it brings in, ``explain["expansion"]`` says what it lifted and beside what,
and ``expand=False`` leaves it out."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

import waggle_store as ws
from waggle_store.errors import InvalidInputError
from waggle_store.search.expand import ANSWER_SHARE, NEIGHBOUR_SHARE, asks

QUESTION = "Who told them to see the dinosaur exhibit at the museum?"
# The answer is the turn before the one that matches: the keyword index carries each turn's
# preceding turn (its search context), never the following one, so no lane finds it.
TALK = [
    "How was your weekend?",
    "My sister Ana said we had to go, so on Saturday we went.",
    "We took the kids to the museum to see the dinosaur exhibit.",
    "Sounds like a great day.",
]


def _ids(results: list[ws.SearchResult]) -> list[int]:
    return [r.frame.id for r in results]


def test_the_turn_after_a_hit_joins_the_results_with_what_lifted_it(mind: ws.Mind) -> None:
    gop = mind.sessions.ensure("s1").gop_id
    ids = [mind.frames.create_i(gop, text).id for text in TALK]
    other = mind.sessions.ensure("s2").gop_id
    mind.frames.create_i(other, "We are planning a trip to the coast next month.")
    answer, hit, after = ids[1], ids[2], ids[3]
    plain = mind.search(QUESTION, lanes=("keyword",), expand=False)
    assert answer not in _ids(plain)  # it shares no word with the question
    assert plain[0].explain["expansion"] is None

    results = mind.search(QUESTION, lanes=("keyword",))
    found = {r.frame.id: r for r in results}
    assert _ids(results)[0] == hit
    assert answer in found  # the turns on both sides of the hit
    assert after in found
    assert found[answer].explain["lanes"] == {}  # no lane returned it
    expansion = found[answer].explain["expansion"]
    assert expansion["neighbour_of"] == [hit]
    assert expansion["rrf_before"] is None
    assert found[answer].rrf_score == pytest.approx(NEIGHBOUR_SHARE * found[hit].rrf_score)
    assert found[hit].explain["expansion"]["neighbour_of"] is None
    for r in results:  # the scores keep their meaning
        assert 0.0 <= r.rrf_score <= 1.0
        assert r.final_score == pytest.approx(r.rrf_score * r.relevance_score)


@pytest.mark.parametrize("note", ["", " [shares a photo of a guitar on a stand]"])
def test_the_reply_to_a_question_that_matched_scores_as_the_question(mind: ws.Mind,
                                                                      note: str) -> None:
    gop = mind.sessions.ensure("s1").gop_id
    before, asked, reply, later = (mind.frames.create_i(gop, text).id for text in (
        "Melanie: I sang at the open mic night yesterday.",
        f"Caroline: That is great! Do you play any instruments?{note}",
        "Melanie: Yeah, the clarinet, since I was young.",
        "Caroline: Cool, I should try it too.",
    ))
    other = mind.sessions.ensure("s2").gop_id
    mind.frames.create_i(other, "Melanie: We went camping at the beach last weekend.")
    question = "Which instruments does she play?"
    # The keyword index finds the reply through the question it follows (its search context),
    # at a fraction of the question's strength.
    plain = {r.frame.id: r for r in mind.search(question, lanes=("keyword",), expand=False)}
    assert plain[reply].rrf_score < plain[asked].rrf_score

    found = {r.frame.id: r for r in mind.search(question, lanes=("keyword",))}
    assert found[reply].explain["expansion"]["answers"] == [asked]
    assert found[reply].explain["expansion"]["neighbour_of"] == [asked]
    assert found[reply].explain["expansion"]["rrf_before"] == pytest.approx(
        plain[reply].rrf_score)
    assert found[reply].rrf_score == pytest.approx(ANSWER_SHARE * found[asked].rrf_score)
    # The turn before a question is a neighbour, not its reply.
    assert found[before].explain["expansion"]["answers"] is None
    assert found[before].rrf_score == pytest.approx(NEIGHBOUR_SHARE * found[asked].rrf_score)
    assert found[later].explain["expansion"]["answers"] is None  # the reply asks nothing
    assert found[asked].explain["expansion"]["answers"] is None


def test_a_reply_to_a_statement_is_only_a_neighbour(mind: ws.Mind) -> None:
    gop = mind.sessions.ensure("s1").gop_id
    said, reply = (mind.frames.create_i(gop, text).id for text in (
        "Caroline: I play the guitar in a band.", "Melanie: Wow, that sounds fun."))
    found = {r.frame.id: r for r in mind.search("guitar band", lanes=("keyword",))}
    expansion = found[reply].explain["expansion"]
    assert expansion["neighbour_of"] == [said]
    assert expansion["answers"] is None
    assert found[reply].rrf_score == pytest.approx(
        max(NEIGHBOUR_SHARE * found[said].rrf_score, expansion["rrf_before"] or 0.0))
    assert found[reply].rrf_score < found[said].rrf_score


@pytest.mark.parametrize(("text", "asking"), [
    ("Do you play any instruments?", True),
    ("Nice! What made you try pottery?  ", True),
    ("Is this yours? [shares a photo of a painting]", True),
    ("Is this yours? (points at the painting)", True),
    ("What? No, I only sing.", False),
    ("I play the clarinet.", False),
    ("Look at this! [shares a photo: what a view?]", False),
    ("[shares a photo of a lake?]", False),
    ("", False),
    (" " * 100_000 + "x", False),  # long runs cost one scan
])
def test_asks_reads_the_turns_last_sentence(text: str, asking: bool) -> None:
    assert asks(text) is asking


def test_a_turn_a_lane_ranked_above_its_lift_keeps_its_own_score(mind: ws.Mind) -> None:
    gop = mind.sessions.ensure("s1").gop_id
    first = mind.frames.create_i(gop, "the dinosaur exhibit opens at the museum").id
    second = mind.frames.create_i(gop, "the museum cafe serves dinosaur cookies").id
    results = {r.frame.id: r for r in mind.search("dinosaur museum", lanes=("keyword",))}
    for frame_id in (first, second):  # each is beside the other, and found by the lane itself
        assert results[frame_id].explain["lanes"]["keyword"]
        assert results[frame_id].explain["expansion"]["neighbour_of"] is None


def test_a_turn_between_two_hits_is_lifted_by_both(mind: ws.Mind) -> None:
    gop = mind.sessions.ensure("s1").gop_id
    first = mind.frames.create_i(gop, "the dinosaur exhibit opens at the museum").id
    between = mind.frames.create_i(gop, "what a day that was").id
    last = mind.frames.create_i(gop, "the museum shop sells dinosaur bones").id
    results = {r.frame.id: r for r in mind.search("dinosaur museum", lanes=("keyword",))}
    assert results[between].explain["expansion"]["neighbour_of"] == [first, last]
    assert results[between].rrf_score == pytest.approx(
        NEIGHBOUR_SHARE * (results[first].rrf_score + results[last].rrf_score))


def test_a_neighbour_outside_the_searchs_filters_is_not_brought_in(mind: ws.Mind) -> None:
    gop = mind.sessions.ensure("s1").gop_id
    answer = mind.frames.create_i(gop, TALK[1], created_at=datetime(2024, 5, 1, tzinfo=UTC),
                                  importance="temporary").id
    hit = mind.frames.create_i(gop, TALK[2], created_at=datetime(2024, 5, 2, tzinfo=UTC)).id
    assert set(_ids(mind.search(QUESTION, lanes=("keyword",)))) == {answer, hit}
    since = mind.search(QUESTION, lanes=("keyword",), since="2024-05-02T00:00:00+00:00")
    assert _ids(since) == [hit]
    kept = mind.search(QUESTION, lanes=("keyword",), where={"importance": ["normal"]})
    assert _ids(kept) == [hit]
    assert mind.search(QUESTION, lanes=("keyword",), gop_id="elsewhere") == []


def test_hybrid_search_and_recall_expand_alike(store: ws.Store, mind: ws.Mind) -> None:
    gop = mind.sessions.ensure("s1").gop_id
    ids = [mind.frames.create_i(gop, text).id for text in TALK]
    store.reconcile()
    searched = mind.search(QUESTION)
    assert ids[1] in _ids(searched)
    assert searched[0].explain["lanes_run"] == ["keyword", "vector"]
    recalled = mind.recall(QUESTION)
    assert _ids(recalled) == _ids(searched)
    assert all(r.frame.access_count == 1 for r in recalled)  # lifted turns are touched too
    assert ids[1] not in _ids(mind.recall(QUESTION, expand=False, lanes=("keyword",)))


def test_expand_must_be_a_bool(mind: ws.Mind) -> None:
    with pytest.raises(InvalidInputError, match="expand"):
        mind.search("anything", expand="no")  # type: ignore[arg-type]
