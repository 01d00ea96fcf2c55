"""Imports take only what the API would take, into the mind the caller chose, from files opened
without trusting them."""

from __future__ import annotations

import io
import json
import os
import resource
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

import waggle_store as ws
from tests.interfaces.cli_runner import cli_for
from waggle_store.pipeline.transfer import importer
from waggle_store.repositories.common import MAX_CONTENT_BYTES

NOW = "2026-01-02T03:04:05+00:00"

MIND_DDL = """
CREATE TABLE sessions (id INTEGER PRIMARY KEY, gop_id TEXT, project_id TEXT, status TEXT,
    started_at TEXT, ended_at TEXT, summary TEXT);
CREATE TABLE memory_frames (id INTEGER PRIMARY KEY, frame_type TEXT, gop_id TEXT, t INTEGER,
    base_frame_id INTEGER, content TEXT, importance TEXT, source TEXT, access_count INTEGER,
    created_at TEXT, last_accessed TEXT);
"""


def make_mind_file(path: Path, content: str, *, ddl: str = MIND_DDL, t: object = 0) -> Path:
    conn = sqlite3.connect(path)
    conn.executescript(ddl)
    conn.execute("INSERT INTO sessions VALUES (1, 'session:a', NULL, 'active', "
                 "'2025-11-02 08:00:00', NULL, NULL)")
    columns = ("id, frame_type, gop_id, t, base_frame_id, importance, source, access_count, "
               "created_at, last_accessed")
    values = (1, "I", "session:a", t, None, "normal", "user_stated", 0, "2025-11-02 08:00:05",
              "2025-11-02 08:00:05")
    if "GENERATED" in ddl:
        conn.execute(f"INSERT INTO memory_frames ({columns}) VALUES (?,?,?,?,?,?,?,?,?,?)", values)
    else:
        conn.execute(f"INSERT INTO memory_frames ({columns}, content) "
                     "VALUES (?,?,?,?,?,?,?,?,?,?,?)", (*values, content))
    conn.commit()
    conn.close()
    return path


def export_lines(mind: str, *records: dict[str, Any]) -> str:
    header = {"type": "header", "format": "waggle-mind", "version": 1, "mind": mind,
              "kind": "workspace", "exported_at": NOW}
    return "".join(json.dumps(r) + "\n" for r in (header, *records))


def kv(key: str, value: Any) -> dict[str, Any]:
    return {"type": "kv", "key": key, "value": value, "updated_at": NOW}


def session(gop: str = "s") -> dict[str, Any]:
    return {"type": "session", "id": 1, "gop_id": gop, "project_id": None, "status": "active",
            "kind": "named", "started_at": NOW, "ended_at": None, "summary": None}


def frame(content: str) -> dict[str, Any]:
    return {"type": "frame", "id": 1, "frame_type": "I", "gop_id": "s", "t": 0,
            "base_frame_id": None, "content": content, "importance": "normal",
            "source": "user_stated", "access_count": 0, "created_at": NOW, "last_accessed": NOW}


# -- which mind an import writes ----------------------------------------------------------------


def test_import_naming_another_mind_needs_merge(store: ws.Store) -> None:
    bob = store.mind("bob")
    bob.kv.set("payout_account", "bob-real-account")
    hostile = export_lines("bob", kv("payout_account", "attacker-account"))
    with pytest.raises(ws.ConflictError, match="merge=True"):
        store.import_mind(io.StringIO(hostile))
    assert bob.kv.get("payout_account") == "bob-real-account"
    report = store.import_mind(io.StringIO(hostile), into="quarantine")
    assert report.mind == "quarantine"
    assert store.mind("quarantine").kv.get("payout_account") == "attacker-account"
    assert bob.kv.get("payout_account") == "bob-real-account"
    assert store.import_mind(io.StringIO(hostile), merge=True).mind == "bob"  # asked for


def test_cli_import_into_a_mind_with_data_needs_merge(store: ws.Store, target: Any,
                                                      tmp_path: Path) -> None:
    store.mind("bob").kv.set("payout_account", "bob-real-account")
    path = tmp_path / "bob.jsonl"
    path.write_text(export_lines("bob", kv("payout_account", "attacker-account")), "utf-8")
    cli = cli_for(target, tmp_path)
    refused = cli("import", str(path), code=1)
    assert "merge" in refused.stderr
    assert store.mind("bob").kv.get("payout_account") == "bob-real-account"
    assert cli.json("import", str(path), "--into", "elsewhere")["mind"] == "elsewhere"
    assert cli.json("import", str(path), "--merge")["mind"] == "bob"


