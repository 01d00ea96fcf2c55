"""The ``waggle-store`` CLI in a subprocess: every command, its exit code, and its output.

Both dialects: the store is named the way a user would, through WAGGLE_DATABASE_URL and (on
PostgreSQL) WAGGLE_PG_SCHEMA, so the environment defaults are exercised too. Output is piped, so
the commands print their plain (non-TTY) form.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.interfaces.cli_runner import Cli, cli_for

REPO = Path(__file__).resolve().parents[2]


def test_every_command_with_its_exit_code(target: Any, tmp_path: Path) -> None:
    cli = cli_for(target, tmp_path)

    assert cli("--version").stdout.startswith("waggle-store ")
    # health never creates a store
    missing = cli("health", code=1)
    assert "no store at" in missing.stderr or "no usable store" in missing.stderr
    if target.dialect == "sqlite":
        assert not Path(target.url.removeprefix("sqlite:///")).exists()

    texts = [
        "Priya Raman chose PostgreSQL for the billing service",
        "The Helios dashboard release slipped to Friday",
        "Marco prefers green tea and short standups",
    ]
    saved = [cli.json("save", text) for text in texts]
    assert cli("save", "Temporary scratch note", "--importance", "temporary").stdout.startswith(
        "saved #"
    )
    frame_id = saved[1]["frame_id"]

    hits = cli.json("search", "Helios dashboard", "--limit", "3")
    assert hits[0]["frame_id"] == frame_id
    assert hits[0]["content"] == texts[1]
    plain = cli("search", "Helios dashboard").stdout.splitlines()
    assert plain[0].split("\t") == ["id", "score", "importance", "content"]
    assert plain[1].split("\t")[0] == str(frame_id)
    assert plain[1].endswith(texts[1])

    recent = cli.json("recent", "--limit", "10")
    assert {f["content"] for f in recent} >= set(texts)
    shown = cli.json("show", str(frame_id))
    assert shown["content"] == texts[1]
    assert shown["id"] == frame_id
    assert "no memory #987654" in cli("show", "987654", code=1).stderr

    scratch = cli.json("search", "scratch note")[0]["frame_id"]
    assert cli("forget", str(scratch)).stdout.strip() == f"forgot #{scratch}"
    cli("show", str(scratch), code=1)
    cli("forget", str(scratch), code=1)

    cli("minds", "create", "side")
    assert "side" in [m["name"] for m in cli.json("minds", "list")]
    cli("minds", "drop", "side", code=1)  # no --yes, no answer: nothing
    cli("minds", "drop", "side", code=1, stdin="n\n")  # answered no: nothing
    assert "side" in cli("minds", "list").stdout.split()
    cli("minds", "drop", "side", "--yes")
    assert "side" not in [m["name"] for m in cli.json("minds", "list")]

    assert "no identity set" in cli("identity").stdout
    cli("identity", "--role", "assistant", code=1)  # no identity yet: a name first
    cli("identity", "--name", "Wren", "--role", "assistant")
    cli("identity", "--personality", "calm")  # changes only what is given
    me = cli.json("identity")
    assert (me["name"], me["role"], me["personality"]) == ("Wren", "assistant", "calm")
    items = cli.json("awareness", "--add", "ship Helios", "--category", "task", "--priority", "2")
    assert [i["content"] for i in items] == ["ship Helios"]
    assert cli.json("awareness", "--clear") == []
    cli("awareness", "--add", "x", "--category", "nonsense", code=1)

    assert isinstance(cli.json("entities", "priya"), list)
    stats = cli.json("stats")
    assert stats["mind"] == "default"
    assert stats["frames"]["total"] == len(texts)
    # a read of a mind the store does not have creates nothing and names the minds there are
    assert "its minds: 'default'" in cli("--mind", "other", "stats", code=1).stderr

    assert set(cli.json("reconcile")) == {"fts_fixed", "vectors_fixed", "extractions_fixed",
                                          "orphans_removed",
                                          "problems", "repaired"}
    health = cli.json("health")
    assert health["dialect"] == target.dialect

    revision = cli("migrate", "current").stdout.strip()
    assert revision
    assert revision != "None"
    assert "matches" in cli("migrate", "check").stdout
    cli("migrate", "downgrade", "base", code=2)  # --yes is required
    cli("migrate", "downgrade", "base", "--yes")
    assert cli("migrate", "current").stdout.strip() == "None"
    cli("health", code=1)  # a store at no revision is no store
    cli("migrate", "upgrade")
    assert cli("migrate", "current").stdout.strip() == revision


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("WAGGLE_")}
    env.update(PYTHONPATH=str(REPO), WAGGLE_EMBEDDER="hashing", PYTHONWARNINGS="ignore")
    cli = Cli(env, tmp_path)
    cli("no-such-command", code=2)
    cli("search", code=2)  # missing QUERY
    cli("search", "x", "--limit", "0", code=2)
    cli("show", "not-a-number", code=2)
    cli("mcp", "--http", "nowhere", code=2)
    cli("migrate", "downgrade", code=2)  # the revision is explicit
    assert "Usage" in cli("--help").stdout
    assert not (tmp_path / "waggle.db").exists(), "usage errors open no store"


def test_default_url_and_demo(tmp_path: Path) -> None:
    """Without --url or WAGGLE_DATABASE_URL the store is ./waggle.db; demo keeps working."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("WAGGLE_")}
    env.update(PYTHONPATH=str(REPO), WAGGLE_EMBEDDER="hashing", PYTHONWARNINGS="ignore")
    cli = Cli(env, tmp_path)
    cli("health", code=1)
    cli("save", "stored in the default place")
    assert (tmp_path / "waggle.db").exists()
    assert cli.json("search", "default place")[0]["content"] == "stored in the default place"
    demo = cli("demo", "--db", str(tmp_path / "demo.db"), "--embedder", "hashing")
    assert "cognified" in demo.stdout
    assert "knowledge graph" in demo.stdout
    assert "cognify:" in demo.stderr  # the progress line, printed plainly when piped


@pytest.mark.parametrize("args", [["--url", "sqlite:///{tmp}/flag.db"]])
def test_url_flag_wins_over_the_environment(tmp_path: Path, args: list[str]) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("WAGGLE_")}
    env.update(
        PYTHONPATH=str(REPO),
        WAGGLE_EMBEDDER="hashing",
        PYTHONWARNINGS="ignore",
        WAGGLE_DATABASE_URL=f"sqlite:///{tmp_path}/env.db",
    )
    cli = Cli(env, tmp_path)
    cli(*[a.format(tmp=tmp_path) for a in args], "save", "flagged")
    assert (tmp_path / "flag.db").exists()
    assert not (tmp_path / "env.db").exists()


def test_commands_that_never_embed_do_not_resolve_the_embedder(tmp_path: Path) -> None:
    """Listing or showing memories must not wait for an embedder (with "auto", a local model
    load): with a provider that cannot be built, they still work while save fails."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("WAGGLE_")}
    env.update(PYTHONPATH=str(REPO), WAGGLE_EMBEDDER="hashing", PYTHONWARNINGS="ignore")
    Cli(env, tmp_path)("save", "written with an embedder")
    broken = Cli({**env, "WAGGLE_EMBEDDER": "no-such-provider"}, tmp_path)
    assert "no-such-provider" in broken("save", "needs one", code=1).stderr
    assert [f["content"] for f in broken.json("recent")] == ["written with an embedder"]
    assert broken.json("stats")["frames"]["total"] == 1
    assert [m["name"] for m in broken.json("minds", "list")] == ["default"]
