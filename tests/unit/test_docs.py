"""The user documentation works as written: every ``python`` block of ``docs/*.md`` runs (each
page's blocks in order, in one fresh interpreter, in an empty directory, SQLite only, offline),
and every relative link of the README and the docs points at a file of this repository (nothing
outside it, such as ``../shared``)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCS = sorted((REPO / "docs").glob("*.md"))
_BLOCK = re.compile(r"^([ \t]*)```python\n(.*?)^\1```", re.DOTALL | re.MULTILINE)
_LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def _blocks(page: Path) -> list[str]:
    return [textwrap.dedent(m.group(2)) for m in _BLOCK.finditer(page.read_text())]


@pytest.mark.sqlite
@pytest.mark.parametrize("page", [p for p in DOCS if _blocks(p)], ids=lambda p: p.name)
def test_python_blocks_of_the_docs_run(page: Path, tmp_path: Path) -> None:
    script = tmp_path / f"{page.stem}.py"
    script.write_text("\n\n".join(_blocks(page)))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WAGGLE_", "OLLAMA",
                                                                      "OPENAI", "VOYAGE"))}
    env["PYTHONPATH"] = str(REPO)
    env["PYTHONWARNINGS"] = "ignore"
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("page", [REPO / "README.md", *DOCS, REPO / "examples/host_app/README.md"],
                         ids=lambda p: str(p.relative_to(REPO)))
def test_links_stay_inside_the_repository(page: Path) -> None:
    text = page.read_text()
    assert "../shared" not in text
    for target in _LINK.findall(text):
        if "://" in target or target.startswith("mailto:"):
            continue
        resolved = (page.parent / target).resolve()
        assert resolved.is_relative_to(REPO), target
        assert resolved.exists(), f"{page.name} links to a missing {target}"