@pytest.mark.parametrize("fmt", ["auto", "waggle-jsonl"])
def test_cli_import_reads_a_bounded_first_line(store: ws.Store, target: Any, tmp_path: Path,
                                              fmt: str) -> None:
    """The command tells a file's format from its first line without reading a line longer
    than an import takes: a 4 GiB file with no newline (sparse: no disk) under a 1 GiB address
    space limit is refused, not read whole into memory."""
    path = tmp_path / "no-newline.jsonl"
    with path.open("wb") as handle:
        handle.write(b'{"type": "header", "format": "waggle-mind", "pad": "')
        handle.truncate(4 << 30)
    cli = cli_for(target, tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "waggle_store", "import", str(path), "--format", fmt],
        env=cli.env, cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30)))
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert "limit is 268435456" in done.stderr or "longer than 8388608 bytes" in done.stderr


def test_imported_harvest_sources_arrive_without_auto_sync(store: ws.Store,
                                                           tmp_path: Path) -> None:
    planted = {"type": "harvest_source", "source": "notes", "display_name": "Notes",
               "source_path": str(tmp_path / "secret.md"), "last_synced_at": None,
               "items_imported": 0, "frames_created": 0, "auto_sync": True,
               "sync_interval_hours": 1, "last_content_hash": None, "created_at": NOW}
    store.import_mind(io.StringIO(export_lines("fresh", planted)))
    mind = store.mind("fresh")
    [source] = mind.harvest.sources()
    assert source.auto_sync is False
    assert mind.harvest.stale() == []


# -- the API's caps ---------------------------------------------------------------------------


def test_import_refuses_content_over_the_api_cap(store: ws.Store) -> None:
    big = export_lines("big", session(), frame("x" * (MAX_CONTENT_BYTES + 1)))
    with pytest.raises(ws.InvalidInputError, match=r"line 3: .*MAX_CONTENT_BYTES"):
        store.import_mind(io.StringIO(big))
    assert "big" not in [m.name for m in store.list_minds()]


def test_import_refuses_a_huge_line_without_reading_it_whole(store: ws.Store,
                                                             tmp_path: Path) -> None:
    path = tmp_path / "huge.jsonl"
    path.write_text(export_lines("huge", session(), frame("y" * (9 << 20))), "utf-8")
    with pytest.raises(ws.InvalidInputError, match="line 3 is longer than"):
        store.import_mind(path)


def test_import_refuses_oversized_properties(store: ws.Store) -> None:
    entity = {"type": "entity", "id": 1, "entity_type": "person", "name": "Ann",
              "properties": {"blob": "z" * (MAX_CONTENT_BYTES + 10)}, "valid_from": NOW,
              "valid_to": None, "recorded_at": NOW}
    with pytest.raises(ws.InvalidInputError, match="line 2: field 'properties'"):
        store.import_mind(io.StringIO(export_lines("props", entity)))


def test_deeply_nested_json_is_an_input_error(store: ws.Store, tmp_path: Path) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    line = export_lines("deep").rstrip("\n") + "\n" + '{"type": "kv", "key": "k", "value": ' \
        + deep + ', "updated_at": "' + NOW + '"}\n'
    with pytest.raises(ws.InvalidInputError, match=r"line 2: .*nested deeper"):
        store.import_mind(io.StringIO(line))
    openfang = tmp_path / "openfang.json"
    openfang.write_text('{"fragments": ' + deep + "}", "utf-8")
    with pytest.raises(ws.InvalidInputError, match="nested deeper"):
        store.import_openfang(openfang, into="of")


def test_openfang_malformed_values_are_input_errors(store: ws.Store, tmp_path: Path) -> None:
    path = tmp_path / "openfang.json"
    path.write_text(json.dumps({"fragments": [], "kv": 5}), "utf-8")
    with pytest.raises(ws.InvalidInputError, match="kv cannot be read: TypeError"):
        store.import_openfang(path, into="of")


def test_import_of_a_fifo_is_refused_without_blocking(store: ws.Store, tmp_path: Path) -> None:
    fifo = tmp_path / "export.jsonl"
    os.mkfifo(fifo)
    box: dict[str, BaseException] = {}

    def run() -> None:
        try:
            store.import_mind(fifo)
        except BaseException as exc:  # noqa: BLE001 (checked in the test thread)
            box["error"] = exc

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(60)
    assert not worker.is_alive(), "the import blocked on a FIFO"
    assert isinstance(box.get("error"), ws.InvalidInputError)
    assert "only regular files" in str(box["error"])


