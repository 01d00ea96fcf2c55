"""docs/agent-loop.md's examples, run as written in a temporary directory."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "agent-loop.md"


@pytest.mark.parametrize("index", [0, 1])
def test_agent_loop_examples_run(index: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text("utf-8"), flags=re.DOTALL)
    assert len(blocks) == 2
    monkeypatch.chdir(tmp_path)
    script = tmp_path / "example.py"
    script.write_text(blocks[index], encoding="utf-8")
    runpy.run_path(str(script), run_name="docs_example")
    printed = capsys.readouterr().out.splitlines()
    if index == 0:  # the other channel starts empty; the memory from telegram is found
        assert printed == [("(0 messages of history) you said: When does my flight to Lisbon "
                           "leave?"), "My flight to Lisbon leaves on Friday at 7:40"]
    else:
        assert printed == ["50 User: discord message 0"]
