"""Isolation between minds, bad input, and atomicity, on sqlite and postgres."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

import pytest

import waggle_store as ws
from waggle_store.repositories.common import MAX_CONTENT_BYTES
from waggle_store.repositories.frames import FrameRepository


def _fill(mind: ws.Mind) -> dict[str, int | str]:
    mind.identity.set(name="Hive", role="same role")
    item = mind.awareness.add("task", "same task", priority=5)
    auto = mind.sessions.ensure_active("shared-project")
    named = mind.sessions.ensure("shared-gop", project_id="shared-project")
    i = mind.frames.create_i(named.gop_id, "the same memory")
    p = mind.frames.create_p(named.gop_id, "the same delta", i.id)
    b = mind.frames.create_b(named.gop_id, "the same link", i.id, [p.id])
    mind.kv.set("same-key", {"owner": mind.name})
    return {"item": item.id, "auto": auto.gop_id, "i": i.id, "p": p.id, "b": b.id}


def test_two_minds_with_the_same_content_see_nothing_of_each_other(store: ws.Store) -> None:
    a, b = store.mind("alpha"), store.mind("beta")
    ids_a, ids_b = _fill(a), _fill(b)
    frames_a = {ids_a["i"], ids_a["p"], ids_a["b"]}
    frames_b = {ids_b["i"], ids_b["p"], ids_b["b"]}
    assert not frames_a & frames_b  # same content, yet no dedup across minds

    for mind, mine, theirs, their_ids in (
        (a, frames_a, frames_b, ids_b),
        (b, frames_b, frames_a, ids_a),
    ):
        assert {f.id for f in mind.frames.gop("shared-gop")} == mine
        assert {f.id for f in mind.frames.recent(100)} == mine
        assert mind.frames.stats().total == 3
        state = mind.frames.reconstruct_state("shared-gop")
        assert state.iframe.id in mine
        assert {p.id for p in state.pframes} <= mine
        assert mind.frames.latest_i("shared-gop").id in mine
        assert mind.frames.references(next(iter(mine & {ids_a["b"], ids_b["b"]}))) != []
        for frame_id in theirs:
            assert mind.frames.get(frame_id) is None
            assert mind.frames.references(frame_id) == []
            with pytest.raises(ws.NotFoundError):
                mind.frames.touch(frame_id)
            with pytest.raises(ws.NotFoundError):
                mind.frames.delete(frame_id)
            with pytest.raises(ws.NotFoundError):
                mind.frames.update(frame_id, "hijack")
        assert mind.sessions.get(their_ids["auto"]) is None
        assert {s.gop_id for s in mind.sessions.list()} == {
            mind.sessions.ensure_active("shared-project").gop_id,
            "shared-gop",
        }
        assert [i.content for i in mind.awareness.active()] == ["same task"]
        assert mind.awareness.get(their_ids["item"]) is None
        with pytest.raises(ws.NotFoundError):
            mind.awareness.remove(their_ids["item"])
        assert mind.kv.items() == [("same-key", {"owner": mind.name})]
        # Frames of the other mind cannot be used as a base or a reference.
        with pytest.raises(ws.InvalidInputError):
            mind.frames.create_p("shared-gop", "x", their_ids["i"])
        with pytest.raises(ws.InvalidInputError):
            mind.frames.create_b("shared-gop", "x", their_ids["i"], [their_ids["p"]])

    assert a.awareness.clear() == 1
    assert b.awareness.active() != []
    a.kv.delete("same-key")
    assert b.kv.get("same-key") == {"owner": "beta"}
    a.frames.compact(max_temp_age_days=0, max_deprecated_age_days=0)
    assert b.frames.stats().total == 3


Bad = Callable[[ws.Mind, str, int, int], object]
BAD_INPUTS: list[tuple[str, type[ws.WaggleStoreError], Bad]] = [
    (
        "importance",
        ws.InvalidInputError,
        lambda m, g, i, p: m.frames.create_i(g, "x", importance="urgent"),
    ),
    (
        "source",
        ws.InvalidInputError,
        lambda m, g, i, p: m.frames.create_i(g, "x", source="team_sync"),
    ),
    (
        "p source",
        ws.InvalidInputError,
        lambda m, g, i, p: m.frames.create_p(g, "x", i, source="personal"),
    ),
    (
        "p importance",
        ws.InvalidInputError,
        lambda m, g, i, p: m.frames.create_p(g, "x", i, importance=""),
    ),
    ("p base is a P", ws.InvalidInputError, lambda m, g, i, p: m.frames.create_p(g, "x", p)),
    (
        "p base elsewhere",
        ws.InvalidInputError,
        lambda m, g, i, p: m.frames.create_p("other", "x", i),
    ),
    ("p base missing", ws.InvalidInputError, lambda m, g, i, p: m.frames.create_p(g, "x", 10**9)),
    ("p base not int", ws.InvalidInputError, lambda m, g, i, p: m.frames.create_p(g, "x", str(i))),
    ("missing session i", ws.NotFoundError, lambda m, g, i, p: m.frames.create_i("nope", "x")),
    ("missing session p", ws.NotFoundError, lambda m, g, i, p: m.frames.create_p("nope", "x", i)),
    (
        "missing session b",
        ws.NotFoundError,
        lambda m, g, i, p: m.frames.create_b("nope", "x", i, [p]),
    ),
    (
        "b missing ref",
        ws.InvalidInputError,
        lambda m, g, i, p: m.frames.create_b(g, "x", i, [p, 10**9]),
    ),
    ("b no refs", ws.InvalidInputError, lambda m, g, i, p: m.frames.create_b(g, "x", i, [])),
    ("b refs str", ws.InvalidInputError, lambda m, g, i, p: m.frames.create_b(g, "x", i, "12")),
    ("b empty", ws.InvalidInputError, lambda m, g, i, p: m.frames.create_b(g, " ", i, [p])),
    ("empty", ws.InvalidInputError, lambda m, g, i, p: m.frames.create_i(g, "")),
    ("whitespace", ws.InvalidInputError, lambda m, g, i, p: m.frames.create_i(g, " \n\t\u3000")),
    ("prefix only", ws.InvalidInputError, lambda m, g, i, p: m.frames.create_i(g, "[hm src:x] ")),
    ("p empty", ws.InvalidInputError, lambda m, g, i, p: m.frames.create_p(g, "", i)),
    (
        "too big",
        ws.InvalidInputError,
        lambda m, g, i, p: m.frames.create_i(g, "x" * (MAX_CONTENT_BYTES + 1)),
    ),
    (
        "too big utf8",
        ws.InvalidInputError,
        lambda m, g, i, p: m.frames.create_i(g, "é" * (MAX_CONTENT_BYTES // 2 + 1)),
    ),
    ("nul", ws.InvalidInputError, lambda m, g, i, p: m.frames.create_i(g, "a\x00b")),
    ("p nul", ws.InvalidInputError, lambda m, g, i, p: m.frames.create_p(g, "a\x00b", i)),
    ("surrogate", ws.InvalidInputError, lambda m, g, i, p: m.frames.create_i(g, "a\ud800")),
    ("not text", ws.InvalidInputError, lambda m, g, i, p: m.frames.create_i(g, b"bytes")),
    (
        "naive created_at",
        ws.InvalidInputError,
        lambda m, g, i, p: m.frames.create_i(g, "x", created_at=datetime(2025, 1, 1)),
    ),
    (
        "bad iso",
        ws.InvalidInputError,
        lambda m, g, i, p: m.frames.create_i(g, "x", created_at="2025-01-01"),
    ),
    ("update empty", ws.InvalidInputError, lambda m, g, i, p: m.frames.update(i, "")),
    (
        "update importance",
        ws.InvalidInputError,
        lambda m, g, i, p: m.frames.update(i, "y", importance="x"),
    ),
    ("update missing", ws.NotFoundError, lambda m, g, i, p: m.frames.update(10**9, "y")),
    ("delete missing", ws.NotFoundError, lambda m, g, i, p: m.frames.delete(10**9)),
    ("gop_id nul", ws.InvalidInputError, lambda m, g, i, p: m.frames.create_i("a\x00", "x")),
    ("frame id bool", ws.InvalidInputError, lambda m, g, i, p: m.frames.get(True)),
]


def test_bad_input_raises_and_writes_nothing(mind: ws.Mind) -> None:
    """Every case on one store (a migrated store per case would make this the slowest test)."""
    gop = mind.sessions.ensure("gop").gop_id
    mind.sessions.ensure("other")
    i = mind.frames.create_i(gop, "keyframe")
    p = mind.frames.create_p(gop, "delta", i.id)
    before = (mind.frames.stats(), mind.frames.gop(gop), mind.sessions.list())
    failures = []
    for label, error, call in BAD_INPUTS:
        try:
            call(mind, gop, i.id, p.id)
        except error:
            pass  # the expected class: now check that nothing was written
        except Exception as exc:  # noqa: BLE001 - reported below with the case's label
            failures.append(f"{label}: raised {type(exc).__name__}: {exc}")
            continue
        else:
            failures.append(f"{label}: did not raise {error.__name__}")
            continue
        after = (mind.frames.stats(), mind.frames.gop(gop), mind.sessions.list())
        if after != before:
            failures.append(f"{label}: the store changed")
    assert failures == []


def test_a_failure_mid_transaction_leaves_nothing(store: ws.Store, mind: ws.Mind) -> None:
    gop = mind.sessions.ensure("gop").gop_id
    # The host app fails inside the transaction, after the write: that is the case under test.
    with pytest.raises(RuntimeError), store.write() as s:  # noqa: PT012
        repo = FrameRepository(s, mind.id)
        repo.create_i(gop, "written, then rolled back")
        raise RuntimeError("host app failed after the write")
    assert mind.frames.stats().total == 0
    assert mind.frames.create_i(gop, "written, then rolled back").t == 0
