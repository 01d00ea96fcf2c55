"""reconcile: keyword and vector repair, orphans, batches, idempotence."""

from __future__ import annotations

import pytest
from sqlalchemy import text

import waggle_store as ws
from waggle_store.dialects import vector_table_name
from waggle_store.pipeline.embed import embed_frames
from waggle_store.repositories.vectors import model_key, register_model

from conftest import only_sqlite


def _vector_count(store: ws.Store) -> int:
    with store.read() as s:
        model_id = register_model(s, store.adapter, model_key(store.embedder))
        if model_id is None:
            return 0
        return int(
            s.execute(text(f"SELECT count(*) FROM {vector_table_name(model_id)}")).scalar_one()
        )


def test_empty_and_consistent_stores_report_zeros(store: ws.Store, mind: ws.Mind) -> None:
    assert store.reconcile() == ws.ReconcileReport(0, 0, 0)
    gop = mind.sessions.ensure("g").gop_id
    ids = [mind.frames.create_i(gop, f"frame {n}").id for n in range(3)]
    embed_frames(store.context, ids)
    assert store.reconcile() == ws.ReconcileReport(0, 0, 0)


def test_new_frames_are_embedded_in_batches(store: ws.Store, mind: ws.Mind) -> None:
    gop = mind.sessions.ensure("g").gop_id
    for n in range(75):
        mind.frames.create_i(gop, f"raw frame number {n}")
    calls: list[tuple[int, int]] = []
    report = store.reconcile(progress=lambda done, total: calls.append((done, total)))
    assert report.vectors_fixed == 75
    assert calls == [(50, 75), (75, 75)]
    assert _vector_count(store) == 75
    assert store.reconcile() == ws.ReconcileReport(0, 0, 0)


def test_mind_scope(store: ws.Store) -> None:
    a, b = store.mind("a"), store.mind("b")
    for m in (a, b):
        gop = m.sessions.ensure("g").gop_id
        m.frames.create_i(gop, f"only in {m.name}")
    assert store.reconcile(mind="a").vectors_fixed == 1
    assert store.reconcile(mind=b).vectors_fixed == 1
    with pytest.raises(ws.NotFoundError):
        store.reconcile(mind="nope")


def test_missing_vector_row_is_restored(store: ws.Store, mind: ws.Mind) -> None:
    gop = mind.sessions.ensure("g").gop_id
    ids = [mind.frames.create_i(gop, f"vector frame {n}").id for n in range(3)]
    embed_frames(store.context, ids)
    with store.write() as s:
        model_id = register_model(s, store.adapter, model_key(store.embedder))
        assert model_id is not None
        store.adapter.delete_vectors(s, model_id, [ids[1]])
    assert _vector_count(store) == 2
    assert store.reconcile().vectors_fixed == 1
    assert _vector_count(store) == 3
    assert mind.search("vector frame 1", lanes=("vector",))[0].frame.id == ids[1]


