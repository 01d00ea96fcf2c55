"""The "sentences" text form's parts and pooling (``waggle_store/embeddings/sentences.py``)."""

from __future__ import annotations

import math

import pytest

from waggle_store.embeddings import HashingEmbedder
from waggle_store.embeddings.sentences import (
    TEXT_FORMS,
    embed_by_sentences,
    sentence_parts,
    text_form_of,
)
from waggle_store.errors import InvalidInputError, WaggleStoreError


def test_a_speaker_label_is_carried_into_each_sentence() -> None:
    assert sentence_parts("Caroline: I went there. It was great! Did you go?") == [
        "Caroline: I went there.", "Caroline: It was great!", "Caroline: Did you go?"]
    assert sentence_parts("user: Fix the build.\nThen deploy it.") == [
        "user: Fix the build.", "user: Then deploy it."]


def test_text_without_a_label_is_split_plainly() -> None:
    assert sentence_parts("The deploy failed. Roll it back!") == [
        "The deploy failed.", "Roll it back!"]
    # Not a speaker: more than one word before the colon, a URL, a label at the end.
    assert sentence_parts("Note to self: buy milk. And eggs.") == [
        "Note to self: buy milk.", "And eggs."]
    assert sentence_parts("see https://example.com. It is down.") == [
        "see https://example.com.", "It is down."]


def test_one_sentence_is_embedded_whole() -> None:
    for text in ("Caroline: I went there.", "no punctuation at all", "Jon:", "pi is 3.14, roughly",
                 "Melanie: Hi!  ", ""):
        assert sentence_parts(text) == []


def test_pooling_is_the_normalised_mean_in_one_call() -> None:
    calls: list[list[str]] = []
    basis = {"a: x.": [1.0, 0.0], "a: y.": [0.0, 1.0], "solo": [0.6, 0.8]}

    def embed(texts: list[str]) -> list[list[float]]:
        calls.append(texts)
        return [basis[t] for t in texts]

    assert embed_by_sentences(["a: x. y.", "solo"], embed) == [
        pytest.approx([1 / math.sqrt(2), 1 / math.sqrt(2)]), [0.6, 0.8]]
    assert calls == [["a: x.", "a: y.", "solo"]]
    with pytest.raises(WaggleStoreError, match="2 vectors for 3 texts"):
        embed_by_sentences(["a: x. y.", "solo"], lambda texts: [[1.0, 0.0]] * 2)


def test_the_text_form_of_an_embedder() -> None:
    assert TEXT_FORMS == ("whole", "sentences")
    assert text_form_of(HashingEmbedder()) == "whole"
    assert text_form_of(object()) == "whole"  # an embedder written before the attribute

    class Sentences:
        text_form = "sentences"

    class Unknown:
        text_form = "paragraphs"

    assert text_form_of(Sentences()) == "sentences"
    with pytest.raises(InvalidInputError, match="'paragraphs'"):  # never recorded as another
        text_form_of(Unknown())
