"""Pure helpers of the memory layers: prefix stripping, hashing, validation (no database)."""

from __future__ import annotations

import hashlib
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from waggle_store.errors import InvalidInputError
from waggle_store.repositories.common import (
    MAX_CONTENT_BYTES,
    check_content,
    check_json,
    check_name,
    content_hash,
    js_trim,
    strip_hm_prefix,
)
from waggle_store.repositories.sessions import new_gop_id


@pytest.mark.parametrize(
    ("raw", "stripped"),
    [  # Waggle's stripHmPrefix cases
        ("[hm session:openclaw-gateway:c1 src:openclaw event:stop] the body", "the body"),
        ("plain harvested body", "plain harvested body"),
        ("do X [note] then Y", "do X [note] then Y"),
        ("[hm src:claude-code event:stop] do X [note] then Y", "do X [note] then Y"),
        ("[hm session:1 src:x] body text", "body text"),
        ("no prefix [hm session:1] later", "no prefix [hm session:1] later"),
        ("[hm src:x]\n\t  body", "body"),
        ("[hmm not a prefix] body", "[hmm not a prefix] body"),
    ],
)
def test_strip_hm_prefix(raw: str, stripped: str) -> None:
    assert strip_hm_prefix(raw) == stripped


def test_hash_ignores_prefix_and_surrounding_whitespace() -> None:
    expected = hashlib.sha256(b"same body").hexdigest()
    assert content_hash("same body") == expected
    assert content_hash("  same body \n") == expected
    assert content_hash("[hm session:s1 src:openclaw event:stop] same body") == expected
    assert content_hash("[hm session:s2 src:claude-code event:stop] same body") == expected
    assert content_hash("same  body") != expected


def test_js_trim_matches_javascript_whitespace() -> None:
    assert js_trim("\ufeff\u3000x\u00a0\u2028") == "x"  # JS trims BOM and ideographic space
    assert js_trim("\x1cx\x1f") == "\x1cx\x1f"  # ... but not the ASCII separators Python strips


@given(st.text())
def test_hash_is_stable_under_trim(text: str) -> None:
    assert content_hash(text) == content_hash(f" \n{text}\t ")


@pytest.mark.parametrize(
    "bad",
    ["", "   \n\t", "a\x00b", "x" * (MAX_CONTENT_BYTES + 1), "\ud800 lone surrogate",
     "[hm src:x]   ", 42, None, b"bytes"],
)
def test_check_content_refuses(bad: object) -> None:
    with pytest.raises(InvalidInputError):
        check_content(bad)


def test_check_content_accepts_the_maximum() -> None:
    text = "é" * (MAX_CONTENT_BYTES // 2)
    assert check_content(text) is text


@pytest.mark.parametrize("bad", ["", "  ", "a\x00", "x" * 256, 7])
def test_check_name_refuses(bad: object) -> None:
    with pytest.raises(InvalidInputError):
        check_name(bad, name="gop_id")


@pytest.mark.parametrize(
    "bad", [float("nan"), {"a": float("inf")}, {"s": "a\x00"}, object(), {1, 2}]
)
def test_check_json_refuses(bad: object) -> None:
    with pytest.raises(InvalidInputError):
        check_json(bad, name="value")


def test_check_json_normalises_keys() -> None:
    assert check_json({1: (1, 2)}, name="v") == {"1": [1, 2]}


def test_gop_id_format() -> None:
    pattern = re.compile(r"^session:\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z:[0-9a-z]{6}$")
    ids = {new_gop_id() for _ in range(200)}
    assert all(pattern.match(g) for g in ids)
    assert len(ids) == 200
