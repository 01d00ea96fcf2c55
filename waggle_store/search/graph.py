"""Graph distance between the entities a query names and the entities each frame mentions.

The contextual sub-score of the relevance (DESIGN §5) reads it. The statement is built once per
:class:`GraphDistances` (one per store) and bound the way the adapter finds cheapest (Postgres:
one array each, so the statement text is fixed and psycopg prepares it; an expanded IN was
re-rendered, re-parsed and re-planned on every search).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from sqlalchemy import (
    BigInteger,
    Connection,
    Integer,
    Select,
    String,
    bindparam,
    func,
    literal_column,
    select,
    union_all,
)

from waggle_store.dialects.base import SearchAdapter
from waggle_store.models import EntityMentionRow, EntityRow, RelationRow

__all__ = ["MAX_GRAPH_DEPTH", "GraphDistances"]

#: Graph hops counted by the contextual score (scoring gives 0 beyond 3).
MAX_GRAPH_DEPTH: Final = 3


class GraphDistances:
    """Hops from named entities to the frames that mention entities near them."""

    def __init__(self, adapter: SearchAdapter) -> None:
        self._adapter = adapter
        self._statement: Select[Any] | None = None

    def _build(self) -> Select[Any]:
        adapter = self._adapter
        relations, entities = RelationRow.__table__, EntityRow.__table__
        mentions = EntityMentionRow.__table__
        mind = bindparam("mind_id", type_=BigInteger())
        active = (relations.c.mind_id == mind, relations.c.valid_to.is_(None))
        edges = union_all(
            select(relations.c.source_id.label("a"), relations.c.target_id.label("b")).where(
                *active
            ),
            select(relations.c.target_id, relations.c.source_id).where(*active),
        ).cte("edges")
        walk = (
            select(entities.c.id.label("entity_id"), literal_column("0").label("depth"))
            .where(
                entities.c.mind_id == mind,
                entities.c.valid_to.is_(None),
                adapter.in_values(entities.c.name_key, "names", String()),
            )
            .cte("walk", recursive=True)
        )
        walk = walk.union(
            select(edges.c.b, walk.c.depth + 1)
            .join_from(walk, edges, edges.c.a == walk.c.entity_id)
            .where(walk.c.depth < bindparam("max_depth", type_=Integer()))
        )
        return (
            select(mentions.c.frame_id, func.min(walk.c.depth))
            .join_from(walk, mentions, mentions.c.entity_id == walk.c.entity_id)
            .where(adapter.in_values(mentions.c.frame_id, "frames", BigInteger()))
            .group_by(mentions.c.frame_id)
        )

    def __call__(
        self, conn: Connection, mind_id: int, names: Sequence[str], frame_ids: Sequence[int]
    ) -> dict[int, int]:
        """Hops from any entity named in the query (``names``:
        :func:`waggle_store.search.plan.query_names`) to the nearest entity each frame mentions.

        Relations are walked in both directions (proximity is symmetric for ranking) and only
        while active (``valid_to IS NULL``), up to :data:`MAX_GRAPH_DEPTH`, in one recursive query.
        """
        if not names or not frame_ids:
            return {}
        if self._statement is None:
            self._statement = self._build()
        rows = conn.execute(
            self._statement,
            {
                "mind_id": mind_id,
                "names": list(names),
                "frames": list(frame_ids),
                "max_depth": MAX_GRAPH_DEPTH,
            },
        ).all()
        return {int(r[0]): int(r[1]) for r in rows}
