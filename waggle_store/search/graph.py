"""Graph distance between the entities a query names and the entities each frame mentions.

The contextual sub-score of the relevance reads it: a frame that mentions an entity the query
names scores 1.0, one hop away less, and nothing beyond :data:`MAX_GRAPH_DEPTH` hops. The walk
itself is the knowledge graph's (:class:`waggle_store.repositories.graph.FrameDistances`).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Final

from sqlalchemy import Connection

from waggle_store.dialects.base import SearchAdapter, in_values
from waggle_store.repositories.graph import FrameDistances

__all__ = ["MAX_GRAPH_DEPTH", "GraphDistances"]

#: Graph hops counted by the contextual score (scoring gives 0 beyond 3).
MAX_GRAPH_DEPTH: Final = 3


class GraphDistances:
    """Hops from named entities to the frames that mention entities near them."""

    def __init__(self, adapter: SearchAdapter) -> None:
        self._distances = FrameDistances(partial(in_values, adapter.dialect))

    def __call__(
        self, conn: Connection, mind_id: int, names: Sequence[str], frame_ids: Sequence[int]
    ) -> dict[int, int]:
        """Hops from any entity named in the query (``names``:
        :func:`waggle_store.search.plan.query_names`) to the nearest entity each frame mentions,
        along active relations in both directions, up to :data:`MAX_GRAPH_DEPTH`.
        """
        return self._distances(conn, mind_id, names, frame_ids, MAX_GRAPH_DEPTH)
