"""validate_vector (the storage layer's gate) and batch splitting."""

from __future__ import annotations

import math

import pytest

from waggle_store.embeddings import l2_normalize, make_model_id, split_batches, validate_vector
from waggle_store.errors import DimensionMismatchError, InvalidInputError, InvalidVectorError


def test_validate_returns_floats() -> None:
    assert validate_vector([1, 2, 3], 3) == [1.0, 2.0, 3.0]
    assert validate_vector((0.5, 0.5), 2) == [0.5, 0.5]


def test_validate_normalizes_on_request() -> None:
    vec = validate_vector([3, 4], 2, normalize=True)
    assert vec == pytest.approx([0.6, 0.8])
    assert l2_normalize([0.0, 2.0]) == [0.0, 1.0]


def test_dimension_mismatch() -> None:
    with pytest.raises(DimensionMismatchError, match=r"3 dimensions.*4"):
        validate_vector([1, 2, 3], 4)


@pytest.mark.parametrize(
    "vec",
    [[math.nan, 1.0], [math.inf, 1.0], [-math.inf, 0.0], [0.0, 0.0], ["a", 1.0], [None, 1.0]],
)
def test_invalid_vectors(vec: list[object]) -> None:
    with pytest.raises(InvalidVectorError):
        validate_vector(vec, 2)  # type: ignore[arg-type]


def test_string_is_not_a_vector() -> None:
    with pytest.raises(InvalidVectorError):
        validate_vector("12", 2)  # type: ignore[arg-type]


def test_errors_are_invalid_input() -> None:
    assert issubclass(DimensionMismatchError, InvalidInputError)
    assert issubclass(InvalidVectorError, InvalidInputError)


def test_model_id() -> None:
    assert make_model_id("openai", "text-embedding-3-small", 512) == (
        "openai/text-embedding-3-small/512"
    )


def test_split_batches_by_items_and_chars() -> None:
    texts = ["aaaa", "bb", "cccccc", "d", "e"]
    assert list(split_batches(texts, max_items=2)) == [["aaaa", "bb"], ["cccccc", "d"], ["e"]]
    assert list(split_batches(texts, max_items=10, max_chars=7)) == [
        ["aaaa", "bb"],
        ["cccccc", "d"],
        ["e"],
    ]
    # A single oversized text still goes, alone.
    assert list(split_batches(["x" * 20, "y"], max_items=10, max_chars=5)) == [["x" * 20], ["y"]]
    assert list(split_batches([], max_items=3)) == []
