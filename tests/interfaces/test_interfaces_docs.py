"""docs/async.md's examples, run as written (both dialects): documentation that cannot rot."""

from __future__ import annotations

import re
import runpy
from pathlib import Path
from typing import Any

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "async.md"


def _block(marker: str) -> str:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.DOTALL)
    matching = [b for b in blocks if marker in b]
    assert len(matching) == 1, f"expected one python block containing {marker!r}"
    return matching[0]


@pytest.fixture
def store_env(target: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("WAGGLE_DATABASE_URL", target.url)
    monkeypatch.setenv("WAGGLE_EMBEDDER", "hashing")
    if target.schema:
        monkeypatch.setenv("WAGGLE_PG_SCHEMA", target.schema)
    else:
        monkeypatch.delenv("WAGGLE_PG_SCHEMA", raising=False)
    return target


def _run_block(marker: str, tmp_path: Path) -> dict[str, Any]:
    """The block, saved as a module and run: its globals (the example's ``app``)."""
    script = tmp_path / "example.py"
    script.write_text(_block(marker), encoding="utf-8")
    return runpy.run_path(str(script), run_name="docs_example")


def test_the_fastapi_example(store_env: Any, tmp_path: Path) -> None:
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    namespace = _run_block("FastAPI(lifespan", tmp_path)
    with TestClient(namespace["app"]) as client:
        for text in ("Quarterly planning moved to Thursday", "Atlas launch needs a security review",
                     "The cafeteria serves ramen on Fridays"):
            response = client.post("/minds/team/memories", json={"content": text})
            assert response.status_code == 201, response.text
        bad = client.post("/minds/team/memories", json={"content": "x", "importance": "urgent"})
        assert bad.status_code == 422
        hits = client.get("/minds/team/search", params={"q": "Atlas security review"}).json()
        assert hits[0]["content"] == "Atlas launch needs a security review"
        assert client.get("/minds/other/search", params={"q": "Atlas"}).json() == []


def test_the_asyncio_example(store_env: Any, tmp_path: Path,
                             capsys: pytest.CaptureFixture[str]) -> None:
    _run_block("asyncio.run(main())", tmp_path)
    printed = capsys.readouterr().out
    assert "about the Atlas launch" in printed


def _commands(group: Any, prefix: str = "") -> list[str]:
    names = []
    for name, command in group.commands.items():
        if command.hidden:
            continue
        names.append(f"{prefix}{name}")
        if hasattr(command, "commands"):  # a group (Typer's own click classes)
            names += _commands(command, f"{prefix}{name} ")
    return names


@pytest.mark.sqlite
def test_the_cli_reference_names_every_command() -> None:
    """docs/cli.md shows every command of the app, subcommands included, in backquotes."""
    import typer

    from waggle_store.cli import app

    page = (DOC.parent / "cli.md").read_text(encoding="utf-8")
    commands = _commands(typer.main.get_command(app))
    assert {"export", "import", "harvest sync", "consolidate", "usage budget"} <= set(commands)
    missing = [c for c in commands if f"`{c}" not in page]
    assert not missing, f"docs/cli.md does not document {missing}"


@pytest.mark.sqlite
def test_the_mcp_reference_names_every_tool(tmp_path: Path) -> None:
    """docs/mcp.md's table has a row for every tool the server publishes."""
    import asyncio

    from waggle_store import aio
    from waggle_store.mcp import build_server

    async def tool_names() -> set[str]:
        async with aio.open_store(f"sqlite:///{tmp_path / 'tools.db'}", embedder=None) as store:
            return {tool.name for tool in await build_server(store).list_tools()}

    names = asyncio.run(tool_names())
    assert {"harvest_import", "consolidate_memory"} <= names
    page = (DOC.parent / "mcp.md").read_text(encoding="utf-8")
    missing = sorted(name for name in names if f"| `{name}` |" not in page)
    assert not missing, f"docs/mcp.md does not document {missing}"
