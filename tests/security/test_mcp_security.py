"""A hostile MCP client against a real ``waggle-store mcp`` subprocess, through the official SDK
client over stdio and streamable HTTP: it stays in the minds it is given, creates none, reads
no file outside the harvest roots, is refused without the bearer token or with a forged
Host/Origin, and its misspelled arguments and digit-string ids mean what they say.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp.shared.exceptions import MCPError

from tests.conftest import only_sqlite
from tests.security.mcp_harness import (
    REPO,
    TOKEN,
    call,
    env,
    http_client,
    http_server,
    refused,
    server_args,
    stdio_client,
)

SECRET = "Alice's salary is 185k"


def _two_minds(target: Any) -> None:
    """Two minds: alice's holds a secret; bob's is the one the server will serve."""
    with target.open(embedder="hashing") as store:
        store.mind("alice").cognify(SECRET)
        store.mind("alice").identity.set(name="Alice's agent")
        store.mind("bob").cognify("Bob likes hiking in the Alps")


def _minds(target: Any) -> set[str]:
    with target.open(embedder=None) as store:
        return {m.name for m in store.list_minds()}


async def _stays_in_its_mind(client: Any) -> None:
    listed = await call(client, "list_workspaces")
    assert [w["name"] for w in listed["workspaces"]] == ["bob"]
    assert (await call(client, "recall_memory", query="hiking"))["mind"] == "bob"
    for tool, arguments in [
        ("recall_memory", {"query": "salary"}),
        ("search_entities", {"query": "Alice"}),
        ("get_identity", {}),
        ("get_awareness", {}),
        ("save_memory", {"content": "planted"}),
        ("set_identity", {"name": "hijacked"}),
        ("clear_awareness", {}),
        ("consolidate_memory", {}),
    ]:
        text = await refused(client, tool, **arguments, mind="alice")
        assert "185k" not in text
        assert "--allow-mind" in text
    assert "--allow-mind" in await refused(client, "create_workspace", name="mallory")


def test_a_bound_server_serves_only_its_mind_over_stdio(target: Any) -> None:
    _two_minds(target)

    async def main() -> None:
        async with stdio_client(target, mind="bob") as client:
            await _stays_in_its_mind(client)

    asyncio.run(main())
    assert _minds(target) == {"alice", "bob"}
    with target.open(embedder=None) as store:
        assert store.mind("alice").identity.get().name == "Alice's agent"


def test_a_bound_server_serves_only_its_mind_over_http(target: Any, tmp_path: Path) -> None:
    _two_minds(target)
    with http_server(target, tmp_path, mind="bob") as server:

        async def main() -> None:
            async with http_client(server.url) as client:
                await _stays_in_its_mind(client)

        asyncio.run(main())
    banner = server.output()
    assert f"http://127.0.0.1:{server.port}/mcp" in banner
    assert "minds: mind 'bob'" in banner
    assert "bearer token: off" in banner


def test_without_mind_options_only_the_default_mind_is_served(target: Any) -> None:
    _two_minds(target)

    async def main() -> None:
        async with stdio_client(target, mind=None) as client:
            assert (await call(client, "get_identity"))["mind"] == "default"
            await refused(client, "recall_memory", query="salary", mind="alice")

    asyncio.run(main())


def test_no_tool_but_create_workspace_creates_a_mind(target: Any) -> None:
    _two_minds(target)

    async def main() -> None:
        async with stdio_client(target, "--all-minds", mind="bob") as client:
            names = {w["name"] for w in (await call(client, "list_workspaces"))["workspaces"]}
            assert names == {"alice", "bob"}  # --all-minds: every mind, alice's included
            for tool, arguments in [
                ("recall_memory", {"query": "x"}),
                ("search_entities", {"query": "x"}),
                ("get_identity", {}),
                ("get_awareness", {}),
                ("harvest_sources", {}),
                ("save_memory", {"content": "x"}),
                ("save_entity", {"entity_type": "person", "name": "x"}),
                ("set_awareness", {"category": "task", "content": "x"}),
                ("cleanup_frames", {}),
            ]:
                text = await refused(client, tool, **arguments, mind="typo")
                assert "NotFoundError" in text
                assert "typo" in text
            assert (await call(client, "create_workspace", name="fresh"))["name"] == "fresh"

    asyncio.run(main())
    assert _minds(target) == {"alice", "bob", "fresh"}


def test_allow_mind_widens_the_binding_to_the_named_minds(target: Any) -> None:
    _two_minds(target)

    async def main() -> None:
        async with stdio_client(target, "--allow-mind", "alice", mind="bob") as client:
            hits = (await call(client, "recall_memory", query="salary", mind="alice"))["results"]
            assert hits[0]["content"] == SECRET
            names = {w["name"] for w in (await call(client, "list_workspaces"))["workspaces"]}
            assert names == {"alice", "bob"}
            await refused(client, "create_workspace", name="carol")

    asyncio.run(main())


# -- HTTP: bearer token, Host and Origin ---------------------------------------------------------

def _post(url: str, *, headers: dict[str, str]) -> httpx.Response:
    """A raw MCP initialize request, to see the HTTP status a hostile client gets."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "probe", "version": "0"}}}
    return httpx.post(url, json=body, timeout=60, headers={
        "Accept": "application/json, text/event-stream", **headers})


