"""The escaped LIKE fallback (used when a keyword index errors) on both dialects."""

from __future__ import annotations

import waggle_store as ws
from waggle_store.dialects.base import LaneFilter
from waggle_store.search.query import like_patterns


def _like(store: ws.Store, mind: ws.Mind, query: str) -> list[int]:
    with store.read() as s:
        hits = store.adapter.like_search(s, patterns=like_patterns(query),
                                         where=LaneFilter([mind.id]), limit=10)
    return [h.frame_id for h in hits]


def test_like_fallback_escapes_and_filters_by_mind(store: ws.Store) -> None:
    a, b = store.mind("a"), store.mind("b")
    gop = a.sessions.ensure("g").gop_id
    percent = a.frames.create_i(gop, "Growth was 100% in Q3")
    plain = a.frames.create_i(gop, "Growth was 1000 in Q3")
    under = a.frames.create_i(gop, "the snake_case name")
    a.frames.create_i(gop, "the snakeXcase name")  # would match if _ were a wildcard
    other = b.frames.create_i(b.sessions.ensure("g").gop_id, "Growth was 100% in Q3 too")
    # Punctuation is stripped from the terms (as Waggle's fallback did), so "100%" looks for
    # "100"; what survives is escaped: "_" below is a literal underscore, not a wildcard.
    assert set(_like(store, a, "100%")) == {percent.id, plain.id}
    assert _like(store, a, "snake_case") == [under.id]      # _ is literal
    assert set(_like(store, a, "GROWTH")) == {percent.id, plain.id}  # case-insensitive
    assert other.id not in _like(store, a, "growth")
    assert _like(store, b, "growth") == [other.id]
