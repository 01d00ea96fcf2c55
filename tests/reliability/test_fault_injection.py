"""Fault injection at every SQL statement of one cognify / cognify_batch, on both dialects.

For every N, the Nth statement the store sends fails as a driver error would. Whatever N, the
call either raises and leaves no row of its own behind, or returns and everything it reports is
stored ("an exception means nothing of that call was stored; a return means it was").
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event

import waggle_store as ws

_TABLES = ("waggle_memory_frames", "waggle_knowledge_entities", "waggle_knowledge_relations",
           "waggle_entity_mentions", "waggle_frame_embeddings", "waggle_sessions")
_MAX_STATEMENTS = 300


def _counts(store: ws.Store) -> dict[str, int]:
    with store.read() as s:
        return {t: int(s.execute(sa.text(f"SELECT count(*) FROM {t}")).scalar_one())
                for t in _TABLES}


class _Fault:
    def __init__(self, at: int) -> None:
        self.at = at
        self.seen = 0
        self.fired = False

    def __call__(self, conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        self.seen += 1
        if self.seen == self.at:
            self.fired = True
            raise sa.exc.OperationalError(statement, {}, Exception(f"injected fault #{self.at}"))


@contextmanager
def _fault_at(store: ws.Store, n: int) -> Iterator[_Fault]:
    fault = _Fault(n)
    event.listen(store.engine, "before_cursor_execute", fault)
    try:
        yield fault
    finally:
        event.remove(store.engine, "before_cursor_execute", fault)


def _text(n: int) -> str:
    return f"Person{n} Walker joined Company{n} Labs in Berlin; Person{n} Walker leads Project{n}."


def test_cognify_fault_at_every_statement(store: ws.Store) -> None:
    mind = store.mind("faults")
    mind.cognify("Alice Jones works at Acme Corp in Paris.")
    raised = returned = 0
    for n in range(1, _MAX_STATEMENTS):
        before = _counts(store)
        with _fault_at(store, n) as fault:
            try:
                result = mind.cognify(_text(n))
            except ws.WaggleStoreError:
                raised += 1
                assert _counts(store) == before, f"fault #{n}: a raising cognify left rows"
                continue
        returned += 1
        frame = mind.frames.get(result.frame_id)
        assert frame is not None, f"fault #{n}"
        assert frame.content == _text(n), f"fault #{n}"
        assert _counts(store)["waggle_memory_frames"] == before["waggle_memory_frames"] + 1
        # A fault that fired without failing the call hit the post-commit linking: its search
        # degraded (LIKE fallback, a lane off) or the link failed and says so.
        if not fault.fired:
            break  # n is past the last statement: every statement has had its fault
    else:
        raise AssertionError("cognify never completed without a fault")
    assert raised >= 5
    assert returned >= 1


def test_cognify_batch_fault_at_every_statement(store: ws.Store) -> None:
    mind = store.mind("batch-faults")
    mind.cognify("Alice Jones works at Acme Corp in Paris.")
    for n in range(1, _MAX_STATEMENTS):
        items = [_text(1000 * n + i) for i in range(4)]
        before = _counts(store)
        with _fault_at(store, n) as fault:
            try:
                result = mind.cognify_batch(items)
            except ws.WaggleStoreError:
                assert _counts(store) == before, f"fault #{n}: a raising batch left rows"
                continue
        stored = [fid for fid in result.frame_ids if fid is not None]
        failed = {index for index, _ in result.failures}
        assert set(range(4)) == failed | {i for i, f in enumerate(result.frame_ids) if f}
        frames = "waggle_memory_frames"
        assert _counts(store)[frames] == before[frames] + len(stored)
        for index, frame_id in enumerate(result.frame_ids):
            if frame_id is not None:
                frame = mind.frames.get(frame_id)
                assert frame is not None
                assert frame.content == items[index]
        if not fault.fired:
            assert len(stored) == 4
            return
    raise AssertionError("cognify_batch never completed without a fault")
