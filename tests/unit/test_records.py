"""The records a search builds per result without their dataclass ``__init__``
(``records.from_values``) are the records ``__init__`` builds."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from datetime import UTC, datetime

import pytest

from waggle_store.records import Frame, SearchResult, from_values

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
ROW = (7, "P", "g-1", 3, 5, "hello there", "normal", "user", 2, NOW, NOW, {"k": 1})


def test_from_values_is_the_constructor() -> None:
    built, made = from_values(Frame, ROW), Frame(*ROW)
    assert type(built) is Frame
    assert built == made
    assert built.__dict__ == made.__dict__
    assert repr(built) == repr(made)
    assert pickle.loads(pickle.dumps(built)) == made
    assert copy.deepcopy(built) == made
    assert dataclasses.replace(built, t=4) == Frame(*ROW[:3], 4, *ROW[4:])
    result = from_values(SearchResult, (built, 0.5, 1.1, 0.55, {"rrf": 0.5}, 0.25))
    assert result == SearchResult(made, 0.5, 1.1, 0.55, {"rrf": 0.5}, 0.25)
    assert dataclasses.asdict(result) == dataclasses.asdict(
        SearchResult(made, 0.5, 1.1, 0.55, {"rrf": 0.5}, 0.25))


def test_from_values_records_stay_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        from_values(Frame, ROW).content = "changed"  # type: ignore[misc]


@pytest.mark.parametrize("values", [ROW[:-1], (*ROW, "extra")])
def test_from_values_needs_every_field(values: tuple[object, ...]) -> None:
    with pytest.raises(ValueError, match="zip"):
        from_values(Frame, values)


def test_from_values_only_for_the_records_it_knows() -> None:
    @dataclasses.dataclass(frozen=True)
    class Other:
        x: int

    with pytest.raises(KeyError):
        from_values(Other, (1,))
