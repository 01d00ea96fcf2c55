"""Vector indexes per embedding model: registration, validation, writes, deletes."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pytest
from sqlalchemy import event, select, text

import waggle_store as ws
from waggle_store.dialects import vector_table_name
from waggle_store.dialects.derived import vector_table_exists
from waggle_store.embeddings import HashingEmbedder
from waggle_store.models import EmbeddingModelRow, FrameEmbeddingRow
from waggle_store.pipeline.embed import embed_frames
from waggle_store.repositories.vectors import (
    ModelKey,
    model_key,
    register_model,
    store_vectors,
)


class FlakyEmbedder:
    """A deterministic embedder whose provider can be switched off."""

    provider = "flaky"
    model = "flaky-v1"
    dimensions = 64

    def __init__(self) -> None:
        self.down = False
        self._inner = HashingEmbedder(64)

    @property
    def model_id(self) -> str:
        return "flaky/flaky-v1/64"

    def _check(self) -> None:
        if self.down:
            raise ws.EmbeddingProviderError("flaky: 503 service unavailable", provider="flaky",
                                            status=503, retryable=True)

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        self._check()
        return self._inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        self._check()
        return self._inner.embed_query(text)


def _count(store: ws.Store, model_id: int) -> int:
    with store.read() as s:
        return int(
            s.execute(text(f"SELECT count(*) FROM {vector_table_name(model_id)}")).scalar_one()
        )


def _manifest(store: ws.Store, frame_id: int) -> FrameEmbeddingRow:
    with store.read() as s:
        row = s.get(FrameEmbeddingRow, frame_id)
        assert row is not None
        return row


def test_register_model_is_idempotent_and_changes_no_mind(store: ws.Store) -> None:
    mind = store.mind("m")
    with store.write() as s:
        first = register_model(s, store.adapter, ModelKey("hashing", "m", 8))
        again = register_model(s, store.adapter, ModelKey("hashing", "m", 8))
        assert first == again
        assert vector_table_exists(s, store.adapter.dialect, first)
    with store.write() as s:
        second = register_model(s, store.adapter, ModelKey("hashing", "m", 12))
        assert second != first
        statuses = dict(s.execute(select(EmbeddingModelRow.id, EmbeddingModelRow.status)).all())
        assert statuses == {first: "active", second: "active"}
    # Registering models assigns none to a mind: a mind gets one from its first embedded write.
    assert mind.embedding_model() is None
    mind.cognify("Sarah Chen leads Project Apollo.")
    info = mind.embedding_model()
    assert info is not None
    assert (info.provider, info.dimensions, info.status) == ("hashing", 384, "active")


def test_vectors_are_validated(store: ws.Store, mind: ws.Mind) -> None:
    gop = mind.sessions.ensure("g").gop_id
    frame = mind.frames.create_i(gop, "validated")
    chash = _manifest(store, frame.id).content_hash
    bad = {
        "dimension": ([1.0, 0.0], ws.DimensionMismatchError),
        "nan": ([math.nan, 1.0, 0.0, 0.0], ws.InvalidVectorError),
        "inf": ([math.inf, 1.0, 0.0, 0.0], ws.InvalidVectorError),
        "zero": ([0.0, 0.0, 0.0, 0.0], ws.InvalidVectorError),
        "text": ("abcd", ws.InvalidVectorError),
    }
    for vector, error in bad.values():
        # One transaction per bad vector, rolled back by the error: nothing of it may remain.
        with pytest.raises(error), store.write() as s:  # noqa: PT012
            model_id = register_model(s, store.adapter, ModelKey("test", "v", 4))
            store_vectors(s, store.adapter, model_id,
                          [(frame.id, chash, vector)],  # type: ignore[list-item]
                          text_form="whole")
    with store.write() as s:
        model_id = register_model(s, store.adapter, ModelKey("test", "v", 4))
        assert (
            store_vectors(s, store.adapter, model_id, [(frame.id, chash, [3.0, 0.0, 4.0, 0.0])],
                          text_form="whole")
            == 1
        )
        # Storing again replaces (vec0 has no upsert: a plain INSERT of an existing id fails).
        assert (
            store_vectors(s, store.adapter, model_id, [(frame.id, chash, [0.0, 1.0, 0.0, 0.0])],
                          text_form="whole")
            == 1
        )
        # A stale hash (content changed since embedding) is skipped, never stored as current.
        assert (
            store_vectors(s, store.adapter, model_id, [(frame.id, "0" * 64, [1.0, 0, 0, 0])],
                          text_form="whole") == 0
        )
    assert _count(store, model_id) == 1
    assert _manifest(store, frame.id).status == "ready"


def test_vectors_follow_frame_deletes_and_drop_mind(store: ws.Store) -> None:
    keep, gone = store.mind("keep"), store.mind("gone")
    ids = []
    for m in (keep, gone):
        gop = m.sessions.ensure("g").gop_id
        ids += [m.frames.create_i(gop, f"{m.name} frame {n}").id for n in range(3)]
    assert embed_frames(store.context, ids).embedded == 6
    with store.read() as s:
        model_id = register_model(s, store.adapter, model_key(store.embedder))
    assert model_id is not None
    assert _count(store, model_id) == 6
    keep.frames.delete(ids[0])
    assert _count(store, model_id) == 5
    store.drop_mind("gone")
    assert _count(store, model_id) == 2
    assert store.reconcile().orphans_removed == 0


def test_embedder_outage_leaves_frame_pending_then_reconcile_fixes(store_factory) -> None:  # type: ignore[no-untyped-def]
    flaky = FlakyEmbedder()
    store = store_factory(embedder=flaky)
    mind = store.mind("m")
    gop = mind.sessions.ensure("g").gop_id
    ok = mind.frames.create_i(gop, "the deployment blueprint for gop a")
    assert embed_frames(store.context, [ok.id]).embedded == 1
    flaky.down = True
    frame = mind.frames.create_i(gop, "quarterly report on the zephyr project")
    report = embed_frames(store.context, [frame.id])
    assert (report.embedded, report.failed) == (0, 1)
    assert "503" in (report.error or "")
    manifest = _manifest(store, frame.id)
    assert manifest.status == "pending"
    assert "503" in (manifest.error or "")
    # Keyword search still finds it while the embedder is down, and says why vectors are off.
    results = mind.search("zephyr report")
    assert results
    assert results[0].frame.id == frame.id
    assert any("embedder failed" in d for d in results[0].explain["degraded"])
    assert store.reconcile().vectors_fixed == 0  # still down: nothing fixed, nothing faked
    assert _manifest(store, frame.id).status == "pending"
    flaky.down = False
    assert store.reconcile().vectors_fixed == 1
    assert _manifest(store, frame.id).status == "ready"
    vector_only = mind.search("quarterly report on the zephyr project", lanes=("vector",))
    assert vector_only[0].frame.id == frame.id
    assert store.reconcile() == ws.ReconcileReport(0, 0, 0)


def test_another_embedder_never_changes_a_minds_model(store_factory) -> None:  # type: ignore[no-untyped-def]
    first = store_factory(embedder=HashingEmbedder(32))
    mind = first.mind("m")
    gop = mind.sessions.ensure("g").gop_id
    ids = [mind.frames.create_i(gop, f"note number {n} about gardening").id for n in range(4)]
    assert first.reconcile().vectors_fixed == 4
    assert {r.frame.id for r in mind.search("gardening", lanes=("vector",))} == set(ids)
    second = store_factory(embedder=HashingEmbedder(48))
    m2 = second.mind("m")
    # The other store's embedder is not this mind's model: keyword-only, and it says why.
    results = m2.search("gardening note")
    assert results
    assert all("vector" not in r.explain["lanes_run"] for r in results)
    assert any("hashing/blake2b-signed-words-v1/48" in d and "switch_embedding_model" in d
               for d in results[0].explain["degraded"])
    assert any("uses the embedding model" in r for r in second.health().reasons)
    # A write through it leaves the mind's model untouched and its vector pending, with why.
    written = m2.cognify("gardening tips for spring")
    assert written.vector_status == "pending"
    assert written.vector_error is not None
    assert "switch_embedding_model" in written.vector_error
    assert second.reconcile().vectors_fixed == 0  # reconcile never switches a mind either
    info = mind.embedding_model()
    assert info is not None
    assert info.dimensions == 32
    assert {r.frame.id for r in mind.search("gardening", lanes=("vector",))} >= set(ids)
    # The explicit switch: re-embeds into the new model, then flips.
    report = m2.switch_embedding_model()
    assert report.switched
    assert report.frames_embedded == 5
    assert report.from_model is not None
    assert report.from_model.endswith("/32")
    assert m2.embedding_model() == ws.EmbeddingModelInfo(
        "hashing", "blake2b-signed-words-v1", 48, "active")
    assert {r.frame.id for r in m2.search("gardening", lanes=("vector",))} >= set(ids)
    # The first store's cached model is found replaced by the lane itself: it degrades, saying why.
    results = mind.search("gardening")
    assert results
    assert all("vector" not in r.explain["lanes_run"] for r in results)
    assert any(
        "uses the embedding model hashing/blake2b-signed-words-v1/48" in d
        for d in results[0].explain["degraded"]
    )
    assert m2.switch_embedding_model().switched is False  # already there


def test_high_dimensional_model(store_factory) -> None:  # type: ignore[no-untyped-def]
    store = store_factory(embedder=HashingEmbedder(2048))  # halfvec index on Postgres
    mind = store.mind("m")
    gop = mind.sessions.ensure("g").gop_id
    ids = [mind.frames.create_i(gop, text).id for text in ("red apples", "green pears", "blue sky")]
    assert embed_frames(store.context, ids).embedded == 3
    assert mind.search("green pears", lanes=("vector",))[0].frame.id == ids[1]


def _vector_ddl(store: ws.Store, action: object) -> list[str]:
    """The DDL statements (CREATE/ALTER, Postgres' advisory lock) that ``action()`` runs."""
    seen: list[str] = []

    def before(conn: object, cursor: object, statement: str, *args: object) -> None:
        if statement.lstrip().upper().startswith(("CREATE", "ALTER")) or "advisory" in statement:
            seen.append(statement)

    event.listen(store.engine, "before_cursor_execute", before)
    try:
        action()  # type: ignore[operator]
    finally:
        event.remove(store.engine, "before_cursor_execute", before)
    return seen


def test_vector_table_ddl_runs_once_per_store_and_model(store: ws.Store, mind: ws.Mind) -> None:
    """CREATE ... IF NOT EXISTS holds its table locks to the end of the transaction (and on
    Postgres an advisory lock): run in every batch, it serialised concurrent writers."""
    first = _vector_ddl(store, lambda: mind.cognify_batch(["Alice met Bob in Paris"]))
    assert first  # the first batch creates the model's table
    again = _vector_ddl(store, lambda: mind.cognify_batch(["Bob wrote to Carol from Rome"]))
    assert again == []
    assert len(mind.search("Carol", lanes=("vector",))) >= 1
    # Another store on the same database ensures once for itself (it cannot know; on
    # PostgreSQL a complete table costs it one catalog query and no DDL), then never again.
    other = ws.open_store(store.engine.url, schema=store.schema, embedder="hashing")
    try:
        _vector_ddl(other, lambda: other.mind(mind.name).cognify_batch(["Dave"]))
        assert _vector_ddl(other, lambda: other.mind(mind.name).cognify_batch(["Erin"])) == []
    finally:
        other.close()


@pytest.mark.parametrize(
    ("target", "suffix", "kind", "probe"),
    [
        # SQLite: the trigger that deletes a frame's vector with the frame.
        ("sqlite", "_ad", "TRIGGER", "SELECT count(*) FROM sqlite_master WHERE name = :n"),
        # Postgres: the HNSW index of the vector table.
        ("postgres", "_hnsw", "INDEX", "SELECT count(*) FROM pg_class WHERE oid = to_regclass(:n)"),
    ],
    indirect=["target"],
)
def test_reconcile_repairs_what_keeps_the_vector_table_in_step(
    store: ws.Store, mind: ws.Mind, suffix: str, kind: str, probe: str
) -> None:
    mind.cognify_batch(["Alice met Bob in Paris"])
    with store.read() as s:
        model_id = register_model(s, store.adapter, model_key(store.embedder))
    helper = vector_table_name(model_id or 0) + suffix

    def exists() -> bool:
        with store.read() as s:
            return bool(s.execute(text(probe), {"n": helper}).scalar())

    with store.write() as s:
        s.execute(text(f"DROP {kind} {helper}"))
    assert not exists()
    mind.cognify_batch(["Bob wrote to Carol"])  # the hot path does not look
    assert not exists()
    store.reconcile()
    assert exists()
