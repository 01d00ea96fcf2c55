"""Hostile inputs to every public read and write of ``mind.*`` (issue 12), on both dialects.

Each call either works or raises a :class:`ws.WaggleStoreError` subclass: never a raw driver,
SQLAlchemy or Unicode error. A write that raises leaves the database exactly as it was (every
row of every table compared). Inputs: lone surrogates, NULs and other control characters, a
50 KB string, LIKE wildcards, wrong types, naive datetimes, negative/zero/huge numbers, unknown
ids. ``WAGGLE_RELIABILITY_LONG=1`` adds a 2 MB string and more of each kind.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from datetime import datetime
from typing import Any

import pytest
import sqlalchemy as sa

import waggle_store as ws
from waggle_store.models import Base

LONG = bool(os.environ.get("WAGGLE_RELIABILITY_LONG"))

#: Quick mode (CI): one value of each kind of trouble. WAGGLE_RELIABILITY_LONG=1: all below.
STRINGS: list[Any] = ["\ud800", "a\x00b", "x" * 50_000, "%_\\", "", "\x1b[31m\u202e"]
WRONG_TYPES: list[Any] = [None, b"bytes", ["list"], 1.5]
NUMBERS: list[Any] = [-1, 0, 2**63, True, "5"]
TIMES: list[Any] = [datetime(2026, 1, 1), "not a date", 1700000000]
UNKNOWN_IDS: list[Any] = [999_999_999, 2**70]
if LONG:
    STRINGS += ["a\udfffb", "\x00", "%", "_", "100%_done", "   ", "\u200b", "😀",
                "' OR 1=1 --", "\\", '"unterminated', "NEAR(a b)", "*", "a:b", "(",
                "\uff21\uff22\uff23",
                "\n\t", "y" * 2_000_000, "\ud800" * 1000, "%" * 60_000, "\x00" * 100,
                "é" * 300_000]
    WRONG_TYPES += [7, -1, float("nan"), {"k": "v"}, True, object()]
    NUMBERS += [-(2**63), 2**63 - 1, 10**30, 1.0, float("inf"), None]
    TIMES += [datetime(1, 1, 1), "2026-01-01T00:00:00", "2026-13-45", "", "\x00"]
    UNKNOWN_IDS += [-5, 2**63]

TEXT = STRINGS + WRONG_TYPES
INT = NUMBERS + UNKNOWN_IDS + WRONG_TYPES
WHEN = TIMES + WRONG_TYPES


def _fingerprint(store: ws.Store) -> str:
    """Every row of every table: a write that raised must not change any of them."""
    digest = hashlib.sha256()
    with store.read() as s:
        for table in Base.metadata.sorted_tables:
            key = list(table.primary_key.columns) or list(table.columns)
            for row in s.execute(sa.select(table).order_by(*key)):
                digest.update(repr(tuple(row)).encode("utf-8", "backslashreplace"))
    return digest.hexdigest()


class _World:
    """A mind with one of everything, the ids the calls below refer to."""

    def __init__(self, store: ws.Store) -> None:
        self.store = store
        self.mind = store.mind("hostile")
        self.other = store.mind("other-mind")
        mind = self.mind
        self.gop = mind.sessions.ensure_active().gop_id
        self.frame = mind.frames.create_i(self.gop, "Sarah Chen leads Project Apollo.").id
        self.entity = mind.knowledge.create_entity("person", "Sarah Chen").id
        self.entity2 = mind.knowledge.create_entity("project", "Apollo").id
        self.relation = mind.knowledge.create_relation(self.entity, self.entity2, "leads").id
        self.foreign_frame = self.other.cognify("Someone else's memory.").frame_id
        mind.kv.set("k", {"v": 1})
        mind.awareness.add("task", "Ship it")


Call = tuple[str, bool, Callable[[Any], Any], list[Any]]  # name, is_write, fn(value), values


def _calls(w: _World) -> list[Call]:
    m, f, k, g = w.mind, w.mind.frames, w.mind.knowledge, w.gop
    reads: list[tuple[str, Callable[[Any], Any], list[Any]]] = [
        ("search(query)", lambda v: m.search(v), TEXT),
        ("search(limit)", lambda v: m.search("Apollo", limit=v), INT),
        ("search(gop_id)", lambda v: m.search("Apollo", gop_id=v), TEXT),
        ("search(profile)", lambda v: m.search("Apollo", profile=v), TEXT),
        ("search(since)", lambda v: m.search("Apollo", since=v), WHEN),
        ("search(until)", lambda v: m.search("Apollo", until=v), WHEN),
        ("search(lanes)", lambda v: m.search("Apollo", lanes=v), TEXT),
        ("search(context)", lambda v: m.search("Apollo", context=v), INT),
        ("recall(query)", lambda v: m.recall(v), TEXT),
        ("frames.get", lambda v: f.get(v), INT),
        ("frames.latest_i", lambda v: f.latest_i(v), TEXT),
        ("frames.gop", lambda v: f.gop(v), TEXT),
        ("frames.reconstruct_state", lambda v: f.reconstruct_state(v), TEXT),
        ("frames.recent(limit)", lambda v: f.recent(v), INT),
        ("frames.recent(since)", lambda v: f.recent(since=v), WHEN),
        ("frames.references", lambda v: f.references(v), INT),
        ("awareness.active", lambda v: m.awareness.active(v), TEXT),
        ("awareness.get", lambda v: m.awareness.get(v), INT),
        ("knowledge.get_entity", lambda v: k.get_entity(v), INT),
        ("knowledge.search_entities", lambda v: k.search_entities(v), TEXT),
        ("knowledge.search_entities(limit)", lambda v: k.search_entities("a", limit=v), INT),
        ("knowledge.entities_by_type", lambda v: k.entities_by_type(v), TEXT),
        ("knowledge.entities_by_type(limit)", lambda v: k.entities_by_type("person", v), INT),
        ("knowledge.entities_valid_at", lambda v: k.entities_valid_at(v), WHEN),
        ("knowledge.get_relation", lambda v: k.get_relation(v), INT),
        ("knowledge.relations_from", lambda v: k.relations_from(v), INT),
        ("knowledge.relations_from(type)", lambda v: k.relations_from(w.entity, v), TEXT),
        ("knowledge.relations_to", lambda v: k.relations_to(v), INT),
        ("knowledge.relations_to(type)", lambda v: k.relations_to(w.entity2, v), TEXT),
        ("knowledge.relations_valid_at", lambda v: k.relations_valid_at(v), WHEN),
        ("knowledge.traverse", lambda v: k.traverse(v), INT),
        ("knowledge.traverse(type)", lambda v: k.traverse(w.entity, v), TEXT),
        ("knowledge.traverse(depth)", lambda v: k.traverse(w.entity, None, v), INT),
        ("knowledge.bfs_distances", lambda v: k.bfs_distances(v), INT),
        ("knowledge.bfs_distances(depth)", lambda v: k.bfs_distances(w.entity, v), INT),
        ("kv.get", lambda v: m.kv.get(v), TEXT),
        ("sessions.get", lambda v: m.sessions.get(v), TEXT),
        ("sessions.list(project_id)", lambda v: m.sessions.list(project_id=v), TEXT),
        ("sessions.list(status)", lambda v: m.sessions.list(status=v), TEXT),
    ]
    writes: list[tuple[str, Callable[[Any], Any], list[Any]]] = [
        ("cognify(content)", lambda v: m.cognify(v), TEXT),
        ("cognify(importance)", lambda v: m.cognify("Valid memory one.", importance=v), TEXT),
        ("cognify(gop_id)", lambda v: m.cognify("Valid memory two.", gop_id=v), TEXT),
        ("cognify(created_at)", lambda v: m.cognify("Valid memory three.", created_at=v), WHEN),
        ("cognify(source)", lambda v: m.cognify("Valid memory four.", source=v), TEXT),
        ("cognify_batch(items)", lambda v: m.cognify_batch(v), TEXT),
        ("cognify_batch([item])", lambda v: m.cognify_batch(["Valid batch memory.", v]), TEXT),
        ("frames.create_i(content)", lambda v: f.create_i(g, v), TEXT),
        ("frames.create_i(gop_id)", lambda v: f.create_i(v, "Valid keyframe."), TEXT),
        ("frames.create_i(importance)", lambda v: f.create_i(g, "Keyframe i.", importance=v), TEXT),
        ("frames.create_i(created_at)", lambda v: f.create_i(g, "Keyframe c.", created_at=v), WHEN),
        ("frames.create_p(content)", lambda v: f.create_p(g, v, w.frame), TEXT),
        ("frames.create_p(base)", lambda v: f.create_p(g, "A delta.", v), INT),
        ("frames.create_p(foreign base)", lambda v: f.create_p(g, v, w.foreign_frame), TEXT),
        ("frames.create_b(description)", lambda v: f.create_b(g, v, w.frame, [w.frame]), TEXT),
        ("frames.create_b(refs)", lambda v: f.create_b(g, "A link.", w.frame, [v]), INT),
        ("frames.update(id)", lambda v: f.update(v, "New text."), INT),
        ("frames.update(content)", lambda v: f.update(w.frame, v), TEXT),
        ("frames.update(importance)", lambda v: f.update(w.frame, "Txt.", importance=v), TEXT),
        ("frames.delete", lambda v: f.delete(v), INT),
        ("frames.touch", lambda v: f.touch(v), INT),
        ("frames.touch_many", lambda v: f.touch_many([v]), INT),
        ("frames.touch_many(seq)", lambda v: f.touch_many(v), TEXT),
        ("frames.compact", lambda v: f.compact(max_temp_age_days=v), INT),
        ("awareness.add(category)", lambda v: m.awareness.add(v, "Do it."), TEXT),
        ("awareness.add(content)", lambda v: m.awareness.add("task", v), TEXT),
        ("awareness.add(priority)", lambda v: m.awareness.add("task", "Prio.", priority=v), INT),
        ("awareness.remove", lambda v: m.awareness.remove(v), INT),
        ("awareness.clear", lambda v: m.awareness.clear(v), TEXT),
        ("identity.set(name)", lambda v: m.identity.set(name=v), TEXT),
        ("identity.set(role)", lambda v: m.identity.set(name="Agent", role=v), TEXT),
        ("identity.update(name)", lambda v: m.identity.update(name=v), TEXT),
        ("knowledge.create_entity(type)", lambda v: k.create_entity(v, "Name"), TEXT),
        ("knowledge.create_entity(name)", lambda v: k.create_entity("person", v), TEXT),
        ("knowledge.create_entity(props)", lambda v: k.create_entity("person", "P", v), TEXT),
        ("knowledge.create_entity(props value)",
         lambda v: k.create_entity("person", "P", {"note": v}), TEXT),
        ("knowledge.create_entity(valid_from)",
         lambda v: k.create_entity("person", "Q", valid_from=v), WHEN),
        ("knowledge.update_entity(id)", lambda v: k.update_entity(v, name="N"), INT),
        ("knowledge.update_entity(name)", lambda v: k.update_entity(w.entity, name=v), TEXT),
        ("knowledge.retire_entity", lambda v: k.retire_entity(v), INT),
        ("knowledge.create_relation(source)", lambda v: k.create_relation(v, w.entity2, "r"), INT),
        ("knowledge.create_relation(type)",
         lambda v: k.create_relation(w.entity, w.entity2, v), TEXT),
        ("knowledge.create_relation(confidence)",
         lambda v: k.create_relation(w.entity, w.entity2, "r", confidence=v), INT),
        ("knowledge.retire_relation", lambda v: k.retire_relation(v), INT),
        ("kv.set(key)", lambda v: m.kv.set(v, 1), TEXT),
        ("kv.set(value)", lambda v: m.kv.set("hostile", v), TEXT),
        ("kv.delete", lambda v: m.kv.delete(v), TEXT),
        ("sessions.ensure_active", lambda v: m.sessions.ensure_active(v), TEXT),
        ("sessions.create", lambda v: m.sessions.create(v), TEXT),
        ("sessions.ensure", lambda v: m.sessions.ensure(v), TEXT),
        ("sessions.close", lambda v: m.sessions.close(v), TEXT),
        ("sessions.close(summary)", lambda v: m.sessions.close(g, summary=v), TEXT),
        ("sessions.archive", lambda v: m.sessions.archive(v), TEXT),
    ]
    return [(n, False, fn, vs) for n, fn, vs in reads] + [(n, True, fn, vs) for n, fn, vs in writes]


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) < 40 else text[:37] + "..."


@pytest.mark.parametrize("kind", ["reads", "writes"])
def test_every_public_call_works_or_raises_a_waggle_store_error(
    store: ws.Store, kind: str
) -> None:
    world = _World(store)
    failures: list[str] = []
    state = _fingerprint(store)
    for name, is_write, fn, values in _calls(world):
        if is_write != (kind == "writes"):
            continue
        for value in values:
            try:
                fn(value)
            except ws.WaggleStoreError as exc:
                if is_write and _fingerprint(store) != state:
                    failures.append(f"{name}({_short(value)}) raised {exc!r} but changed rows")
                continue
            except Exception as exc:  # noqa: BLE001 - the finding this test exists for
                failures.append(f"{name}({_short(value)}): raw {type(exc).__name__}: "
                                f"{str(exc)[:120]}")
            if is_write:
                state = _fingerprint(store)  # the call worked: its rows are the new baseline
    assert failures == [], "\n".join(failures)
