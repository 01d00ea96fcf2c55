"""Revision 0003 (every name prefixed ``waggle_``) upgrades a populated store in place: every row
kept, the keyword index and the vector index still answer, nothing left to repair.

The store is built at revision 0001 and filled with that revision's SQL (its table names), the
vector index included, as the code of that revision wrote it.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from waggle_store import migrate
from waggle_store.config import StoreConfig
from waggle_store.embeddings.hashing import HashingEmbedder
from waggle_store.engine import create_engine
from waggle_store.repositories.common import content_hash

from conftest import Target

CONTENTS = ("the pelican initiative ships on friday", "budget review moved to the harbour office")

# The per-model vector table as revision 0001's adapters created and filled it, per dialect.
_VECTOR_SQL = {
    "sqlite": (
        (
            "CREATE VIRTUAL TABLE frame_vectors_1 USING vec0(mind_id integer partition key, "
            "embedding float[384] distance_metric=cosine, gop_id text, created_ts float)"
        ),
        (
            "CREATE TRIGGER frame_vectors_1_ad AFTER DELETE ON memory_frames BEGIN "
            "DELETE FROM frame_vectors_1 WHERE rowid = old.id; END"
        ),
        (
            "INSERT INTO frame_vectors_1(rowid, mind_id, embedding, gop_id, created_ts) "
            "VALUES (:id, :mind_id, :vec, :gop_id, 0.0)"
        ),
    ),
    "postgresql": (
        (
            "CREATE TABLE frame_vectors_1 (frame_id bigint PRIMARY KEY "
            "REFERENCES memory_frames(id) ON DELETE CASCADE, mind_id bigint NOT NULL, "
            "embedding vector(384) NOT NULL, "
            "gop_id text, created_at timestamptz)"
        ),
        "CREATE INDEX frame_vectors_1_mind_id ON frame_vectors_1 (mind_id)",
        (
            "CREATE INDEX frame_vectors_1_hnsw ON frame_vectors_1 USING hnsw "
            "(embedding vector_cosine_ops)"
        ),
        (
            "INSERT INTO frame_vectors_1(frame_id, mind_id, embedding, gop_id) "
            "VALUES (:id, :mind_id, CAST(:vec AS vector), :gop_id)"
        ),
    ),
}

_NOW = "2026-11-01 10:00:00.000000"


def _populate_0001(target: Target) -> dict[str, int]:
    engine = create_engine(target.url, config=StoreConfig.from_env(None, target.schema))
    embedder = HashingEmbedder()
    vectors = embedder.embed_documents(list(CONTENTS))
    create_vec, *more, insert_vec = _VECTOR_SQL[target.dialect]
    try:
        with engine.begin() as c:
            def run(sql: str, **params: Any) -> Any:
                return c.execute(sa.text(sql), params)

            run("INSERT INTO minds(id, name, kind, created_at, settings) "
                "VALUES (1, 'm', 'workspace', :t, '{}')", t=_NOW)
            run("INSERT INTO sessions(id, mind_id, gop_id, kind, status, started_at) "
                "VALUES (1, 1, 'g1', 'auto', 'active', :t)", t=_NOW)
            run("INSERT INTO embedding_models(id, provider, model, dimensions, metric, created_at,"
                " status) VALUES (1, :p, :m, 384, 'cosine', :t, 'active')",
                p=embedder.provider, m=embedder.model, t=_NOW)
            for i, text in enumerate(CONTENTS, start=1):
                run("INSERT INTO memory_frames(id, mind_id, frame_type, gop_id, t, content, "
                    "content_hash, importance, source, access_count, created_at, last_accessed) "
                    "VALUES (:id, 1, 'I', 'g1', :n, :c, :h, 'normal', 'user_stated', 0, :t, :t)",
                    id=i, n=i - 1, c=text, h=content_hash(text), t=_NOW)
                run("INSERT INTO frame_embeddings(frame_id, model_id, content_hash, status, "
                    "updated_at) VALUES (:id, 1, :h, 'ready', :t)", id=i, h=content_hash(text),
                    t=_NOW)
            run("INSERT INTO knowledge_entities(id, mind_id, entity_type, name, name_key, "
                "properties, valid_from, recorded_at) VALUES (1, 1, 'concept', 'Pelican', "
                "'pelican', '{}', :t, :t)", t=_NOW)
            run("INSERT INTO entity_mentions(entity_id, frame_id) VALUES (1, 1)")
            run("INSERT INTO kv_store(mind_id, key, value, updated_at) VALUES (1, 'k', '1', :t)",
                t=_NOW)
            c.exec_driver_sql(create_vec)
            for sql in more:
                c.exec_driver_sql(sql)
            for i, vec in enumerate(vectors, start=1):
                run(insert_vec, id=i, mind_id=1, vec="[" + ",".join(map(repr, vec)) + "]",
                    gop_id="g1")
        with engine.connect() as c:
            return {t: int(c.execute(sa.text(f"SELECT count(*) FROM {t}")).scalar_one())
                    for t in ("minds", "sessions", "memory_frames", "frame_embeddings",
                              "knowledge_entities", "entity_mentions", "kv_store")}
    finally:
        engine.dispose()


def test_populated_store_of_the_previous_revision_upgrades_in_place(target: Target) -> None:
    migrate.upgrade(target.url, "0001", schema=target.schema)
    before = _populate_0001(target)
    migrate.upgrade(target.url, schema=target.schema)
    assert migrate.current(target.url, schema=target.schema) == migrate.head()
    assert migrate.check(target.url, schema=target.schema) == []
    with target.open(embedder="hashing") as store:
        with store.read() as s:
            after = {t: int(s.execute(sa.text(f"SELECT count(*) FROM waggle_{t}")).scalar_one())
                     for t in before}
        assert after == before
        mind = store.mind("m")
        assert mind.id == 1
        keyword = mind.search("pelican initiative", lanes=["keyword"])
        # Frame 1 by its own words; frame 2 after it, through its context (frame 1 precedes it
        # in the session: migration 0006 filled the contexts of the upgraded frames).
        assert [h.frame.id for h in keyword] == [1, 2]
        assert keyword[0].rrf_score > keyword[1].rrf_score
        vector = mind.search("the pelican initiative ships on friday", lanes=["vector"], limit=1)
        assert [h.frame.id for h in vector] == [1]
        assert "vector" in vector[0].explain["lanes_run"]
        # Nothing to repair: both indexes came through whole.
        report = store.reconcile()
        assert (report.fts_fixed, report.vectors_fixed, report.orphans_removed) == (0, 0, 0)
    assert migrate.check(target.url, schema=target.schema) == []


def test_downgrade_to_the_previous_revision_and_back(target: Target) -> None:
    migrate.upgrade(target.url, "0001", schema=target.schema)
    before = _populate_0001(target)
    migrate.upgrade(target.url, schema=target.schema)
    migrate.downgrade(target.url, "0001", schema=target.schema)
    engine = create_engine(target.url, config=StoreConfig.from_env(None, target.schema))
    try:
        with engine.connect() as c:
            again = {t: int(c.execute(sa.text(f"SELECT count(*) FROM {t}")).scalar_one())
                     for t in before}
        assert again == before
    finally:
        engine.dispose()
    migrate.upgrade(target.url, schema=target.schema)
    assert migrate.check(target.url, schema=target.schema) == []
