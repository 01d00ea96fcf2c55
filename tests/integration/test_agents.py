"""store.agents on both dialects: upsert with case-insensitive names (first spelling kept),
state, listing, delete with and without the agent's mind, validation."""

from __future__ import annotations

from typing import Any

import pytest

import waggle_store as ws


def test_save_is_an_upsert_by_case_insensitive_name(store: ws.Store) -> None:
    first = store.agents.save("Ada", {"model": "small"})
    assert (first.name, first.mind, first.manifest, first.state) == ("Ada", "Ada",
                                                                     {"model": "small"}, {})
    again = store.agents.save("ADA", {"model": "large"}, state={"turns": 1})
    assert again.name == "Ada"
    assert again.manifest == {"model": "large"}
    assert again.state == {"turns": 1}
    assert again.created_at == first.created_at
    kept = store.agents.save("ada", {"model": "large", "tools": ["clock"]})
    assert kept.state == {"turns": 1}  # state=None keeps the state
    store.agents.save("bob", {})
    store.agents.save("Zed", {})
    assert [a.name for a in store.agents.list()] == ["Ada", "bob", "Zed"]
    assert store.agents.get("aDa") == store.agents.list()[0]
    assert store.agents.get("nobody") is None
    assert store.agents.set_state("ADA", {"turns": 2}).state == {"turns": 2}
    assert store.list_minds() == []  # saving an agent creates no mind


def test_delete_keeps_the_mind_unless_asked(store: ws.Store) -> None:
    for name in ("keeper", "dropper", "mindless"):
        store.agents.save(name, {})
    store.mind("keeper").cognify("The keeper keeps this memory")
    store.mind("dropper").conversations.open()
    store.agents.delete("KEEPER")
    assert store.agents.get("keeper") is None
    assert [m.name for m in store.list_minds()] == ["dropper", "keeper"]
    store.agents.delete("dropper", drop_mind=True)
    assert [m.name for m in store.list_minds()] == ["keeper"]
    store.agents.delete("mindless", drop_mind=True)  # no mind to drop: fine
    with pytest.raises(ws.NotFoundError):
        store.agents.delete("dropper")
    with pytest.raises(ws.NotFoundError):
        store.agents.set_state("dropper", {})


@pytest.mark.parametrize("call", [
    lambda s: s.agents.save("", {}),
    lambda s: s.agents.save("x" * 201, {}),
    lambda s: s.agents.save("a", ["not", "a", "dict"]),
    lambda s: s.agents.save("a", {"n": float("inf")}),
    lambda s: s.agents.save("a", {}, state="no"),
    lambda s: s.agents.save("a", {"big": "x" * 1_048_577}),
])
def test_bad_agents_are_refused(store: ws.Store, call: Any) -> None:
    with pytest.raises(ws.InvalidInputError):
        call(store)
    assert store.agents.list() == []
