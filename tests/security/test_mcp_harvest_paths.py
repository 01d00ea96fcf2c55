"""The paths a harvest source was registered with are checked as the harvest reads them: a
hostile MCP client, through the official SDK client against a real ``waggle-store mcp``
subprocess, cannot make the server read outside its harvest roots with a source it did not
register itself (one that came with an imported mind)."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path
from typing import Any

import pytest

from tests.security.mcp_harness import call, refused, stdio_client
from tests.security.test_import_safety import export_lines

NOW = "2026-01-02T03:04:05+00:00"


def _import_source(target: Any, path: str) -> None:
    """Mind ``agent`` with a markdown source named ``planted`` at ``path``, as an imported
    mind file (someone else's export) brings it: the path is stored as the file gives it."""
    planted = {"type": "harvest_source", "source": "planted", "kind": "markdown",
               "display_name": "Notes", "source_path": path, "last_synced_at": None,
               "items_imported": 0, "frames_created": 0, "auto_sync": False,
               "sync_interval_hours": 24, "last_content_hash": None, "created_at": NOW}
    with target.open(embedder=None) as store:
        store.import_mind(io.StringIO(export_lines("agent", planted)))


@pytest.mark.parametrize("path", ["notes", ""])
def test_an_imported_relative_source_path_is_not_read_from_the_working_directory(
        target: Any, tmp_path: Path, path: str) -> None:
    """A relative path is read relative to the server's working directory, so it is checked
    there, not under the first root (where a folder of the same name may well exist)."""
    root, cwd = tmp_path / "root", tmp_path / "cwd"
    (root / "notes").mkdir(parents=True)
    (root / "notes" / "in.md").write_text("Inside the root\n")
    (cwd / "notes").mkdir(parents=True)
    (cwd / "notes" / "secret.md").write_text("AWS_SECRET_ACCESS_KEY=leaked-from-cwd\n")
    _import_source(target, path)

    async def main() -> None:
        async with stdio_client(target, "--harvest-root", str(root), cwd=cwd) as client:
            text = await refused(client, "ingest_source", name="planted")
            assert "leaked" not in text
            everything = await call(client, "ingest_source")
            assert everything["frames_created"] == 0
            assert [f["item"] for f in everything["failures"]] == ["planted"]
            hits = (await call(client, "recall_memory", query="AWS_SECRET_ACCESS_KEY"))["results"]
            assert not any("leaked" in h["content"] for h in hits)

    asyncio.run(main())
