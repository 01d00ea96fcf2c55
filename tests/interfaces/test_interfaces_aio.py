"""waggle_store.aio: the same answers as the sync API under concurrency, and cancel-safe writes.

Runs on both dialects (the ``target`` fixture). The sync store and the async store open the same
database, so every comparison is between the two APIs on identical data.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from typing import Any

import pytest

import waggle_store as ws
from waggle_store import aio
from waggle_store.embeddings import HashingEmbedder

TOPICS = ["Atlas", "Berlin", "Nova", "quarterly budget", "Kubernetes", "onboarding",
          "Alice", "database migration", "release train", "incident review"]


def _memories(n: int, tag: str) -> list[str]:
    return [f"{tag} note {i}: {TOPICS[i % len(TOPICS)]} discussed with team {i % 7} "
            f"about milestone {i}" for i in range(n)]


def _ranked(results: Sequence[ws.SearchResult]) -> list[tuple[int, float]]:
    return [(r.frame.id, round(r.final_score, 9)) for r in results]


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_200_concurrent_searches_match_the_sync_api(target: Any) -> None:
    with target.open(embedder="hashing") as sync_store:
        mind = sync_store.mind("shared")
        mind.cognify_batch(_memories(60, "seed"))
        queries = [TOPICS[i % len(TOPICS)] + ("" if i % 3 else " milestone") for i in range(200)]
        expected = [_ranked(mind.search(q, limit=8)) for q in queries]

    async def main() -> list[list[tuple[int, float]]]:
        async with aio.open_store(target.url, schema=target.schema, embedder="hashing",
                                  max_workers=4) as store:
            amind = await store.mind("shared")
            found = await asyncio.gather(*(amind.search(q, limit=8) for q in queries))
            return [_ranked(r) for r in found]

    assert run(main()) == expected
    assert all(expected), "every query should find something in the seeded mind"


def test_50_concurrent_cognify_calls_match_the_sync_api(target: Any) -> None:
    texts = [f"Alice Chen from Acme Corp met Bob Stone in Berlin about Project Atlas, item {i}"
             for i in range(50)]

    async def main() -> list[ws.CognifyResult]:
        async with aio.open_store(target.url, schema=target.schema, embedder="hashing") as store:
            amind = await store.mind("async")
            return list(await asyncio.gather(*(amind.cognify(t) for t in texts)))

    results = run(main())
    with target.open(embedder="hashing") as sync_store:
        sync_mind = sync_store.mind("sync")
        sync_results = [sync_mind.cognify(t) for t in texts]
        async_mind = sync_store.mind("async")

        def summary(rs: Sequence[ws.CognifyResult]) -> list[tuple[int, int, str]]:
            return sorted((r.entities_extracted, r.relations_created, r.vector_status) for r in rs)

        assert summary(results) == summary(sync_results)
        assert len({r.frame_id for r in results}) == 50
        stored = {async_mind.frames.get(r.frame_id).content for r in results}  # type: ignore[union-attr]
        assert stored == set(texts)
        assert async_mind.frames.stats() == sync_mind.frames.stats()
        assert async_mind.knowledge.entity_type_counts() == sync_mind.knowledge.entity_type_counts()
        # Both minds find the same memories (scores differ by write order and time: recency
        # and the related-frames links depend on which memory came first).
        for query in ("Atlas", "Bob Stone Berlin", "item 7"):
            a = {r.frame.content for r in async_mind.search(query, limit=60)}
            s = {r.frame.content for r in sync_mind.search(query, limit=60)}
            assert a == s
            assert a


class _GatedEmbedder(HashingEmbedder):
    """The hashing embedder, but embedding waits for ``release``: a cognify that is running
    (past its start, not yet written) can be held still while its task is cancelled."""

    def __init__(self) -> None:
        super().__init__()
        self.entered = threading.Event()
        self.release = threading.Event()

    def _wait(self) -> None:
        self.entered.set()
        if not self.release.wait(timeout=60):
            raise RuntimeError("the test never released the embedder")

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        self._wait()
        return super().embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        self._wait()
        return super().embed_query(text)


def _whole_or_nothing(mind: ws.Mind, text: str) -> int:
    """How many copies of ``text`` exist (0 or 1); a stored one must be complete: readable,
    found by keyword search, and embedded."""
    hits = [r for r in mind.search(text, limit=50) if r.frame.content == text]
    frames = [f for f in mind.frames.recent(500) if f.content == text]
    assert len(hits) == len(frames)
    for hit in hits:
        lanes = hit.explain.get("lanes", {})
        assert lanes.get("keyword"), "a stored memory is in the keyword index"
        assert lanes.get("vector"), "a stored memory has its vector"
    return len(frames)


def test_cancelled_cognify_while_running_leaves_the_whole_memory(target: Any) -> None:
    text = "Cancelled while running: Dana Whitfield approved the Orion budget"
    embedder = _GatedEmbedder()

    async def main() -> None:
        async with aio.open_store(target.url, schema=target.schema, embedder=embedder,
                                  max_workers=1) as store:
            amind = await store.mind("cancel")
            embedder.release.set()  # let the mind's own setup pass, gate the cognify only
            await amind.frames.stats()
            embedder.release.clear()
            embedder.entered.clear()
            task = asyncio.create_task(amind.cognify(text))
            await asyncio.get_running_loop().run_in_executor(None, embedder.entered.wait, 30)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            embedder.release.set()  # the worker goes on; aclose waits for it

    run(main())
    with target.open(embedder="hashing") as sync_store:
        assert _whole_or_nothing(sync_store.mind("cancel"), text) == 1


def test_cancelled_cognify_still_queued_writes_nothing(target: Any) -> None:
    text = "Cancelled in the queue: Evan Brooks moved the Lyra launch"
    gate = threading.Event()

    async def main() -> None:
        async with aio.open_store(target.url, schema=target.schema, embedder="hashing",
                                  max_workers=1) as store:
            amind = await store.mind("cancel")
            blocker = asyncio.create_task(store.run_sync(gate.wait, 30))  # the only worker
            await asyncio.sleep(0)
            task = asyncio.create_task(amind.cognify(text))
            await asyncio.sleep(0)  # the task runs up to its await: the call is in the queue
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            gate.set()
            assert await blocker is True

    run(main())
    with target.open(embedder="hashing") as sync_store:
        assert _whole_or_nothing(sync_store.mind("cancel"), text) == 0


def test_layers_minds_and_progress_are_awaitable(target: Any) -> None:
    async def main() -> None:
        async with aio.open_store(target.url, schema=target.schema, embedder="hashing") as store:
            amind = await store.mind("layers")
            await amind.sessions.ensure("s1")
            frame = await amind.frames.create_i("s1", "an I-frame written through aio")
            assert (await amind.frames.get(frame.id)).content == frame.content
            await amind.identity.set(name="Ada", role="archivist")
            assert (await amind.identity.get()).name == "Ada"
            item = await amind.awareness.add("task", "write the report", priority=3)
            assert [i.id for i in await amind.awareness.active()] == [item.id]
            session = await amind.sessions.ensure_active()
            assert session.status == "active"
            alice = await amind.knowledge.create_entity("person", "Alice")
            atlas = await amind.knowledge.create_entity("project", "Atlas")
            await amind.knowledge.create_relation(alice.id, atlas.id, "works_on")
            related = await amind.knowledge.relations_from(alice.id)
            assert [r.target_id for r in related] == [atlas.id]
            await amind.kv.set("k", {"v": 1})
            assert await amind.kv.get("k") == {"v": 1}
            seen: list[tuple[int, int]] = []
            batch = await amind.cognify_batch(
                [f"batch item {i}" for i in range(5)], progress=lambda d, t: seen.append((d, t))
            )
            assert len(batch.frame_ids) == 5
            assert not batch.failures
            # Progress calls reach the loop before the result does (one FIFO queue).
            assert seen
            assert seen[-1] == (5, 5)
            assert [h.frame.content for h in await amind.recall("an I-frame written", limit=1)]
            report = await store.reconcile(mind=amind)
            assert isinstance(report, ws.ReconcileReport)
            assert (await store.health()).dialect == target.dialect
            assert "layers" in [m.name for m in await store.list_minds()]
            await store.drop_mind("layers")
            assert "layers" not in [m.name for m in await store.list_minds()]
            with pytest.raises(ws.InvalidInputError):
                await store.mind("")

    run(main())


def test_a_closed_store_refuses_calls(tmp_path: Any) -> None:
    async def main() -> None:
        store = await aio.open_store(f"sqlite:///{tmp_path / 'closed.db'}", embedder="hashing")
        amind = await store.mind("x")
        await store.aclose()
        with pytest.raises(ws.WaggleStoreError):
            await amind.search("anything")

    run(main())


def test_a_harvest_source_syncs_through_aio(target: Any, tmp_path: Any) -> None:
    """``mind.harvest.sync(name)`` is the layer's method, awaited (not the proxy's target)."""
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "plan.md").write_text("The Atlas launch moved to Thursday.\n")

    async def main() -> None:
        async with aio.open_store(target.url, schema=target.schema, embedder="hashing") as store:
            amind = await store.mind("harvested")
            await amind.harvest.add_source("markdown", notes, name="notes")
            report = await amind.harvest.sync("notes")
            assert report.frames_created >= 1
            hits = await amind.search("Atlas launch")
            assert "Thursday" in hits[0].frame.content

    run(main())
