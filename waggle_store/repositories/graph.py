"""The graph walk over one mind's active edges, and the reads built on it.

One walk serves every caller: :meth:`GraphRepository.traverse` and
:meth:`GraphRepository.distances` (the knowledge API) and :class:`FrameDistances` (the hops a
search's contextual score reads). It is one ``WITH RECURSIVE`` statement, the same on both
dialects but for its recursive step (:mod:`waggle_store.dialects.graph_walk`), built with
SQLAlchemy Core:

* Its working rows are (node, depth) pairs combined with ``UNION``, so a cycle cannot make it run
  away: a node is produced at most once per depth, and its smallest depth is its BFS hop count.
* Each step seeks the current node's edges by index and looks each node reached up by primary
  key (an active entity of the mind), so a step never scans the mind's edges or entities.
* Two bounds hold together: ``max_depth`` (at most :data:`MAX_DEPTH`) and ``max_nodes`` (default
  :data:`MAX_NODES`), the number of (node, depth) visits read before the walk stops. Both dialects
  produce the visits level by level and stop the recursion once the ``LIMIT`` is read, so a dense
  graph costs at most ``max_nodes`` × its degree in index lookups whatever the depth, and a
  truncated walk returns the nearest entities with their exact hop counts.

Only active relations are followed and only active entities are reached; everything is confined
to one mind.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session
from sqlalchemy.sql.type_api import TypeEngine

from waggle_store.dialects.graph_walk import recursive_walk
from waggle_store.errors import InvalidInputError
from waggle_store.models.knowledge import EntityMentionRow, EntityRow, RelationRow

#: Deepest walk accepted.
MAX_DEPTH = 20
#: Default cap on a walk's (node, depth) visits; a node reached at several depths counts at each.
MAX_NODES = 1000
#: Largest ``max_nodes`` accepted.
MAX_NODES_LIMIT = 100_000

#: ``column IN <list bound as name>`` in the form the dialect runs cheapest
#: (:func:`waggle_store.dialects.base.in_values`).
InValues = Callable[[sa.ColumnElement[Any], str, TypeEngine[Any]], sa.ColumnElement[bool]]


def _check_depth(max_depth: object) -> int:
    if (isinstance(max_depth, bool) or not isinstance(max_depth, int)
            or not 0 <= max_depth <= MAX_DEPTH):
        raise InvalidInputError(
            f"max_depth must be an integer from 0 to {MAX_DEPTH}, got {max_depth!r}")
    return max_depth


def _check_nodes(max_nodes: object) -> int:
    if (isinstance(max_nodes, bool) or not isinstance(max_nodes, int)
            or not 1 <= max_nodes <= MAX_NODES_LIMIT):
        raise InvalidInputError(
            f"max_nodes must be an integer from 1 to {MAX_NODES_LIMIT}, got {max_nodes!r}")
    return max_nodes


class GraphRepository:
    def __init__(self, session: Session, mind_id: int) -> None:
        self.session = session
        self.mind_id = mind_id

    def _dialect(self) -> str:
        return self.session.get_bind().dialect.name

    def distances(self, start_ids: Iterable[int], max_depth: int = 3, undirected: bool = True,
                  relation_type: str | None = None,
                  max_nodes: int = MAX_NODES) -> dict[int, int]:
        """Hop count from the nearest start entity to every entity within ``max_depth`` hops.

        The start entities themselves are included at distance 0 (the contextual score gives a
        frame that mentions a query entity 1.0). ``undirected=True`` is the default because for
        "is this frame about something near what the query names" the direction of an edge says
        nothing: "Sarah leads Apollo" makes a frame about Apollo relevant to a query about Sarah
        and the other way round, and ``co_occurs_with`` edges are stored in whichever order a
        text named the pair. At most ``max_nodes`` visits are read (see the module's notes).
        """
        depth, cap = _check_depth(max_depth), _check_nodes(max_nodes)
        starts = sorted({int(i) for i in start_ids})
        if not starts:
            return {}
        statement = _distances_statement(self._dialect(), undirected, relation_type is not None)
        rows = self.session.execute(statement, {
            "mind_id": self.mind_id, "starts": starts, "max_depth": depth, "max_nodes": cap,
            "relation_type": relation_type})
        return {int(node): int(n) for node, n in rows}

    def traverse(self, start_id: int, relation_type: str | None = None, max_depth: int = 3,
                 max_nodes: int = MAX_NODES) -> list[tuple[EntityRow, int]]:
        """Active entities reachable along outgoing edges, with their hop count, in BFS order.

        BFS order is hop count first, then entity id (creation order) within a level. The start
        is never returned, even when a cycle leads back to it. At most ``max_nodes`` visits are
        read (see the module's notes).
        """
        depth, cap = _check_depth(max_depth), _check_nodes(max_nodes)
        statement = _traverse_statement(self._dialect(), relation_type is not None)
        rows = self.session.execute(statement, {
            "mind_id": self.mind_id, "start": int(start_id), "max_depth": depth,
            "max_nodes": cap, "relation_type": relation_type})
        return [(row, int(n)) for row, n in rows]


# The knowledge API's statements, built once per shape with every value bound.
_MIND = sa.bindparam("mind_id", type_=sa.BigInteger())
_DEPTH = sa.bindparam("max_depth", type_=sa.Integer())
_NODES = sa.bindparam("max_nodes", type_=sa.Integer())
_TYPE = sa.bindparam("relation_type", type_=sa.String())


@functools.cache
def _distances_statement(dialect: str, undirected: bool, typed: bool) -> sa.Select[Any]:
    starts = EntityRow.id.in_(sa.bindparam("starts", expanding=True, type_=sa.BigInteger()))
    hops = walk(_MIND, starts, _DEPTH, dialect=dialect, relation_type=_TYPE if typed else None,
                undirected=undirected, max_nodes=_NODES)
    return sa.select(hops.c.node, hops.c.hops)


@functools.cache
def _traverse_statement(dialect: str, typed: bool) -> sa.Select[Any]:
    start = sa.bindparam("start", type_=sa.BigInteger())
    hops = walk(_MIND, EntityRow.id == start, _DEPTH, dialect=dialect,
                relation_type=_TYPE if typed else None, undirected=False, max_nodes=_NODES)
    return (
        sa.select(EntityRow, hops.c.hops)
        .join(hops, EntityRow.id == hops.c.node)
        .where(EntityRow.id != start)
        .order_by(hops.c.hops, EntityRow.id)
    )


class FrameDistances:
    """Hops from the entities a query names to the nearest entity each given frame mentions.

    The statement is built once (one per store) with every value bound — ``mind_id``, ``names``
    (case-folded entity names), ``frames`` and ``max_depth`` — in the form ``in_values`` gives
    (on Postgres one array each, so the text is fixed and psycopg prepares it). Relations are
    walked in both directions (proximity is symmetric for ranking).
    """

    def __init__(self, in_values: InValues, max_nodes: int = MAX_NODES) -> None:
        self._in_values = in_values
        self._max_nodes = _check_nodes(max_nodes)
        self._statements: dict[str, sa.Select[Any]] = {}

    def _build(self, dialect: str) -> sa.Select[Any]:
        entities, mentions = EntityRow.__table__, EntityMentionRow.__table__
        named = sa.and_(entities.c.valid_to.is_(None),
                        self._in_values(entities.c.name_key, "names", sa.String()))
        hops = walk(sa.bindparam("mind_id", type_=sa.BigInteger()), named,
                    sa.bindparam("max_depth", type_=sa.Integer()), dialect=dialect,
                    relation_type=None, undirected=True, max_nodes=self._max_nodes)
        return (
            sa.select(mentions.c.frame_id, sa.func.min(hops.c.hops))
            .join_from(hops, mentions, mentions.c.entity_id == hops.c.node)
            .where(self._in_values(mentions.c.frame_id, "frames", sa.BigInteger()))
            .group_by(mentions.c.frame_id)
        )

    def __call__(self, conn: sa.Connection, mind_id: int, names: Iterable[str],
                 frame_ids: Iterable[int], max_depth: int) -> dict[int, int]:
        names, frames = list(names), list(frame_ids)
        if not names or not frames:
            return {}
        dialect = conn.dialect.name
        statement = self._statements.get(dialect)
        if statement is None:
            statement = self._statements[dialect] = self._build(dialect)
        rows = conn.execute(statement, {
            "mind_id": mind_id, "names": names, "frames": frames,
            "max_depth": _check_depth(max_depth)})
        return {int(frame): int(n) for frame, n in rows}


def walk(mind_id: int | sa.BindParameter[int], start: sa.ColumnElement[bool],
         max_depth: int | sa.BindParameter[int], *, dialect: str,
         relation_type: str | sa.BindParameter[str] | None, undirected: bool,
         max_nodes: int | sa.BindParameter[int]) -> sa.Subquery:
    """The subquery ``hops(node, hops)``: each entity reached from the entities of the mind that
    match ``start`` (a condition on the entities table), with its smallest hop count."""
    entities, relations = EntityRow.__table__, RelationRow.__table__
    # Every node reached is checked to be an active entity of the mind (``recursive_walk``), so
    # the edges need no mind filter: the step filters only what an index seek cannot.
    followed: list[sa.ColumnElement[bool]] = [relations.c.valid_to.is_(None)]
    if relation_type is not None:
        followed.append(relations.c.relation_type == relation_type)
    anchor = (sa.select(entities.c.id.label("node"), sa.literal_column("0").label("depth"))
              .where(entities.c.mind_id == mind_id, start))
    walked = recursive_walk(dialect, anchor, mind_id=mind_id, followed=followed,
                            max_depth=max_depth, undirected=undirected)
    # The recursion yields its visits level by level and stops once the LIMIT is read.
    visits = sa.select(walked.c.node, walked.c.depth).limit(max_nodes).subquery("visits")
    return (
        sa.select(visits.c.node, sa.func.min(visits.c.depth).label("hops"))
        .group_by(visits.c.node)
        .subquery("hops")
    )
