"""Frame changes keep vectors in step: update re-embeds, delete removes, compaction re-embeds."""

from __future__ import annotations

from test_cognify import FlakyEmbedder

import waggle_store as ws
from waggle_store.models import FrameEmbeddingRow


def _manifest(store: ws.Store, frame_id: int) -> FrameEmbeddingRow | None:
    with store.read() as s:
        return s.get(FrameEmbeddingRow, frame_id)


def test_update_reembeds_the_new_content(store: ws.Store, mind: ws.Mind) -> None:
    frame_id = mind.cognify("The walrus project kicked off today.", link=False).frame_id
    mind.cognify("Unrelated memory about lunch.", link=False)
    old_hash = _manifest(store, frame_id).content_hash  # type: ignore[union-attr]
    mind.frames.update(frame_id, "The pelican initiative replaced it.")
    manifest = _manifest(store, frame_id)
    assert manifest is not None
    assert manifest.status == "ready"
    assert manifest.content_hash != old_hash
    hits = mind.search("pelican initiative", lanes={"vector"}, limit=1)
    assert [h.frame.id for h in hits] == [frame_id]


def test_update_during_outage_stays_pending_then_reconciles(store_factory) -> None:
    flaky = FlakyEmbedder()
    store = store_factory(embedder=flaky)
    mind = store.mind("m")
    frame_id = mind.cognify("The walrus project kicked off today.", link=False).frame_id
    flaky.up = False
    frame = mind.frames.update(frame_id, "The pelican initiative replaced it.")
    assert frame.content == "The pelican initiative replaced it."
    assert _manifest(store, frame_id).status == "pending"  # type: ignore[union-attr]
    assert [h.frame.id for h in mind.search("pelican initiative")] == [frame_id]  # keyword lane
    flaky.up = True
    assert store.reconcile().vectors_fixed == 1
    assert [h.frame.id for h in mind.search("pelican initiative", lanes={"vector"}, limit=1)] == [
        frame_id
    ]


def test_delete_removes_the_vector(store: ws.Store, mind: ws.Mind) -> None:
    keep = mind.cognify("Keep this memory about walruses.", link=False).frame_id
    gone = mind.cognify("Delete this memory about walruses.", link=False).frame_id
    mind.frames.delete(gone)
    assert _manifest(store, gone) is None
    ids = [h.frame.id for h in mind.search("memory about walruses", lanes={"vector"}, limit=10)]
    assert ids == [keep]
    assert store.reconcile().orphans_removed == 0
