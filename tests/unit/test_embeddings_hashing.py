"""HashingEmbedder: deterministic across processes, unit-length, lexical, never the zero vector."""

from __future__ import annotations

import math

import pytest

from waggle_store.embeddings import Embedder, HashingEmbedder, validate_vector
from waggle_store.errors import InvalidInputError


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def norm(v: list[float]) -> float:
    return math.sqrt(sum(x * x for x in v))


def test_identity_and_protocol() -> None:
    emb = HashingEmbedder()
    assert emb.dimensions == 384
    assert emb.provider == "hashing"
    assert emb.model_id == "hashing/blake2b-signed-words-v1/384"
    assert isinstance(emb, Embedder)
    assert HashingEmbedder(64).model_id.endswith("/64")


def test_deterministic_within_process() -> None:
    a, b = HashingEmbedder(128), HashingEmbedder(128)
    assert a.embed_query("The cat sat on the mat") == b.embed_query("The cat sat on the mat")
    assert a.embed_documents(["x y", "z"]) == [a.embed_query("x y"), a.embed_query("z")]


def test_golden_vectors_pin_the_format() -> None:
    # Fixed expected values: the vectors cannot depend on the process (Python's hash() salt)
    # or change between releases, or vectors already stored would stop matching new queries.
    vec = HashingEmbedder(16).embed_query("Zürich café rendezvous, zürich!")
    expected = [0.0] * 16
    expected[5], expected[6], expected[7] = 1 / 6**0.5, -2 / 6**0.5, 1 / 6**0.5
    assert vec == pytest.approx(expected)
    assert HashingEmbedder(16).embed_query("!!!") == [0.0] * 10 + [1.0] + [0.0] * 5


@pytest.mark.parametrize(
    "text", ["hello world", "", "   ", "!!!", "🙂🙂", "a a a a", "Zürich", "x" * 10_000]
)
def test_unit_norm_and_nonzero_for_any_text(text: str) -> None:
    vec = HashingEmbedder(64).embed_query(text)
    assert len(vec) == 64
    assert norm(vec) == pytest.approx(1.0)
    validate_vector(vec, 64)  # finite, nonzero, right size


def test_case_and_punctuation_insensitive_unicode_words() -> None:
    emb = HashingEmbedder()
    assert emb.embed_query("Café, ZÜRICH!") == emb.embed_query("café zürich")
    # Accented letters are word characters: "café" is not "caf" (Waggle's ASCII \w bug).
    assert emb.embed_query("café") != emb.embed_query("caf")


def test_lexical_similarity() -> None:
    emb = HashingEmbedder()
    base = emb.embed_query("postgres vector index tuning")
    near = emb.embed_query("tuning the postgres vector index")
    far = emb.embed_query("banana smoothie recipe")
    assert cosine(base, near) > 0.8
    assert cosine(base, near) > cosine(base, far)
    assert abs(cosine(base, far)) < 0.5


def test_texts_without_words_still_differ() -> None:
    emb = HashingEmbedder()
    assert emb.embed_query("!!!") != emb.embed_query("???")


@pytest.mark.parametrize("bad", [0, 1, -5, 2.5, True])
def test_rejects_bad_dimensions(bad: object) -> None:
    with pytest.raises(InvalidInputError):
        HashingEmbedder(bad)  # type: ignore[arg-type]
