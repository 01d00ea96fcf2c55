"""Graph walks (one recursive query each): traverse and the BFS distances, on both dialects.

The cognify helpers of the same repositories are in test_knowledge_cognify_helpers.py.
"""

from __future__ import annotations

import random

import pytest
import sqlalchemy as sa

import waggle_store as ws
from tests.integration.knowledge_helpers import count_statements, kg
from waggle_store.models import RelationRow
from waggle_store.repositories.knowledge import MAX_DEPTH, MAX_NODES
from waggle_store.search.graph import MAX_GRAPH_DEPTH, GraphDistances
from waggle_store.timeutil import utcnow


def chain(mind: ws.Mind) -> dict[str, ws.Entity]:
    """A→B→C→D by 'leads', plus A→D by 'dislikes'."""
    k = mind.knowledge
    e = {n: k.create_entity("node", n) for n in "ABCD"}
    for s, t in ("AB", "BC", "CD"):
        k.create_relation(e[s].id, e[t].id, "leads")
    k.create_relation(e["A"].id, e["D"].id, "dislikes")
    return e


# -- traverse -----------------------------------------------------------------------------------


def test_traverse_chain_by_depth(mind: ws.Mind) -> None:
    e = chain(mind)
    k = mind.knowledge
    assert [x.name for x in k.traverse(e["A"].id, "leads", 1)] == ["B"]
    assert {x.name for x in k.traverse(e["A"].id, "leads", 2)} == {"B", "C"}
    assert [x.name for x in k.traverse(e["A"].id, "leads", 3)] == ["B", "C", "D"]  # BFS order
    assert [x.name for x in k.traverse(e["A"].id, "leads", 0)] == []
    assert [x.name for x in k.traverse(e["A"].id, "dislikes", 3)] == ["D"]
    # No type: D is one hop away through 'dislikes'.
    assert [x.name for x in k.traverse(e["A"].id, None, 3)] == ["B", "D", "C"]
    assert k.traverse(e["D"].id, "leads", 3) == []  # outgoing edges only


def test_traverse_is_cycle_safe(mind: ws.Mind) -> None:
    k = mind.knowledge
    a, b = k.create_entity("node", "A"), k.create_entity("node", "B")
    k.create_relation(a.id, b.id, "links")
    k.create_relation(b.id, a.id, "links")
    assert [x.name for x in k.traverse(a.id, "links", 5)] == ["B"]
    k.create_relation(a.id, a.id, "links")  # a self-loop is harmless too
    assert [x.name for x in k.traverse(a.id, "links", 20)] == ["B"]


def test_traverse_dense_graph_at_max_depth_stays_bounded(store: ws.Store, mind: ws.Mind) -> None:
    """A complete digraph has n^d paths of length d; the walk stays at nodes × depth rows."""
    k = mind.knowledge
    nodes = [k.create_entity("node", f"n{i}") for i in range(12)]
    with store.write() as session:
        for s in nodes:
            for t in nodes:
                if s.id != t.id:
                    kg(session, mind.id).relations.create(s.id, t.id, "links")
    assert len(k.traverse(nodes[0].id, "links", MAX_DEPTH)) == 11
    assert set(k.bfs_distances(nodes[0].id, MAX_DEPTH).values()) == {1}


def bfs(edges: list[tuple[int, int]], start: int, depth: int, undirected: bool) -> dict[int, int]:
    """Plain breadth-first hops over ``edges``, the reference for the SQL walk."""
    out: dict[int, list[int]] = {}
    for s, t in edges:
        out.setdefault(s, []).append(t)
        if undirected:
            out.setdefault(t, []).append(s)
    hops, frontier = {start: 0}, [start]
    for level in range(1, depth + 1):
        frontier = [n for f in frontier for n in out.get(f, []) if n not in hops]
        for n in frontier:
            hops.setdefault(n, level)
    return hops


