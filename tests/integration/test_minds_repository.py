"""MindRepository on both dialects: get-or-create (also under a race), validation, list, delete."""

from __future__ import annotations

import threading
from collections import Counter

import pytest

import waggle_store as ws
from waggle_store.repositories.minds import MindRepository

WRITERS = 8
ROUNDS = 5


def test_get_or_create_then_get(store: ws.Store) -> None:
    with store.write() as session:
        minds = MindRepository(session)
        assert minds.get("alpha") is None
        row, created = minds.get_or_create("alpha", "personal")
        assert created
        assert (row.name, row.kind) == ("alpha", "personal")
        again, created = minds.get_or_create("alpha", "workspace")
        assert (again.id, again.kind, created) == (row.id, "personal", False)  # the kind stays
        default, _ = minds.get_or_create("beta")
        assert default.kind == "workspace"
    with store.read() as session:
        found = MindRepository(session).get("alpha")
        assert found is not None
        assert found.id == row.id


@pytest.mark.parametrize("name", ["", "   ", "x" * 201, "a\x00b", 5, None])
def test_bad_names_are_refused_before_any_sql(store: ws.Store, name: object) -> None:
    with pytest.raises(ws.InvalidInputError, match="mind name"), store.write() as session:
        MindRepository(session).get_or_create(name)  # type: ignore[arg-type]
    assert store.list_minds() == []


def test_bad_kinds_are_refused(store: ws.Store) -> None:
    for kind in ("team", "", None, "Workspace"):
        with pytest.raises(ws.InvalidInputError, match="mind kind"), store.write() as session:
            MindRepository(session).get_or_create("gamma", kind)  # type: ignore[arg-type]
    with store.write() as session:
        _, created = MindRepository(session).get_or_create("x" * 200)  # the longest name
        assert created
    assert [m.name for m in store.list_minds()] == ["x" * 200]


def test_list_is_by_name(store: ws.Store) -> None:
    with store.write() as session:
        minds = MindRepository(session)
        for name, kind in (("zeta", "workspace"), ("alpha", "personal"), ("mid", "workspace")):
            minds.get_or_create(name, kind)
    with store.read() as session:
        listed = MindRepository(session).list()
    assert [(m.name, m.kind) for m in listed] == [("alpha", "personal"), ("mid", "workspace"),
                                                  ("zeta", "workspace")]
    assert all(m.created_at.tzinfo is not None for m in listed)


def test_delete_removes_that_mind_and_its_rows_only(store: ws.Store) -> None:
    doomed, kept = store.mind("doomed"), store.mind("kept")
    for mind in (doomed, kept):
        mind.kv.set("k", mind.name)
        mind.frames.create_i(mind.sessions.ensure_active().gop_id, f"a memory of {mind.name}")
        mind.knowledge.create_entity("person", f"Someone in {mind.name}")
    with store.write() as session:
        MindRepository(session).delete("doomed")
    with store.read() as session:
        assert MindRepository(session).get("doomed") is None
    assert [m.name for m in store.list_minds()] == ["kept"]
    assert kept.kv.get("k") == "kept"
    assert kept.frames.stats().total == 1
    assert kept.knowledge.entity_count() == 1
    again = store.mind("doomed")  # a new, empty mind of the same name
    assert again.id != doomed.id
    assert again.kv.get("k") is None
    assert again.frames.stats().total == 0
    assert again.knowledge.entity_count() == 0


def test_delete_a_missing_mind(store: ws.Store) -> None:
    with pytest.raises(ws.NotFoundError, match="no mind named 'ghost'"), store.write() as session:
        MindRepository(session).delete("ghost")


def test_concurrent_get_or_create_makes_one_mind(store: ws.Store) -> None:
    """WRITERS threads, each with its own connection, open the same new mind at the same moment.

    Every writer must come back with the same row and exactly one may have created it. On
    Postgres the writers overlap and the losers go through the unique index + savepoint path;
    on SQLite BEGIN IMMEDIATE serialises them, so the later ones find the row.
    """
    barrier = threading.Barrier(WRITERS)
    outcomes: list[tuple[str, int, bool]] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def writer() -> None:
        try:
            for n in range(ROUNDS):
                barrier.wait(timeout=60)
                with store.write() as session:
                    row, created = MindRepository(session).get_or_create(f"shared-{n}")
                    result = (row.name, row.id, created)
                with lock:
                    outcomes.append(result)
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread below
            barrier.abort()
            errors.append(exc)

    threads = [threading.Thread(target=writer) for _ in range(WRITERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert errors == []
    assert len(outcomes) == WRITERS * ROUNDS
    for n in range(ROUNDS):
        name = f"shared-{n}"
        mine = [(row_id, created) for got, row_id, created in outcomes if got == name]
        assert len(mine) == WRITERS
        assert len({row_id for row_id, _ in mine}) == 1, f"{name}: several rows"
        assert Counter(created for _, created in mine)[True] == 1, f"{name}: created != once"
    assert [m.name for m in store.list_minds()] == [f"shared-{n}" for n in range(ROUNDS)]


def test_getting_an_existing_mind_does_not_wait_for_a_writer(store: ws.Store) -> None:
    """``store.mind(name)`` of a mind that exists reads; it does not queue behind another
    writer's open transaction (SQLite's one write lock; every MCP tool call and CLI command
    starts with it). The writer holds its transaction until the lookup has returned, so a
    lookup that waited for the write lock would never return before the writer gave up."""
    store.mind("existing").kv.set("k", 1)
    holding = threading.Event()
    looked_up = threading.Event()
    errors: list[BaseException] = []

    def writer() -> None:
        try:
            with store.write() as session:
                MindRepository(session).get_or_create("written-meanwhile")
                session.flush()
                holding.set()
                assert looked_up.wait(60), "the lookup did not return while the writer held"
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread below
            holding.set()
            errors.append(exc)

    thread = threading.Thread(target=writer)
    thread.start()
    assert holding.wait(60)
    try:
        mind = store.mind("existing")
        looked_up.set()
    finally:
        looked_up.set()
        thread.join(120)
    assert errors == []
    assert mind.kv.get("k") == 1
    assert {m.name for m in store.list_minds()} == {"existing", "written-meanwhile"}