def test_pages_cover_every_stale_and_missing_frame_once(
    store: ws.Store, mind: ws.Mind, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reconcile reads the frames to embed in keyset pages (bounded memory): with pages of 2,
    frames without a vector and frames whose vector row is gone, interleaved by id, are each
    embedded once, and the progress total counts them exactly."""
    from waggle_store.dialects import sqlite_maint
    from waggle_store.pipeline import reconcile as reconcile_module

    monkeypatch.setattr(reconcile_module, "PAGE_SIZE", 2)
    monkeypatch.setattr(sqlite_maint, "KEYWORD_REPAIR_PAGE", 2)
    gop = mind.sessions.ensure("g").gop_id
    ids = [mind.frames.create_i(gop, f"paged frame {n}").id for n in range(9)]
    embedded = ids[1::3]  # ready manifests; their vector rows are then deleted
    embed_frames(store.context, embedded)
    with store.write() as s:
        model_id = register_model(s, store.adapter, model_key(store.embedder))
        assert model_id is not None
        store.adapter.delete_vectors(s, model_id, embedded)
    assert _vector_count(store) == 0
    calls: list[tuple[int, int]] = []
    report = store.reconcile(progress=lambda done, total: calls.append((done, total)))
    assert report.vectors_fixed == 9
    assert {total for _, total in calls} == {9}
    assert calls[-1] == (9, 9)
    assert _vector_count(store) == 9
    assert store.reconcile() == ws.ReconcileReport(0, 0, 0)


@only_sqlite  # Postgres indexes a generated column, so there is no keyword index to drift
def test_sqlite_fts_refill_in_pages(store: ws.Store, monkeypatch: pytest.MonkeyPatch) -> None:
    from waggle_store.dialects import sqlite_maint

    monkeypatch.setattr(sqlite_maint, "KEYWORD_REPAIR_PAGE", 2)
    mind = store.mind("fts")
    gop = mind.sessions.ensure("g").gop_id
    ids = {mind.frames.create_i(gop, f"refill word{n}").id for n in range(5)}
    with store.write() as s:
        s.execute(text("DELETE FROM waggle_memory_frames_fts"))
    assert store.reconcile(mind=mind).fts_fixed == 5
    assert {r.frame.id for r in mind.search("refill", lanes=("keyword",), limit=10)} == ids
    assert store.reconcile(mind=mind).fts_fixed == 0


def test_no_embedder_repairs_keywords_only(store_factory) -> None:  # type: ignore[no-untyped-def]
    store = store_factory(embedder=None)
    mind = store.mind("m")
    gop = mind.sessions.ensure("g").gop_id
    mind.frames.create_i(gop, "plain frame")
    assert store.reconcile() == ws.ReconcileReport(0, 0, 0)


@only_sqlite  # Postgres indexes a generated column, so there is no keyword index to drift
def test_sqlite_fts_repair_and_orphans(store: ws.Store) -> None:
    mind = store.mind("test")
    # One session each: no frame carries another's words as its context (test_search_context).
    gops = [mind.sessions.ensure(f"g{n}").gop_id for n in range(3)]
    f1 = mind.frames.create_i(gops[0], "quantum entanglement notes")
    f2 = mind.frames.create_i(gops[1], "lost and found")
    f3 = mind.frames.create_i(gops[2], "another quantum frame")
    embed_frames(store.context, [f1.id, f2.id, f3.id])
    with store.write() as s:
        s.execute(
            text("DELETE FROM waggle_memory_frames_fts WHERE rowid IN (:a, :b)"),
            {"a": f1.id, "b": f3.id},
        )
    assert mind.search("quantum", lanes=("keyword",)) == []
    assert store.reconcile() == ws.ReconcileReport(2, 0, 0)
    assert {r.frame.id for r in mind.search("quantum", lanes=("keyword",))} == {f1.id, f3.id}
    # Stale text in the index (a write that bypassed the triggers) is re-indexed too.
    with store.write() as s:
        s.execute(text("DELETE FROM waggle_memory_frames_fts WHERE rowid = :a"), {"a": f2.id})
        s.execute(
            text("INSERT INTO waggle_memory_frames_fts(rowid, content) VALUES (:a, 'wrong words')"),
            {"a": f2.id},
        )
    assert store.reconcile().fts_fixed == 1
    assert mind.search("lost found", lanes=("keyword",))[0].frame.id == f2.id
    # Orphans: index rows whose frame is gone (a delete with the triggers bypassed).
    with store.write() as s:
        model_id = register_model(s, store.adapter, model_key(store.embedder))
        s.execute(text("DROP TRIGGER waggle_memory_frames_fts_ad"))
        s.execute(text(f"DROP TRIGGER {vector_table_name(model_id or 0)}_ad"))
        s.execute(text("DELETE FROM waggle_memory_frames WHERE id = :a"), {"a": f1.id})
    report = store.reconcile()
    assert report.orphans_removed == 2
    assert report.fts_fixed == 0
    # The dropped FTS trigger stays reported until a repair recreates it (the store's own
    # model's vector trigger is ensured by every reconcile).
    assert store.reconcile().problems == [
        ("keyword index: waggle_memory_frames_fts_ad (trigger) is missing: "
         "deleted frames stay in the keyword index")
    ]
    assert store.reconcile(repair=True).repaired != []
    assert store.reconcile() == ws.ReconcileReport(0, 0, 0)
    with store.read() as s:
        assert s.execute(text("SELECT count(*) FROM waggle_memory_frames_fts")).scalar_one() == 2
    assert _vector_count(store) == 2
