"""Hybrid search (keyword and vector lanes, fused and scored) on sqlite and postgres."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import bindparam

import waggle_store as ws
from waggle_store.pipeline.embed import embed_frames

HOSTILE_QUERIES = [
    '"', '""', '"unterminated', "say \"hello world", "((", "())", "(a OR b", "AND", "OR", "NOT",
    "AND OR NOT", "NEAR", "NEAR(alpha beta, 2)", "alpha NEAR/3 beta", "*", "alpha*", "*alpha",
    "col:alpha", "content:alpha", ":", "^alpha", "^", "-", "--alpha", "-alpha -beta", "\\",
    "\\\\alpha\\", "alpha\\\"beta", "🚀🔥 emoji only 😀", "😀",
    "'; DROP TABLE waggle_memory_frames; --", "1' OR '1'='1",
    "alpha UNION SELECT * FROM waggle_minds", "x" * 10_000, " ".join(["alpha"] * 2000),
    "", "   ", "the a an is are was of to in for on with", "what's it", "\x00alpha\x00",
    "alpha & beta | !gamma <-> delta", "{alpha} [beta] <gamma>", "%_%", "naïve café Zürich",
]

CORPUS = [
    "user prefers TypeScript over JavaScript for new services",
    "C++ templates make compile errors hard to read",
    "the node.js event loop blocks on synchronous file reads",
    "planning a trip to Zürich in May with the team",
    "send the e-mail about the invoice to Bob tomorrow",
    "roadmap for Q2 launch of Project Apollo",
    "Q2 launch success criteria: 1000 active users",
    "the coffee machine on floor 3 is broken again",
    "alpha beta gamma delta are Greek letters",
]


@pytest.fixture
def gop(mind: ws.Mind) -> str:
    return mind.sessions.ensure("gop-a").gop_id


def _seed(store: ws.Store, mind: ws.Mind, gop: str, texts: list[str], **kw: object) -> list[int]:
    ids = [mind.frames.create_i(gop, text, **kw).id for text in texts]  # type: ignore[arg-type]
    embed_frames(store.context, ids)
    return ids


def test_forty_hostile_queries_return_lists(store: ws.Store, mind: ws.Mind, gop: str) -> None:
    assert len(HOSTILE_QUERIES) >= 40
    _seed(store, mind, gop, CORPUS)
    for query in HOSTILE_QUERIES:
        for lanes in (None, ("keyword",)):
            results = mind.search(query, limit=5, lanes=lanes)
            assert isinstance(results, list), query
            assert len(results) <= 5


def test_hostile_queries_without_embedder(store_factory, gop: str) -> None:  # type: ignore[no-untyped-def]
    store = store_factory(embedder=None)
    mind = store.mind("test")
    mind.sessions.ensure(gop)
    for text in CORPUS:
        mind.frames.create_i(gop, text)
    for query in HOSTILE_QUERIES:
        assert isinstance(mind.search(query, limit=5), list), query


@pytest.mark.parametrize(
    ("query", "expected"),
    [("C++", "C++ templates"), ("node.js", "node.js event loop"), ("Zürich", "Zürich in May"),
     ("e-mail", "e-mail about"), ("TypeScript preferences", "prefers TypeScript")],
)
def test_unusual_tokens_are_found(store: ws.Store, mind: ws.Mind, gop: str, query: str,
                                  expected: str) -> None:
    _seed(store, mind, gop, CORPUS)
    keyword = mind.search(query, limit=3, lanes=("keyword",))
    assert keyword
    assert expected in keyword[0].frame.content
    hybrid = mind.search(query, limit=3)
    assert expected in hybrid[0].frame.content


def test_results_explain_and_scores(store: ws.Store, mind: ws.Mind, gop: str) -> None:
    ids = _seed(store, mind, gop, CORPUS)
    results = mind.search("Q2 launch", limit=3)
    assert {ids[5], ids[6]} <= {r.frame.id for r in results}
    assert len(results) <= 3
    finals = [r.final_score for r in results]
    assert finals == sorted(finals, reverse=True)
    for r in results:
        assert r.rrf_score > 0
        assert r.relevance_score > 0
        assert r.final_score == r.rrf_score * r.relevance_score
        assert 0 < r.rrf_score <= 1.0
        ex = r.explain
        assert set(ex["lanes_run"]) == {"keyword", "vector"}
        for lane, info in ex["lanes"].items():
            assert lane in ("keyword", "vector")
            assert isinstance(info["rank"], int)
            assert isinstance(info["score"], float)
        for part in ("temporal", "popularity", "contextual", "importance"):
            assert part in ex["subscores"]
            assert f"{part}_weight" in ex["subscores"]
        assert ex["final"] == r.final_score
        assert ex["profile"] == "balanced"
    top = results[0]
    assert set(top.explain["lanes"]) == {"keyword", "vector"}


def test_top_of_both_lanes_scores_one(store: ws.Store, mind: ws.Mind, gop: str) -> None:
    _seed(store, mind, gop, CORPUS)
    top = mind.search("coffee machine broken floor", limit=1)[0]
    assert top.explain["lanes"]["keyword"]["rank"] == 0
    assert top.explain["lanes"]["vector"]["rank"] == 0
    assert top.rrf_score == 1.0
    assert top.relevance_score == pytest.approx(0.8)  # balanced, fresh, never accessed, normal


def test_input_validation(mind: ws.Mind) -> None:
    with pytest.raises(ws.InvalidInputError, match="profile"):
        mind.search("x", profile="fastest")
    for limit in (0, -1, 1001, True, 2.5, "10"):
        with pytest.raises(ws.InvalidInputError, match="limit"):
            mind.search("x", limit=limit)
    with pytest.raises(ws.InvalidInputError):
        mind.search("x", since=datetime(2025, 1, 1))  # naive
    with pytest.raises(ws.InvalidInputError):
        mind.search("x", since="2025-01-02T00:00:00Z", until="2025-01-01T00:00:00Z")
    with pytest.raises(ws.InvalidInputError):
        mind.search(None)  # type: ignore[arg-type]
    with pytest.raises(ws.InvalidInputError):
        mind.search("x", lanes=("bm25",))
    with pytest.raises(ws.InvalidInputError):
        mind.search("x", context={"a": 1})
    for profile in ("balanced", "recent", "important", "connected"):
        assert mind.search("x", profile=profile) == []


def test_profiles_change_relevance(store: ws.Store, mind: ws.Mind, gop: str) -> None:
    crit = mind.frames.create_i(gop, "release checklist for the launch", importance="critical")
    temp = mind.frames.create_i(gop, "release checklist draft for launch", importance="temporary")
    embed_frames(store.context, [crit.id, temp.id])
    results = mind.search("release checklist launch", profile="important")
    assert results[0].frame.id == crit.id
    assert results[0].explain["subscores"]["importance"] == 2.0


def test_context_and_query_entities_feed_contextual(
    store: ws.Store, mind: ws.Mind, gop: str
) -> None:
    ids = _seed(store, mind, gop, CORPUS)
    given = mind.search("Q2 launch", context={ids[5]: 0, ids[6]: 2})
    by_id = {r.frame.id: r for r in given}
    assert by_id[ids[5]].explain["subscores"]["contextual"] == 1.0
    assert by_id[ids[6]].explain["subscores"]["contextual"] == 0.4
    # No context: entities named in the query, through mentions and active relations.
    apollo = mind.knowledge.create_entity("project", "Project Apollo")
    bob = mind.knowledge.create_entity("person", "Bob")
    mind.knowledge.create_relation(bob.id, apollo.id, "works_on")
    from waggle_store.models import EntityMentionRow

    with store.write() as s:
        s.add(EntityMentionRow(entity_id=apollo.id, frame_id=ids[5]))
        s.add(EntityMentionRow(entity_id=bob.id, frame_id=ids[4]))
    auto = {r.frame.id: r for r in mind.search("what is the status of project apollo?", limit=20)}
    assert auto[ids[5]].explain["graph_distance"] == 0
    assert auto[ids[5]].explain["subscores"]["contextual"] == 1.0
    if ids[4] in auto:
        assert auto[ids[4]].explain["graph_distance"] == 1
        assert auto[ids[4]].explain["subscores"]["contextual"] == 0.7


def test_recall_touches_returned_frames(store: ws.Store, mind: ws.Mind, gop: str) -> None:
    ids = _seed(store, mind, gop, CORPUS)
    before = mind.frames.get(ids[7])
    assert before is not None
    assert before.access_count == 0
    results = mind.recall("coffee machine", limit=2)
    assert results
    assert results[0].frame.id == ids[7]
    assert results[0].frame.access_count == 1
    after = {i: mind.frames.get(i) for i in ids}
    touched = {r.frame.id for r in results}
    for frame_id, frame in after.items():
        assert frame is not None
        assert frame.access_count == (1 if frame_id in touched else 0)
    assert after[ids[7]].last_accessed >= before.last_accessed  # type: ignore[union-attr]
    mind.search("coffee machine", limit=2)  # search alone does not touch
    assert mind.frames.get(ids[7]).access_count == 1  # type: ignore[union-attr]


def test_keyword_only_without_embedder(store_factory) -> None:  # type: ignore[no-untyped-def]
    store = store_factory(embedder=None)
    mind = store.mind("test")
    gop = mind.sessions.ensure("g").gop_id
    for text in CORPUS:
        mind.frames.create_i(gop, text)
    results = mind.search("coffee machine")
    assert results
    assert "coffee" in results[0].frame.content
    assert results[0].explain["lanes_run"] == ["keyword"]
    assert any("no embedder" in d for d in results[0].explain["degraded"])
    assert results[0].rrf_score == 1.0  # an absent lane does not cap the score
    assert store.health().vector_search is False
    assert mind.search("the a an of") == []


def test_vector_lane_only_for_stop_word_queries(store: ws.Store, mind: ws.Mind, gop: str) -> None:
    _seed(store, mind, gop, CORPUS)
    results = mind.search("the a an is are was of to in for on with")
    assert all(r.explain["lanes_run"] == ["vector"] for r in results)


def test_session_filter_returns_full_pages(store: ws.Store, mind: ws.Mind) -> None:
    other = mind.sessions.ensure("crowd").gop_id
    target = mind.sessions.ensure("target").gop_id
    # The crowd outranks the target frames on both lanes; a post-filter would find none of them.
    crowd = [mind.frames.create_i(other, f"alpha alpha alpha {n}").id for n in range(120)]
    wanted = [
        mind.frames.create_i(
            target, f"alpha and a long tail of unrelated filler words number {n}"
        ).id
        for n in range(30)
    ]
    embed_frames(store.context, crowd + wanted)
    for lanes in (None, ("keyword",), ("vector",)):
        results = mind.search("alpha", limit=20, gop_id=target, lanes=lanes)
        assert len(results) == 20, lanes
        assert {r.frame.gop_id for r in results} == {target}
    assert len(mind.search("alpha", limit=50, gop_id=target)) == 30


def test_time_filter_returns_full_pages(store: ws.Store, mind: ws.Mind) -> None:
    gop = mind.sessions.ensure("g").gop_id
    old = datetime(2020, 1, 1, tzinfo=UTC)
    new = datetime(2024, 6, 1, tzinfo=UTC)
    ids = [
        mind.frames.create_i(gop, f"beta beta beta {n}", created_at=old + timedelta(hours=n)).id
        for n in range(120)
    ]
    ids += [
        mind.frames.create_i(
            gop, f"beta plus many other words to dilute it {n}", created_at=new + timedelta(hours=n)
        ).id
        for n in range(25)
    ]
    embed_frames(store.context, ids)
    since = datetime(2024, 1, 1, tzinfo=UTC)
    for lanes in (None, ("keyword",), ("vector",)):
        results = mind.search("beta", limit=20, since=since, lanes=lanes)
        assert len(results) == 20, lanes
        assert all(r.frame.created_at >= since for r in results)
        until = mind.search("beta", limit=20, until="2020-01-02T00:00:00Z", lanes=lanes)
        assert len(until) == 20
        assert all(r.frame.created_at.year == 2020 for r in until)
    # Boundaries are inclusive and compare instants, not strings.
    exact = mind.search("beta", limit=5, since=new, until=new, lanes=("keyword",))
    assert [r.frame.created_at for r in exact] == [new]


def test_minds_do_not_see_each_other(store: ws.Store) -> None:
    a, b = store.mind("a"), store.mind("b")
    ga, gb = a.sessions.ensure("g").gop_id, b.sessions.ensure("g").gop_id
    fa = a.frames.create_i(ga, "secret plan for mind a")
    fb = b.frames.create_i(gb, "public notes for mind b")
    embed_frames(store.context, [fa.id, fb.id])
    assert {r.frame.id for r in a.search("secret plan notes")} == {fa.id}
    assert {r.frame.id for r in b.search("secret plan notes")} == {fb.id}


def test_deleted_and_updated_frames(store: ws.Store, mind: ws.Mind, gop: str) -> None:
    ids = _seed(store, mind, gop, CORPUS)
    mind.frames.delete(ids[7])
    assert all(r.frame.id != ids[7] for r in mind.search("coffee machine"))
    old_words = "alpha beta gamma delta"
    assert mind.search(old_words, lanes=("vector",))[0].frame.id == ids[8]
    mind.frames.update(ids[8], "omega psi chi are Greek letters too")
    # The old vector went with the old text: the words it held no longer find the frame.
    assert ids[8] not in {r.frame.id for r in mind.search(old_words, lanes=("vector",))}
    # The changed frame is keyword-searchable at once; frames.update re-embeds it right after the
    # write (or leaves it pending for reconcile), so nothing is left for reconcile here.
    assert mind.search("omega psi", lanes=("keyword",))[0].frame.id == ids[8]
    assert store.reconcile().vectors_fixed == 0
    assert mind.search("omega psi chi", lanes=("vector",))[0].frame.id == ids[8]


def test_a_switch_elsewhere_turns_the_cached_vector_lane_off(store_factory) -> None:  # type: ignore[no-untyped-def]
    # Search caches each mind's model; another store (another process) writing with another
    # embedder changes nothing, but switching the mind must turn this store's lane off at once.
    from waggle_store.embeddings import HashingEmbedder

    first = store_factory()
    mind = first.mind("m")
    gop = mind.sessions.ensure("g").gop_id
    _seed(first, mind, gop, CORPUS)
    assert mind.search("coffee machine")[0].explain["lanes_run"] == ["keyword", "vector"]
    other = store_factory(embedder=HashingEmbedder(64))
    frame = other.mind("m").frames.create_i(gop, "written by the other process")
    assert embed_frames(other.context, [frame.id]).embedded == 0  # not this mind's model
    assert mind.search("coffee machine")[0].explain["lanes_run"] == ["keyword", "vector"]
    other.mind("m").switch_embedding_model()
    results = mind.search("coffee machine")
    assert results
    assert all(r.explain["lanes_run"] == ["keyword"] for r in results)
    assert any("switch_embedding_model" in d for d in results[0].explain["degraded"])


def test_stale_vectors_do_not_shorten_the_vector_lane(
    store: ws.Store, mind: ws.Mind, gop: str
) -> None:
    # The nearest vectors are stale (their frames' text changed without re-embedding): the KNN
    # drops them after the manifest check and widens until the page is full.
    from sqlalchemy import text

    near = _seed(store, mind, gop, [f"gamma gamma gamma {n}" for n in range(60)])
    far = _seed(store, mind, gop, [f"gamma and other words entirely {n}" for n in range(30)])
    with store.write() as s:
        s.execute(
            text(
                "UPDATE waggle_frame_embeddings SET content_hash = 'stale' WHERE frame_id IN :ids"
            ).bindparams(bindparam("ids", expanding=True)),
            {"ids": near},
        )
    results = mind.search("gamma gamma gamma", limit=20, lanes=("vector",))
    assert len(results) == 20
    assert {r.frame.id for r in results} <= set(far)
