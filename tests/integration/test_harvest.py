"""mind.harvest: each adapter's fixture (written here in the public export formats) imports the
right counts; an unchanged source is skipped; added items, and only they, are imported next time;
items keep their time and land in the source's own session."""

from __future__ import annotations

import json
import os
import zipfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import waggle_store as ws

T0 = datetime(2024, 3, 1, 9, 0, tzinfo=UTC)


def _chatgpt_conversation(n: int, messages: list[tuple[str, str]]) -> dict[str, Any]:
    """A conversation as in ChatGPT's export: a mapping of nodes chained by parent/children,
    with a system root, and ``current_node`` at the last message."""
    mapping: dict[str, Any] = {"root": {"id": "root", "message": None, "parent": None,
                                        "children": []}}
    sys_id = f"c{n}-sys"
    mapping[sys_id] = {"id": sys_id, "parent": "root", "children": [], "message": {
        "id": sys_id, "author": {"role": "system"}, "create_time": None,
        "content": {"content_type": "text", "parts": [""]}}}
    parent = sys_id
    for i, (role, text) in enumerate(messages):
        node_id = f"c{n}-m{i}"
        mapping[parent]["children"].append(node_id)
        mapping[node_id] = {"id": node_id, "parent": parent, "children": [], "message": {
            "id": node_id, "author": {"role": role, "name": None, "metadata": {}},
            "create_time": (T0 + timedelta(days=n, minutes=i)).timestamp(),
            "content": {"content_type": "text", "parts": [text]},
            "status": "finished_successfully"}}
        parent = node_id
    # An edited-away branch: not on the path to current_node, so not imported.
    mapping[f"c{n}-old"] = {"id": f"c{n}-old", "parent": sys_id, "children": [], "message": {
        "id": f"c{n}-old", "author": {"role": "user"}, "create_time": T0.timestamp(),
        "content": {"content_type": "text", "parts": [f"abandoned draft {n}"]}}}
    return {"title": f"Topic {n}", "create_time": (T0 + timedelta(days=n)).timestamp(),
            "update_time": (T0 + timedelta(days=n, hours=1)).timestamp(), "mapping": mapping,
            "current_node": parent, "conversation_id": f"conv-{n}", "id": f"conv-{n}"}


def _chatgpt(n: int) -> dict[str, Any]:
    return _chatgpt_conversation(n, [
        ("user", f"How do I configure service {n} for Berlin?"),
        ("assistant", f"Service {n} reads its settings from app{n}.toml."),
    ])


def _claude(n: int) -> dict[str, Any]:
    start = T0 + timedelta(days=n)
    return {"uuid": f"uuid-{n}", "name": f"Claude chat {n}", "created_at": start.isoformat(),
            "updated_at": start.isoformat(), "account": {"uuid": "acct"},
            "chat_messages": [
                {"uuid": f"m{n}a", "sender": "human", "text": f"Draft a haiku about river {n}",
                 "created_at": start.isoformat().replace("+00:00", "Z"), "content": []},
                {"uuid": f"m{n}b", "sender": "assistant", "text": "",
                 "created_at": (start + timedelta(minutes=1)).isoformat(),
                 "content": [{"type": "text", "text": f"River {n} bends slowly through stone"}]},
            ]}


def _write_json(path: Path, value: Any) -> Path:
    path.write_text(json.dumps(value), encoding="utf-8")
    return path


def _frames(mind: ws.Mind) -> list[ws.Frame]:
    return mind.frames.recent(1000)


def test_chatgpt_export(mind: ws.Mind, tmp_path: Path) -> None:
    path = _write_json(tmp_path / "conversations.json", [_chatgpt(i) for i in range(4)])
    source = mind.harvest.add_source("chatgpt", tmp_path)  # the unzipped export folder
    assert (source.name, source.kind, source.items_imported) == ("chatgpt", "chatgpt", 0)

    report = mind.harvest.sync()
    assert (report.sources_synced, report.sources_skipped) == (1, 0)
    assert (report.items_seen, report.items_imported, report.frames_created) == (4, 4, 8)
    assert report.failures == []
    frames = _frames(mind)
    assert len(frames) == 8
    assert {f.gop_id for f in frames} == {"harvest:chatgpt"}
    assert {f.source for f in frames} == {"import"}
    assert not any("abandoned draft" in f.content for f in frames)
    first = next(f for f in frames if "configure service 0" in f.content)
    assert first.content.startswith("[chatgpt: Topic 0] user: ")
    assert first.created_at == T0
    assert first.last_accessed > T0 + timedelta(days=365)  # the import counts as the access

    again = mind.harvest.sync("chatgpt")
    assert (again.sources_synced, again.sources_skipped, again.items_imported) == (0, 1, 0)
    assert len(_frames(mind)) == 8

    _write_json(path, [_chatgpt(i) for i in range(7)])
    more = mind.harvest.sync()
    assert (more.items_seen, more.items_imported, more.frames_created) == (7, 3, 6)
    stored = mind.harvest.get("chatgpt")
    assert stored is not None
    assert (stored.items_imported, stored.frames_created) == (7, 14)
    best = mind.search("service 5 settings", limit=3)[0]
    assert best.frame.content.startswith("[chatgpt: Topic 5]")


