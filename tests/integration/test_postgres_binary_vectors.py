"""Postgres binds vectors in pgvector's binary form (``postgres_maint.BinaryVector``): written
and searched with the same results as the text form, the float4 values pgvector stores, one type
lookup per connection, nothing registered on a connection whose database has no ``vector``
type (then vectors go as text). Postgres only: SQLite binds no vector parameter."""

from __future__ import annotations

from array import array
from collections.abc import Callable

import pytest
import sqlalchemy as sa

import waggle_store as ws
from waggle_store.dialects import postgres_maint
from waggle_store.pipeline.embed import embed_frames
from waggle_store.repositories.vectors import model_key, register_model

from conftest import PLAIN_PG_URL, only_postgres

TEXTS = [f"note {i}: the {('red', 'blue', 'green')[i % 3]} kite over hill {i % 5}"
         for i in range(24)]


def _seeded(store: ws.Store) -> tuple[ws.Mind, list[int]]:
    mind = store.mind("m")
    gop = mind.sessions.ensure("s").gop_id
    ids = [mind.frames.create_i(gop, text).id for text in TEXTS]
    assert embed_frames(store.context, ids).embedded == len(ids)
    return mind, ids


def _page(mind: ws.Mind, query: str) -> list[tuple[int, float]]:
    return [(r.frame.id, round(r.final_score, 6))
            for r in mind.search(query, limit=10, lanes=("vector",))]


@only_postgres
def test_vectors_written_and_searched_in_binary_match_the_text_form(
    store_factory: Callable[..., ws.Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    bound: list[object] = []
    real = postgres_maint.vector_param

    def watched(executor: object) -> Callable[..., object]:
        encode = real(executor)  # type: ignore[arg-type]

        def bind(vector: object) -> object:
            bound.append(value := encode(vector))  # type: ignore[arg-type]
            return value

        return bind

    monkeypatch.setattr(postgres_maint, "vector_param", watched)
    binary = store_factory()
    mind, ids = _seeded(binary)
    pages = {q: _page(mind, q) for q in ("red kite", "hill 3", "green note 7")}
    assert bound
    assert all(isinstance(v, postgres_maint.BinaryVector) for v in bound)
    with binary.read() as session:
        model_id = register_model(session, binary.adapter, model_key(binary.embedder))
        assert model_id is not None
        stored = binary.adapter.read_vectors(session, model_id, ids)
    # What pgvector stores is each element rounded to float4, exactly (its text output is the
    # shortest decimal of that float4, so compared as float4).
    for frame_id, text in zip(ids, TEXTS, strict=True):
        expected = array("f", binary.embedder.embed_documents([text])[0])
        assert array("f", stored[frame_id]) == expected

    # The same store, every vector bound as text: the same pages.
    monkeypatch.setattr(postgres_maint, "vector_param",
                        lambda executor: postgres_maint.vec_literal)
    text_store = store_factory()
    text_mind = text_store.mind("m")
    for query, page in pages.items():
        assert page
        assert _page(text_mind, query) == page, query


@only_postgres
def test_the_vector_type_is_looked_up_once_per_connection(
    store_factory: Callable[..., ws.Store], monkeypatch: pytest.MonkeyPatch
) -> None:
    store = store_factory()
    mind, _ = _seeded(store)
    lookups: list[object] = []
    real = postgres_maint.dumps_binary_vectors

    def counted(dbapi: object) -> bool:
        lookups.append(dbapi)
        return real(dbapi)

    monkeypatch.setattr(postgres_maint, "dumps_binary_vectors", counted)
    postgres_maint._DUMPS_BINARY.clear()
    for query in ("red kite", "blue hill", "note 5", "green"):
        assert mind.search(query, limit=5)
    assert len(lookups) == len(set(map(id, lookups))) >= 1


@pytest.mark.postgres
def test_a_database_without_pgvector_gets_no_dumper_and_text_vectors() -> None:
    engine = sa.create_engine(PLAIN_PG_URL)
    try:
        with engine.connect() as conn:
            if conn.exec_driver_sql(
                    "SELECT 1 FROM pg_type WHERE typname = 'vector'").scalar():
                pytest.skip(f"{PLAIN_PG_URL} has a vector type")
            dbapi = conn.connection.dbapi_connection
            assert postgres_maint.dumps_binary_vectors(dbapi) is False
            assert postgres_maint.vector_param(conn) is postgres_maint.vec_literal
            with pytest.raises(Exception, match="cannot adapt"):
                conn.exec_driver_sql("SELECT %s::text",
                                     (postgres_maint.BinaryVector([1.0, 2.0]),))
    except sa.exc.OperationalError as exc:
        pytest.fail(f"no PostgreSQL at {PLAIN_PG_URL}: {exc}")
    finally:
        engine.dispose()
