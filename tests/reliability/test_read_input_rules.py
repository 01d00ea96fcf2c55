"""The input rules of :mod:`waggle_store.textinput`, and ``knowledge.search_entities`` under them
on both dialects (issue 12, finding 5: a lone surrogate, a 50 KB query, a NUL and LIKE
wildcards raised raw driver errors)."""

from __future__ import annotations

import pytest

import waggle_store as ws
from waggle_store import textinput
from waggle_store.search.query import keyword_terms, like_patterns


@pytest.mark.parametrize(
    ("raw", "clean"),
    [("a\x00b", "a b"), ("\ud800x", "x"), ("  \x1b[1mhi\u200b ", "[1mhi"), ("plain", "plain")],
)
def test_scrub_turns_other_characters_into_spaces(raw: str, clean: str) -> None:
    assert textinput.scrub(raw) == clean
    assert textinput.check_query(raw) == clean


def test_like_metacharacters_are_literal() -> None:
    assert textinput.like_contains("100%_a\\b") == "%100\\%\\_a\\\\b%"
    # search's LIKE fallback uses the same rule
    assert like_patterns("100%_done") == [textinput.like_contains("100%_done")]


@pytest.mark.parametrize("bad", ["a\x00b", "\udc80", "x" * 301, 5, None])
def test_identifiers_are_refused_not_altered(bad: object) -> None:
    with pytest.raises(ws.InvalidInputError):
        textinput.check_identifier(bad, name="gop_id", max_length=300)


@pytest.mark.parametrize("bad", [True, 1.0, "1", 2**63, -(2**63) - 1])
def test_ids_fit_64_bits(bad: object) -> None:
    with pytest.raises(ws.InvalidInputError):
        textinput.check_id(bad)


@pytest.mark.parametrize("bad", [0, -1, True, 10**9, "5"])
def test_limits(bad: object) -> None:
    with pytest.raises(ws.InvalidInputError):
        textinput.check_limit(bad)


def test_search_terms_never_carry_other_characters() -> None:
    terms = keyword_terms("Apollo\x00Zephyr \ud800Mercury")
    assert terms == ["Apollo", "Zephyr", "Mercury"]


def _names(entities: list[ws.Entity]) -> list[str]:
    return sorted(e.name for e in entities)  # sorted here: collations differ per dialect


def test_search_entities_takes_any_text(mind: ws.Mind) -> None:
    k = mind.knowledge
    k.create_entity("project", "Apollo 100%_done")
    k.create_entity("project", "Apollo 1000 done")
    k.create_entity("person", "Zoë Ñuñez")
    # Only a scrubbed-away character: the same as the empty query (every name contains it).
    assert _names(k.search_entities("\ud800")) == _names(k.search_entities("")) != []
    assert _names(k.search_entities("x" * 50_000)) == []  # longer than any name
    assert _names(k.search_entities("Apollo\x00")) == ["Apollo 100%_done", "Apollo 1000 done"]
    assert _names(k.search_entities("%_")) == ["Apollo 100%_done"]  # literal, not wildcards
    assert _names(k.search_entities("0%")) == ["Apollo 100%_done"]
    assert _names(k.search_entities("_")) == ["Apollo 100%_done"]
    assert _names(k.search_entities("zoë ñ")) == ["Zoë Ñuñez"]
    with pytest.raises(ws.InvalidInputError):
        k.search_entities(b"Apollo")  # type: ignore[arg-type]
    with pytest.raises(ws.InvalidInputError):
        k.search_entities("Apollo", limit=2**63)


def test_identifier_reads_refuse_unstorable_text(mind: ws.Mind) -> None:
    """Lookups by identifier either answer or raise InvalidInputError, never a driver error."""
    for bad in ("\ud800", "a\x00b"):
        for call in (lambda v: mind.sessions.get(v), lambda v: mind.kv.get(v),
                     lambda v: mind.frames.gop(v), lambda v: mind.knowledge.entities_by_type(v)):
            try:
                result = call(bad)
            except ws.InvalidInputError:
                continue
            assert not result