def test_claude_export_zip_and_a_grown_conversation(mind: ws.Mind, tmp_path: Path) -> None:
    conversations = [_claude(i) for i in range(3)]
    archive = tmp_path / "data-2024.zip"

    def write_zip() -> None:
        with zipfile.ZipFile(archive, "w") as z:
            z.writestr("users.json", "[]")
            z.writestr("conversations.json", json.dumps(conversations))

    write_zip()
    mind.harvest.add_source("claude", archive, name="claude-work")
    report = mind.harvest.sync()
    assert (report.items_seen, report.items_imported, report.frames_created) == (3, 3, 6)
    reply = next(f for f in _frames(mind) if "River 1 bends" in f.content)
    assert reply.content == "[claude: Claude chat 1] assistant: River 1 bends slowly through stone"
    assert reply.created_at == T0 + timedelta(days=1, minutes=1)
    assert reply.gop_id == "harvest:claude-work"

    assert mind.harvest.sync().sources_skipped == 1

    conversations.extend(_claude(i) for i in range(3, 6))
    write_zip()
    more = mind.harvest.sync("claude-work")
    assert (more.items_seen, more.items_imported, more.frames_created) == (6, 3, 6)

    # An old conversation that gained a message: only that message is new.
    conversations[0]["chat_messages"].append(
        {"uuid": "late", "sender": "human", "text": "One more about the delta",
         "created_at": (T0 + timedelta(days=30)).isoformat()})
    write_zip()
    grown = mind.harvest.sync("claude-work")
    assert (grown.items_seen, grown.items_imported, grown.frames_created) == (6, 1, 1)
    assert len(_frames(mind)) == 13


