"""The demo mind the export / import tests move between stores: the demo conversation through
cognify_batch, plus one of every other kind of record."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import waggle_store as ws
from waggle_store.demo_data import SAMPLE_CONVERSATION

#: 50 turns: the demo conversation, told over three days.
TURNS = [
    f"Day {i // len(SAMPLE_CONVERSATION) + 1}: {SAMPLE_CONVERSATION[i % len(SAMPLE_CONVERSATION)]}"
    for i in range(50)
]


def build_demo(store: ws.Store, name: str = "demo") -> ws.Mind:
    """The demo conversation through cognify_batch, plus one of every other kind of record."""
    mind = store.mind(name)
    start = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
    result = mind.cognify_batch(
        [
            ws.MemoryInput(text, created_at=start + timedelta(minutes=7 * i))
            for i, text in enumerate(TURNS)
        ]
    )
    assert not result.failures
    mind.identity.set(name="Ava", role="project assistant", personality="brief")
    mind.awareness.add(
        "task", "prepare the Zürich launch", priority=3, metadata={"b": 1, "a": [1, 2]}
    )
    mind.awareness.add("flag", "staging is down", expires_at=start + timedelta(days=400))
    mind.kv.set("last_report", {"z": 1, "a": "2026-03-01", "nested": {"y": True, "x": None}})
    mind.kv.set("counter", 7)
    notes = mind.sessions.ensure("notes", project_id="apollo", summary="side notes")
    base = mind.frames.create_i(
        notes.gop_id, "Notes keyframe about Apollo pricing", importance="important"
    )
    delta = mind.frames.create_p(notes.gop_id, "Pricing moved to per-seat", base.id)
    ids = [i for i in result.frame_ids if i is not None]
    mind.frames.create_b(
        notes.gop_id, "pricing relates to the kickoff", base.id, [delta.id, ids[0]]
    )
    for _ in range(3):
        mind.frames.touch(ids[5])
    mind.sessions.close(notes.gop_id)
    person = mind.knowledge.create_entity("person", "Olga Retired", {"team": "old"})
    mind.knowledge.retire_entity(person.id)
    mind.knowledge.set_validation_schema(ws.ValidationSchema({"person": []}, None))
    return mind
