"""What the upper layers need of a store, and nothing more.

The facades (``mind.frames``, ``mind.knowledge`` ...), the pipelines (cognify, reconcile, ...)
and the search engine used to receive the whole ``Store``/``Mind`` and reach into it
(``mind.store.adapter``, ``mind.store.embedder``, ``mind.store.write()``), which made
``store.py`` the hub of an import cycle. They receive these two small objects instead:

* :class:`StoreContext`: the unit of work (:class:`~waggle_store.unitofwork.Database`), the
  dialect adapter, and the embedder (typed as the :class:`~waggle_store.embeddings.base.Embedder`
  protocol);
* :class:`MindContext`: a StoreContext plus the id, name and kind of one mind, the scope of every
  per-mind read and write.

``store.py`` builds them and imports its parts at the top; nothing imports ``store.py`` back.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager

import sqlalchemy as sa
from sqlalchemy.orm import Session

from waggle_store.dialects.base import SearchAdapter
from waggle_store.embeddings.base import Embedder
from waggle_store.knowledge.extract import Extractor
from waggle_store.unitofwork import Database

__all__ = ["MindContext", "StoreContext"]


class StoreContext:
    """The parts of one open store that its layers share."""

    def __init__(self, db: Database, adapter: SearchAdapter, embedder: Embedder | None,
                 *, schema: str | None = None,
                 prepare_embedder: Callable[[str | Embedder], Embedder | None] | None = None
                 ) -> None:
        self.db = db
        self.adapter = adapter
        #: The store's embedder, or None (keyword-only). Mutable: a store may be given another.
        self.embedder = embedder
        self.schema = schema
        #: Turns an embedder spec (a provider name or an Embedder) into one this store may use:
        #: resolved and checked against its tier, and counted against its quota. Another
        #: embedder given to a mind (a model switch) goes through it too, so it cannot bypass
        #: the store's tier or quota. None: the store has no tier (resolve the spec as is).
        self.prepare_embedder = prepare_embedder
        #: The extractor cognify runs (``open_store(extractor=...)``); None: the rule-based one.
        self.extractor: Extractor | None = None

    def write(self) -> AbstractContextManager[Session]:
        return self.db.write()

    def read(self) -> AbstractContextManager[Session]:
        return self.db.read()

    def read_connection(self, *, snapshot: bool = False
                        ) -> AbstractContextManager[sa.Connection]:
        return self.db.read_connection(snapshot=snapshot)


class MindContext:
    """One mind of a store: every read and write made through it is scoped to ``id``."""

    def __init__(self, store: StoreContext, mind_id: int, name: str, kind: str) -> None:
        self.store = store
        self.id = mind_id
        self.name = name
        self.kind = kind

    @property
    def adapter(self) -> SearchAdapter:
        return self.store.adapter

    @property
    def embedder(self) -> Embedder | None:
        return self.store.embedder

    def write(self) -> AbstractContextManager[Session]:
        return self.store.db.write()

    def read(self) -> AbstractContextManager[Session]:
        return self.store.db.read()

    def __repr__(self) -> str:
        return f"<MindContext {self.name!r} id={self.id}>"

