"""The async API reaches conversations and agents: 20 concurrent awaited appends to one
conversation lose nothing and keep seq gapless."""

from __future__ import annotations

import asyncio
from typing import Any

import waggle_store as ws
from waggle_store import aio


def test_conversations_and_agents_are_awaitable(target: Any) -> None:
    async def scenario() -> None:
        async with aio.open_store(target.url, schema=target.schema, embedder="hashing",
                                  max_workers=4) as store:
            record = await store.agents.save("Ada", {"model": "m"})
            assert isinstance(record, ws.AgentRecord)
            assert [a.name for a in await store.agents.list()] == ["Ada"]
            mind = await store.mind(record.mind)
            conv = await mind.conversations.open("web")
            await asyncio.gather(*[
                mind.conversations.append(conv.id, [{"role": "user", "content": f"m{n}"}],
                                          keep_last=None)
                for n in range(20)])
            messages = await mind.conversations.messages(conv.id)
            assert [m.seq for m in messages] == list(range(1, 21))
            assert sorted(m.content for m in messages) == sorted(f"m{n}" for n in range(20))
            ctx = await mind.conversations.canonical_append([{"role": "user", "content": "c"}])
            assert isinstance(ctx, ws.CanonicalContext)

    asyncio.run(scenario())
