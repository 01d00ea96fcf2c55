"""Entities of one mind's knowledge graph: create, upsert (one at a time or a set at a time),
look up by name, retire.

Like every repository, it takes the caller's Session and never commits, so the cognify pipeline
can write a frame, its entities, mentions and edges in one transaction. Every query is filtered
by ``mind_id``: an id from another mind behaves exactly like an id that does not exist.

Writes take the mind's :class:`~waggle_store.records.ValidationSchema` as an argument: the
caller loads it once per transaction (:class:`ValidationSchemaRepository`), which keeps a bulk
pipeline from re-reading it for every entity.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session

from waggle_store import textinput
from waggle_store.errors import ConflictError, InvalidInputError, NotFoundError, ValidationError
from waggle_store.knowledge.aliases import resolved_key
from waggle_store.models.knowledge import EntityRow, RelationRow
from waggle_store.records import ValidationSchema
from waggle_store.repositories.aliases import AliasRepository
from waggle_store.repositories.knowledge_common import (
    MAX_NAME_LENGTH,
    MAX_TYPE_LENGTH,
    EntitySpec,
    check_label,
    check_limit,
    check_properties,
    lock_graph,
    name_key,
)
from waggle_store.repositories.knowledge_schema import check_entity
from waggle_store.repositories.versions import VersionRepository
from waggle_store.timeutil import utcnow

#: Longest entity name, in words, that :meth:`EntityRepository.named_in` looks for.
MAX_NAME_WORDS = 8
_MAX_NAME_CHARS = 500
_CHUNK = 500
_WORD = re.compile(r"\w+")
_TRAILING = re.compile(r"[+#]+(?!\w)")  # "c++", "c#": names may end in these


def _active() -> sa.ColumnElement[bool]:
    return EntityRow.valid_to.is_(None)


class EntityRepository:
    def __init__(self, session: Session, mind_id: int) -> None:
        self.session = session
        self.mind_id = mind_id

    # -- reads --------------------------------------------------------------------------------

    def get(self, entity_id: int) -> EntityRow | None:
        return self.session.scalar(sa.select(EntityRow).where(EntityRow.id == entity_id,
                                                              EntityRow.mind_id == self.mind_id))

    def require_active(self, entity_id: int) -> EntityRow:
        """The entity, which must exist in this mind (NotFoundError) and be active
        (InvalidInputError)."""
        row = self.get(entity_id)
        if row is None:
            raise NotFoundError(f"entity {entity_id} does not exist in this mind")
        if row.valid_to is not None:
            raise InvalidInputError(f"entity {entity_id} ({row.name!r}) is retired")
        return row

    def search(self, query: str, limit: int = 100) -> list[EntityRow]:
        """Active entities whose name contains ``query`` (case-insensitive, LIKE
        metacharacters literal)."""
        limit = check_limit(limit)
        # The rules every read API shares (waggle_store.textinput): C* characters scrubbed, LIKE
        # metacharacters literal; a query longer than any stored key cannot be inside one (and
        # would make SQLite's LIKE give up: "pattern too complex"). NFKC grows a character into
        # at most 18, so no key is longer than MAX_NAME_LENGTH * 18.
        folded = name_key(textinput.check_query(query))  # the same folding as the stored keys
        if len(folded) > MAX_NAME_LENGTH * 18:
            return []
        pattern = textinput.like_contains(folded)
        return list(self.session.scalars(
            sa.select(EntityRow)
            .where(EntityRow.mind_id == self.mind_id, _active(),
                   EntityRow.name_key.like(pattern, escape="\\"))
            .order_by(EntityRow.name, EntityRow.id).limit(limit)
        ))

    def by_type(self, entity_type: str, limit: int = 500) -> list[EntityRow]:
        return list(self.session.scalars(
            sa.select(EntityRow)
            .where(EntityRow.mind_id == self.mind_id, EntityRow.entity_type == entity_type,
                   _active())
            .order_by(EntityRow.name, EntityRow.id).limit(check_limit(limit))
        ))

    def page(self, entity_type: str | None, limit: int, offset: int) -> list[EntityRow]:
        """Active entities (of one type, if given) in name order, ``limit`` from ``offset``."""
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise InvalidInputError(f"offset must be a non-negative integer, got {offset!r}")
        query = sa.select(EntityRow).where(EntityRow.mind_id == self.mind_id, _active())
        if entity_type is not None:
            query = query.where(EntityRow.entity_type == check_label(
                entity_type, "entity_type", MAX_TYPE_LENGTH))
        return list(self.session.scalars(
            query.order_by(EntityRow.name, EntityRow.id).limit(check_limit(limit)).offset(offset)))

    def type_counts(self) -> dict[str, int]:
        """Active entities per type, most common first."""
        count = sa.func.count(EntityRow.id)
        rows = self.session.execute(
            sa.select(EntityRow.entity_type, count)
            .where(EntityRow.mind_id == self.mind_id, _active())
            .group_by(EntityRow.entity_type).order_by(count.desc(), EntityRow.entity_type)
        )
        return {entity_type: int(n) for entity_type, n in rows}

    def valid_at(self, when: datetime, limit: int = 500) -> list[EntityRow]:
        """Entities true in the world at ``when``, retired ones included: a time comparison,
        not a string one."""
        return list(self.session.scalars(
            sa.select(EntityRow)
            .where(EntityRow.mind_id == self.mind_id, EntityRow.valid_from <= when,
                   sa.or_(EntityRow.valid_to.is_(None), EntityRow.valid_to > when))
            .order_by(EntityRow.name, EntityRow.id).limit(check_limit(limit))
        ))

    def named_in(self, text: str) -> list[int]:
        """Ids of the active entities whose whole (case-folded) name occurs in ``text``.

        Candidates are the word runs of the text (names of up to MAX_NAME_WORDS words), looked
        up by index, so the cost follows the length of the text, not the size of the graph. Ids
        come in order of first occurrence in the text, then by id.
        """
        if not isinstance(text, str):
            raise InvalidInputError(f"text must be a string, got {type(text).__name__}")
        candidates = _candidates(text)
        if not candidates:
            return []
        keys = list(candidates)
        types = _mind_types(self.mind_id)
        found: list[tuple[int, int]] = []
        for offset in range(0, len(keys), _CHUNK):
            rows = self.session.execute(
                sa.select(EntityRow.id, EntityRow.name_key)
                .where(EntityRow.mind_id == self.mind_id,
                       EntityRow.entity_type.in_(sa.select(types.c.t).where(types.c.t.is_not(None))),
                       EntityRow.name_key.in_(keys[offset:offset + _CHUNK]),
                       EntityRow.valid_to.is_(None))
            )
            found.extend((candidates[key], int(entity_id)) for entity_id, key in rows)
        return [entity_id for _, entity_id in sorted(set(found))]

    # -- writes -------------------------------------------------------------------------------

    def create(self, entity_type: str, name: str, properties: dict[str, Any] | None = None, *,
               valid_from: datetime | None = None, valid_to: datetime | None = None,
               schema: ValidationSchema | None = None) -> EntityRow:
        """Insert an entity; an active one is unique per (type, resolved name), so creating an
        active entity that exists already returns the existing row unchanged.

        ``valid_to`` records a fact that was true only in the past (it must be after valid_from).
        """
        entity_type = check_label(entity_type, "entity_type", MAX_TYPE_LENGTH)
        name = check_label(name, "name", MAX_NAME_LENGTH)
        props = check_properties(properties)
        check_entity(schema, entity_type, props)
        now = utcnow()
        start = valid_from or now
        if valid_to is not None and valid_to <= start:
            raise InvalidInputError(f"valid_to ({valid_to.isoformat()}) must be after valid_from "
                                    f"({start.isoformat()})")
        key = AliasRepository(self.session, self.mind_id).key(name)
        if valid_to is None:
            lock_graph(self.session, self.mind_id)
            existing = self._active_by_key(entity_type, key)
            if existing is not None:
                return existing
        row = EntityRow(mind_id=self.mind_id, entity_type=entity_type, name=name,
                        name_key=name_key(name), resolved_key=key, properties=props,
                        valid_from=start, valid_to=valid_to, recorded_at=now, version=1)
        self.session.add(row)
        self.session.flush()
        return row

    def _active_by_key(self, entity_type: str | None, key: str) -> EntityRow | None:
        """The active entity with this resolved key (of this type; None: any type, the
        oldest first)."""
        query = sa.select(EntityRow).where(EntityRow.mind_id == self.mind_id,
                                           EntityRow.resolved_key == key, _active())
        if entity_type is not None:
            query = query.where(EntityRow.entity_type == entity_type)
        return self.session.scalar(query.order_by(EntityRow.id).limit(1))

    def resolve(self, name: str) -> EntityRow | None:
        """The active entity ``name`` stands for, through case, spacing, punctuation and
        aliases; the oldest when several types share the name."""
        name = check_label(name, "name", MAX_NAME_LENGTH)
        return self._active_by_key(None, AliasRepository(self.session, self.mind_id).key(name))

    def update(self, entity_id: int, *, name: str | None = None,
               properties: dict[str, Any] | None = None, entity_type: str | None = None,
               schema: ValidationSchema | None = None) -> EntityRow:
        """Rename, retype and/or replace (not merge) the properties of an active entity.

        The state it replaces stays readable in recorded time (:class:`VersionRepository`).
        Renaming onto the resolved name of another active entity of the type is a
        ConflictError: one entity per name.
        """
        row = self.require_active(entity_id)
        new_name = row.name if name is None else check_label(name, "name", MAX_NAME_LENGTH)
        new_type = (row.entity_type if entity_type is None
                    else check_label(entity_type, "entity_type", MAX_TYPE_LENGTH))
        props = row.properties if properties is None else check_properties(properties)
        if entity_type is not None or properties is not None:
            check_entity(schema, new_type, props)
        key = AliasRepository(self.session, self.mind_id).key(new_name)
        lock_graph(self.session, self.mind_id)
        other = self._active_by_key(new_type, key)
        if other is not None and other.id != row.id:
            raise ConflictError(f"entity {other.id} ({other.name!r}, {new_type}) already has "
                                f"the name {new_name!r}")
        VersionRepository(self.session, self.mind_id).keep_entity(row, utcnow())
        row.name, row.name_key, row.resolved_key = new_name, name_key(new_name), key
        row.entity_type = new_type
        row.properties = dict(props)
        self.session.flush()
        return row

    def upsert(self, entity_type: str, name: str, properties: dict[str, Any] | None = None, *,
               schema: ValidationSchema | None = None) -> tuple[EntityRow, bool]:
        """The active entity of this type and resolved name, created if there is none.

        Returns ``(row, created)``; an existing row is returned unchanged. Takes the per-mind
        graph lock (see ``lock_graph``) so the check-then-insert never meets the unique index.
        """
        entity_type = check_label(entity_type, "entity_type", MAX_TYPE_LENGTH)
        name = check_label(name, "name", MAX_NAME_LENGTH)
        lock_graph(self.session, self.mind_id)
        key = AliasRepository(self.session, self.mind_id).key(name)
        row = self._active_by_key(entity_type, key)
        if row is not None:
            return row, False
        return self.create(entity_type, name, properties, schema=schema), True

    def upsert_many(self, specs: Sequence[EntitySpec],
                    schema: ValidationSchema | None) -> tuple[list[EntityRow | None], list[str]]:
        """:meth:`upsert` for a set, resolving names first: rows for the specs, in order (None
        where the schema refuses one), and the refusals.

        A name resolves to the active entity of its resolved key and type; when there is none
        of that type, to the oldest active entity of that key of any type (an extractor may type
        "PG" differently from "PostgreSQL"). One SELECT for what exists plus one INSERT for
        what is missing, under the graph lock. Names are not re-checked: the extractor produces
        them within the limits.
        """
        lock_graph(self.session, self.mind_id)
        aliases = AliasRepository(self.session, self.mind_id).mapping()
        keys = [(s.entity_type, resolved_key(s.name, aliases)) for s in specs]
        found: dict[tuple[str, str], EntityRow] = {}
        any_type: dict[str, EntityRow] = {}
        wanted = sorted({k for _, k in keys})
        for offset in range(0, len(wanted), _CHUNK):
            rows = self.session.scalars(
                sa.select(EntityRow)
                .where(EntityRow.mind_id == self.mind_id, EntityRow.valid_to.is_(None),
                       EntityRow.resolved_key.in_(wanted[offset:offset + _CHUNK]))
                .order_by(EntityRow.id)
            )
            for existing in rows:
                known = existing.resolved_key or ""
                found.setdefault((existing.entity_type, known), existing)
                any_type.setdefault(known, existing)
        refused: list[str] = []
        now = utcnow()
        new: list[EntityRow] = []
        out: list[EntityRow | None] = []
        for spec, key in zip(specs, keys, strict=True):
            row = found.get(key) or any_type.get(key[1])
            if row is None:
                try:
                    check_properties(spec.properties)
                    check_entity(schema, spec.entity_type, spec.properties)
                except (ValidationError, InvalidInputError) as exc:
                    refused.append(str(exc))
                    out.append(None)
                    continue
                row = EntityRow(mind_id=self.mind_id, entity_type=spec.entity_type, name=spec.name,
                                name_key=name_key(spec.name), resolved_key=key[1],
                                properties=dict(spec.properties), valid_from=now, valid_to=None,
                                recorded_at=now, version=1)
                found[key] = row
                any_type.setdefault(key[1], row)
                new.append(row)
            out.append(row)
        if new:
            self.session.add_all(new)
            self.session.flush()
        return out, refused

    def retire(self, entity_id: int) -> bool:
        """Retire the entity and its active relations (both directions) at the same instant.

        An edge to something no longer true is no longer true either; retiring the edges too
        keeps the relation lists and the walks consistent while the history stays queryable.
        Returns False when the entity was already retired (a no-op).
        """
        row = self.get(entity_id)
        if row is None:
            raise NotFoundError(f"entity {entity_id} does not exist in this mind")
        if row.valid_to is not None:
            return False
        now = utcnow()
        versions = VersionRepository(self.session, self.mind_id)
        versions.keep_entity(row, now)
        row.valid_to = max(now, row.valid_from)  # never a window that ends before it starts
        edges = sa.and_(RelationRow.valid_to.is_(None),
                        sa.or_(RelationRow.source_id == entity_id,
                               RelationRow.target_id == entity_id))
        versions.keep_relations(edges, now)
        self.session.execute(
            sa.update(RelationRow)
            .where(RelationRow.mind_id == self.mind_id, edges)
            .values(valid_to=sa.case((RelationRow.valid_from > now, RelationRow.valid_from),
                                     else_=now), **versions.moved_on(now))
            # Relation rows the session already holds must see the retirement too.
            .execution_options(synchronize_session="fetch")
        )
        self.session.flush()
        return True


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

    With the types known, the name lookup becomes seeks on the (mind_id, entity_type, name_key)
    index instead of a scan of every entity of the mind.
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