def dense_graph(store: ws.Store, mind: ws.Mind, nodes: int, edges: int) -> tuple[
        list[int], list[tuple[int, int]]]:
    """``nodes`` entities and ``edges`` random distinct directed 'links' edges (seeded)."""
    ids = [mind.knowledge.create_entity("node", f"n{i}").id for i in range(nodes)]
    rng, pairs = random.Random(3), set()
    while len(pairs) < edges:
        s, t = rng.sample(ids, 2)
        pairs.add((s, t))
    now = utcnow()
    with store.write() as session:
        session.execute(RelationRow.__table__.insert(), [
            {"mind_id": mind.id, "source_id": s, "target_id": t, "relation_type": "links",
             "confidence": 1.0, "properties": {}, "valid_from": now, "valid_to": None,
             "recorded_at": now} for s, t in sorted(pairs)])
    return ids, sorted(pairs)


def test_walks_of_a_dense_graph_at_max_depth_are_bfs_and_capped(
        store: ws.Store, mind: ws.Mind) -> None:
    """300 entities, 6,000 edges, depth 20: exact BFS hops while under the cap, and at most
    ``max_nodes`` entities, the nearest with their exact hops, when the cap cuts the walk."""
    ids, edges = dense_graph(store, mind, 300, 6000)
    k, start = mind.knowledge, ids[0]
    directed, undirected = bfs(edges, start, MAX_DEPTH, False), bfs(edges, start, MAX_DEPTH, True)
    directed.pop(start)
    assert k.bfs_distances(start, MAX_DEPTH) == directed
    assert len(directed) <= MAX_NODES
    with store.read() as session:
        assert kg(session, mind.id).graph.distances([start], MAX_DEPTH) == undirected
        capped = kg(session, mind.id).graph.distances([start], MAX_DEPTH, max_nodes=80)
    assert 0 < len(capped) <= 80
    assert all(undirected[n] == hops for n, hops in capped.items())
    nearest = {n for n, hops in undirected.items() if hops <= 1}
    assert len(nearest) < 80
    assert nearest <= set(capped)  # the walk is cut level by level: the nearest are all there
    walked = k.traverse(start, "links", MAX_DEPTH, max_nodes=40)
    assert 0 < len(walked) < 40
    assert {e.id for e in walked} >= {n for n, hops in directed.items() if hops == 1}
    assert all(e.id in directed for e in walked)


def test_search_graph_distances_are_the_walks_hops_to_mentioned_entities(
        store: ws.Store, mind: ws.Mind) -> None:
    """The search's frame distances: per frame, the fewest undirected hops (≤ 3) from a named
    entity to an entity it mentions — the same walk as the knowledge API's."""
    ids, edges = dense_graph(store, mind, 60, 150)
    gop = mind.sessions.ensure("g").gop_id
    frames = [mind.frames.create_i(gop, f"frame {i}").id for i in range(30)]
    rng = random.Random(9)
    mentioned = {f: rng.sample(ids, 2) for f in frames}
    with store.write() as session:
        for f, entity_ids in mentioned.items():
            kg(session, mind.id).mentions.add_many(f, entity_ids)
    names = ["n0", "n7"]  # case-folded entity names, as the search's query names are
    hops: dict[int, int] = {}
    for start in (ids[0], ids[7]):
        for node, n in bfs(edges, start, MAX_GRAPH_DEPTH, True).items():
            hops[node] = min(n, hops.get(node, n))
    expected = {f: min(hops[e] for e in es if e in hops)
                for f, es in mentioned.items() if any(e in hops for e in es)}
    with store.engine.connect() as conn:
        got = GraphDistances(store.adapter)(conn, mind.id, names, frames)
    assert got == expected
    assert set(got.values()) >= {0, 1}


def test_a_capped_walk_keeps_the_nearest_visits(mind: ws.Mind) -> None:
    e = chain(mind)
    k = mind.knowledge
    # Visits in order: A at 0, B and D at 1, C at 2, D again at 3.
    assert [x.name for x in k.traverse(e["A"].id, None, 3, max_nodes=3)] == ["B", "D"]
    assert [x.name for x in k.traverse(e["A"].id, None, 3, max_nodes=4)] == ["B", "D", "C"]
    assert k.bfs_distances(e["A"].id, 3, max_nodes=1) == {}
    for bad in (0, -1, 2.5, "3", True, 100_001):
        with pytest.raises(ws.InvalidInputError, match="max_nodes"):
            k.traverse(e["A"].id, None, 3, max_nodes=bad)  # type: ignore[arg-type]


