"""Every stored field is bounded: entity properties (64 KiB of JSON), identity and awareness
text (the content cap, 1 MiB), refused with InvalidInputError before anything is written."""

from __future__ import annotations

import pytest

import waggle_store as ws
from waggle_store.repositories.common import MAX_CONTENT_BYTES, MAX_PROPERTIES_BYTES


def test_entity_properties_are_capped(mind: ws.Mind) -> None:
    big = {"notes": "x" * MAX_PROPERTIES_BYTES}
    with pytest.raises(ws.InvalidInputError, match="MAX_PROPERTIES_BYTES"):
        mind.knowledge.create_entity("person", "Alice", big)
    assert mind.knowledge.entity_count() == 0
    alice = mind.knowledge.create_entity("person", "Alice", {"role": "engineer"})
    with pytest.raises(ws.InvalidInputError, match="MAX_PROPERTIES_BYTES"):
        mind.knowledge.update_entity(alice.id, properties=big)
    stored = mind.knowledge.get_entity(alice.id)
    assert stored is not None
    assert stored.properties == {"role": "engineer"}
    just_fits = {"notes": "y" * (MAX_PROPERTIES_BYTES - 100)}
    assert mind.knowledge.create_entity("person", "Bob", just_fits).properties == just_fits


def test_identity_and_awareness_are_capped_like_content(mind: ws.Mind) -> None:
    huge = "z" * (MAX_CONTENT_BYTES + 1)
    with pytest.raises(ws.InvalidInputError, match="MAX_CONTENT_BYTES"):
        mind.identity.set(name="Ada", personality=huge)
    assert mind.identity.get() is None
    with pytest.raises(ws.InvalidInputError, match="MAX_CONTENT_BYTES"):
        mind.awareness.add("task", huge)
    assert mind.awareness.active() == []
