"""The turns next to given frames in their sessions, as lane hits (the search's expansion step).

One statement, the same text on both dialects but for the attribute filters of ``where``
(:func:`~waggle_store.dialects.common.frame_filters`, in the dialect's SQL): the frames at
``t - 1`` and ``t + 1`` of each seed's session, every filter of the search applied, so a turn the
search's filters exclude is never brought in beside a hit. Each ``(gop_id, t)`` place is one
equality probe of the frames' unique ``(mind_id, gop_id, t)`` index.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from waggle_store.dialects.base import T_FRAMES, Executor, LaneFilter, LaneHit
from waggle_store.dialects.common import frame_filters, frame_hits, frame_select, run_lane

__all__ = ["MAX_SEEDS", "neighbour_hits"]

#: Most seeds one statement takes (the search passes its top hits, far fewer).
MAX_SEEDS: Final = 100


def neighbour_hits(executor: Executor, *, dialect: str, seeds: Sequence[tuple[str, int]],
                   where: LaneFilter) -> list[LaneHit]:
    """The frames right before and after each seed ``(gop_id, t)`` in its session that pass
    ``where`` (score 0.0), by session and ``t``; a seed next to another is among them. A side with
    no frame at ``t ± 1`` (the session's first or last turn, a deleted turn) gives none. Seeds are
    frames of ``where``'s one mind."""
    wanted = sorted({(str(gop), int(t) + step) for gop, t in seeds[:MAX_SEEDS]
                     for step in (-1, 1)})
    if not wanted or not where.mind_ids:
        return []
    params: dict[str, Any] = {}
    rows_sql = []
    for i, (gop, t) in enumerate(wanted):
        params[f"ng{i}"], params[f"nt{i}"] = gop, t
        rows_sql.append(f"(:ng{i}, :nt{i})")
    filters = frame_filters(where, params, dialect=dialect)
    # The wanted places drive the join (CROSS JOIN keeps them SQLite's outer loop): one probe
    # each, where an OR of the places beside the mind filter scans the mind's frames.
    rows = run_lane(
        executor,
        f"WITH n(gop_id, t) AS (VALUES {', '.join(rows_sql)}) "
        f"SELECT f.id, 0.0 AS score, {frame_select()} FROM n CROSS JOIN {T_FRAMES} f "
        f"WHERE f.gop_id = n.gop_id AND f.t = n.t AND {filters} ORDER BY f.gop_id, f.t",
        params,
    )
    return frame_hits(executor, rows)