# -- .mind files --------------------------------------------------------------------------------


def test_mind_file_with_a_generated_column_and_a_trigger_is_refused(store: ws.Store,
                                                                    tmp_path: Path) -> None:
    ddl = MIND_DDL.replace(
        "content TEXT,",
        "content TEXT GENERATED ALWAYS AS (printf('%.*c', 60000000, 'x')) VIRTUAL,",
    ) + ("CREATE TABLE audit (n INTEGER);"
         "CREATE TRIGGER grow AFTER INSERT ON sessions BEGIN INSERT INTO audit VALUES (1); END;"
         "CREATE VIEW big AS SELECT content FROM memory_frames;")
    path = make_mind_file(tmp_path / "hostile.mind", "", ddl=ddl)
    assert path.stat().st_size < 64 * 1024
    before = path.read_bytes()
    with pytest.raises(ws.InvalidInputError, match="generated column"):
        store.import_waggle_mind(path, into="hostile")
    assert path.read_bytes() == before
    assert "hostile" not in [m.name for m in store.list_minds()]


def test_mind_file_path_with_percent_opens_that_file(store: ws.Store, tmp_path: Path) -> None:
    make_mind_file(tmp_path / "aA.mind", "the file named aA")
    make_mind_file(tmp_path / "a%41.mind", "the file named a percent 41")
    store.import_waggle_mind(tmp_path / "a%41.mind", into="pct")
    contents = [f.content for f in store.mind("pct").frames.gop("session:a")]
    assert contents == ["the file named a percent 41"]


def test_mind_file_malformed_row_is_an_input_error_naming_it(store: ws.Store,
                                                             tmp_path: Path) -> None:
    path = make_mind_file(tmp_path / "bad.mind", "a memory", t="not a number")
    with pytest.raises(ws.InvalidInputError, match="table memory_frames, row 1"):
        store.import_waggle_mind(path, into="bad")


# -- values at the edges of their types -------------------------------------------------------


def _with_vector(store: ws.Store, values: list[float] | None) -> str:
    """An export of one memory with its vector in the store's own model (``values`` instead of
    the vector, when given)."""
    store.mind("src").cognify("hello world")
    store.reconcile(mind="src")
    out = io.StringIO()
    store.export_mind("src", out, include_vectors=True)
    records = [json.loads(line) for line in out.getvalue().splitlines()]
    for record in records:
        if record["type"] == "vector" and values is not None:
            record["vector"] = values
    return "".join(json.dumps(r) + "\n" for r in records)


def test_a_vector_of_huge_values_is_stored_as_a_unit_vector(store: ws.Store) -> None:
    dims = len(json.loads(_with_vector(store, None).splitlines()[-1])["vector"])
    assert store.import_mind(io.StringIO(_with_vector(store, [1e308] * dims)),
                             into="huge").vectors_imported == 1
    out = io.StringIO()
    store.export_mind("huge", out, include_vectors=True)
    [vector] = [json.loads(line)["vector"] for line in out.getvalue().splitlines()
                if json.loads(line)["type"] == "vector"]
    assert sum(x * x for x in vector) == pytest.approx(1.0, abs=1e-4)


def _awareness(priority: int) -> dict[str, Any]:
    return {"type": "awareness", "id": 1, "category": "task", "content": "c",
            "priority": priority, "metadata": {}, "created_at": NOW, "expires_at": None}


@pytest.mark.parametrize("records", [
    (session(), {**frame("a"), "t": 2**31}),
    (session(), {**frame("a"), "access_count": 2**63}),
    (_awareness(-(2**31) - 1),),
    ({"type": "entity", "id": 1, "entity_type": "person", "name": "Ann", "properties": {},
      "valid_from": NOW, "valid_to": None, "recorded_at": NOW, "version": 2**40},),
    ({"type": "conversation", "id": 1, "kind": "channel", "channel": "c", "label": None,
      "status": "open", "summary": None, "last_seq": 2**63, "created_at": NOW,
      "updated_at": NOW},),
], ids=["t", "access_count", "priority", "version", "last_seq"])
def test_a_number_out_of_its_columns_range_names_its_line(store: ws.Store,
                                                          records: tuple[Any, ...]) -> None:
    """A number the database cannot store (a 32-bit column on PostgreSQL, a 64-bit one on
    both) is refused by the check, naming its line, on both dialects: not by the database
    in the middle of the write."""
    with pytest.raises(ws.InvalidInputError, match=rf"line {len(records) + 1}: field"):
        store.import_mind(io.StringIO(export_lines("numbers", *records)))
    assert "numbers" not in [m.name for m in store.list_minds()]
    edge = export_lines("edge", session(), {**frame("a"), "t": 2**31 - 1}, _awareness(-(2**31)))
    assert store.import_mind(io.StringIO(edge)).frames_imported == 1


