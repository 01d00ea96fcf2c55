"""Export format version 2: conversations, messages and the mind's agent travel SQLite ⇄
PostgreSQL unchanged; version 1 files still import; bad version-2 records import nothing."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

import waggle_store as ws


def _build(store: ws.Store) -> None:
    store.agents.save("Ada", {"model": "m", "tools": ["clock"]}, state={"turns": 7})
    store.agents.save("someone else", {})
    conv = store.mind("Ada").conversations
    old = conv.open("telegram", label="first")
    conv.append(old.id, [{"role": "user", "content": "über 東京 🚀"}])
    current = conv.create("telegram")
    conv.append(current.id, [
        {"role": "system", "content": "be brief"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "args": {"x": 1}}]},
        {"role": "tool", "content": "42", "tool_call_id": "c1", "metadata": {"ms": 1.5}},
    ] + [{"role": "user", "content": f"turn {n}"} for n in range(25)])
    conv.open("discord")
    conv.canonical_append([{"role": "user", "content": f"canon {n}"} for n in range(12)],
                          threshold=10, window=4)


def _snapshot(store: ws.Store) -> dict[str, Any]:
    conv = store.mind("Ada").conversations
    infos = sorted(conv.list(), key=lambda i: (i.channel, i.created_at))
    agent = store.agents.get("ada")
    assert agent is not None
    return {
        "infos": [(i.channel, i.label, i.message_count, i.is_open, i.created_at, i.updated_at)
                  for i in infos],
        "messages": [conv.messages(i.id) for i in infos],
        "canonical": conv.canonical(window=100),
        "agent": (agent.name, agent.manifest, agent.state, agent.created_at, agent.updated_at),
    }


def test_round_trip_to_the_other_dialect(store: ws.Store, other_store: ws.Store,
                                         tmp_path: Path) -> None:
    _build(store)
    path = tmp_path / "ada.jsonl"
    exported = store.export_mind("Ada", path)
    assert (exported.conversations, exported.messages, exported.agents) == (4, 25, 1)
    header = json.loads(path.read_text("utf-8").splitlines()[0])
    assert header["version"] >= 2  # version 2 brought these records
    report = other_store.import_mind(path)
    assert (report.conversations_imported, report.messages_imported,
            report.agents_imported) == (4, 25, 1)
    assert _snapshot(other_store) == _snapshot(store)
    assert [a.name for a in other_store.agents.list()] == ["Ada"]  # only the mind's agent
    # appends go on after the imported history
    conv = other_store.mind("Ada").conversations
    opened = conv.open("telegram")
    conv.append(opened.id, [{"role": "user", "content": "after"}], keep_last=None)
    assert [m.seq for m in conv.messages(opened.id, limit=2)] == [28, 29]

    again = other_store.import_mind(path, into="Ada", merge=True)
    assert (again.conversations_imported, again.messages_imported, again.agents_imported) == (
        0, 0, 0)
    assert len(conv.list()) == 3


def test_into_another_name_takes_the_agent_along(store: ws.Store, tmp_path: Path) -> None:
    _build(store)
    out = io.StringIO()
    store.export_mind("Ada", out)
    report = store.import_mind(io.StringIO(out.getvalue()), into="Grace")
    assert report.agents_imported == 1
    grace = store.agents.get("grace")
    assert grace is not None
    assert grace.mind == "Grace"
    assert grace.state == {"turns": 7}
    assert len(store.mind("Grace").conversations.list()) == 3


def _header(version: int) -> str:
    return json.dumps({"type": "header", "format": "waggle-mind", "version": version,
                       "mind": "old", "exported_at": "2026-01-01T00:00:00+00:00"})


def test_version_1_files_still_import(store: ws.Store) -> None:
    session = {"type": "session", "id": 1, "gop_id": "g", "project_id": None, "status": "closed",
               "kind": "named", "started_at": "2026-01-01T00:00:00+00:00", "ended_at": None,
               "summary": None}
    text = "\n".join([_header(1), json.dumps(session)]) + "\n"
    assert store.import_mind(io.StringIO(text)).sessions_imported == 1
    with pytest.raises(ws.InvalidInputError, match="version"):
        store.import_mind(io.StringIO(_header(99) + "\n"), into="other")


@pytest.mark.parametrize("records", [
    [{"type": "message", "conversation_id": 9, "seq": 1, "role": "user", "content": "x",
      "tool_calls": None, "tool_call_id": None, "metadata": None,
      "created_at": "2026-01-01T00:00:00+00:00"}],
    [{"type": "conversation", "id": 1, "kind": "channel", "channel": "c", "label": None,
      "status": "open", "summary": None, "last_seq": 1,
      "created_at": "2026-01-01T00:00:00+00:00", "updated_at": "2026-01-01T00:00:00+00:00"},
     {"type": "message", "conversation_id": 1, "seq": 1, "role": "robot", "content": "x",
      "tool_calls": None, "tool_call_id": None, "metadata": None,
      "created_at": "2026-01-01T00:00:00+00:00"}],
    [{"type": "agent", "name": "a", "manifest": [], "state": {},
      "created_at": "2026-01-01T00:00:00+00:00", "updated_at": "2026-01-01T00:00:00+00:00"}],
])
def test_bad_version_2_records_import_nothing(store: ws.Store, records: list[Any]) -> None:
    text = "\n".join([_header(2), *map(json.dumps, records)]) + "\n"
    with pytest.raises(ws.InvalidInputError, match="line"):
        store.import_mind(io.StringIO(text))
    assert store.list_minds() == []
    assert store.agents.list() == []
