"""Tool arguments are bounded and checked before a tool touches the store, through the official
SDK client against a real ``waggle-store mcp`` subprocess: a call refused for one bad value has
changed nothing."""

from __future__ import annotations

import asyncio
from typing import Any

from tests.security.mcp_harness import call, refused, stdio_client


def test_cleanup_entities_checks_every_id_before_retiring_any(target: Any) -> None:
    async def main() -> None:
        async with stdio_client(target) as client:
            saved = await call(client, "save_entity", entity_type="project", name="Kestrel")
            kestrel = saved["entity"]["id"]
            for bad in (2**64, 0, -5):
                text = await refused(client, "cleanup_entities", entity_ids=[kestrel, bad])
                assert str(bad) in text
            await refused(client, "cleanup_entities", entity_ids=[kestrel] * 501)
            # Refused calls retired nothing: Kestrel is still active.
            found = await call(client, "search_entities", query="Kestrel")
            assert [e["id"] for e in found["entities"]] == [kestrel]
            retired = await call(client, "cleanup_entities", entity_ids=[kestrel, 987654])
            assert (retired["retired"], retired["not_found"]) == ([kestrel], [987654])

    asyncio.run(main())


def test_a_refused_create_relation_creates_no_entity(target: Any) -> None:
    """Ends named but missing are created as concepts only with the relation: a call refused
    for its other end, its type or its confidence leaves the graph as it was."""
    async def main() -> None:
        async with stdio_client(target) as client:
            kestrel = (await call(client, "save_entity", entity_type="organization",
                                  name="Kestrel"))["entity"]["id"]
            for arguments in [
                {"source": "Ghost", "target": "987654", "relation_type": "haunts"},
                {"source": "Ghost", "target": "x" * 501, "relation_type": "haunts"},
                {"source": "Ghost", "target": "Phantom", "relation_type": "x" * 101},
                {"source": "Ghost", "target": "Phantom", "relation_type": "   "},
                {"source": "Ghost", "target": str(kestrel), "relation_type": "\x00"},
            ]:
                await refused(client, "create_relation", **arguments)
            graph = await call(client, "read_graph")
            assert [e["name"] for e in graph["entities"]] == ["Kestrel"]
            assert graph["relations"] == []
            made = await call(client, "create_relation", source="Ghost", target=str(kestrel),
                              relation_type="haunts")
            assert made["created_entities"] == ["Ghost"]
            again = await call(client, "create_relation", source="ghost", target="KESTREL",
                               relation_type="haunts")
            assert (again["relation_id"], again["created_entities"]) == (made["relation_id"], [])

    asyncio.run(main())


def test_names_and_queries_are_bounded_before_they_are_echoed(target: Any) -> None:
    """open_nodes names what it did not find and search_entities repeats its query: both are
    bounded like the names they look for, and a mind name like the minds it can name, so an
    answer never grows with an argument past what the store could hold."""
    async def main() -> None:
        async with stdio_client(target) as client:
            long = "n" * 501
            assert "at most 500" in await refused(client, "open_nodes", names=[long])
            await refused(client, "search_entities", query=long)
            for tool, arguments in [("open_nodes", {"names": ["Kestrel"]}),
                                    ("search_entities", {"query": "Kestrel"}),
                                    ("recall_memory", {"query": "Kestrel"})]:
                text = await refused(client, tool, mind="m" * 201, **arguments)
                assert "m" * 201 not in text
            found = await call(client, "open_nodes", names=["n" * 500])
            assert found["entities"] == []

    asyncio.run(main())
