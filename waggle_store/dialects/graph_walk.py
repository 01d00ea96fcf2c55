"""The recursive step of the knowledge-graph walk, in the form each dialect plans well.

The walk (:func:`waggle_store.repositories.graph.walk`) is one ``WITH RECURSIVE`` statement whose
working rows are (node, depth). Each step must seek the current node's edges by index whatever
the table statistics say (a fresh graph has none), and the two dialects get there differently:

* SQLite runs one recursive select per direction (a compound recursive step): each takes one
  queued row and seeks ``source_id`` (or ``target_id``) by index.
* PostgreSQL allows one reference to the recursive table, so the step joins it to a ``LATERAL``
  subquery (both directions as ``UNION ALL``): the subquery depends on the current node, so it
  can only be an index seek per node, never a scan of the mind's edges joined by a filter.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa

from waggle_store.models.knowledge import EntityRow, RelationRow


def recursive_walk(dialect: str, anchor: sa.Select[Any], *, mind_id: int | sa.BindParameter[int],
                   followed: Sequence[sa.ColumnElement[bool]],
                   max_depth: int | sa.BindParameter[int], undirected: bool) -> sa.CTE:
    """The CTE ``walk(node, depth)``: ``anchor`` (rows of (node, 0)) and every active entity of
    the mind one more edge away, while ``depth < max_depth``, along the relations that match
    ``followed`` (outgoing edges only unless ``undirected``)."""
    rel, entities = RelationRow.__table__, EntityRow.__table__
    walked = anchor.cte("walk", recursive=True)
    below = walked.c.depth < max_depth
    deeper = walked.c.depth + sa.literal_column("1")

    def active(node: sa.ColumnElement[int]) -> sa.ColumnElement[bool]:
        # A scalar subquery, looked up by primary key per node reached: the planner keeps it a
        # per-row check (an IN or EXISTS may become a join driven from the mind's entities).
        return sa.select(entities.c.mind_id).where(
            entities.c.id == node, entities.c.valid_to.is_(None)).scalar_subquery() == mind_id

    ways = [(rel.c.source_id, rel.c.target_id)]
    if undirected:
        ways.append((rel.c.target_id, rel.c.source_id))
    if dialect == "postgresql":
        edge = sa.union_all(*(
            sa.select(far.label("b")).where(near == walked.c.node, *followed) for near, far in ways
        )).lateral("edge")
        return walked.union(
            sa.select(edge.c.b, deeper)
            .select_from(walked.join(edge, sa.true()))
            .where(below, active(edge.c.b)))
    return walked.union(*(
        sa.select(far, deeper)
        .select_from(walked.join(rel, near == walked.c.node))
        .where(below, *followed, active(far))
        for near, far in ways
    ))
