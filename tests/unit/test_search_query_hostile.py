"""Query normalisation under hostile and arbitrary input: unusual tokens, forty hostile
queries and Hypothesis properties.

The FTS5 checks use an in-memory SQLite table with the store's tokenizer (``porter unicode61``)
to prove what the docstrings claim: every expression parses, and a frame holding an unusual token
is found by a query for that token.
"""

from __future__ import annotations

import sqlite3
import unicodedata
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from waggle_store.dialects.postgres import tsquery_terms
from waggle_store.dialects.sqlite import fts5_match_expression
from waggle_store.search.query import (
    MAX_TERM_LENGTH,
    MAX_TERMS,
    MIN_TERM_LENGTH,
    STOP_WORDS,
    keyword_terms,
    like_patterns,
)

HOSTILE_QUERIES = [
    "",
    "   \t\n  ",
    '"',
    '""',
    'say "hello world',
    "'single' quotes'",
    "(unbalanced parenthesis",
    "balanced) (wrong way",
    "AND",
    "AND OR NOT",
    "alpha AND beta OR gamma NOT delta",
    "NEAR(alpha beta, 3)",
    "NEAR",
    "prefix*",
    "*",
    "content:secret",
    ":::",
    "^start",
    "^",
    "-excluded -",
    "--",
    "back\\slash \\\\ \\",
    "😀🚀🔥",
    "emoji😀inside tokens🚀",
    "'; DROP TABLE waggle_memory_frames; --",
    "1 OR 1=1",
    "SELECT * FROM waggle_memory_frames WHERE 1=1",
    "Robert'); DROP TABLE students;--",
    "a" * 10_000,
    ("lorem ipsum dolor sit amet " * 400),
    "the a an of to in for on with",
    "what which who whom how",
    "x",
    "ab",
    "nul\x00byte inside",
    "zero\u200bwidth space",
    "lone \ud800 surrogate",
    "{braces} [brackets] <angle>",
    "100% _under_ score%_",
    "Ω≈ç√∫ ¡™£¢∞§¶•ªº",
]


@pytest.fixture(scope="module")
def fts() -> Iterator[sqlite3.Connection]:
    con = sqlite3.connect(":memory:")
    try:
        con.execute("CREATE VIRTUAL TABLE f USING fts5(content, tokenize='porter unicode61')")
    except sqlite3.OperationalError:  # pragma: no cover - FTS5 compiled out
        pytest.skip("this SQLite has no FTS5")
    frames = [
        "I write C++ every day",
        "the server runs node.js 22",
        "send the e-mail to Bob",
        "we met in Zürich at a café",
        "follow_up meeting on 2026-05-13",
        "user prefers TypeScript over JavaScript",
        "Project Apollo status is green",
        "unrelated coffee notes",
    ]
    con.executemany("INSERT INTO f(content) VALUES (?)", [(text,) for text in frames])
    yield con
    con.close()


def fts_search(con: sqlite3.Connection, query: str) -> list[str]:
    expression = fts5_match_expression(keyword_terms(query))
    if expression is None:
        return []
    rows = con.execute("SELECT content FROM f WHERE f MATCH ? ORDER BY rank", (expression,))
    return [row[0] for row in rows]


# --- FTS5: unusual tokens are findable, hostile queries parse ----------------------------------


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("C++", "I write C++ every day"),
        ("node.js", "the server runs node.js 22"),
        ("e-mail", "send the e-mail to Bob"),
        ("Zürich", "we met in Zürich at a café"),
        ("café?", "we met in Zürich at a café"),
        ("2026-05-13", "follow_up meeting on 2026-05-13"),
        ("follow_up", "follow_up meeting on 2026-05-13"),
        ("TypeScript preferences", "user prefers TypeScript over JavaScript"),
        ("What's the status of Project Apollo?", "Project Apollo status is green"),
    ],
)
def test_unusual_tokens_are_found_by_fts5(
    fts: sqlite3.Connection, query: str, expected: str
) -> None:
    results = fts_search(fts, query)
    assert results, query
    assert results[0] == expected


