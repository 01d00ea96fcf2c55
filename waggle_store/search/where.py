"""A search's ``where`` filter and ``query_vector`` checked before any lane runs.

``where`` (a :class:`~waggle_store.records.Where` or a dict of its keys) becomes the lanes'
:class:`~waggle_store.dialects.base.Attributes`; every part is validated here, so the lanes bind
only known columns and JSON scalars.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any, Final

from waggle_store.dialects.base import Attributes
from waggle_store.errors import InvalidInputError
from waggle_store.models import FRAME_SOURCES, IMPORTANCE_LEVELS
from waggle_store.records import Where
from waggle_store.repositories.vectors import ModelKey
from waggle_store.textinput import MAX_METADATA_KEY, unstorable

__all__ = ["MAX_QUERY_DIMENSIONS", "check_dimensions", "plan_where", "query_vector"]

_KEYS: Final = ("source", "importance", "min_salience", "metadata")
#: Metadata keys one filter may compare.
_MAX_METADATA_KEYS: Final = 32
#: The longest metadata string value a filter compares.
_MAX_VALUE_CHARS: Final = 4096
#: The widest query vector accepted (pgvector's own limit for a stored vector).
MAX_QUERY_DIMENSIONS: Final = 16_000


def plan_where(where: Any) -> Attributes | None:
    """The lanes' attribute filters of ``where``; None when it asks for nothing."""
    if where is None:
        return None
    if isinstance(where, Where):
        given: Mapping[Any, Any] = asdict(where)
    elif isinstance(where, Mapping):
        given = where
    else:
        raise InvalidInputError(f"where must be a ws.Where, a dict or None, "
                                f"got {type(where).__name__}")
    unknown = [k for k in given if k not in _KEYS]
    if unknown:
        raise InvalidInputError(f"unknown where keys {unknown!r}; known: {list(_KEYS)}")
    attrs = Attributes(
        sources=_choices(given.get("source"), FRAME_SOURCES, "source"),
        importances=_choices(given.get("importance"), IMPORTANCE_LEVELS, "importance"),
        min_salience=_salience(given.get("min_salience")),
        metadata=_metadata(given.get("metadata")),
    )
    if attrs == Attributes():
        return None
    return attrs


def _choices(value: Any, allowed: Sequence[str], name: str) -> tuple[str, ...] | None:
    if value is None:
        return None
    values = [value] if isinstance(value, str) else value
    if not isinstance(values, list | tuple | set | frozenset) or not values:
        raise InvalidInputError(f"where[{name!r}] must be one of {list(allowed)} or a "
                                f"non-empty list of them, got {value!r}")
    for v in values:
        if v not in allowed:
            raise InvalidInputError(f"where[{name!r}]: {v!r} is not one of {list(allowed)}")
    return tuple(sorted(set(values)))


def _salience(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) \
            or not math.isfinite(value):
        raise InvalidInputError(f"where['min_salience'] must be a finite number, got {value!r}")
    return float(value)


def _metadata(value: Any) -> tuple[tuple[str, Any], ...]:
    if value is None:
        return ()
    if not isinstance(value, Mapping) or not value or len(value) > _MAX_METADATA_KEYS:
        raise InvalidInputError(f"where['metadata'] must be a dict of 1 to "
                                f"{_MAX_METADATA_KEYS} keys, got {value!r}")
    pairs = []
    for key, item in value.items():
        if not isinstance(key, str) or not key or len(key) > MAX_METADATA_KEY \
                or unstorable(key) is not None:
            raise InvalidInputError(f"where['metadata'] keys must be strings of 1 to "
                                    f"{MAX_METADATA_KEY} characters, got {key!r}")
        if isinstance(item, str):
            if len(item) > _MAX_VALUE_CHARS or unstorable(item) is not None:
                raise InvalidInputError(f"where['metadata'][{key!r}] must be a storable string "
                                        f"of at most {_MAX_VALUE_CHARS} characters")
        elif isinstance(item, float) and not math.isfinite(item):
            raise InvalidInputError(f"where['metadata'][{key!r}] must be finite, got {item!r}")
        elif isinstance(item, int) and not isinstance(item, bool) and abs(item) >= 2 ** 53:
            raise InvalidInputError(f"where['metadata'][{key!r}] is too large a number")
        elif item is not None and not isinstance(item, bool | int | float | str):
            raise InvalidInputError(f"where['metadata'][{key!r}] must be a string, number, "
                                    f"boolean or None (equality), got {type(item).__name__}")
        pairs.append((key, item))
    return tuple(sorted(pairs, key=lambda p: p[0]))


def check_dimensions(vector: Sequence[float], key: ModelKey) -> None:
    """A caller's query vector must have the dimensions of the model it is compared with."""
    if len(vector) != key.dimensions:
        raise InvalidInputError(f"query_vector has {len(vector)} dimensions; the mind's model "
                                f"({key.provider}/{key.model}) has {key.dimensions}")


def query_vector(value: Any) -> list[float] | None:
    """A caller's query embedding as floats (its length is checked against the mind's model by
    the search); None for none."""
    if value is None:
        return None
    if isinstance(value, str | bytes | Mapping) or (
            not isinstance(value, Sequence) and not hasattr(value, "tolist")):
        raise InvalidInputError("query_vector must be a sequence of numbers")
    items = value.tolist() if hasattr(value, "tolist") else list(value)
    if not items or len(items) > MAX_QUERY_DIMENSIONS:
        raise InvalidInputError(f"query_vector must hold 1 to {MAX_QUERY_DIMENSIONS} numbers")
    out = []
    for x in items:
        if isinstance(x, bool) or not isinstance(x, int | float) or not math.isfinite(x):
            raise InvalidInputError(f"query_vector must hold finite numbers, got {x!r}")
        out.append(float(x))
    if not any(out):
        raise InvalidInputError("query_vector is all zeros: it has no direction to compare")
    return out