def test_a_time_outside_the_calendar_in_utc_names_its_line(store: ws.Store) -> None:
    """9999-12-31 at -05:00 is in the year 10000 in UTC (and 0001-01-01 at +05:00 in the year
    0): the check names that line, blank lines counted, and imports nothing."""
    for late in ("9999-12-31T23:59:59-05:00", "0001-01-01T00:00:00+05:00"):
        text = export_lines("times", kv("a", 1)) + "\n" + json.dumps(
            {**kv("b", 2), "updated_at": late}) + "\n"
        with pytest.raises(ws.InvalidInputError, match=r"line 4: field 'updated_at'"):
            store.import_mind(io.StringIO(text))
    assert "times" not in [m.name for m in store.list_minds()]


def test_a_zero_vector_names_its_line(store: ws.Store) -> None:
    dims = len(json.loads(_with_vector(store, None).splitlines()[-1])["vector"])
    text = _with_vector(store, [0.0] * dims)
    with pytest.raises(ws.InvalidInputError, match=rf"line {len(text.splitlines())}: field"):
        store.import_mind(io.StringIO(text), into="zero")
    assert "zero" not in [m.name for m in store.list_minds()]


@pytest.mark.parametrize("value", ['"\\ud800x"', '{"\\udfff": 1}', '["ok", {"deep": "\\udc00"}]'])
def test_a_lone_surrogate_in_a_json_value_names_its_line(store: ws.Store, value: str) -> None:
    """JSON escapes can spell half a surrogate pair, which is no Unicode text: PostgreSQL's
    JSONB refused it mid-write, SQLite stored it and then no export of the mind could be
    written to a file. The check refuses it, naming the line, as the API refuses it."""
    line = '{"type": "kv", "key": "k", "value": ' + value + ', "updated_at": "' + NOW + '"}\n'
    with pytest.raises(ws.InvalidInputError, match=r"line 2: field 'value'"):
        store.import_mind(io.StringIO(export_lines("surrogates") + line))
    assert "surrogates" not in [m.name for m in store.list_minds()]
    with pytest.raises(ws.InvalidInputError, match="Unicode"):
        store.mind("api").kv.set("k", json.loads(value))


# -- a file that changes while it is imported ----------------------------------------------------


def test_a_file_changed_during_its_import_imports_nothing(store: ws.Store, tmp_path: Path) -> None:
    path = tmp_path / "mind.jsonl"
    path.write_text(export_lines("changing", session(), kv("a", 1), kv("b", 2)),
                    encoding="utf-8")

    def append(done: int, total: int) -> None:  # the write pass, its session written, kv next
        with path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(kv("unchecked", 3)) + "\n")

    with pytest.raises(ws.InvalidInputError, match="changed while it was being imported"):
        store.import_mind(path, progress=append)
    assert "changing" not in [m.name for m in store.list_minds()]


def test_a_file_put_in_its_place_between_the_passes_is_not_read(
        store: ws.Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "mind.jsonl"
    path.write_text(export_lines("swapped", session(), kv("a", "checked")), encoding="utf-8")
    other = tmp_path / "other.jsonl"
    other.write_text(export_lines("swapped", session(), kv("a", "never checked"),
                                  kv("b", "never checked")), encoding="utf-8")
    checked = importer.check_records

    def check_then_swap(*args: Any, **kwargs: Any) -> Any:  # the window between the passes
        plan = checked(*args, **kwargs)
        os.replace(other, path)
        return plan

    monkeypatch.setattr(importer, "check_records", check_then_swap)
    report = store.import_mind(path)
    assert not other.exists()  # the swap happened
    assert report.kv_imported == 1
    assert store.mind("swapped").kv.get("a") == "checked"
    assert store.mind("swapped").kv.get("b") is None
