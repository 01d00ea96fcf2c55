"""Graph walks over one mind's active edges: hop counts and breadth-first traversal.

Each walk is one recursive SQL statement on both dialects. The seed walked the graph in
application code, one query per visited node. Here a walk is one ``WITH RECURSIVE`` query built
with SQLAlchemy Core. Its working rows are (node, depth) pairs combined with ``UNION`` (not
``UNION ALL``), so a cycle cannot make the walk run away: a node is produced at most once per
depth, the depth is bounded, and the caller keeps each node's smallest depth, which is its BFS
hop count.

Only active relations are followed and only active entities are reached; everything is confined
to one mind.
"""

from __future__ import annotations

from collections.abc import Iterable

import sqlalchemy as sa
from sqlalchemy.orm import Session

from waggle_store.errors import InvalidInputError
from waggle_store.models.knowledge import EntityRow, RelationRow

#: Deepest walk accepted. Work grows with nodes × depth, so an unbounded depth is refused.
MAX_DEPTH = 20


def _check_depth(max_depth: object) -> int:
    if (isinstance(max_depth, bool) or not isinstance(max_depth, int)
            or not 0 <= max_depth <= MAX_DEPTH):
        raise InvalidInputError(
            f"max_depth must be an integer from 0 to {MAX_DEPTH}, got {max_depth!r}")
    return max_depth


class GraphRepository:
    def __init__(self, session: Session, mind_id: int) -> None:
        self.session = session
        self.mind_id = mind_id

    def distances(self, start_ids: Iterable[int], max_depth: int = 3, undirected: bool = True,
                  relation_type: str | None = None) -> dict[int, int]:
        """Hop count from the nearest start entity to every entity within ``max_depth`` hops.

        The start entities themselves are included at distance 0 (the contextual score gives a
        frame that mentions a query entity 1.0). ``undirected=True`` is the default because for
        "is this frame about something near what the query names" the direction of an edge says
        nothing: "Sarah leads Apollo" makes a frame about Apollo relevant to a query about Sarah
        and the other way round, and ``co_occurs_with`` edges are stored in whichever order a
        text named the pair.
        """
        depth = _check_depth(max_depth)
        starts = sorted({int(i) for i in start_ids})
        if not starts:
            return {}
        walk = _walk(self.mind_id, starts, depth, relation_type=relation_type,
                     undirected=undirected)
        rows = self.session.execute(
            sa.select(walk.c.node, sa.func.min(walk.c.depth)).group_by(walk.c.node))
        return {int(node): int(hops) for node, hops in rows}

    def traverse(self, start_id: int, relation_type: str | None = None,
                 max_depth: int = 3) -> list[tuple[EntityRow, int]]:
        """Active entities reachable along outgoing edges, with their hop count, in BFS order.

        BFS order is hop count first, then entity id (creation order) within a level. The start
        is never returned, even when a cycle leads back to it.
        """
        depth = _check_depth(max_depth)
        walk = _walk(self.mind_id, [start_id], depth, relation_type=relation_type, undirected=False)
        hops = (
            sa.select(walk.c.node, sa.func.min(walk.c.depth).label("hops"))
            .group_by(walk.c.node).subquery("hops")
        )
        rows = self.session.execute(
            sa.select(EntityRow, hops.c.hops)
            .join(hops, EntityRow.id == hops.c.node)
            .where(EntityRow.id != start_id)
            .order_by(hops.c.hops, EntityRow.id)
        )
        return [(row, int(n)) for row, n in rows]


def _walk(mind_id: int, start_ids: list[int], max_depth: int, *, relation_type: str | None,
          undirected: bool) -> sa.CTE:
    """The recursive CTE ``walk(node, depth)``: every (node, depth) reachable within max_depth.

    The step joins the relations on ``source_id`` (and, undirected, ``OR target_id``) of the
    current node, so each step is index lookups from that node (a multi-index OR on SQLite, a
    BitmapOr on Postgres), never a scan of the mind's edges.
    """
    walk = (
        sa.select(EntityRow.id.label("node"), sa.literal_column("0").label("depth"))
        .where(EntityRow.mind_id == mind_id, EntityRow.id.in_(start_ids))
        .cte("walk", recursive=True)
    )
    rel = sa.orm.aliased(RelationRow, name="rel")
    other: sa.ColumnElement[int] | sa.orm.InstrumentedAttribute[int]
    if undirected:
        on = sa.or_(rel.source_id == walk.c.node, rel.target_id == walk.c.node)
        other = sa.case((rel.source_id == walk.c.node, rel.target_id), else_=rel.source_id)
    else:
        on = rel.source_id == walk.c.node
        other = rel.target_id
    # ``mind_id + 0``: the check stays, but the planner cannot pick the mind_id index for it and
    # scan every edge of the mind on each step instead of seeking from the current node.
    filters = [rel.mind_id + sa.literal_column("0") == mind_id, rel.valid_to.is_(None)]
    if relation_type is not None:
        filters.append(rel.relation_type == relation_type)
    step = (
        sa.select(other, walk.c.depth + sa.literal_column("1"))
        .select_from(walk.join(rel, on).join(EntityRow, EntityRow.id == other))
        .where(walk.c.depth < max_depth, *filters,
               EntityRow.mind_id == mind_id, EntityRow.valid_to.is_(None))
    )
    return walk.union(step)
