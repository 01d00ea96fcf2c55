"""The lifecycle commands of ``waggle-store`` in a subprocess, on both dialects, with real files:
export/import (waggle-jsonl, OpenFang, Waggle ``.mind``), harvest, consolidate, usage."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.integration.test_transfer_waggle import build_waggle_mind
from tests.interfaces.cli_runner import Cli, cli_for

MEMORIES = [
    "Priya Raman chose PostgreSQL for the billing service",
    "The Helios dashboard release slipped to Friday",
    "Marco prefers green tea and short standups",
]


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def _minds(cli: Cli) -> set[str]:
    return {m["name"] for m in cli.json("minds", "list")}


def test_export_then_import_round_trip(target: Any, tmp_path: Path) -> None:
    cli = cli_for(target, tmp_path)
    for text in MEMORIES:
        cli("save", text)
    cli("identity", "--name", "Wren", "--role", "assistant")
    before = cli.json("stats")

    out = tmp_path / "default.jsonl"
    exported = cli.json("export", "default", str(out))
    lines = _lines(out)
    assert exported["records"] == len(lines)
    assert lines[0]["type"] == "header"
    assert lines[0]["mind"] == "default"
    frames = sum(1 for line in lines if line["type"] == "frame")
    assert exported["frames"] == frames == len(MEMORIES)
    assert exported["entities"] == sum(1 for line in lines if line["type"] == "entity")
    assert exported["vectors"] == 0

    imported = cli.json("import", str(out), "--into", "copy")
    assert imported["format"] == "waggle-jsonl"  # detected from the header
    assert imported["mind"] == "copy"
    assert imported["frames_imported"] == exported["frames"]
    assert imported["entities_imported"] == exported["entities"]
    assert imported["relations_imported"] == exported["relations"]
    assert imported["sessions_imported"] == exported["sessions"]
    copy = cli.json("--mind", "copy", "stats")
    assert copy["frames"] == before["frames"]
    assert copy["entities"] == before["entities"]
    assert cli.json("--mind", "copy", "identity")["name"] == "Wren"
    assert cli.json("--mind", "copy", "search", "Helios dashboard")[0]["content"] == MEMORIES[1]
    again = cli.json("import", str(out), "--into", "copy", "--merge")
    assert again["frames_imported"] == 0
    assert again["duplicates_skipped"] == len(MEMORIES)
    plain = cli("import", str(out), "--into", "copy", "--merge")
    assert plain.stdout.startswith("imported waggle-jsonl into 'copy': 0 frames")
    assert "import:" in plain.stderr  # the final progress count, printed plainly when piped

    # With vectors: the importing store (same embedder) needs no re-embedding.
    vectors = tmp_path / "vectors.jsonl"
    assert cli.json("export", "default", str(vectors), "--vectors")["vectors"] == len(MEMORIES)
    with_vectors = cli.json("import", str(vectors), "--into", "vectors")
    assert with_vectors["vectors_imported"] == len(MEMORIES)
    assert with_vectors["vectors_pending"] == 0

    # Without --into, into the exported mind's name; into another store (a SQLite file).
    other = cli_for(_Sqlite(tmp_path / "other.db"), tmp_path)
    assert other.json("import", str(out))["mind"] == "default"
    assert other.json("stats")["frames"] == before["frames"]

    # OpenFang: exported and read back (auto-detected).
    fang = tmp_path / "agent_memory.json"
    assert cli.json("export", "default", str(fang), "--format", "openfang")["frames"] == len(
        MEMORIES)
    assert set(json.loads(fang.read_text(encoding="utf-8"))) >= {"fragments", "entities"}
    from_fang = cli.json("import", str(fang), "--into", "fang")
    assert from_fang["format"] == "openfang"
    assert from_fang["frames_imported"] == len(MEMORIES)
    cli("export", "default", str(tmp_path / "x.json"), "--format", "openfang", "--vectors", code=2)

    # A Waggle .mind file (Waggle's SQLite schema), auto-detected by its first bytes.
    seed = tmp_path / "old.mind"
    build_waggle_mind(seed)
    from_seed = cli.json("import", str(seed), "--into", "seed")
    assert from_seed["format"] == "mind"
    assert from_seed["frames_imported"] > 0
    assert from_seed["problems"], "the data bugs of Waggle's file are repaired and listed"
    assert cli.json("--mind", "seed", "stats")["frames"]["total"] == from_seed["frames_imported"]


def test_a_bad_file_imports_nothing(target: Any, tmp_path: Path) -> None:
    cli = cli_for(target, tmp_path)
    for text in MEMORIES:
        cli("save", text)
    good = tmp_path / "good.jsonl"
    cli("export", "default", str(good))
    lines = good.read_text(encoding="utf-8").splitlines()
    frame_line = next(i for i, line in enumerate(lines) if json.loads(line)["type"] == "frame")
    broken_lines = list(lines)
    broken_lines[-1] = '{"type": "frame", "content": '  # the last line is cut short
    broken = tmp_path / "broken.jsonl"
    broken.write_text("\n".join(broken_lines) + "\n", encoding="utf-8")

    failed = cli("import", str(broken), "--into", "target", code=1)
    assert f"line {len(lines)}" in failed.stderr
    assert "no mind 'target'" in cli("--mind", "target", "stats", code=1).stderr, \
        "nothing imported, not even the mind"

    wrong = json.loads(lines[frame_line])
    wrong["importance"] = "urgent"
    lines[frame_line] = json.dumps(wrong)
    bad_value = tmp_path / "bad_value.jsonl"
    bad_value.write_text("\n".join(lines) + "\n", encoding="utf-8")
    refused = cli("import", str(bad_value), "--into", "target", code=1)
    assert f"line {frame_line + 1}" in refused.stderr
    assert "no mind 'target'" in cli("--mind", "target", "stats", code=1).stderr, \
        "nothing imported, not even the mind"

    prose = tmp_path / "notes.txt"
    prose.write_text("just some prose\n", encoding="utf-8")
    assert "cannot tell the format" in cli("import", str(prose), code=1).stderr
    assert "no file" in cli("import", str(tmp_path / "missing.jsonl"), code=1).stderr
    cli("import", str(good), "--format", "nonsense", code=2)
    assert "no mind named 'nobody'" in cli("export", "nobody", str(tmp_path / "n.jsonl"),
                                           code=1).stderr


def test_harvest_a_markdown_folder(target: Any, tmp_path: Path) -> None:
    cli = cli_for(target, tmp_path)
    notes = tmp_path / "notes"
    (notes / "projects").mkdir(parents=True)
    (notes / "apollo.md").write_text("# Apollo\n\nSarah Chen leads Project Apollo.\n")
    (notes / "projects" / "helios.txt").write_text("The Helios launch moved to May.\n")

    source = cli.json("harvest", "add", "markdown", str(notes), "--name", "notes")
    assert source["name"] == "notes"
    assert source["path"] == str(notes.resolve())
    first = cli.json("harvest", "sync")
    assert first["sources_synced"] == 1
    assert first["items_imported"] == 2
    assert first["frames_created"] >= 2
    assert first["failures"] == []
    second = cli.json("harvest", "sync", "notes")
    assert second["frames_created"] == 0
    assert second["items_imported"] == 0
    assert second["sources_skipped"] == 1
    assert cli.json("stats")["frames"]["total"] == first["frames_created"]
    assert cli.json("search", "who leads Apollo")[0]["content"].endswith("Project Apollo.")

    listed = cli.json("harvest", "list")
    assert [(s["name"], s["frames_created"]) for s in listed] == [
        ("notes", first["frames_created"])]
    assert listed[0]["last_synced_at"] is not None
    plain = cli("harvest", "list").stdout.splitlines()
    assert plain[0].split("\t")[0:2] == ["name", "kind"]
    assert plain[1].split("\t")[0:2] == ["notes", "markdown"]

    # A changed folder: only the new file comes in.
    (notes / "todo.md").write_text("Book the Apollo retro room.\n")
    third = cli.json("harvest", "sync")
    assert third["items_imported"] == 1

    jsonl = tmp_path / "log.jsonl"
    jsonl.write_text(json.dumps({"content": "Marco is out on Monday"}) + "\n")
    cli("harvest", "add", "jsonl", str(jsonl), "--auto-sync", "--interval", "6")
    assert [s["name"] for s in cli.json("harvest", "stale")] == ["jsonl"]  # never synced
    assert cli.json("harvest", "sync", "jsonl")["frames_created"] == 1
    assert cli.json("harvest", "stale") == []

    # An item that fails: the others are stored, the command exits 1 naming it.
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text(json.dumps({"content": "Rosa reviews the Vega budget"}) + "\nnot json\n")
    cli("harvest", "add", "jsonl", str(mixed), "--name", "mixed")
    failed = cli("harvest", "sync", "mixed", "--json", code=1)
    report = json.loads(failed.stdout)
    assert (report["items_imported"], report["frames_created"]) == (1, 1)
    assert [ref for ref, _ in report["failures"]] == ["mixed: line 2"]
    assert "failed: mixed: line 2" in failed.stderr
    assert cli.json("search", "Vega budget")[0]["content"] == "Rosa reviews the Vega budget"
    cli("harvest", "remove", "mixed")

    assert "no harvest source" in cli("harvest", "sync", "nowhere", code=1).stderr
    cli("harvest", "add", "myspace", str(notes), code=2)
    assert "no file or folder" in cli("harvest", "add", "jsonl", str(tmp_path / "gone.jsonl"),
                                      code=1).stderr
    assert cli("harvest", "remove", "jsonl").stdout.strip() == "removed source 'jsonl'"
    cli("harvest", "remove", "jsonl", code=1)
    assert [s["name"] for s in cli.json("harvest", "list")] == ["notes"]


def test_consolidate_dry_run_reports_what_a_run_does(target: Any, tmp_path: Path) -> None:
    cli = cli_for(target, tmp_path)
    for text in [*MEMORIES, "The Helios dashboard release slipped to Friday!"]:
        cli("save", text)
    # Faded memories: temporary ones not accessed for years, brought in through an import
    # (which keeps their times), so that the run has something to prune.
    out = tmp_path / "faded.jsonl"
    cli("--mind", "faded", "save", "Scratch: call the printer vendor", "--importance", "temporary")
    cli("--mind", "faded", "save", "Scratch: parking is on level 3", "--importance", "temporary")
    cli("export", "faded", str(out))
    aged = []
    for record in _lines(out):
        if record["type"] == "frame":
            record["last_accessed"] = "2021-01-04T09:00:00+00:00"
        aged.append(json.dumps(record))
    out.write_text("\n".join(aged) + "\n", encoding="utf-8")
    cli("import", str(out), "--into", "default", "--merge")

    total = cli.json("stats")["frames"]["total"]
    dry = cli.json("consolidate", "--dry-run")
    assert dry["dry_run"] is True
    assert cli.json("stats")["frames"]["total"] == total, "a dry run writes nothing"
    assert cli.json("consolidate", "--dry-run") == dry
    assert len(dry["merges"]) == 1
    assert len(dry["pruned"]) == 2
    listed = cli("consolidate", "--dry-run")
    rows = [line.split("\t") for line in listed.stdout.splitlines()[1:] if "\t" in line]
    assert sorted(r[0] for r in rows) == ["merge", "prune", "prune"]
    assert all(r[3].startswith("Scratch:") for r in rows if r[0] == "prune")
    assert [("Helios" in r[3], int(r[1]), int(r[2])) for r in rows if r[0] == "merge"] == [
        (True, *dry["merges"][0])]
    assert f"consolidate: {total}/{total}" in listed.stderr  # the progress's final count
    real = cli.json("consolidate")
    assert {k: v for k, v in real.items() if k != "dry_run"} == {
        k: v for k, v in dry.items() if k != "dry_run"}
    assert real["fragments_processed"] == total
    assert real["fragments_deleted"] == 2, "the two faded temporary memories"
    assert real["fragments_merged"] == 1, "the two Helios memories"
    assert cli.json("stats")["frames"]["total"] == total - 3
    after = cli.json("consolidate", "--dry-run")
    assert (after["fragments_merged"], after["fragments_deleted"]) == (0, 0)
    assert cli("consolidate", "--dry-run").stdout.startswith("would process")
    cli("consolidate", "--decay-rate", "1.5", code=2)


def test_usage_after_recording(target: Any, tmp_path: Path) -> None:
    cli = cli_for(target, tmp_path)
    cli("usage", "record", "gpt-4o-mini", "--prompt-tokens", "1000", "--completion-tokens", "200",
        "--cost", "0.25")
    cli("usage", "record", "gpt-4o", "--prompt-tokens", "10", "--cost", "1.5")
    cli("--mind", "side", "usage", "record", "gpt-4o", "--completion-tokens", "5", "--cost", "0.5")

    shown = cli.json("usage", "show")
    assert shown["totals"]["calls"] == 2
    assert shown["totals"]["total_tokens"] == 1210
    assert abs(shown["totals"]["cost_usd"] - 1.75) < 1e-9
    assert [m["model"] for m in shown["by_model"]] == ["gpt-4o", "gpt-4o-mini"]
    assert shown["budget"]["budget_usd"] is None
    every = cli.json("usage", "show", "--all-minds")
    assert every["totals"]["calls"] == 3
    assert every["budget"] is None
    ranking = cli.json("usage", "ranking")
    assert [(r["mind"], r["calls"]) for r in ranking] == [("default", 2), ("side", 1)]
    days = cli.json("usage", "daily")
    assert sum(d["calls"] for d in days) == 2
    plain = cli("usage", "show").stdout.splitlines()
    assert plain[0].split("\t")[0] == "model"
    assert plain[1].split("\t")[:2] == ["all models", "2"]

    within = cli.json("usage", "budget", "--set", "5")
    assert (within["budget_usd"], within["exceeded"]) == (5.0, False)
    assert abs(within["remaining_usd"] - 3.25) < 1e-9
    spent = cli("usage", "budget", "--set", "1", code=1)  # exceeded: a script stops here
    assert "EXCEEDED" in spent.stdout
    assert "budget" in spent.stderr
    assert cli.json("usage", "budget", "--remove")["budget_usd"] is None
    cli("usage", "budget", "--set", "1", "--remove", code=2)
    cli("usage", "record", "gpt-4o", "--cost", "-1", code=2)
    cli("usage", "show", "--since", "not a time", code=1)


class _Sqlite:
    """A second store for the round trip: a SQLite file named like the ``target`` fixture."""

    dialect = "sqlite"
    schema = None

    def __init__(self, path: Path) -> None:
        self.url = f"sqlite:///{path}"

