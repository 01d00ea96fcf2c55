"""A mind's own entity aliases, and the resolved key every entity write and lookup uses.

The built-in alias groups (:mod:`waggle_store.knowledge.aliases`) need no rows; a mind's own
aliases (``add_alias``) are rows here and win over the built-in ones.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.orm import Session

from waggle_store.errors import InvalidInputError
from waggle_store.knowledge.aliases import fold, resolved_key
from waggle_store.models.knowledge import AliasRow
from waggle_store.repositories.knowledge_common import MAX_NAME_LENGTH, check_label
from waggle_store.timeutil import utcnow

__all__ = ["AliasRepository"]


class AliasRepository:
    def __init__(self, session: Session, mind_id: int) -> None:
        self.session = session
        self.mind_id = mind_id

    def mapping(self) -> dict[str, str]:
        """The mind's own aliases: folded alias -> folded canonical name (one query)."""
        rows = self.session.execute(sa.select(AliasRow.alias_key, AliasRow.canonical_key)
                                    .where(AliasRow.mind_id == self.mind_id))
        return {str(alias): str(canonical) for alias, canonical in rows}

    def key(self, name: str, aliases: dict[str, str] | None = None) -> str:
        """``name``'s resolved key (``aliases``: a :meth:`mapping` the caller holds already)."""
        return resolved_key(name, self.mapping() if aliases is None else aliases)

    def add(self, alias: str, canonical_name: str) -> tuple[str, str]:
        """Make ``alias`` resolve to ``canonical_name`` (replacing an earlier alias of the same
        key); returns (alias key, canonical key). The canonical name is itself resolved first,
        so aliases never chain."""
        alias = check_label(alias, "alias", MAX_NAME_LENGTH)
        canonical_name = check_label(canonical_name, "canonical_name", MAX_NAME_LENGTH)
        mapping = self.mapping()
        alias_key = fold(alias)
        canonical_key = resolved_key(canonical_name, mapping)
        if not alias_key or not canonical_key:
            raise InvalidInputError("an alias and its canonical name must have letters or digits")
        if alias_key == canonical_key:
            raise InvalidInputError(f"{alias!r} already resolves to {canonical_name!r}")
        if any(c == alias_key for c in mapping.values()):
            raise InvalidInputError(
                f"{alias!r} is the canonical name of other aliases; it cannot be an alias")
        row = self.session.get(AliasRow, (self.mind_id, alias_key))
        if row is None:
            self.session.add(AliasRow(mind_id=self.mind_id, alias_key=alias_key, alias=alias,
                                      canonical_key=canonical_key, canonical_name=canonical_name,
                                      created_at=utcnow()))
        else:
            row.alias, row.canonical_key, row.canonical_name = alias, canonical_key, canonical_name
        self.session.flush()
        return alias_key, canonical_key
