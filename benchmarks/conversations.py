"""Conversation cost at length: appending one message, and reading the newest 50.

    python benchmarks/conversations.py                       # SQLite, 10 / 1,000 / 100,000
    python benchmarks/conversations.py --url postgresql+psycopg://... --schema bench_conv

Three conversations of one mind are filled to 10, 1,000 and 100,000 messages (appends of
10,000 messages, ``keep_last=None``). Then, interleaved so drift hits all three alike, one
message is appended to each ``--rounds`` times (``keep_last=None``: nothing trimmed, the
conversation keeps growing); printed is the median time per append and the ratio of the longest
conversation's to the shortest's (messages are rows, so the target is ≤ 1.5).

Then ``messages(limit=50)`` of the 100,000-message conversation against a raw floor for the same
rows: the same indexed query (newest 50 by ``(conversation_id, seq)``) on a pooled connection of
the store's engine, its rows fetched as tuples (target ≤ 2x).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import warnings
from collections.abc import Callable
from functools import partial
from pathlib import Path

import sqlalchemy as sa

import waggle_store as ws
from waggle_store.models import table_name

SIZES = (10, 1_000, 100_000)
CHUNK = 10_000


def fill(mind: ws.Mind, channel: str, size: int) -> int:
    conv = mind.conversations.create(channel)
    done = 0
    while done < size:
        n = min(CHUNK, size - done)
        mind.conversations.append(conv.id, [
            {"role": "user" if (done + i) % 2 == 0 else "assistant",
             "content": f"message {done + i} of the {channel} channel, about nothing much"}
            for i in range(n)], keep_last=None)
        done += n
    return conv.id


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", default=None)
    parser.add_argument("--schema", default=None)
    parser.add_argument("--rounds", type=int, default=300)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    with tempfile.TemporaryDirectory() as tmp:
        url = args.url or f"sqlite:///{Path(tmp) / 'conversations.db'}"
        store = ws.open_store(url, schema=args.schema, embedder=None)
        try:
            mind = store.mind("bench-conversations")
            built = time.perf_counter()
            ids = {size: fill(mind, f"c{size}", size) for size in SIZES}
            print(f"{store.health().dialect}: filled {sum(SIZES):,} messages in "
                  f"{time.perf_counter() - built:.1f} s")

            costs: dict[int, list[float]] = {size: [] for size in SIZES}
            for n in range(args.rounds):
                for size in SIZES:
                    message = [{"role": "user", "content": f"one more {n}"}]
                    costs[size].append(timed(partial(mind.conversations.append, ids[size],
                                                     message, keep_last=None)))
            medians = {size: statistics.median(costs[size]) * 1000 for size in SIZES}
            for size in SIZES:
                print(f"append 1 message to {size:>7,} messages: {medians[size]:7.3f} ms (median "
                      f"of {args.rounds})")
            ratio = medians[SIZES[-1]] / medians[SIZES[0]]
            print(f"ratio {SIZES[-1]:,} / {SIZES[0]:,}: {ratio:.2f} (target <= 1.5)")

            big = ids[SIZES[-1]]
            messages = sa.text(
                f"SELECT id, conversation_id, seq, role, content, tool_calls, tool_call_id, "
                f"metadata, created_at FROM {table_name('conversation_messages')} "
                f"WHERE conversation_id = :c ORDER BY seq DESC LIMIT 50")

            def raw() -> None:
                with store.engine.connect() as conn:
                    rows = conn.execute(messages, {"c": big}).all()
                    conn.commit()
                assert len(rows) == 50

            def api() -> None:
                assert len(mind.conversations.messages(big, limit=50)) == 50

            api_times, raw_times = [], []
            for _ in range(args.rounds):
                api_times.append(timed(api))
                raw_times.append(timed(raw))
            api_ms = statistics.median(api_times) * 1000
            raw_ms = statistics.median(raw_times) * 1000
            print(f"messages(limit=50) of {SIZES[-1]:,}: {api_ms:.3f} ms; raw indexed query "
                  f"{raw_ms:.3f} ms; ratio {api_ms / raw_ms:.2f} (target <= 2)")
        finally:
            store.close()


if __name__ == "__main__":
    main()
