"""What a newcomer trips over in the ``waggle-store`` command, in a subprocess on both dialects:
reads create nothing, piped rows stay one line each, errors are one line with the documented
exit code, and the output names no unknown value as ``None``."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest

from tests.interfaces.cli_runner import cli_for
from waggle_store.cli_output import embedder_line
from waggle_store.records import EmbedderStatus


def test_a_mistyped_mind_on_a_read_fails_naming_the_minds(target: Any, tmp_path: Path) -> None:
    cli = cli_for(target, tmp_path)
    cli("save", "the Atlas launch moved to Thursday")
    for args in (["search", "Atlas"], ["recent"], ["stats"], ["entities"], ["show", "1"],
                 ["usage", "show"], ["harvest", "list"], ["consolidate", "--dry-run"]):
        failed = cli("--mind", "tpyo", *args, code=1)
        assert "no mind 'tpyo'" in failed.stderr, args
        assert "'default'" in failed.stderr, args
    assert [m["name"] for m in cli.json("minds", "list")] == ["default"]


@pytest.mark.sqlite
def test_a_mistyped_url_on_a_read_creates_no_file(tmp_path: Path) -> None:
    missing = tmp_path / "tpyo.db"
    cli = cli_for(type("T", (), {"url": f"sqlite:///{missing}", "schema": None})(), tmp_path)
    for args in (["search", "x"], ["recent"], ["minds", "list"], ["usage", "ranking"],
                 ["migrate", "current"], ["export", "default", str(tmp_path / "o.jsonl")]):
        assert "no store at" in cli(*args, code=1).stderr, args
    assert not missing.exists()


def test_piped_search_rows_escape_tabs_and_newlines(target: Any, tmp_path: Path) -> None:
    cli = cli_for(target, tmp_path)
    text = "# Notes\n\nAtlas\tlaunch moved\\ to Thursday"
    cli("save", text)
    cli("save", "Atlas launch checklist")
    lines = cli("search", "Atlas launch").stdout.splitlines()
    assert len(lines) == 3  # the header and two hits, one line each
    rows = [line.split("\t") for line in lines[1:]]
    assert all(len(row) == 4 for row in rows)
    assert "# Notes\\n\\nAtlas\\tlaunch moved\\\\ to Thursday" in [row[3] for row in rows]


def test_export_to_a_missing_directory_or_a_directory_is_one_line(target: Any,
                                                                   tmp_path: Path) -> None:
    cli = cli_for(target, tmp_path)
    cli("save", "a memory to export")
    for dest, said in ((tmp_path / "no" / "such" / "out.jsonl", "does not exist"),
                       (tmp_path, "is a directory")):
        failed = cli("export", "default", str(dest), code=1)
        assert said in failed.stderr
        assert "Traceback" not in failed.stderr
        assert len(failed.stderr.strip().splitlines()) == 1


def test_usage_errors_exit_2_and_since_takes_a_date(target: Any, tmp_path: Path) -> None:
    cli = cli_for(target, tmp_path)
    assert "--importance" in cli("save", "x", "--importance", "urgent", code=2).stderr
    cli("search", "x", "--profile", "fastest", code=2)
    cli("usage", "record", "gpt-4o-mini", "--cost", "0.5", "--at", "2026-11-02T10:00:00Z")
    totals = cli.json("usage", "show", "--all-minds", "--since", "2026-11-01")["totals"]
    assert totals["calls"] == 1
    assert cli.json("usage", "show", "--since", "2026-11-03")["totals"]["calls"] == 0


def test_migrate_takes_a_positional_revision_and_says_where_it_is(target: Any,
                                                                    tmp_path: Path) -> None:
    cli = cli_for(target, tmp_path)
    assert cli("migrate", "upgrade", "0004").stdout.strip() == "at revision 0004"
    assert "nosuchrev" in cli("migrate", "upgrade", "nosuchrev", code=1).stderr
    assert cli("migrate", "upgrade").stdout.strip().startswith("at revision 00")
    checked = cli("migrate", "check")
    assert checked.stdout.strip() == "schema matches the models"
    assert checked.stderr == ""  # no reflection warnings from SQLAlchemy or Alembic
    down = cli("migrate", "downgrade", "base", "--yes").stdout
    assert "None" not in down
    assert "base" in down


@pytest.mark.sqlite
def test_migrate_check_on_an_unmigrated_file_is_one_line(tmp_path: Path) -> None:
    db = tmp_path / "empty.db"
    db.touch()
    cli = cli_for(type("T", (), {"url": f"sqlite:///{db}", "schema": None})(), tmp_path)
    failed = cli("migrate", "check", code=1)
    assert "migrate upgrade" in failed.stderr
    assert failed.stdout == ""


@pytest.mark.sqlite
def test_single_process_commands_do_not_warn_about_the_wal_reset_bug(tmp_path: Path) -> None:
    """The warning concerns several processes writing one store; a CLI command is one."""
    cli = cli_for(type("T", (), {"url": f"sqlite:///{tmp_path}/s.db", "schema": None})(),
                  tmp_path)
    cli.env.pop("PYTHONWARNINGS", None)
    for args in (["save", "x"], ["search", "x"], ["health"]):
        assert "warning: SQLite" not in cli(*args).stderr
    demo = cli("demo", "--embedder", "hashing", "--db", str(tmp_path / "demo.db"))
    assert "WAL-reset" not in demo.stdout + demo.stderr


def test_an_auto_embedder_not_chosen_yet_is_not_printed_as_none() -> None:
    unsettled = EmbedderStatus(None, None, None, ["ollama", "hashing"], None)
    assert "None" not in embedder_line(unsettled)
    assert "auto" in embedder_line(unsettled)
    chosen = EmbedderStatus("hashing", "blake2b", 384, ["hashing"], None)
    assert embedder_line(chosen) == "hashing / blake2b (384 dims)"
    assert "None" not in embedder_line(None)


def test_health_prints_no_none_embedder(target: Any, tmp_path: Path) -> None:
    cli = cli_for(target, tmp_path)
    cli("save", "x")
    cli.env.update(WAGGLE_EMBEDDER="auto", OLLAMA_HOST="http://127.0.0.1:9")
    cli.env.pop("OPENAI_API_KEY", None)
    assert "None" not in cli("health").stdout


@pytest.mark.sqlite
def test_a_busy_http_port_is_one_line_and_exit_1(tmp_path: Path) -> None:
    cli = cli_for(type("T", (), {"url": f"sqlite:///{tmp_path}/s.db", "schema": None})(),
                  tmp_path)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        failed = cli("mcp", "--http", f"127.0.0.1:{port}", code=1)
    assert f"cannot serve on 127.0.0.1:{port}" in failed.stderr
    assert len(failed.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "s.db").exists()  # refused before a store is opened
