"""`waggle-store mcp` as a real subprocess, driven by the MCP SDK's own client: stdio and HTTP.

Both dialects (the ``target`` fixture): the server is started with the test database's URL and,
on PostgreSQL, its schema (``--schema``). The same scenario runs over both transports.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters

REPO = Path(__file__).resolve().parents[2]

TOOLS = {"recall_memory", "save_memory", "save_entity", "create_relation", "search_entities",
         "get_identity", "set_identity", "get_awareness", "set_awareness", "clear_awareness",
         "cleanup_frames", "cleanup_entities", "create_workspace", "list_workspaces",
         "harvest_import", "harvest_sources", "ingest_source", "consolidate_memory",
         "get_memory", "update_memory", "forget_memory", "read_graph", "open_nodes",
         "delete_relation", "retire_entity"}


def _server_args(target: Any, *extra: str) -> list[str]:
    args = ["-m", "waggle_store", "--url", target.url, "--embedder", "hashing", "--mind", "agent"]
    if target.schema:
        args += ["--schema", target.schema]
    return [*args, "mcp", "--allow-mind", "side-project", "--allow-mind", "harvested", *extra]


def _env() -> dict[str, str]:
    return {"PYTHONPATH": str(REPO), "PYTHONWARNINGS": "ignore"}


async def _call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, f"{tool} failed: {result.content}"
    assert result.content
    assert result.content[0].text
    assert isinstance(result.structured_content, dict)
    return result.structured_content


async def _scenario(client: Client) -> None:
    listed = await client.list_tools()
    assert {t.name for t in listed.tools} == TOOLS
    for tool in listed.tools:
        assert tool.description
        assert tool.output_schema
        for name, prop in tool.input_schema.get("properties", {}).items():
            assert prop.get("description"), f"{tool.name}.{name} has no description"

    memories = [
        "Priya Raman chose PostgreSQL for the billing service in March",
        "The Helios dashboard release slipped to Friday because of flaky tests",
        "Marco prefers green tea and short standup meetings",
    ]
    saved = [await _call(client, "save_memory", content=text) for text in memories]
    assert all(s["mind"] == "agent" for s in saved)  # --mind is the default
    recall = await _call(client, "recall_memory", query="Helios dashboard release", limit=3)
    assert recall["results"][0]["frame_id"] == saved[1]["frame_id"]
    assert recall["results"][0]["content"] == memories[1]

    # Names the saved memories do not mention, so that extraction made no entity of them.
    person = await _call(client, "save_entity", entity_type="organization", name="Kestrel Labs",
                         properties={"team": "billing"})
    relation = await _call(client, "create_relation", source="kestrel LABS",
                           target="Billing Service", relation_type="owns")
    assert relation["source"]["id"] == person["entity"]["id"]  # found by name, any case
    assert relation["created_entities"] == ["Billing Service"]
    assert relation["target"]["entity_type"] == "concept"
    by_id = await _call(client, "create_relation", source=person["entity"]["id"],
                        target=relation["target"]["id"], relation_type="maintains")
    assert by_id["created_entities"] == []
    found = await _call(client, "search_entities", query="kestrel")
    assert [e["name"] for e in found["entities"]] == ["Kestrel Labs"]

    assert (await _call(client, "get_identity"))["identity"] is None
    await _call(client, "set_identity", name="Wren", role="project assistant")
    identity = await _call(client, "get_identity")
    assert identity["identity"]["name"] == "Wren"
    assert identity["identity"]["role"] == "project assistant"

    await _call(client, "set_awareness", category="task", content="ship Helios", priority=5)
    await _call(client, "set_awareness", category="flag", content="Marco is out Monday")
    aware = await _call(client, "get_awareness")
    assert [i["content"] for i in aware["items"]] == ["ship Helios", "Marco is out Monday"]
    assert (await _call(client, "clear_awareness", category="flag"))["removed"] == 1
    assert len((await _call(client, "get_awareness"))["items"]) == 1

    # Bad input is a tool error; the server lives on.
    for tool, arguments in [
        ("save_memory", {"content": ""}),
        ("save_memory", {"content": "x", "importance": "urgent"}),
        ("create_relation", {"source": "Kestrel Labs", "target": 987654, "relation_type": "x"}),
        ("recall_memory", {"query": "x", "limit": 0}),
        ("set_awareness", {"category": "task"}),
    ]:
        result = await client.call_tool(tool, arguments)
        assert result.is_error, f"{tool}({arguments}) should fail"
        assert result.content
        assert result.content[0].text

    other = await _call(client, "create_workspace", name="side-project")
    assert other["name"] == "side-project"
    await _call(client, "save_memory", content="Only in the side project: Zephyr",
                mind="side-project")
    names = [w["name"] for w in (await _call(client, "list_workspaces"))["workspaces"]]
    assert {"agent", "side-project"} <= set(names)
    assert not (await _call(client, "recall_memory", query="Zephyr"))["results"]
    side = await _call(client, "recall_memory", query="Zephyr", mind="side-project")
    assert side["results"]
    assert side["results"][0]["content"].endswith("Zephyr")

    cleaned = await _call(client, "cleanup_frames", max_temp_age_days=0)
    assert cleaned["temporary_pruned"] == 0
    retired = await _call(client, "cleanup_entities", entity_ids=[relation["target"]["id"], 987654])
    assert retired == {
        "mind": "agent",
        "retired": [relation["target"]["id"]],
        "not_found": [987654],
    }
    assert not (await _call(client, "search_entities", query="billing service"))["entities"]


def test_mcp_over_stdio(target: Any) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=_server_args(target), env=_env(), cwd=str(REPO)
    )

    async def main() -> None:
        async with Client(params, read_timeout_seconds=120) as client:
            await _scenario(client)

    asyncio.run(main())


async def _lifecycle(client: Client, notes: Path) -> None:
    """Harvest a notes folder (twice: the second sync adds nothing), list it, consolidate."""
    listed = {t.name: t for t in (await client.list_tools()).tools}
    assert listed["harvest_sources"].annotations.read_only_hint
    assert listed["consolidate_memory"].annotations.destructive_hint

    await _call(client, "create_workspace", name="harvested")
    imported = await _call(client, "harvest_import", kind="markdown", path=str(notes),
                           name="notes", mind="harvested")
    assert imported["mind"] == "harvested"
    assert imported["items_imported"] == 2
    assert imported["frames_created"] >= 2
    assert imported["failures"] == []
    assert [s["name"] for s in imported["sources"]] == ["notes"]
    assert imported["sources"][0]["frames_created"] == imported["frames_created"]
    again = await _call(client, "ingest_source", name="notes", mind="harvested")
    assert (again["frames_created"], again["sources_skipped"]) == (0, 1)
    (notes / "later.md").write_text("The Zephyr offsite is in Lisbon.\n")
    assert (await _call(client, "ingest_source", mind="harvested"))["items_imported"] == 1
    sources = await _call(client, "harvest_sources", mind="harvested")
    assert [(s["name"], s["kind"], s["stale"]) for s in sources["sources"]] == [
        ("notes", "markdown", False)]
    assert sources["sources"][0]["path"] == str(notes.resolve())
    recall = await _call(client, "recall_memory", query="Zephyr offsite", mind="harvested")
    assert recall["results"][0]["content"].endswith("Lisbon.")

    for tool, arguments in [
        ("harvest_import", {"kind": "myspace", "path": str(notes)}),
        ("harvest_import", {"kind": "jsonl", "path": str(notes / "missing.jsonl")}),
        ("ingest_source", {"name": "nowhere"}),
        ("consolidate_memory", {"decay_rate": 0}),
    ]:
        result = await client.call_tool(tool, arguments)
        assert result.is_error, f"{tool}({arguments}) should fail"

    for text in ["Standup moved to 9:30 on Tuesdays", "Standup moved to 9:30 on Tuesdays!"]:
        await _call(client, "save_memory", content=text, mind="harvested")
    dry = await _call(client, "consolidate_memory", dry_run=True, mind="harvested")
    real = await _call(client, "consolidate_memory", mind="harvested")
    assert (dry["dry_run"], real["dry_run"]) == (True, False)
    assert {k: v for k, v in dry.items() if k != "dry_run"} == {
        k: v for k, v in real.items() if k != "dry_run"}
    assert real["fragments_merged"] == 1
    after = await _call(client, "consolidate_memory", dry_run=True, mind="harvested")
    assert after["fragments_merged"] == 0
    assert after["fragments_processed"] == real["fragments_processed"] - 1


def test_mcp_lifecycle_tools_over_stdio(target: Any, tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    (notes / "projects").mkdir(parents=True)
    (notes / "apollo.md").write_text("# Apollo\n\nSarah Chen leads Project Apollo.\n")
    (notes / "projects" / "helios.txt").write_text("The Helios launch moved to May.\n")
    params = StdioServerParameters(
        command=sys.executable, args=_server_args(target, "--harvest-root", str(tmp_path)),
        env=_env(), cwd=str(REPO)
    )

    async def main() -> None:
        async with Client(params, read_timeout_seconds=120) as client:
            await _lifecycle(client, notes)

    asyncio.run(main())


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_listening(process: subprocess.Popen[bytes], port: int) -> None:
    """Until the server accepts connections (a readiness wait, not a timing assertion)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"the server exited with {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise AssertionError("the server never listened")


