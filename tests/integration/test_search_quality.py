"""Hybrid search is not worse than its better lane on a small built-in conversation (issue 4).

A deterministic stand-in for the LoCoMo measurement of ``benchmarks/locomo_recall.py``: frames
shaped like LoCoMo turns ("<speaker>: <text>", the speakers' names in every frame, so a name
in a question matches everything), questions with their evidence frames, the hashing embedder
of the test stores, on both dialects. Plain RRF (k = 60, equal weights) lets frames that merely
appear in both lanes push a lane's clear best match out of the top; the confidence-weighted
fusion of ``search/fusion.py`` must keep hybrid recall at least at the better lane's. On this
corpus (SQLite, recall@3) keyword scores 1.0, vector 0.917, plain RRF 0.917 (it loses "What did
Caroline research?"), the weighted fusion 1.0.
"""

from __future__ import annotations

import pytest

import waggle_store as ws
from waggle_store.pipeline.embed import embed_frames

TURNS = [
    "Caroline: I went to the LGBTQ support group yesterday and it was so powerful.",
    "Melanie: That sounds amazing! I painted a sunrise over the lake last week.",
    "Caroline: I have been researching adoption agencies for a while now.",
    "Melanie: My kids love the beach, we go camping there every summer.",
    "Caroline: I am thinking about a career in counseling and mental health.",
    "Melanie: I play the clarinet in a community band on Tuesdays.",
    "Caroline: What do you do on the weekends with your family?",
    "Melanie: We go hiking and sometimes we visit the museum downtown.",
    "Caroline: I gave a talk at a school about my transgender journey.",
    "Melanie: Running has been great for clearing my head lately.",
    "Caroline: My friends gave me a hand-painted bowl for my birthday.",
    "Melanie: I signed up for a pottery class, the first session was fun.",
    "Caroline: Do you want to come to the pride parade with me?",
    "Melanie: Sure, what day is it? I will bring the kids with me.",
    "Caroline: It is on Saturday, we can meet at the park near my place.",
    "Melanie: I read a book about Vivaldi and now I listen to classical music.",
    "Caroline: I want to move back to Sweden someday, my home country.",
    "Melanie: Did you see the game last night? It was a great game.",
    "Caroline: I have a necklace from my grandmother, it reminds me of home.",
    "Melanie: My husband and I celebrated our anniversary at a quiet restaurant.",
]

#: question → indexes of the evidence turns.
QUESTIONS = {
    "When did Caroline go to the LGBTQ support group?": {0},
    "What did Melanie paint?": {1},
    "What did Caroline research?": {2},
    "Where does Melanie go camping with her kids?": {3},
    "What career is Caroline thinking about?": {4},
    "What instrument does Melanie play in a band?": {5},
    "What does Melanie say running has been great for?": {9},
    "What did Caroline get for her birthday from her friends?": {10},
    "What class did Melanie sign up for?": {11},
    "Where does Caroline want to move back to?": {16},
    "What does Caroline's necklace remind her of?": {18},
    "Where did Melanie celebrate her anniversary?": {19},
}
K = 3


def _recall(mind: ws.Mind, ids: list[int], lanes: tuple[str, ...]) -> float:
    total = 0.0
    for question, gold in QUESTIONS.items():
        wanted = {ids[i] for i in gold}
        found = {r.frame.id for r in mind.search(question, limit=K, lanes=lanes)}
        total += len(found & wanted) / len(wanted)
    return total / len(QUESTIONS)


def test_hybrid_is_not_worse_than_either_lane(store: ws.Store, mind: ws.Mind) -> None:
    gop = mind.sessions.ensure("session_1").gop_id
    ids = [mind.frames.create_i(gop, text).id for text in TURNS]
    embed_frames(store.context, ids)
    keyword = _recall(mind, ids, ("keyword",))
    vector = _recall(mind, ids, ("vector",))
    hybrid = _recall(mind, ids, ("keyword", "vector"))
    assert hybrid >= max(keyword, vector), (keyword, vector, hybrid)


def test_explain_shows_each_lanes_rank_score_and_weight(store: ws.Store, mind: ws.Mind) -> None:
    gop = mind.sessions.ensure("session_1").gop_id
    ids = [mind.frames.create_i(gop, text).id for text in TURNS]
    embed_frames(store.context, ids)
    results = mind.search("What instrument does Melanie play in a band?", limit=5)
    assert results[0].frame.id == ids[5]
    for r in results:
        lanes, expansion = r.explain["lanes"], r.explain["expansion"]
        assert lanes or expansion["neighbour_of"]  # a lane's hit, or a turn beside one
        for info in lanes.values():
            assert isinstance(info["rank"], int)
            assert isinstance(info["score"], float)
            assert 0.0 <= info["weight"] <= 1.0
        if lanes:  # the lanes' contributions make the fused score before the expansion
            assert sum(info["contribution"] for info in lanes.values()) == pytest.approx(
                expansion["rrf_before"])
        assert 0.0 <= r.rrf_score <= 1.0
    top = results[0].explain["lanes"]
    assert top["keyword"]["rank"] == 0
    assert top["keyword"]["weight"] == 1.0


def test_rare_term_outranks_common_term(store: ws.Store, mind: ws.Mind) -> None:
    """The keyword lane weighs terms by rarity (bm25 on SQLite, idf-weighted on Postgres).

    "Caroline" is in every frame but one, four times in the short first frame; "violin" is in
    one longer frame. Without term rarity (Postgres ``ts_rank_cd`` before) the name-heavy frame
    ranked first; with it the rare word's frame is first and the name-only frames get a small
    fusion weight.
    """
    gop = mind.sessions.ensure("session_1").gop_id
    texts = [
        "Caroline: Caroline and Caroline's friends met Caroline's sister.",
        "Melanie: I practised the violin for an hour this morning before work started.",
        *[f"Caroline: {text.split(': ', 1)[1]}" for text in TURNS[:8]],
    ]
    ids = [mind.frames.create_i(gop, text).id for text in texts]
    embed_frames(store.context, ids)
    hits = mind.search("Caroline violin", limit=10, lanes=("keyword",))
    assert hits[0].frame.id == ids[1]
    assert {h.frame.id for h in hits} == set(ids)
    # The turn after the violin one has "violin" in its context (half a word): second, above
    # every frame that only says the name.
    assert hits[1].frame.id == ids[2]
    for h in hits[2:]:
        lane = h.explain["lanes"]["keyword"]
        assert abs(lane["score"]) < abs(hits[0].explain["lanes"]["keyword"]["score"])
        assert lane["weight"] < 0.25, (h.frame.content, lane)
    assert mind.search("Caroline violin", limit=1)[0].frame.id == ids[1]
