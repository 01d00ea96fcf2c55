"""The match score (waggle_store/search/match.py): computed in Python from the text and the
vector lane, so threshold decisions do not depend on a backend's keyword scores."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from waggle_store.dialects.base import LaneHit
from waggle_store.pipeline.combined import memory_score
from waggle_store.records import Frame, SearchResult
from waggle_store.search.match import fold_term, lexical_coverage, match_scores

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