@only_sqlite
def test_a_non_loopback_bind_refuses_to_start_without_a_token(target: Any) -> None:
    done = subprocess.run([sys.executable, *server_args(target, "--http", "0.0.0.0:1")],
                          env=env(), cwd=str(REPO), capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert "WAGGLE_MCP_TOKEN" in done.stderr
    short = subprocess.run([sys.executable, *server_args(target, "--http", "0.0.0.0:1")],
                           env=env(WAGGLE_MCP_TOKEN="short"), cwd=str(REPO),
                           capture_output=True, text=True, timeout=120)
    assert short.returncode == 2
    assert "shorter than" in short.stderr


@only_sqlite
def test_a_non_loopback_bind_wants_the_bearer_token(target: Any, tmp_path: Path) -> None:
    with http_server(target, tmp_path, bind="0.0.0.0", token=TOKEN) as server:
        assert _post(server.url, headers={}).status_code == 401
        assert _post(server.url, headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert _post(server.url, headers={"Authorization": f"Bearer {TOKEN}x"}).status_code == 401
        assert _post(server.url, headers={"Authorization": f"Basic {TOKEN}"}).status_code == 401
        assert _post(server.url, headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200

        async def without(token: str | None) -> None:
            async with http_client(server.url, token) as client:
                await client.list_tools()

        for token in (None, "not-the-token-at-all-000000"):
            with pytest.raises(ExceptionGroup) as failed:  # the SDK's task group around it
                asyncio.run(without(token))
            assert failed.group_contains(MCPError)

        async def main() -> None:
            async with http_client(server.url, TOKEN) as client:
                saved = await call(client, "save_memory", content="Token-guarded memory")
                assert saved["mind"] == "agent"

        asyncio.run(main())
    banner = server.output()
    assert f"http://0.0.0.0:{server.port}/mcp" in banner
    assert "bearer token: required (from $WAGGLE_MCP_TOKEN)" in banner
    assert TOKEN not in banner


@only_sqlite
def test_a_token_set_for_a_loopback_bind_is_required_too(target: Any, tmp_path: Path) -> None:
    with http_server(target, tmp_path, token=TOKEN) as server:
        assert _post(server.url, headers={}).status_code == 401
        assert _post(server.url, headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
    assert "bearer token: required (from $WAGGLE_MCP_TOKEN)" in server.output()
    refused_start = subprocess.run(
        [sys.executable, *server_args(target, "--http", "127.0.0.1:1", "--token-env", "NO_SUCH")],
        env=env(), cwd=str(REPO), capture_output=True, text=True, timeout=120)
    assert refused_start.returncode == 2
    assert "NO_SUCH" in refused_start.stderr


@only_sqlite
@pytest.mark.parametrize("bind", ["127.0.0.1", "0.0.0.0"])
def test_a_forged_host_or_origin_is_refused(target: Any, tmp_path: Path, bind: str) -> None:
    token = TOKEN if bind == "0.0.0.0" else None
    auth = {"Authorization": f"Bearer {token}"} if token else {}
    with http_server(target, tmp_path, "--allowed-host", "memory.example",
                     "--allowed-origin", "https://app.example", bind=bind, token=token) as server:
        port = server.port
        assert _post(server.url, headers=auth).status_code == 200
        assert _post(server.url, headers={**auth, "Host": "evil.example"}).status_code == 421
        forged_host = {**auth, "Host": f"evil.example:{port}"}
        assert _post(server.url, headers=forged_host).status_code == 421
        forged_origin = {**auth, "Origin": "http://evil.example"}
        assert _post(server.url, headers=forged_origin).status_code == 403
        assert _post(server.url, headers={**auth, "Host": f"memory.example:{port}"}
                     ).status_code == 200
        assert _post(server.url, headers={**auth, "Origin": "https://app.example"}
                     ).status_code == 200


# -- harvest confined to the harvest roots --------------------------------------------------------

def test_harvest_reads_only_regular_files_under_the_roots(target: Any, tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "notes").mkdir(parents=True)
    (root / "notes" / "ok.md").write_text("The Zephyr offsite is in Lisbon.\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("AWS_SECRET_ACCESS_KEY=leaked\n")
    (root / "link.md").symlink_to(outside / "secret.md")
    (root / "linked-folder").mkdir()
    (root / "linked-folder" / "leak.md").symlink_to(outside / "secret.md")
    os.mkfifo(root / "pipe.jsonl")

    async def main() -> None:
        async with stdio_client(target, "--harvest-root", str(root)) as client:
            missing_outside = await refused(client, "harvest_import", kind="jsonl",
                                            path="/nonexistent/x.jsonl")
            forbidden = await refused(client, "harvest_import", kind="markdown",
                                      path="/etc/passwd")
            # No existence oracle: a missing path and a forbidden one get the same answer.
            assert missing_outside.replace("/nonexistent/x.jsonl", "P") == forbidden.replace(
                "/etc/passwd", "P")
            for kind, path in [("markdown", str(outside / "secret.md")),
                               ("markdown", str(root / "link.md")),
                               ("markdown", "../outside/secret.md"),
                               ("markdown", str(root / "linked-folder")),
                               ("markdown", str(root)),
                               ("jsonl", str(root / "pipe.jsonl")),
                               ("jsonl", "/dev/zero")]:
                text = await refused(client, "harvest_import", kind=kind, path=path)
                assert "leaked" not in text
            ok = await call(client, "harvest_import", kind="markdown", path="notes", name="n")
            assert ok["frames_created"] == 1
            hits = (await call(client, "recall_memory", query="AWS_SECRET_ACCESS_KEY"))["results"]
            assert not any("leaked" in h["content"] for h in hits)
            assert (await call(client, "recall_memory", query="Zephyr offsite"))["results"]

    asyncio.run(main())


def test_harvest_is_refused_without_a_root(target: Any, tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("A note\n")
    with target.open(embedder=None) as store:  # a source the operator registered
        store.mind("agent").harvest.add_source("markdown", notes, name="ops")

    async def main() -> None:
        async with stdio_client(target) as client:
            assert "--harvest-root" in await refused(client, "harvest_import", kind="markdown",
                                                     path=str(notes))
            assert "--harvest-root" in await refused(client, "ingest_source", name="ops")

    asyncio.run(main())


def test_ingest_source_skips_a_source_outside_the_roots(target: Any, tmp_path: Path) -> None:
    root, elsewhere = tmp_path / "root", tmp_path / "elsewhere"
    root.mkdir()
    elsewhere.mkdir()
    (root / "in.md").write_text("Inside the root\n")
    (elsewhere / "out.md").write_text("Outside the root: planted\n")
    with target.open(embedder=None) as store:  # e.g. planted by an imported mind
        store.mind("agent").harvest.add_source("markdown", elsewhere, name="planted")
        store.mind("agent").harvest.add_source("markdown", root, name="mine")

    async def main() -> None:
        async with stdio_client(target, "--harvest-root", str(root)) as client:
            await refused(client, "ingest_source", name="planted")
            everything = await call(client, "ingest_source")
            assert everything["frames_created"] == 1
            assert [f["item"] for f in everything["failures"]] == ["planted"]
            hits = (await call(client, "recall_memory", query="planted"))["results"]
            assert not any("planted" in h["content"] for h in hits)

    asyncio.run(main())


# -- strict arguments, digit-string ids -----------------------------------------------------------

def test_unknown_arguments_are_refused_and_digit_strings_are_ids(target: Any) -> None:
    async def main() -> None:
        async with stdio_client(target) as client:
            listed = {t.name: t for t in (await client.list_tools()).tools}
            assert listed["save_memory"].input_schema.get("additionalProperties") is False
            text = await refused(client, "save_memory", content="Deploy freeze on Friday",
                                 importnace="critical")
            assert "importnace" in text
            assert not (await call(client, "recall_memory", query="Deploy freeze"))["results"]

            kestrel = await call(client, "save_entity", entity_type="organization",
                                 name="Kestrel Labs")
            billing = await call(client, "save_entity", entity_type="project", name="Billing")
            ids = kestrel["entity"]["id"], billing["entity"]["id"]
            linked = await call(client, "create_relation", source=str(ids[0]),
                                target=f" {ids[1]} ", relation_type="owns")
            assert (linked["source"]["id"], linked["target"]["id"]) == ids
            assert linked["created_entities"] == []
            assert "NotFoundError" in await refused(client, "create_relation", source="987654",
                                                    target=str(ids[1]), relation_type="owns")
            assert "NotFoundError" in await refused(
                client, "create_relation", source="9" * 30, target=str(ids[1]),
                relation_type="owns")
            for name in (str(ids[0]), str(ids[1]), "987654"):
                found = await call(client, "search_entities", query=name)
                assert not any(e["name"] == name for e in found["entities"])
            retired = await call(client, "cleanup_entities", entity_ids=[str(ids[1])])
            assert retired["retired"] == [ids[1]]

    asyncio.run(main())


# -- bounded answers ------------------------------------------------------------------------------

def _long_memory(tag: str, size: int) -> str:
    words = f"{tag} quarterly ledger entry reconciled with the auditors "
    return (words * (size // len(words) + 1))[:size]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_a_recall_of_large_memories_reaches_the_official_http_client(
        target: Any, tmp_path: Path, mode: str) -> None:
    """Ten memories of 60 KB, and one of 600 KB: each hit's content is sent once (the text block
    has short previews), cut to a per-hit and a total budget with a marker, and the whole answer
    stays under the SDK client's 1 MiB SSE event limit."""
    with target.open(embedder="hashing") as store:
        agent = store.mind("agent")
        tens = [agent.cognify(_long_memory(f"ledger{i}", 60_000)).frame_id for i in range(10)]
        big = store.mind("big").cognify(_long_memory("ledger", 600_000)).frame_id

    with http_server(target, tmp_path, "--allow-mind", "big") as server:

        async def main() -> None:
            async with http_client(server.url, mode=mode) as client:
                result = await client.call_tool("recall_memory", {"query": "quarterly ledger",
                                                                  "limit": 10})
                assert not result.is_error, result.content
                hits = result.structured_content["results"]
                assert sorted(h["frame_id"] for h in hits) == sorted(tens)
                assert all(h["content_chars"] == 60_000 for h in hits)
                assert all(h["content"].startswith("ledger") for h in hits)
                # Ten times 60 KB exceed the answer's budget: each gets a fair share of it.
                assert all(h["truncated"] for h in hits)
                assert all(40_000 < len(h["content"]) < 60_000 for h in hits)
                for hit in hits:
                    assert hit["truncated"] == hit["content"].endswith("[…truncated]")
                text = result.content[0].text
                assert len(text.encode()) < 10 * 1000  # previews, not the contents again

                one = await client.call_tool("recall_memory", {"query": "quarterly ledger",
                                                               "mind": "big"})
                assert not one.is_error, one.content
                (hit,) = one.structured_content["results"]
                assert (hit["frame_id"], hit["content_chars"], hit["truncated"]) == (
                    big, 600_000, True)
                assert 30_000 < len(hit["content"]) < 600_000

        asyncio.run(main())
