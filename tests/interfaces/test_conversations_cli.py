"""``waggle-store conversations list|show|canonical`` and ``agents list|show`` in a subprocess."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.interfaces.cli_runner import cli_for


def test_conversations_and_agents_commands(target: Any, store_factory: Any,
                                           tmp_path: Path) -> None:
    store = store_factory()
    store.agents.save("default", {"model": "m"}, state={"turns": 2})
    conv = store.mind("default").conversations
    opened = conv.open("telegram", label="support")
    conv.append(opened.id, [{"role": "user", "content": "hello there"},
                            {"role": "assistant", "content": "hi, how can I help?"}])
    conv.canonical_append([{"role": "user", "content": "canonical hello"}])
    cli = cli_for(target, tmp_path)

    listed = cli.json("conversations", "list")
    assert [(c["id"], c["channel"], c["label"], c["message_count"]) for c in listed] == [
        (opened.id, "telegram", "support", 2)]
    plain = cli("conversations", "list", "--channel", "telegram").stdout.splitlines()
    assert plain[0].split("\t") == ["id", "channel", "label", "messages", "open", "updated"]
    shown = cli.json("conversations", "show", str(opened.id), "--limit", "1")
    assert [(m["role"], m["content"], m["seq"]) for m in shown["messages"]] == [
        ("assistant", "hi, how can I help?", 2)]
    assert "hello there" in cli("conversations", "show", str(opened.id)).stdout
    assert "no conversation 999" in cli("conversations", "show", "999", code=1).stderr
    canonical = cli.json("conversations", "canonical")
    assert [m["content"] for m in canonical["messages"]] == ["canonical hello"]

    assert [a["name"] for a in cli.json("agents", "list")] == ["default"]
    agent = cli.json("agents", "show", "DEFAULT")
    assert (agent["manifest"], agent["state"], agent["mind"]) == ({"model": "m"}, {"turns": 2},
                                                                  "default")
    assert "state.turns" in cli("agents", "show", "default").stdout
    assert "no agent named 'nobody'" in cli("agents", "show", "nobody", code=1).stderr
