"""Harvest reads are bounded: hostile sources fail as one source or one item, never the sync,
never blocking, never exhausting memory."""

from __future__ import annotations

import json
import os
import threading
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import waggle_store as ws
from waggle_store.pipeline import safe_files

JOIN_TIMEOUT_S = 60


def in_thread(call: Callable[[], Any]) -> Any:
    """Run ``call`` in a daemon thread; fail (not hang) if it has not returned in time."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:  # noqa: BLE001 (handed to the test thread below)
            box["error"] = exc

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(JOIN_TIMEOUT_S)
    assert not worker.is_alive(), "the call blocked"
    if "error" in box:
        raise box["error"]
    return box["value"]


def _failure_text(report: ws.HarvestReport) -> str:
    return " | ".join(f"{ref}: {why}" for ref, why in report.failures)


def _jsonl(path: Path, *contents: str) -> Path:
    path.write_text("".join(json.dumps({"content": c}) + "\n" for c in contents), "utf-8")
    return path


def test_an_archive_member_over_its_cap_is_refused(mind: ws.Mind, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    stored = tmp_path / "stored.zip"
    with zipfile.ZipFile(stored, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr("conversations.json", b"[" + b" " * 4096 + b"]")
    monkeypatch.setattr(safe_files, "MAX_MEMBER_BYTES", 1024)
    mind.harvest.add_source("claude", stored, name="stored")
    assert "larger than 1024 bytes" in _failure_text(mind.harvest.sync())


def test_zip_bomb_is_refused_without_reading_it_whole(mind: ws.Mind, tmp_path: Path) -> None:
    bomb = tmp_path / "export.zip"
    zero = b"\0" * (1 << 20)
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as archive, \
            archive.open("conversations.json", "w", force_zip64=True) as member:
        for _ in range((safe_files.MAX_MEMBER_BYTES >> 20) + 8):
            member.write(zero)
    assert bomb.stat().st_size < 2 << 20  # a small file, over the cap once decompressed
    mind.harvest.add_source("chatgpt", bomb, name="bomb")
    mind.harvest.add_source("jsonl", _jsonl(tmp_path / "ok.jsonl", "the good line"), name="ok")
    report = in_thread(mind.harvest.sync)
    assert "zip bomb" in _failure_text(report)
    assert report.frames_created == 1  # the other source was still synced


def test_an_archive_listing_too_many_members_is_refused(mind: ws.Mind, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    many = tmp_path / "many.zip"
    with zipfile.ZipFile(many, "w") as archive:
        for n in range(50):
            archive.writestr(f"x/{n}.txt", b"")
        archive.writestr("conversations.json", b"[]")
    monkeypatch.setattr(safe_files, "MAX_ARCHIVE_MEMBERS", 40)
    mind.harvest.add_source("chatgpt", many, name="many")
    report = mind.harvest.sync()
    assert "members" in _failure_text(report)


def test_deep_json_is_an_item_error_not_recursion(mind: ws.Mind, tmp_path: Path) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    lines = tmp_path / "lines.jsonl"
    lines.write_text(json.dumps({"content": "before the deep line"}) + "\n" + deep + "\n"
                     + json.dumps({"content": "after the deep line"}) + "\n", "utf-8")
    chats = tmp_path / "conversations.json"
    chats.write_text(deep, "utf-8")
    mind.harvest.add_source("jsonl", lines, name="lines")
    mind.harvest.add_source("claude", chats, name="chats")
    report = mind.harvest.sync()
    text = _failure_text(report)
    assert "lines: line 2" in text
    assert "nested deeper" in text
    assert "chats" in text
    assert report.frames_created == 2


@pytest.mark.parametrize("special", ["fifo", "dev_zero"])
def test_fifos_and_devices_are_refused_without_blocking(mind: ws.Mind, tmp_path: Path,
                                                        special: str) -> None:
    if special == "fifo":
        path = tmp_path / "notes.md"
        os.mkfifo(path)
    else:
        path = Path("/dev/zero")
    for kind in ("markdown", "jsonl", "claude"):
        mind.harvest.add_source(kind, path, name=f"{kind}-src")
    report = in_thread(mind.harvest.sync)
    assert len(report.failures) == 3, report.failures
    assert all("only regular files" in why for _, why in report.failures)


def test_a_fifo_inside_a_notes_folder_fails_that_note_only(mind: ws.Mind, tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "real.md").write_text("a real note about herons", "utf-8")
    os.mkfifo(notes / "pipe.md")
    (notes / "link.md").symlink_to(Path("/etc/hostname"))
    mind.harvest.add_source("markdown", notes, name="notes")
    report = in_thread(mind.harvest.sync)
    text = _failure_text(report)
    assert "pipe.md" in text
    assert "link.md" in text
    assert report.frames_created == 1


def test_a_symlink_planted_at_a_source_path_is_not_followed(mind: ws.Mind, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("AWS_SECRET_ACCESS_KEY=planted-secret-value", "utf-8")
    notes = tmp_path / "notes.md"
    notes.write_text("an ordinary note", "utf-8")
    mind.harvest.add_source("markdown", notes, name="notes")
    notes.unlink()
    notes.symlink_to(secret)
    report = mind.harvest.sync()
    assert "symbolic link" in _failure_text(report)
    assert mind.search("planted-secret-value") == []


def test_forgotten_harvested_memory_stays_forgotten(mind: ws.Mind, tmp_path: Path) -> None:
    lines = _jsonl(tmp_path / "notes.jsonl", "the heron nests by the old mill",
                   "the kingfisher hunts at dawn")
    mind.harvest.add_source("jsonl", lines, name="notes")
    assert mind.harvest.sync().frames_created == 2
    heron = next(f for f in mind.frames.gop("harvest:notes") if "heron" in f.content)
    mind.frames.delete(heron.id)
    _jsonl(lines, "the heron nests by the old mill", "the kingfisher hunts at dawn",
           "a new line about otters")
    report = mind.harvest.sync()
    assert report.frames_created == 1
    contents = [f.content for f in mind.frames.gop("harvest:notes")]
    assert not any("heron" in c for c in contents)
    assert any("otters" in c for c in contents)


def test_dropping_a_mind_with_harvested_memories_works(store: ws.Store, tmp_path: Path) -> None:
    mind = store.mind("dropped")
    mind.harvest.add_source("jsonl", _jsonl(tmp_path / "a.jsonl", "one", "two"), name="a")
    assert mind.harvest.sync().frames_created == 2
    store.drop_mind("dropped")
    assert "dropped" not in [m.name for m in store.list_minds()]