def test_traverse_skips_retired_entities_and_relations(mind: ws.Mind) -> None:
    e = chain(mind)
    k = mind.knowledge
    k.retire_entity(e["C"].id)
    assert [x.name for x in k.traverse(e["A"].id, "leads", 3)] == [
        "B"
    ]  # C neither returned nor expanded
    k.retire_relation(k.relations_from(e["A"].id, "leads")[0].id)
    assert k.traverse(e["A"].id, "leads", 3) == []


def test_traverse_is_one_recursive_query(store: ws.Store, mind: ws.Mind) -> None:
    e = chain(mind)
    with store.read() as session:
        session.execute(sa.select(1))  # the transaction is open before counting
        with count_statements(store) as seen:
            rows = kg(session, mind.id).graph.traverse(e["A"].id, "leads", 3)
            distances = kg(session, mind.id).graph.distances([e["A"].id], 3)
    assert [(r.name, hops) for r, hops in rows] == [("B", 1), ("C", 2), ("D", 3)]
    assert distances[e["D"].id] == 1  # undirected, any type: A–D via 'dislikes'
    assert len(seen) == 2
    assert all("RECURSIVE" in s.upper() for s in seen)


def test_walk_arguments_are_checked(mind: ws.Mind) -> None:
    e = chain(mind)
    k = mind.knowledge
    for bad in (-1, MAX_DEPTH + 1, 2.5, "3", True):
        with pytest.raises(ws.InvalidInputError, match="max_depth"):
            k.traverse(e["A"].id, "leads", bad)  # type: ignore[arg-type]
        with pytest.raises(ws.InvalidInputError, match="max_depth"):
            k.bfs_distances(e["A"].id, bad)  # type: ignore[arg-type]
    with pytest.raises(ws.NotFoundError):
        k.traverse(999_999)
    with pytest.raises(ws.NotFoundError):
        k.bfs_distances(999_999)


# -- distances ----------------------------------------------------------------------------------


def test_bfs_distances(mind: ws.Mind) -> None:
    k = mind.knowledge
    a, b, c, d = (k.create_entity("node", n) for n in "ABCD")
    k.create_relation(a.id, b.id, "r1")
    k.create_relation(b.id, c.id, "r2")
    k.create_relation(c.id, d.id, "r3")
    assert k.bfs_distances(a.id) == {b.id: 1, c.id: 2, d.id: 3}
    assert k.bfs_distances(a.id, max_depth=2) == {b.id: 1, c.id: 2}
    k.create_relation(a.id, c.id, "shortcut")
    assert k.bfs_distances(a.id) == {b.id: 1, c.id: 1, d.id: 2}
    lonely = k.create_entity("node", "E")
    assert lonely.id not in k.bfs_distances(a.id)
    assert k.bfs_distances(d.id) == {}
    k.retire_entity(d.id)  # Waggle still reported retired targets; we do not
    assert k.bfs_distances(a.id) == {b.id: 1, c.id: 1}


def test_graph_distances_for_the_contextual_score(store: ws.Store, mind: ws.Mind) -> None:
    e = chain(mind)
    ids = {n: x.id for n, x in e.items()}
    with store.read() as session:
        undirected = kg(session, mind.id).graph.distances([ids["D"]], max_depth=3)
        directed = kg(session, mind.id).graph.distances([ids["D"]], max_depth=3, undirected=False)
        two_starts = kg(session, mind.id).graph.distances([ids["B"], ids["D"]], max_depth=1)
        leads_only = kg(session, mind.id).graph.distances(
            [ids["D"]], max_depth=3, relation_type="leads"
        )
        nothing = kg(session, mind.id).graph.distances([], max_depth=3)
    assert undirected == {ids["D"]: 0, ids["A"]: 1, ids["C"]: 1, ids["B"]: 2}  # start at 0
    assert directed == {ids["D"]: 0}
    assert two_starts == {ids["B"]: 0, ids["D"]: 0, ids["A"]: 1, ids["C"]: 1}
    assert leads_only == {ids["D"]: 0, ids["C"]: 1, ids["B"]: 2, ids["A"]: 3}
    assert nothing == {}
