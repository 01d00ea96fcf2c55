"""An in-process vector index: each (mind, model) as a float32 matrix in memory, searched by an
exact numpy scan or, for large minds whose vectors suit it, a coarse pass by binary codes whose
candidates are rescored exactly.

Pure computation, no SQL and no threads: the owner (the SQLite adapter,
:mod:`waggle_store.dialects.sqlite_vecindex`) reads the rows out of its database, keeps them
current and verifies every hit against the tables. Modules:

* :mod:`.rows` — one mind's rows and their per-row metadata;
* :mod:`.topk` — the k nearest under session/time filters, exact or by the coarse pass;
* :mod:`.codes` — the coarse pass's codes and its per-mind calibration;
* :mod:`.cache` — the minds held, within a memory budget, and their lock.

numpy is imported on first use (:func:`numpy_or_none`), never by ``import waggle_store``.
"""

from __future__ import annotations

import importlib
import os
from typing import Any, Final

from waggle_store.errors import InvalidInputError

__all__ = ["DEFAULT_BUDGET", "budget_from_env", "mode_from_env", "numpy_or_none"]

#: The default memory budget of one store's index: 2 GiB.
DEFAULT_BUDGET: Final = 2 * 1024**3


def budget_from_env() -> int:
    """``WAGGLE_VECTOR_INDEX_BYTES`` (bytes; ``0`` turns the index off), else the default."""
    raw = os.environ.get("WAGGLE_VECTOR_INDEX_BYTES", "").strip()
    if not raw:
        return DEFAULT_BUDGET
    try:
        budget = int(raw)
    except ValueError:
        budget = -1
    if budget < 0:
        raise InvalidInputError(
            f"WAGGLE_VECTOR_INDEX_BYTES must be a whole number of bytes, not {raw!r}")
    return budget


def mode_from_env() -> str:
    """``WAGGLE_VECTOR_INDEX_MODE``: ``auto`` (large minds calibrated for the coarse pass, used
    where it recalls well) or ``exact`` (every scan exact)."""
    raw = os.environ.get("WAGGLE_VECTOR_INDEX_MODE", "").strip().lower() or "auto"
    if raw not in ("auto", "exact"):
        raise InvalidInputError(
            f"WAGGLE_VECTOR_INDEX_MODE must be 'auto' or 'exact', not {raw!r}")
    return raw


def numpy_or_none() -> Any:
    """numpy, or None when it is not installed (the owner then searches another way)."""
    try:
        return importlib.import_module("numpy")
    except ImportError:
        return None
