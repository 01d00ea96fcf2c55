"""docs/cli.md's examples, run as written (both dialects): every ``waggle-store ...`` line of its
``sh`` blocks, in order, in a subprocess against a fresh store, so the page cannot drift from the
command.

The files the examples name are made first (a notes folder, a ChatGPT export zip, a Waggle
``.mind`` file) under a temporary ``HOME``; an example's ``--url`` is the test's store.
"""

from __future__ import annotations

import json
import re
import shlex
import zipfile
from pathlib import Path
from typing import Any

from tests.integration.test_harvest import _chatgpt
from tests.integration.test_transfer_waggle import build_waggle_mind
from tests.interfaces.cli_runner import cli_for

DOC = Path(__file__).resolve().parents[2] / "docs" / "cli.md"
_BLOCK = re.compile(r"^```sh\n(.*?)^```", re.DOTALL | re.MULTILINE)


def doc_commands() -> list[list[str]]:
    """The arguments of each ``waggle-store`` line of the page's ``sh`` blocks (comments cut)."""
    commands = []
    for block in _BLOCK.findall(DOC.read_text(encoding="utf-8")):
        for line in block.splitlines():
            words = shlex.split(line, comments=True)
            if words and words[0] == "waggle-store":
                commands.append(words[1:])
    return commands


def _files(home: Path, cwd: Path) -> None:
    notes = home / "notes"
    notes.mkdir()
    (notes / "standup.md").write_text("# Standup\n\nThe Atlas launch moved to Thursday.\n")
    downloads = home / "Downloads"
    downloads.mkdir()
    with zipfile.ZipFile(downloads / "chatgpt-export.zip", "w") as archive:
        archive.writestr("conversations.json", json.dumps([_chatgpt(1), _chatgpt(2)]))
    build_waggle_mind(cwd / "old.mind")


def test_every_example_of_the_cli_page_runs(target: Any, tmp_path: Path) -> None:
    commands = doc_commands()
    assert len(commands) >= 15, "the page's examples were not found"
    home, cwd = tmp_path / "home", tmp_path / "cwd"
    home.mkdir()
    cwd.mkdir()
    _files(home, cwd)
    cli = cli_for(target, cwd)
    cli.env["HOME"] = str(home)
    cli("save", "Priya chose PostgreSQL for the billing service")  # a mind to export
    for args in commands:
        args = [str(home) + a[1:] if a.startswith("~/") else a for a in args]
        if "--url" in args:  # the example's server is this test's store
            args[args.index("--url") + 1] = target.url
        done = cli(*args)
        assert "Traceback" not in done.stderr, args
    assert [s["name"] for s in cli.json("harvest", "list")] == ["chatgpt"]  # notes: removed
    assert {m["name"] for m in cli.json("minds", "list")} >= {
        "default", "archive", "from-openfang"}
