"""The same corpus and queries rank the same way on SQLite and Postgres (issue 4, "must show")."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
import sqlalchemy as sa

import waggle_store as ws
from waggle_store.dialects.keyword_rank import POSTGRES_ENGLISH_STOP_WORDS, only_stop_words

CORPUS = [
    "Caroline went to the LGBTQ support group on Tuesday and felt welcomed",
    "Melanie painted a sunrise over the lake last weekend",
    "the quarterly budget review moved to Thursday afternoon",
    "Bob prefers TypeScript over JavaScript for backend services",
    "our team adopted node.js for the new API gateway",
    "planning a conference trip to Zürich in the spring",
    "remember to send the e-mail about the invoice to accounting",
    "C++ compile times are killing the build pipeline",
    "the dog needs a vet appointment for vaccinations",
    "Project Apollo launch slipped by two weeks because of testing",
    "Apollo testing found a memory leak in the scheduler",
    "Caroline is researching adoption agencies for her family plans",
    "Melanie signed up for a pottery class with her kids",
    "the coffee machine on the third floor is broken again",
    "quarterly goals: hire two engineers and ship the mobile app",
    "budget approval for the mobile app is pending with finance",
    "the scheduler rewrite in Rust halved the latency",
    "vacation in Lisbon was sunny and the food was great",
    "the support group meets every Tuesday evening downtown",
    "pottery and painting help Melanie relax after work",
    "finance asked for the invoice numbers before Friday",
    "the API gateway returns 502 errors under heavy load",
    "Zürich office opens in March with twelve engineers",
    "vet said the dog is healthy but needs more exercise",
]
QUERIES = [
    "support group Tuesday", "Melanie pottery class", "quarterly budget review", "TypeScript",
    "node.js gateway", "Zürich office", "e-mail invoice", "C++ build", "dog vet", "Apollo launch",
    "memory leak scheduler", "adoption agencies", "mobile app budget", "Lisbon vacation",
    "API gateway errors", "painting", "finance invoice numbers", "Rust latency",
]


def _fill(store: ws.Store) -> dict[int, str]:
    mind = store.mind("same")
    # Unrelated notes, one session each: no note is indexed with another as its context
    # (context ranking on both dialects: test_search_context.py).
    by_id = {
        mind.frames.create_i(mind.sessions.ensure(f"g{n}").gop_id, text).id: text
        for n, text in enumerate(CORPUS)
    }
    assert store.reconcile().vectors_fixed == len(CORPUS)
    return by_id


@pytest.mark.sqlite
@pytest.mark.postgres
def test_sqlite_and_postgres_rank_alike(tmp_path: Path, pg_url: str | None) -> None:
    if pg_url is None:
        pytest.skip("no PostgreSQL available")
    schema = "x_" + uuid.uuid4().hex[:12]
    lite = ws.open_store(f"sqlite:///{tmp_path / 'x.db'}", embedder="hashing")
    pg = ws.open_store(pg_url, schema=schema, embedder="hashing")
    try:
        lite_ids, pg_ids = _fill(lite), _fill(pg)
        overlaps = []
        for query in QUERIES:
            a = [lite_ids[r.frame.id] for r in lite.mind("same").search(query, limit=10)]
            b = [pg_ids[r.frame.id] for r in pg.mind("same").search(query, limit=10)]
            assert a[0] == b[0], query
            overlaps.append(len(set(a) & set(b)) / max(len(a), len(b)))
            # One keyword formula (dialects/keyword_rank.py): the same frames in the same order,
            # and the same scores where the tokenizers agree on which frames hold a term (not for
            # punctuated words: Postgres indexes "node.js" as one lexeme, FTS5 as "node" "js").
            kw_a = [
                (lite_ids[r.frame.id], r.explain["lanes"]["keyword"]["score"])
                for r in lite.mind("same").search(query, lanes=("keyword",))
            ]
            kw_b = [
                (pg_ids[r.frame.id], r.explain["lanes"]["keyword"]["score"])
                for r in pg.mind("same").search(query, lanes=("keyword",))
            ]
            assert [t for t, _ in kw_a] == [t for t, _ in kw_b], query
            if query.replace(" ", "").isalnum():
                assert [s for _, s in kw_a] == [s for _, s in kw_b], query
        assert min(overlaps) >= 0.8
        assert sum(overlaps) / len(overlaps) >= 0.9
    finally:
        lite.close()
        pg.close()
        engine = sa.create_engine(pg_url)
        with engine.begin() as conn:
            conn.exec_driver_sql(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        engine.dispose()


@pytest.mark.postgres
def test_the_stop_words_sqlite_drops_are_postgres_english_stop_words(pg_url: str | None) -> None:
    """The SQLite keyword lane drops a term made of these words because Postgres's ``english``
    configuration finds nothing for it: each must index as nothing there, and a word outside
    the list must not."""
    if pg_url is None:
        pytest.skip("no PostgreSQL available")
    words = sorted(POSTGRES_ENGLISH_STOP_WORDS)
    engine = sa.create_engine(pg_url)
    try:
        with engine.connect() as conn:
            indexed = conn.execute(
                sa.text(
                    "SELECT w FROM unnest(CAST(:w AS text[])) w "
                    "WHERE to_tsvector('english', w) <> ''::tsvector"
                ),
                {"w": [*words, "staging"]},
            ).scalars().all()
    finally:
        engine.dispose()
    assert indexed == ["staging"]
    assert only_stop_words("down")
    assert only_stop_words("What's")
    assert not only_stop_words("staging")
    assert not only_stop_words("Apollo's")
