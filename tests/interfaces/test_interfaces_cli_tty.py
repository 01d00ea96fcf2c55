"""The CLI on a terminal: Rich tables and progress bars (the subprocess tests see the piped form).

In-process, with the CLI's consoles replaced by terminal consoles writing to buffers.
"""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from rich.console import Console

from waggle_store import cli, cli_output


@pytest.fixture
def screens(monkeypatch: pytest.MonkeyPatch) -> tuple[StringIO, StringIO]:
    out, err = StringIO(), StringIO()
    monkeypatch.setattr(cli_output, "out", Console(file=out, force_terminal=True, width=140))
    monkeypatch.setattr(cli_output, "err", Console(file=err, force_terminal=True, width=140))
    monkeypatch.delenv("WAGGLE_DATABASE_URL", raising=False)
    monkeypatch.setenv("WAGGLE_EMBEDDER", "hashing")
    return out, err


def test_tables_and_progress_on_a_terminal(
    tmp_path: Path, screens: tuple[StringIO, StringIO]
) -> None:
    out, err = screens
    url = f"sqlite:///{tmp_path / 'tty.db'}"
    assert cli.main(["--url", url, "save", "Rosa Diaz reviewed the Vega budget"]) == 0
    assert cli.main(["--url", url, "search", "Vega budget"]) == 0
    screen = out.getvalue()
    assert "Rosa Diaz reviewed the Vega budget" in screen
    assert "┃" in screen or "│" in screen, "a Rich table, with borders"
    assert "\t" not in screen

    assert cli.main(["demo", "--db", str(tmp_path / "demo.db"), "--embedder", "hashing"]) == 0
    bar = err.getvalue()
    assert "cognify" in bar, "a progress bar on the terminal"
    assert "━" in bar, "a progress bar on the terminal"


def test_exit_codes_in_process(tmp_path: Path, screens: tuple[StringIO, StringIO]) -> None:
    url = f"sqlite:///{tmp_path / 'codes.db'}"
    assert cli.main(["--url", url, "health"]) == 1
    assert cli.main(["--url", url, "frobnicate"]) == 2
    assert cli.main(["--version"]) == 0


def test_export_and_import_show_progress_bars(
    tmp_path: Path, screens: tuple[StringIO, StringIO], capsys: pytest.CaptureFixture[str]
) -> None:
    _, err = screens
    url = f"sqlite:///{tmp_path / 'bars.db'}"
    for text in ("Rosa Diaz reviewed the Vega budget", "The Vega launch moved to June"):
        assert cli.main(["--url", url, "save", text]) == 0
    dump = tmp_path / "default.jsonl"
    assert cli.main(["--url", url, "export", "default", str(dump)]) == 0
    assert cli.main(["--url", url, "import", str(dump), "--into", "copy"]) == 0
    bars = err.getvalue()
    assert "export" in bars
    assert "import" in bars
    assert bars.count("━") > 0, "progress bars on the terminal"
    assert "export: " not in bars, "not the plain line a pipe gets"
    assert "imported waggle-jsonl into 'copy': 2 frames" in capsys.readouterr().out
