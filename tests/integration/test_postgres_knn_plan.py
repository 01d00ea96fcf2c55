"""The Postgres KNN statement writes its mind ids and its LIMIT into its text: its prepared
statement's generic plan is then the plan a custom one would choose, and the server stops
planning it at every search (with both bound it never did: 0.3–0.4 ms of server time a search
at 10k frames, ``benchmarks/README.md``). Postgres only: SQLite's vector lane prepares nothing
on a server. Only for the first KNN texts a store sends: beyond them, a mind is bound (the
second test)."""

from __future__ import annotations

import re
from contextlib import ExitStack

import sqlalchemy as sa

import waggle_store as ws
from waggle_store.dialects.postgres import KnnTexts

from conftest import only_postgres

#: The mind's frames (and vectors).
FRAMES = 5000
TEXTS = [f"note {i}: the {('red', 'blue', 'green')[i % 3]} kite over hill {i % 5}"
         for i in range(24)]


@only_postgres
def test_the_knn_statement_is_not_planned_at_every_search(store: ws.Store) -> None:
    # Enough frames that the planner takes the HNSW index (on a few dozen it sorts them all,
    # and a generic plan wins with the LIMIT bound too).
    mind = store.mind("m")
    done = mind.cognify_batch([f"{TEXTS[i % len(TEXTS)]} ({i})" for i in range(FRAMES)])
    assert not done.failures
    ids = set(done.frame_ids)
    other = store.mind("other")  # its own statement text: another mind id written in
    other_ids = set(other.cognify_batch(TEXTS[:5]).frame_ids)
    with store.engine.connect() as conn:  # what autovacuum does within a minute of the load
        conn.execute(sa.text("ANALYZE"))
        conn.commit()
    pages = [[r.frame.id for r in mind.search(f"kite hill {i % 5}", limit=10,
                                                  lanes=("vector",))] for i in range(40)]
    assert all(len(page) == 10 and set(page) <= ids for page in pages)
    assert {r.frame.id for r in other.search("kite", limit=10, lanes=("vector",))} == other_ids

    # Every pooled connection at once (the searches may have used any of them): each one's
    # prepared KNN statements, with how often the server planned each.
    plans: list[tuple[str, int, int]] = []
    with ExitStack() as stack:
        for _ in range(store.engine.pool.checkedin()):  # type: ignore[attr-defined]
            conn = stack.enter_context(store.engine.connect())
            plans += [(str(row[0]), int(row[1]), int(row[2])) for row in conn.execute(sa.text(
                "SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements "
                "WHERE statement LIKE '%<=>%'"))]
    # (The other mind's statement ran once: psycopg prepares a statement at its fifth run.)
    assert plans, "no KNN statement was prepared"
    # Postgres tries five custom plans before it weighs the generic one; bound, the KNN's
    # custom plans went on growing with the searches and no generic plan was ever used.
    assert sum(generic for _, generic, _ in plans) > 0, plans
    assert all(custom <= 5 for _, _, custom in plans), plans
    assert all(f"mind_id IN ({mind.id})" in statement and re.search(r"LIMIT \d+\)", statement)
               for statement, _, _ in plans), plans


@only_postgres
def test_minds_beyond_the_written_in_texts_are_bound(store: ws.Store) -> None:
    # psycopg keeps 100 prepared statements a connection: a KNN text per mind, for every mind a
    # process searches, would have it prepare and deallocate one at nearly every search. Past
    # the store's room (1 here), a mind's KNN binds its id instead, and finds the same frames.
    store.adapter.knn_texts = KnnTexts(1)  # type: ignore[attr-defined]
    first, second = store.mind("first"), store.mind("second")
    first_ids = set(first.cognify_batch(TEXTS[:6]).frame_ids)
    second_ids = set(second.cognify_batch(TEXTS[6:12]).frame_ids)
    # psycopg prepares a statement at its fifth run on a connection; the pool hands its
    # connections out in turn, so 25 runs reach five on each of up to five connections.
    for _ in range(25):
        assert {r.frame.id for r in first.search("kite", limit=10, lanes=("vector",))} == first_ids
        assert ({r.frame.id for r in second.search("kite", limit=10, lanes=("vector",))}
                == second_ids)
    statements: list[str] = []
    with ExitStack() as stack:
        for _ in range(store.engine.pool.checkedin()):  # type: ignore[attr-defined]
            conn = stack.enter_context(store.engine.connect())
            statements += [str(row[0]) for row in conn.execute(sa.text(
                "SELECT statement FROM pg_prepared_statements WHERE statement LIKE '%<=>%'"))]
    written_in = [s for s in statements if f"mind_id IN ({first.id})" in s]
    bound = [s for s in statements if re.search(r"mind_id IN \(\$\d+\)", s)]
    assert written_in, statements
    assert bound, statements
    assert not any(f"mind_id IN ({second.id})" in s for s in statements), statements