def test_no_match_is_empty_not_an_error(fts: sqlite3.Connection) -> None:
    assert fts_search(fts, "quantum computing spacetime") == []


@pytest.mark.parametrize("query", HOSTILE_QUERIES)
def test_hostile_queries_never_raise(fts: sqlite3.Connection, query: str) -> None:
    terms = keyword_terms(query)
    assert len(terms) <= MAX_TERMS
    assert isinstance(fts_search(fts, query), list)
    patterns = like_patterns(query)
    assert len(patterns) <= MAX_TERMS
    tsquery_terms(terms)


def test_there_are_forty_hostile_queries() -> None:
    assert len(HOSTILE_QUERIES) == 40


# --- properties --------------------------------------------------------------------------------

any_text = st.text(alphabet=st.characters(exclude_categories=()), max_size=300)
wordy_text = st.lists(
    st.one_of(
        st.sampled_from(
            [
                '"',
                "'",
                "(",
                ")",
                "*",
                ":",
                "^",
                "-",
                "\\",
                "%",
                "_",
                "AND",
                "OR",
                "NOT",
                "NEAR",
                "the",
                "C++",
                "node.js",
                "e-mail",
                "Zürich",
                "😀",
                "\x00",
                " ",
                "\t",
            ]
        ),
        st.text(max_size=8),
    ),
    max_size=40,
).map("".join)


def _is_other(ch: str) -> bool:
    return unicodedata.category(ch).startswith("C")


@settings(max_examples=300)
@given(st.one_of(any_text, wordy_text))
def test_any_text_gives_well_formed_terms(query: str) -> None:
    terms = keyword_terms(query)
    assert len(terms) <= MAX_TERMS
    assert len({term.casefold() for term in terms}) == len(terms)
    for term in terms:
        assert isinstance(term, str)
        assert MIN_TERM_LENGTH <= len(term) <= MAX_TERM_LENGTH
        assert term == term.strip()
        assert not any(ch.isspace() or _is_other(ch) for ch in term)
        assert any(unicodedata.category(ch)[0] in "LN" for ch in term)
        assert term.casefold() not in STOP_WORDS
        term.encode("utf-8")  # bindable: no lone surrogates
    assert tsquery_terms(terms) == terms


@settings(max_examples=300)
@given(st.one_of(any_text, wordy_text))
def test_any_text_gives_an_fts5_expression_that_parses(query: str) -> None:
    con = sqlite3.connect(":memory:")
    con.execute("CREATE VIRTUAL TABLE f USING fts5(content, tokenize='porter unicode61')")
    con.execute("INSERT INTO f(content) VALUES ('some indexed text')")
    expression = fts5_match_expression(keyword_terms(query))
    if expression is not None:
        con.execute("SELECT rowid FROM f WHERE f MATCH ?", (expression,)).fetchall()
    con.close()


@settings(max_examples=300)
@given(st.one_of(any_text, wordy_text))
def test_any_text_gives_safe_like_patterns(query: str) -> None:
    patterns = like_patterns(query)
    assert len(patterns) <= MAX_TERMS
    for pattern in patterns:
        assert pattern.startswith("%")
        assert pattern.endswith("%")
        assert len(pattern) > 2
        body = pattern[1:-1]
        assert not any(_is_other(ch) for ch in body)
        # every %, _ and \ in the body is escaped: walk it pairwise
        i = 0
        while i < len(body):
            if body[i] == "\\":
                assert i + 1 < len(body)
                assert body[i + 1] in "\\%_"
                i += 2
            else:
                assert body[i] not in "%_"
                i += 1


@given(st.one_of(st.none(), st.integers(), st.binary()))
def test_non_strings_do_not_raise(value: object) -> None:
    assert keyword_terms(value) == []  # type: ignore[arg-type]
    assert like_patterns(value) == []  # type: ignore[arg-type]
