"""The repositories' database idioms (get_or_create, insert_or_none, rowcount), on both dialects.

The lost race is made deterministic without threads: ``find`` answers "nothing" the first time,
exactly what a transaction sees when it looked just before a concurrent writer committed the
row, and the INSERT then meets the real unique index with the winner's row behind it.
"""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc
from sqlalchemy.orm import Session

import waggle_store as ws
from waggle_store.models import KVRow, MindRow
from waggle_store.repositories.common import get_or_create, insert_or_none, rowcount


def _by_name(session: Session, name: str) -> MindRow | None:
    return session.scalar(sa.select(MindRow).where(MindRow.name == name))


def _names(store: ws.Store) -> list[str]:
    return [m.name for m in store.list_minds()]


def test_get_or_create_finds_then_creates(store: ws.Store) -> None:
    made: list[str] = []

    def make(name: str) -> MindRow:
        made.append(name)
        return MindRow(name=name, kind="workspace")

    with store.write() as session:
        row, created = get_or_create(session, lambda: _by_name(session, "fresh"),
                                     lambda: make("fresh"))
        assert created
        assert row.id is not None
        again, created = get_or_create(session, lambda: _by_name(session, "fresh"),
                                       lambda: make("fresh"))
        assert (again.id, created) == (row.id, False)
    assert made == ["fresh"]  # make() only runs on a miss
    assert _names(store) == ["fresh"]


def test_get_or_create_lost_race_returns_the_winners_row(store: ws.Store) -> None:
    with store.write() as session:
        winner = MindRow(name="contested", kind="personal")
        session.add(winner)
    looks: list[MindRow | None] = []

    def find_after_the_winner_committed(session: Session) -> MindRow | None:
        row = None if not looks else _by_name(session, "contested")  # the first look is stale
        looks.append(row)
        return row

    with store.write() as session:
        row, created = get_or_create(session, lambda: find_after_the_winner_committed(session),
                                     lambda: MindRow(name="contested", kind="workspace"))
        assert (row.id, row.kind, created) == (winner.id, "personal", False)
        assert len(looks) == 2
        session.add(MindRow(name="after", kind="workspace"))  # the transaction goes on
    assert _names(store) == ["after", "contested"]


def test_get_or_create_reraises_what_is_not_a_lost_race(store: ws.Store) -> None:
    """A refused INSERT after which nothing is found (here a CHECK) is a bug, not a race."""
    with store.write() as session:
        session.add(MindRow(name="kept", kind="workspace"))
        session.flush()
        with pytest.raises(sa_exc.IntegrityError):
            get_or_create(session, lambda: _by_name(session, "bad kind"),
                          lambda: MindRow(name="bad kind", kind="no such kind"))
        session.add(MindRow(name="after", kind="workspace"))  # only the savepoint rolled back
    assert _names(store) == ["after", "kept"]


def test_insert_or_none(store: ws.Store) -> None:
    with store.write() as session:
        row = insert_or_none(session, MindRow(name="taken", kind="personal"))
        assert row is not None
        assert row.id is not None
        assert insert_or_none(session, MindRow(name="taken", kind="workspace")) is None
        assert insert_or_none(session, MindRow(name="free", kind="workspace")) is not None
    assert [(m.name, m.kind) for m in store.list_minds()] == [("free", "workspace"),
                                                                ("taken", "personal")]


def test_rowcount(store: ws.Store, mind: ws.Mind) -> None:
    for key in ("a", "b", "c"):
        mind.kv.set(key, key)
    with store.write() as session:
        in_mind = KVRow.mind_id == mind.id
        assert rowcount(session.execute(
            sa.update(KVRow).where(in_mind, KVRow.key != "c").values(value="x")
            .execution_options(synchronize_session=False))) == 2
        assert rowcount(session.execute(sa.delete(KVRow).where(in_mind, KVRow.key == "zz"))) == 0
        assert rowcount(session.execute(sa.delete(KVRow).where(in_mind))) == 3
        with pytest.raises(TypeError, match="UPDATE or DELETE"):
            rowcount(session.execute(sa.select(KVRow)))
