"""The embedding model is per mind, and switching it is explicit, resumable and never leaves a
search without its vector lane — on both dialects."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from datetime import UTC, datetime

import sqlalchemy as sa

import waggle_store as ws
from tests.conftest import Target
from waggle_store import migrate
from waggle_store.embeddings import HashingEmbedder
from waggle_store.models import FrameRow, SessionRow
from waggle_store.pipeline.embed import embed_frames

#: Frames of the mind switched under kill -9 (the issue's 10k with WAGGLE_RELIABILITY_FULL=1).
SWITCH_FRAMES = 10_000 if os.environ.get("WAGGLE_RELIABILITY_FULL") else 2_000


def test_two_stores_two_embedders_two_minds(store_factory: Callable[..., ws.Store]) -> None:
    a_store = store_factory(embedder=HashingEmbedder(32))
    b_store = store_factory(embedder=HashingEmbedder(64))
    a, b = a_store.mind("alice"), b_store.mind("bob")
    a.cognify("Alice plants tomatoes in the greenhouse every spring.")
    b.cognify("Bob repairs vintage bicycles in his garage.")
    for mind, query in ((a, "tomatoes greenhouse"), (b, "vintage bicycles")):
        hits = mind.search(query, lanes=("vector",))
        assert hits, query
        assert hits[0].explain["lanes_run"] == ["vector"]
    # A write to alice through bob's store (the wrong embedder): stored, vector pending, says why.
    wrong = b_store.mind("alice").cognify("Alice also grows basil.")
    assert wrong.vector_status == "pending"
    assert wrong.vector_error is not None
    assert "alice" in wrong.vector_error
    assert a.embedding_model() == ws.EmbeddingModelInfo(
        "hashing", "blake2b-signed-words-v1", 32, "active")
    assert b.embedding_model() == ws.EmbeddingModelInfo(
        "hashing", "blake2b-signed-words-v1", 64, "active")
    # Both minds' vector search still works through their own stores; reconcile in alice's
    # store embeds the pending frame in alice's model.
    assert a.search("tomatoes greenhouse", lanes=("vector",))
    assert b.search("vintage bicycles", lanes=("vector",))
    assert a_store.reconcile(mind="alice").vectors_fixed == 1
    assert any(h.frame.id == wrong.frame_id for h in a.search("basil", lanes=("vector",)))


def _build(store: ws.Store, name: str, n: int) -> list[int]:
    mind = store.mind(name)
    base = datetime(2025, 1, 1, tzinfo=UTC).timestamp()
    with store.write() as s:
        s.add(SessionRow(mind_id=mind.id, gop_id="bulk", kind="named"))
        s.flush()
        rows = []
        for i in range(n):
            text = f"memory {i} about topic{i % 97} and place{i % 31} with detail{i}"
            when = datetime.fromtimestamp(base + i, UTC)
            rows.append({"mind_id": mind.id, "frame_type": "I", "gop_id": "bulk", "t": i,
                         "content": text, "content_hash": hashlib.sha256(text.encode()).hexdigest(),
                         "importance": "normal", "source": "import", "access_count": 0,
                         "created_at": when, "last_accessed": when})
        s.execute(sa.insert(FrameRow), rows)
        ids = list(s.scalars(sa.select(FrameRow.id).where(FrameRow.mind_id == mind.id)))
    assert embed_frames(store.context, ids, batch_size=1000).embedded == n
    return ids


_SWITCHER = textwrap.dedent("""
    import sys
    import waggle_store as ws
    from waggle_store.embeddings import HashingEmbedder

    url, schema = sys.argv[1], sys.argv[2] or None
    store = ws.open_store(url, schema=schema, embedder=HashingEmbedder(48), upgrade=False)
    def progress(done, total):
        print(done, total, flush=True)
    store.mind("big").switch_embedding_model(progress=progress)
    print("done", flush=True)
""")


def test_switch_is_resumable_after_kill_9_and_search_keeps_its_vector_lane(
        target: Target, store_factory: Callable[..., ws.Store]) -> None:
    store = store_factory(embedder=HashingEmbedder(32))
    ids = _build(store, "big", SWITCH_FRAMES)
    mind = store.mind("big")
    # The switcher opens with upgrade=False, which runs no DDL: the owner creates the target
    # model's vector table first (the admin step).
    migrate.ensure_vector_table(target.url, HashingEmbedder(48), schema=target.schema)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen(
        [sys.executable, "-c", _SWITCHER, target.url, target.schema or ""],
        stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    killed_at = 0
    searches = 0
    for line in proc.stdout:
        done, _total = (int(x) for x in line.split())
        hits = mind.search(f"topic{done % 97} place{done % 31}", limit=5, lanes=("vector",))
        searches += 1
        assert hits, f"the vector lane came back empty during the switch (at {done})"
        if done >= SWITCH_FRAMES // 3:
            proc.kill()  # SIGKILL: no cleanup, mid-switch
            killed_at = done
            break
    proc.wait(timeout=60)
    assert killed_at, "the switch finished before it could be killed"
    info = mind.embedding_model()
    assert info is not None
    assert info.dimensions == 32
    assert info.status == "switching"
    assert mind.search("topic5 place5", lanes=("vector",))  # the old model still serves
    # Resume: only what was not staged before the kill is embedded now.
    new_store = store_factory(embedder=HashingEmbedder(48))
    report = new_store.mind("big").switch_embedding_model()
    assert report.switched
    assert report.frames_embedded <= SWITCH_FRAMES - killed_at
    assert new_store.mind("big").embedding_model() == ws.EmbeddingModelInfo(
        "hashing", "blake2b-signed-words-v1", 48, "active")
    with new_store.read() as s:
        ready = s.execute(
            sa.text(
                "SELECT count(*) FROM waggle_frame_embeddings e "
                "JOIN waggle_memory_frames f ON f.id = e.frame_id "
                "JOIN waggle_minds m ON m.id = f.mind_id "
                "WHERE m.name = 'big' AND e.status = 'ready'"
            )
        ).scalar_one()
    assert ready == len(ids)
    assert new_store.mind("big").search("topic5 place5", lanes=("vector",))
    assert searches >= 1
