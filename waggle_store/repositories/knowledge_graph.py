"""Graph walks, and the entity ↔ frame links (mentions) that the contextual search score uses.

Each walk is one recursive SQL statement on both dialects.

The seed walked the graph in application code, one query per visited node. Here a walk is one
``WITH RECURSIVE`` query built with SQLAlchemy Core. Its working rows are (node, depth) pairs
combined with ``UNION`` (not ``UNION ALL``), so a cycle cannot make the walk run away: a node is
produced at most once per depth, the depth is bounded, and the caller keeps each node's smallest
depth, which is its BFS hop count.

Only active relations are followed and only active entities are reached; everything is confined
to one mind.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc
from sqlalchemy.orm import Session

from waggle_store.errors import InvalidInputError, NotFoundError
from waggle_store.models.knowledge import EntityMentionRow, EntityRow, RelationRow

__all__ = [
    "MAX_DEPTH",
    "add_mention",
    "entity_ids_named_in",
    "graph_distances",
    "mentioned_entity_ids",
    "name_key",
    "traverse",
]

#: Deepest walk accepted. Work grows with nodes × depth, so an unbounded depth is refused.
MAX_DEPTH = 20
#: Longest entity name, in words, that :func:`entity_ids_named_in` looks for.
MAX_NAME_WORDS = 8
_MAX_NAME_CHARS = 500
_CHUNK = 500
_WORD = re.compile(r"\w+")
_TRAILING = re.compile(r"[+#]+(?!\w)")  # "c++", "c#": names may end in these


def _check_depth(max_depth: object) -> int:
    if isinstance(max_depth, bool) or not isinstance(max_depth, int) or not 0 <= max_depth <= MAX_DEPTH:
        raise InvalidInputError(f"max_depth must be an integer from 0 to {MAX_DEPTH}, got {max_depth!r}")
    return max_depth


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


def graph_distances(session: Session, mind_id: int, start_ids: Iterable[int], max_depth: int = 3,
                    undirected: bool = True, relation_type: str | None = None) -> dict[int, int]:
    """Hop count from the nearest start entity to every entity within ``max_depth`` hops.

    The start entities themselves are included at distance 0 (the contextual score gives a frame
    that mentions a query entity 1.0). ``undirected=True`` is the default because for "is this
    frame about something near what the query names" the direction of an edge says nothing:
    "Sarah leads Apollo" makes a frame about Apollo relevant to a query about Sarah and the other
    way round, and ``co_occurs_with`` edges are stored in whichever order a text named the pair.
    """
    depth = _check_depth(max_depth)
    starts = sorted({int(i) for i in start_ids})
    if not starts:
        return {}
    walk = _walk(mind_id, starts, depth, relation_type=relation_type, undirected=undirected)
    rows = session.execute(sa.select(walk.c.node, sa.func.min(walk.c.depth)).group_by(walk.c.node))
    return {int(node): int(hops) for node, hops in rows}


def traverse(session: Session, mind_id: int, start_id: int, relation_type: str | None = None,
             max_depth: int = 3) -> list[tuple[EntityRow, int]]:
    """Active entities reachable along outgoing edges, with their hop count, in BFS order.

    BFS order is hop count first, then entity id (creation order) within a level. The start is
    never returned, even when a cycle leads back to it.
    """
    depth = _check_depth(max_depth)
    walk = _walk(mind_id, [start_id], depth, relation_type=relation_type, undirected=False)
    hops = (
        sa.select(walk.c.node, sa.func.min(walk.c.depth).label("hops"))
        .group_by(walk.c.node).subquery("hops")
    )
    rows = session.execute(
        sa.select(EntityRow, hops.c.hops)
        .join(hops, EntityRow.id == hops.c.node)
        .where(EntityRow.id != start_id)
        .order_by(hops.c.hops, EntityRow.id)
    )
    return [(row, int(n)) for row, n in rows]


def name_key(name: str) -> str:
    """The key upserts and name lookups match on: NFKC, whitespace collapsed, case-folded.

    Folding in Python (not SQL ``lower()``) gives full Unicode case-insensitivity on both
    dialects; SQLite's ``lower()`` and ``LIKE`` only fold ASCII.
    """
    return " ".join(unicodedata.normalize("NFKC", name).split()).casefold()


def _candidates(text: str) -> dict[str, int]:
    """Every run of 1..MAX_NAME_WORDS consecutive words of the folded text → first position.

    A run starts at the start of a word and ends at the end of a word (``\\w+`` runs are maximal),
    so a name only ever matches as a whole word or phrase: "al" never matches inside "also".
    The run keeps the text's own separators, so "node.js" and "o'brien" match as written.
    """
    folded = name_key(text)
    spans = [m.span() for m in _WORD.finditer(folded)]
    found: dict[str, int] = {}
    for i, (start, _) in enumerate(spans):
        for _, end in spans[i:i + MAX_NAME_WORDS]:
            if end - start > _MAX_NAME_CHARS:
                break
            found.setdefault(folded[start:end], start)
            trailing = _TRAILING.match(folded, end)
            if trailing:
                found.setdefault(folded[start:trailing.end()], start)
    return found


def _mind_types(mind_id: int) -> sa.CTE:
    """The mind's distinct entity types by a loose index scan: one index seek per type.

    With the types known, the name lookup below becomes seeks on the
    (mind_id, entity_type, name_key) index instead of a scan of every entity of the mind.
    """
    first = (
        sa.select(EntityRow.entity_type.label("t"))
        .where(EntityRow.mind_id == mind_id)
        .order_by(EntityRow.entity_type).limit(1)
        .subquery()
    )
    types = sa.select(first.c.t).cte("mind_types", recursive=True)
    following = (
        sa.select(EntityRow.entity_type)
        .where(EntityRow.mind_id == mind_id, EntityRow.entity_type > types.c.t)
        .order_by(EntityRow.entity_type).limit(1)
        .scalar_subquery()
        .correlate(types)
    )
    return types.union_all(sa.select(following).where(types.c.t.is_not(None)))


def entity_ids_named_in(session: Session, mind_id: int, text: str) -> list[int]:
    """Ids of the active entities whose whole (case-folded) name occurs in ``text``.

    Candidates are the word runs of the text (names of up to MAX_NAME_WORDS words), looked up
    by index, so the cost follows the length of the text, not the size of the graph. Ids come
    in order of first occurrence in the text, then by id.
    """
    if not isinstance(text, str):
        raise InvalidInputError(f"text must be a string, got {type(text).__name__}")
    candidates = _candidates(text)
    if not candidates:
        return []
    keys = list(candidates)
    types = _mind_types(mind_id)
    found: list[tuple[int, int]] = []
    for offset in range(0, len(keys), _CHUNK):
        rows = session.execute(
            sa.select(EntityRow.id, EntityRow.name_key)
            .where(EntityRow.mind_id == mind_id,
                   EntityRow.entity_type.in_(sa.select(types.c.t).where(types.c.t.is_not(None))),
                   EntityRow.name_key.in_(keys[offset:offset + _CHUNK]),
                   EntityRow.valid_to.is_(None))
        )
        found.extend((candidates[key], int(entity_id)) for entity_id, key in rows)
    return [entity_id for _, entity_id in sorted(set(found))]


# -- mentions ---------------------------------------------------------------------------------


def add_mention(session: Session, entity_id: int, frame_id: int) -> bool:
    """Record that a frame mentions an entity; True if new, False if it was already recorded."""
    if session.get(EntityMentionRow, (entity_id, frame_id)) is not None:
        return False
    try:
        with session.begin_nested():
            session.add(EntityMentionRow(entity_id=entity_id, frame_id=frame_id))
    except sa_exc.IntegrityError as exc:
        # Either a concurrent writer recorded it first (fine) or a foreign key is missing.
        exists = session.scalar(sa.select(sa.literal(1)).where(
            EntityMentionRow.entity_id == entity_id, EntityMentionRow.frame_id == frame_id))
        if exists:
            return False
        raise NotFoundError(f"entity {entity_id} or frame {frame_id} does not exist") from exc
    return True


def mentioned_entity_ids(session: Session, frame_ids: Sequence[int]) -> dict[int, list[int]]:
    """Frame id → ids of the entities it mentions (the contextual score joins through this)."""
    out: dict[int, list[int]] = {}
    ids = list(dict.fromkeys(frame_ids))
    for start in range(0, len(ids), 500):
        rows = session.execute(
            sa.select(EntityMentionRow.frame_id, EntityMentionRow.entity_id)
            .where(EntityMentionRow.frame_id.in_(ids[start:start + 500]))
            .order_by(EntityMentionRow.frame_id, EntityMentionRow.entity_id)
        )
        for frame_id, entity_id in rows:
            out.setdefault(frame_id, []).append(entity_id)
    return out