def test_markdown_folder(mind: ws.Mind, tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    (notes / "projects").mkdir(parents=True)
    (notes / ".obsidian").mkdir()
    (notes / ".obsidian" / "workspace.md").write_text("ignored", encoding="utf-8")
    (notes / "image.png").write_bytes(b"\x89PNG")
    mtime = datetime(2023, 6, 1, 8, 30, tzinfo=UTC)

    def note(rel: str, text: str) -> None:
        path = notes / rel
        path.write_text(text, encoding="utf-8")
        os.utime(path, (mtime.timestamp(), mtime.timestamp()))

    note("alpha.md", "# Alpha\n\nAlpha launches in June.")
    note("projects/beta.txt", "Beta owner is Dana.")
    long_paragraphs = [f"Paragraph {i}: " + ("gamma " * 300) for i in range(3)]
    note("projects/gamma.md", "\n\n".join(long_paragraphs))  # ~5,400 chars → 2 frames

    mind.harvest.add_source("markdown", notes, name="notes")
    report = mind.harvest.sync()
    assert (report.items_seen, report.items_imported, report.frames_created) == (3, 3, 4)
    frames = _frames(mind)
    assert {f.created_at for f in frames} == {mtime}
    assert sorted(f.content.split("]")[0] + "]" for f in frames) == [
        "[alpha.md]", "[projects/beta.txt]", "[projects/gamma.md]", "[projects/gamma.md]"]

    os.utime(notes / "alpha.md")  # touched, not changed
    assert mind.harvest.sync().sources_skipped == 1

    for i in range(3):
        note(f"projects/new{i}.md", f"New note {i} about the delta project.")
    more = mind.harvest.sync()
    assert (more.items_seen, more.items_imported, more.frames_created) == (6, 3, 3)


def test_jsonl_with_a_bad_line(mind: ws.Mind, tmp_path: Path) -> None:
    path = tmp_path / "memories.jsonl"
    lines = [
        json.dumps({"content": "Kim prefers tea", "created_at": "2022-01-02T03:04:05Z",
                    "importance": "important", "source": "user_stated"}),
        json.dumps({"text": "The office moved to Lyon", "source": "slack"}),
        "{not json",
        json.dumps({"content": "Deploys happen on Tuesdays", "importance": "critical"}),
        "",
    ]
    path.write_text("\n".join(lines), encoding="utf-8")
    mind.harvest.add_source("jsonl", path)
    report = mind.harvest.sync()
    assert (report.items_seen, report.items_imported, report.frames_created) == (3, 3, 3)
    assert [ref for ref, _ in report.failures] == ["jsonl: line 3"]
    tea = next(f for f in _frames(mind) if "tea" in f.content)
    assert (tea.importance, tea.source, tea.created_at) == (
        "important", "user_stated", datetime(2022, 1, 2, 3, 4, 5, tzinfo=UTC))
    assert next(f for f in _frames(mind) if "Lyon" in f.content).source == "import"

    # A failed line keeps the source "changed": the next sync reads it again, imports nothing new
    # and reports the line again.
    again = mind.harvest.sync()
    assert (again.sources_skipped, again.items_imported, [r for r, _ in again.failures]) == (
        0, 0, ["jsonl: line 3"])

    lines += [json.dumps({"content": f"Added fact {i}"}) for i in range(3)]
    path.write_text("\n".join(lines), encoding="utf-8")
    more = mind.harvest.sync()
    assert (more.items_seen, more.items_imported, more.frames_created) == (6, 3, 3)

    lines[2] = json.dumps({"content": "Fixed line"})
    path.write_text("\n".join(lines), encoding="utf-8")
    fixed = mind.harvest.sync()
    assert (fixed.items_imported, fixed.frames_created, fixed.failures) == (1, 1, [])
    assert mind.harvest.sync().sources_skipped == 1
    assert len(_frames(mind)) == 7


def test_sources_registry_and_stale(mind: ws.Mind, tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_text(json.dumps({"content": "x marks the spot"}), encoding="utf-8")
    mind.harvest.add_source("jsonl", path, name="auto", auto_sync=True, sync_interval_hours=6)
    mind.harvest.add_source("jsonl", path, name="manual")
    assert [s.name for s in mind.harvest.stale()] == ["auto"]
    mind.harvest.sync()
    assert mind.harvest.stale() == []
    synced = mind.harvest.get("auto")
    assert synced is not None
    assert synced.last_synced_at is not None
    assert [s.name for s in mind.harvest.stale(now=synced.last_synced_at + timedelta(hours=6))] == [
        "auto"]
    assert {s.name for s in mind.harvest.sources()} == {"auto", "manual"}

    with pytest.raises(ws.ConflictError):
        mind.harvest.add_source("markdown", tmp_path, name="auto")
    with pytest.raises(ws.InvalidInputError):
        mind.harvest.add_source("evernote", path)
    with pytest.raises(ws.NotFoundError):
        mind.harvest.sync("missing")
    missing = mind.harvest.add_source("claude", tmp_path / "gone.zip")
    report = mind.harvest.sync(missing.name)
    assert report.sources_synced == 0
    assert report.failures[0][0] == "claude"
    assert mind.harvest.remove_source("manual") is True
    assert mind.harvest.get("manual") is None


def test_progress_is_reported(mind: ws.Mind, tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    path.write_text("\n".join(json.dumps({"content": f"fact number {i}"}) for i in range(5)),
                    encoding="utf-8")
    mind.harvest.add_source("jsonl", path)
    calls: list[tuple[int, int]] = []
    mind.harvest.sync(progress=lambda done, total: calls.append((done, total)))
    assert calls
    assert calls[-1] == (5, 5)


def test_a_sync_counts_only_what_it_stored_when_another_sync_ran_meanwhile(
        mind: ws.Mind, tmp_path: Path) -> None:
    """Two syncs of one source that overlap: the second stores the frames the first had not
    written yet; the first finds them stored (dedup hits) and must not count them again. The
    overlap is made deterministic by running the second sync from the first one's progress
    callback, between its chunks (no transaction is open there)."""
    path = tmp_path / "big.jsonl"
    n = 300  # more than one cognify_batch chunk (250)
    path.write_text("\n".join(json.dumps({"content": f"harvested fact number {i}"})
                              for i in range(n)), encoding="utf-8")
    mind.harvest.add_source("jsonl", path, name="big")
    inner: list[ws.HarvestReport] = []

    def between_chunks(done: int, total: int) -> None:
        if not inner and done < total:
            inner.append(mind.harvest.sync("big"))

    outer = mind.harvest.sync("big", progress=between_chunks)
    assert len(inner) == 1
    stored = [f for f in _frames(mind) if f.content.startswith("harvested fact number")]
    assert len(stored) == n
    assert inner[0].frames_created + outer.frames_created == n
    assert inner[0].items_imported + outer.items_imported == n
    source = mind.harvest.get("big")
    assert source is not None
    assert (source.items_imported, source.frames_created) == (n, n)


def test_cognify_batch_says_which_items_it_stored(mind: ws.Mind) -> None:
    mind.cognify("an old memory about Oslo")
    result = mind.cognify_batch(["a new memory about Rome", "an old memory about Oslo",
                                 "a new memory about Rome", "", "one more about Kyiv"])
    assert result.created == [True, False, False, False, True]
    assert result.frame_ids[0] == result.frame_ids[2]
    assert result.frame_ids[3] is None
    assert [index for index, _ in result.failures] == [3]
