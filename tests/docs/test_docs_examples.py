"""The Python blocks of the user docs run as written (in order, one namespace per page)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
_BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)


@pytest.mark.parametrize("page", ["embedding-models.md", "reliability.md"])
def test_page_examples_run(page: str) -> None:
    blocks = _BLOCK.findall((DOCS / page).read_text(encoding="utf-8"))
    assert blocks, f"{page} has no python example"
    namespace: dict[str, object] = {"__name__": f"docs_{page}"}
    for block in blocks:
        exec(compile(block, f"{page}", "exec"), namespace)
