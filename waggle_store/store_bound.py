"""What a bound store (``open_store(..., bound_mind=NAME)``) refuses, for the Store and its
export/import methods: any mind but its own is NotFoundError, and an import goes into its own
mind. On PostgreSQL row-level security refuses the same rows on the server as well."""

from __future__ import annotations

import os
from typing import Any

from waggle_store.context import MindContext
from waggle_store.errors import NotFoundError
from waggle_store.mind import Mind
from waggle_store.pipeline.transfer.importer import Source
from waggle_store.records import ImportReport
from waggle_store.store_transfer import TransferMixin


class BoundMixin(TransferMixin):
    """The bound-mind checks; ``bound_mind`` is ``(id, name)``, or None for an unbound store."""

    bound_mind: tuple[int, str] | None = None
    user_id: str

    def _check_bound(self, name: str) -> None:
        """NotFoundError for any mind but the bound one (a bound store knows no other)."""
        if self.bound_mind is not None and name != self.bound_mind[1]:
            raise NotFoundError(f"no mind named {name!r} (this store is bound to one mind)")

    def _check_user(self, user_id: str | None) -> None:
        """NotFoundError for any quota user but the store's own (``open_store(user_id=)``), on a
        bound store: quotas are counted per user, and the other users are other tenants."""
        if self.bound_mind is not None and user_id not in (None, self.user_id):
            raise NotFoundError(f"no quota of user {user_id!r} (this store is bound to one mind)")

    def _mind_context(self, mind: str | Mind) -> MindContext:
        self._check_bound(mind if isinstance(mind, str) else mind.name)
        return super()._mind_context(mind)

    def import_mind(self, src: Source, *, into: str | None = None, **kwargs: Any) -> ImportReport:
        """As :meth:`TransferMixin.import_mind`; a bound store imports into its own mind."""
        if self.bound_mind is not None:
            into = into or self.bound_mind[1]
            self._check_bound(into)
        return super().import_mind(src, into=into, **kwargs)

    def import_waggle_mind(self, path: str | os.PathLike[str], *, into: str,
                           **kwargs: Any) -> ImportReport:
        self._check_bound(into)
        return super().import_waggle_mind(path, into=into, **kwargs)

    def import_openfang(self, src: Source, *, into: str, **kwargs: Any) -> ImportReport:
        self._check_bound(into)
        return super().import_openfang(src, into=into, **kwargs)


__all__ = ["BoundMixin"]
