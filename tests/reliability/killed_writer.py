"""The writer that ``test_kill9.py`` kills: writes forever, acknowledging each returned write.

``python -m tests.reliability.killed_writer URL SCHEMA ROUND`` (SCHEMA ``-`` for none) writes to
the mind "kill9", alternating ``cognify`` and ``frames.create_i``, and after each call returns
prints one JSON line ``{"id": frame id, "content": text}`` and flushes it: a line on stdout
means the store said the write is done, so it must survive whatever happens next.
"""

from __future__ import annotations

import json
import sys

import waggle_store as ws


def main(url: str, schema: str | None, round_no: int) -> None:
    with ws.open_store(url, schema=schema, embedder="hashing", upgrade=False) as store:
        mind = store.mind("kill9")
        gop = mind.sessions.ensure(f"kill9-round-{round_no}").gop_id
        i = 0
        while True:
            content = f"Round {round_no} write {i}: Agent{i % 7} updated Ledger{i}."
            if i % 2:
                frame_id = mind.frames.create_i(gop, content).id
            else:
                frame_id = mind.cognify(content, gop_id=gop).frame_id
            sys.stdout.write(json.dumps({"id": frame_id, "content": content}) + "\n")
            sys.stdout.flush()
            i += 1


if __name__ == "__main__":
    main(sys.argv[1], None if sys.argv[2] == "-" else sys.argv[2], int(sys.argv[3]))
