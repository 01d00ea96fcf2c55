"""``explain.Ranking``: a search's lanes taken one at a time, as their rows arrive, rank exactly
as ``rank_results`` ranks them all at once — including a frame two lanes returned as different
rows (read at different moments: a touch in between), whose last row counts, and frames with a
graph distance, whose relevance is computed when the distances are known."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

from waggle_store.dialects.base import LaneHit
from waggle_store.records import Frame
from waggle_store.search.explain import Ranking, rank_results
from waggle_store.search.fusion import LANE_CONFIDENCE, Fusion

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def _row(frame_id: int, content: str, *, access_count: int = 0, days: int = 0,
         importance: str = "normal") -> tuple[object, ...]:
    when = NOW - timedelta(days=days)
    frame = Frame(frame_id, "I", "s", frame_id, None, content, importance, "user_stated",
                  access_count, when, when)
    return tuple(getattr(frame, f.name) for f in dataclasses.fields(Frame))


def _lanes() -> dict[str, list[LaneHit]]:
    keyword = [LaneHit(1, 3.0, _row(1, "apollo launch plan", days=40), False),
               LaneHit(2, 2.0, _row(2, "the apollo crew", access_count=2, days=3), True),
               LaneHit(3, 1.0, _row(3, "launch window", importance="critical", days=90), False)]
    # Frame 2 again, touched since the keyword lane read it (another row), and vector-only ones.
    vector = [LaneHit(2, 0.2, _row(2, "the apollo crew", access_count=9, days=0), True),
              LaneHit(4, 0.3, _row(4, "a rocket to the moon", days=10), True),
              LaneHit(1, 0.5, _row(1, "apollo launch plan", days=40), False)]
    return {"keyword": keyword, "vector": vector}


def test_lanes_taken_one_at_a_time_rank_as_rank_results() -> None:
    ran = _lanes()
    fusion = Fusion({lane: [h.frame_id for h in hits] for lane, hits in ran.items()},
                    weights={lane: LANE_CONFIDENCE[lane]([h.score for h in hits])
                             for lane, hits in ran.items()})
    for distances in ({}, {2: 1, 4: 0}):
        whole = rank_results(ran=ran, fusion=fusion, distances=distances, profile="balanced",
                             limit=10, now=NOW, keyword_backend="tsvector", degraded=[],
                             query="apollo launch", keyword=True)
        ranking = Ranking(profile="balanced", now=NOW, query="apollo launch", keyword=True)
        ranking.take(ran["keyword"])  # as the keyword lane ends, the vector lane still running
        ranking.take(ran["vector"])
        steps = ranking.results(ran=ran, fusion=fusion, distances=distances, limit=10,
                                keyword_backend="tsvector", degraded=[])
        assert steps == whole
        # The last row of frame 2 counts: its access count of 9, as rank_results reads it.
        assert next(r for r in steps if r.frame.id == 2).frame.access_count == 9
        assert [r.explain["graph_distance"] for r in steps if r.frame.id in distances] == [
            distances[r.frame.id] for r in steps if r.frame.id in distances]


def test_a_frames_last_row_sets_its_relevance() -> None:
    """Frame 2's relevance is that of its second row (touched: more accesses), not the first."""
    ran = _lanes()
    fusion = Fusion({lane: [h.frame_id for h in hits] for lane, hits in ran.items()})
    ranking = Ranking(profile="balanced", now=NOW)
    ranking.take(ran["keyword"])
    first = ranking.results(ran={"keyword": ran["keyword"]},
                            fusion=Fusion({"keyword": [1, 2, 3]}), distances={}, limit=10,
                            keyword_backend=None, degraded=[])
    ranking.take(ran["vector"])
    both = ranking.results(ran=ran, fusion=fusion, distances={}, limit=10, keyword_backend=None,
                           degraded=[])
    before = next(r.relevance_score for r in first if r.frame.id == 2)
    after = next(r.relevance_score for r in both if r.frame.id == 2)
    assert after > before  # popularity from 2 to 9 accesses, last access now