def test_mcp_over_streamable_http(target: Any, tmp_path: Path) -> None:
    port = _free_port()
    log = (tmp_path / "server.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, *_server_args(target, "--http", f"127.0.0.1:{port}")],
        env={**os.environ, **_env()},
        cwd=str(REPO),
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        _wait_listening(process, port)

        async def main() -> None:
            async with Client(f"http://127.0.0.1:{port}/mcp", read_timeout_seconds=120) as client:
                await _scenario(client)

        asyncio.run(main())
        assert process.poll() is None, "the server must still be running"
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


async def _edits(client: Client) -> None:
    """The agent reads and edits single memories and graph items."""
    saved = await _call(client, "save_memory", content="The Orion review is on Thursday")
    frame_id = saved["frame_id"]
    got = await _call(client, "get_memory", frame_id=str(frame_id))  # a digit string is an id
    assert (got["content"], got["next_offset"]) == ("The Orion review is on Thursday", None)
    updated = await _call(client, "update_memory", frame_id=frame_id,
                          content="The Orion review moved to Friday", importance="important")
    assert (updated["content"], updated["importance"]) == (
        "The Orion review moved to Friday", "important")
    kept = await _call(client, "update_memory", frame_id=frame_id, importance="critical")
    assert (kept["content"], kept["importance"]) == ("The Orion review moved to Friday", "critical")
    recall = await _call(client, "recall_memory", query="Orion review")
    assert recall["results"][0]["content"] == "The Orion review moved to Friday"
    assert (await _call(client, "forget_memory", frame_id=frame_id))["id"] == frame_id
    assert not (await _call(client, "recall_memory", query="Orion review"))["results"]
    for tool, arguments in [("get_memory", {"frame_id": frame_id}),
                            ("forget_memory", {"frame_id": frame_id}),
                            ("update_memory", {"frame_id": frame_id, "content": "x"}),
                            ("update_memory", {"frame_id": 1}),
                            ("update_memory", {"frame_id": 1, "metadata": {"a": 1}})]:
        assert (await client.call_tool(tool, arguments)).is_error, (tool, arguments)

    long = "Ledger line. " * 40_000  # 520,000 characters: read in parts
    big = await _call(client, "save_memory", content=long)
    parts, offset = [], 0
    while offset is not None:
        part = await _call(client, "get_memory", frame_id=big["frame_id"], offset=offset)
        assert part["total_chars"] == len(long)
        parts.append(part["content"])
        offset = part["next_offset"]
    assert len(parts) > 1
    assert "".join(parts) == long

    ada = await _call(client, "save_entity", entity_type="person", name="Ada Quill")
    orion = await _call(client, "save_entity", entity_type="project", name="Orion")
    rel = await _call(client, "create_relation", source="Ada Quill", target="orion",
                      relation_type="leads")
    graph = await _call(client, "read_graph", limit=1)
    assert [e["name"] for e in graph["entities"]] == ["Ada Quill"]
    assert [r["id"] for r in graph["relations"]] == [rel["relation_id"]]
    assert graph["next_offset"] == 1
    rest = await _call(client, "read_graph", offset=1)
    assert "Orion" in [e["name"] for e in rest["entities"]]
    nodes = await _call(client, "open_nodes", names=["orion", "Nobody", str(ada["entity"]["id"])])
    assert {e["name"] for e in nodes["entities"]} == {"Orion", "Ada Quill"}
    assert nodes["not_found"] == ["Nobody"]
    assert [r["relation_type"] for r in nodes["relations"]] == ["leads"]
    assert (await _call(client, "delete_relation", relation_id=rel["relation_id"]))["id"] == (
        rel["relation_id"])
    assert not (await _call(client, "open_nodes", names=["Orion"]))["relations"]
    await _call(client, "retire_entity", entity_id=orion["entity"]["id"])
    assert (await _call(client, "open_nodes", names=["Orion"]))["not_found"] == ["Orion"]
    assert (await client.call_tool("retire_entity", {"entity_id": 987654})).is_error


def test_mcp_edit_tools_over_stdio(target: Any) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=_server_args(target), env=_env(), cwd=str(REPO)
    )

    async def main() -> None:
        async with Client(params, read_timeout_seconds=120) as client:
            await _edits(client)

    asyncio.run(main())
