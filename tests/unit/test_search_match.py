"""The match score (waggle_store/search/match.py): computed in Python from the text and the
vector lane, so threshold decisions do not depend on a backend's keyword scores."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from waggle_store.dialects.base import LaneHit
from waggle_store.pipeline.combined import memory_score
from waggle_store.records import Frame, SearchResult
from waggle_store.search.match import fold_term, lexical_coverage, match_scores
from waggle_store.search.query import text_terms

NOW = datetime(2026, 5, 13, tzinfo=UTC)


@pytest.mark.parametrize(("term", "folded"), [
    ("Apollo's", "apollo"), ("leads", "lead"), ("class", "class"), ("bus", "bus"),
    ("ZÜRICH", "zürich"),
])
def test_fold_term(term: str, folded: str) -> None:
    assert fold_term(term) == folded


def test_lexical_coverage_is_the_share_of_query_terms_found() -> None:
    terms = {fold_term(t) for t in ("leads", "Project", "Apollo")}
    assert lexical_coverage(terms, "Sarah Chen leads Project Apollo.") == 1.0
    assert lexical_coverage(terms, "Apollo's launch") == pytest.approx(1 / 3)
    assert lexical_coverage(set(), "anything") == 0.0


#: ASCII words, punctuation and every ASCII character ``str.isspace`` calls whitespace
#: (including the separators \x1c-\x1f that ``str.split`` splits at).
_ASCII_TEXT = st.lists(st.sampled_from(
    ["lead", "leads", "Apollo's", "APOLLO", "misleading", "re-lead", "x", "ss", "'s", ".", ",",
     " ", "\t", "\n", "\x0b", "\x0c", "\r", "\x1c", "\x1f", "\u00e9", "Stra\u00dfe"]),
    max_size=30).map("".join)


@given(_ASCII_TEXT, st.sets(st.sampled_from(["lead", "apollo", "s", "strasse", "e"]),
                            min_size=1))
def test_lexical_coverage_equals_splitting_the_whole_content(content: str,
                                                             terms: set[str]) -> None:
    """The coverage looks only at the tokens that hold a query term; it must equal the
    coverage over every term of the content, on ASCII and non-ASCII texts alike."""
    every_term = {fold_term(t) for t in text_terms(content)}
    expected = sum(1 for t in terms if t in every_term) / len(terms)
    assert lexical_coverage(terms, content) == expected


def _hit(frame_id: int, distance: float) -> LaneHit:
    return LaneHit(frame_id, distance, ())


def test_match_combines_lexical_and_vector_evidence() -> None:
    contents = {1: "Sarah Chen leads Project Apollo.", 2: "Lunch is at noon.", 3: "Apollo"}
    vector = [_hit(2, 0.0), _hit(3, 0.5), _hit(1, 0.9)]
    scores = match_scores("Who leads Project Apollo?", keyword=True, vector_hits=vector,
                          contents=contents)
    assert scores[1] == 1.0  # every query term: a full match whatever the vector lane says
    assert scores[2] == 1.0  # the vector lane's exact match
    assert 1 / 3 < scores[3] < 1.0  # one term of three, and some vector evidence
    keyword_only = match_scores("Who leads Project Apollo?", keyword=True, vector_hits=None,
                                contents=contents)
    assert keyword_only == {1: 1.0, 2: 0.0, 3: round(1 / 3, 6)}
    assert match_scores("", keyword=True, vector_hits=None, contents=contents) == {
        1: 0.0, 2: 0.0, 3: 0.0}


def test_gates_read_match_times_relevance() -> None:
    frame = Frame(1, "I", "g", 0, None, "x", "normal", "user_stated", 0, NOW, NOW)
    assert memory_score(SearchResult(frame, 0.9, 0.8, 0.72, {}, 0.5)) == pytest.approx(0.4)
    assert memory_score(SearchResult(frame, 0.9, 2.0, 1.8, {}, 0.9)) == 1.0  # capped
    assert memory_score(SearchResult(frame, 0.9, 0.8, 0.72, {})) == 0.72  # no match score
