"""Conversations across processes, each with its own store on the same database: six processes
opening a channel at once get one conversation; appends and canonical appends from several
processes lose nothing and keep ``seq`` gapless and ordered."""

from __future__ import annotations

import multiprocessing
import traceback
from typing import Any

import waggle_store as ws

PROCESSES = 6
APPENDS = 15


def _run(url: str, schema: str | None, index: int, barrier: Any, results: Any) -> None:
    try:
        store = ws.open_store(url, schema=schema, embedder=None, upgrade=False)
        try:
            conversations = store.mind("shared").conversations
            barrier.wait(timeout=120)
            opened = conversations.open("telegram")
            barrier.wait(timeout=120)
            for n in range(APPENDS):
                conversations.append(opened.id, [{"role": "user", "content": f"p{index}-{n}"}],
                                     keep_last=None)
                conversations.canonical_append(
                    [{"role": "assistant", "content": f"p{index}-{n}"}], threshold=40, window=10)
        finally:
            store.close()
        results.put((index, opened.id, None))
    except BaseException:  # noqa: BLE001 - reported to the parent; the test fails on it
        results.put((index, None, traceback.format_exc()))


def test_processes_open_one_conversation_and_lose_no_message(target: Any,
                                                             store_factory: Any) -> None:
    store = store_factory(embedder=None)  # migrated before the workers start
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(PROCESSES)
    results = ctx.Queue()
    procs = [ctx.Process(target=_run, args=(target.url, target.schema, k, barrier, results))
             for k in range(PROCESSES)]
    for proc in procs:
        proc.start()
    outcomes = [results.get(timeout=600) for _ in procs]
    for proc in procs:
        proc.join(timeout=60)
    errors = [err for _, _, err in outcomes if err]
    assert errors == [], "\n".join(errors)

    conversations = store.mind("shared").conversations
    infos = conversations.list()
    assert len(infos) == 1
    assert infos[0].is_open
    assert {conv_id for _, conv_id, _ in outcomes} == {infos[0].id}
    messages = conversations.messages(infos[0].id)
    assert [m.seq for m in messages] == list(range(1, PROCESSES * APPENDS + 1))
    everyone = sorted(f"p{k}-{n}" for k in range(PROCESSES) for n in range(APPENDS))
    assert sorted(m.content for m in messages) == everyone

    canonical = conversations.canonical(window=1000)
    lines = [] if canonical.summary is None else canonical.summary.split("\n")
    seen = [line.removeprefix("Assistant: ") for line in lines]
    seen += [m.content for m in canonical.messages]
    assert sorted(seen) == everyone
