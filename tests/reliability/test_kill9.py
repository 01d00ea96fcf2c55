"""kill -9 of a writer mid-stream loses no acknowledged write (issue 12), on both dialects.

A subprocess (:mod:`tests.reliability.killed_writer`) writes in a loop and prints each frame id
after its call returned; it is SIGKILLed after a number of acknowledgements, while it is in the
middle of its next call. Every acknowledged frame must then be there with its content, and at
most the one unacknowledged call in flight per round may have been stored besides.
Quick by default (3 rounds); ``WAGGLE_RELIABILITY_LONG=1`` runs 25 rounds with more writes.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import Target

LONG = bool(os.environ.get("WAGGLE_RELIABILITY_LONG"))
ROUNDS = 25 if LONG else 3
ACKS = (5, 40) if LONG else (3, 12)  # acknowledgements before the kill: varied per round
REPO = Path(__file__).resolve().parents[2]


def _run_and_kill(target: Target, round_no: int, acks: int) -> dict[int, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.reliability.killed_writer", target.url,
         target.schema or "-", str(round_no)],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    acked: dict[int, str] = {}
    try:
        assert proc.stdout is not None
        while len(acked) < acks:
            line = proc.stdout.readline()
            if not line:  # the writer died on its own: say why
                assert proc.stderr is not None
                pytest.fail(f"the writer exited early: {proc.wait()} {proc.stderr.read()}")
            ack = json.loads(line)
            acked[int(ack["id"])] = ack["content"]
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    assert proc.returncode == -signal.SIGKILL
    return acked


def test_acknowledged_writes_survive_kill_9(target: Target) -> None:
    with target.open(embedder="hashing") as store:
        store.mind("kill9")
    acked: dict[int, str] = {}
    for round_no in range(ROUNDS):
        low, high = ACKS
        acks = low + (round_no * 7) % (high - low + 1)
        acked.update(_run_and_kill(target, round_no, acks))
        with target.open(embedder="hashing") as store:
            mind = store.mind("kill9")
            for frame_id, content in acked.items():
                frame = mind.frames.get(frame_id)
                assert frame is not None, f"acknowledged frame {frame_id} is lost"
                assert frame.content == content
            stored = mind.frames.stats().total
            # Besides the acknowledged writes, at most the one call in flight at each kill.
            assert len(acked) <= stored <= len(acked) + round_no + 1
            # The store is usable after the kill: a new write and a search work.
            written = mind.cognify(f"After kill {round_no}: Auditor checks Ledger{round_no}.")
            acked[written.frame_id] = f"After kill {round_no}: Auditor checks Ledger{round_no}."
            assert written.frame_id in {r.frame.id for r in mind.search(
                f"Auditor Ledger{round_no}", limit=50)}
