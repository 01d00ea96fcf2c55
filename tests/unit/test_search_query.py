"""Query normalisation: Waggle's worked examples under the Unicode rule, the rules one by one
and the LIKE fallback's patterns.

Hostile and arbitrary input (FTS5 parsing, Hypothesis properties) is in
test_search_query_hostile.py.
"""

from __future__ import annotations

import sqlite3

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

# fmt: off
SEED_STOP_WORDS = [
    "the", "a", "an", "is", "are", "was", "were", "be", "been", "being", "have", "has", "had",
    "do", "does", "did", "will", "would", "could", "should", "may", "might", "shall", "can", "to",
    "of", "in", "for", "on", "with", "at", "by", "from", "as", "into", "about", "this", "that",
    "these", "those", "it", "its", "my", "your", "our", "their", "what", "which", "who", "whom",
    "how", "when", "where", "why", "all", "each", "every", "both", "some", "any", "no", "not",
    "and", "or", "but",
]
# fmt: on


# --- constants ----------------------------------------------------------------------------------


def test_stop_words_are_the_seeds_list() -> None:
    # Waggle's stop words as its search code lists them: 65 distinct entries, ported as they are.
    assert len(SEED_STOP_WORDS) == len(set(SEED_STOP_WORDS)) == 65
    assert frozenset(SEED_STOP_WORDS) == STOP_WORDS


def test_min_term_length_is_three() -> None:
    assert MIN_TERM_LENGTH == 3


# --- Waggle's worked examples, adapted to the Unicode rule -------------------------------------


def test_status_question() -> None:
    # Waggle: "Whats" (apostrophe deleted, a token no index holds); here the apostrophe stays and
    # FTS5 would read "What's" as the phrase what + s; both are Postgres stop words, so the
    # SQLite lane drops the term as Postgres does (dialects/keyword_rank.py).
    terms = keyword_terms("What's the status of Project Apollo?")
    assert terms == ["What's", "status", "Project", "Apollo"]
    assert fts5_match_expression(terms) == '"status" OR "Project" OR "Apollo"'


def test_hiring_decisions() -> None:
    terms = keyword_terms("hiring decisions this month")
    assert terms == ["hiring", "decisions", "month"]
    assert fts5_match_expression(terms) == '"hiring" OR "decisions" OR "month"'


def test_accents_survive() -> None:
    assert keyword_terms("Zürich café über naïve") == ["Zürich", "café", "über", "naïve"]


def test_dotnet_and_cpp() -> None:
    # Waggle: only "NET". "C++" is three characters and is kept; "C#" is too short, as in Waggle.
    assert keyword_terms("C++ vs C# in .NET") == ["C++", "NET"]


def test_punctuated_tokens_keep_the_joined_form_then_long_parts() -> None:
    assert keyword_terms("e-mail follow_up 2026-05-13") == [
        "e-mail",
        "mail",
        "follow_up",
        "2026-05-13",
        "2026",
    ]
    assert keyword_terms("node.js") == ["node.js", "node"]


def test_boolean_words_are_stop_words() -> None:
    assert keyword_terms("AND OR NOT") == []
    assert fts5_match_expression([]) is None


def test_a_stray_double_quote_is_not_passed_through_raw() -> None:
    # Waggle: a query containing " went to MATCH raw and raised "unterminated string".
    assert keyword_terms('say "hello world') == ["say", "hello", "world"]


def test_only_stop_words_gives_no_terms() -> None:
    assert keyword_terms("the a an of to in for on with") == []


# --- the rules one by one ----------------------------------------------------------------------


def test_short_tokens_and_stop_words_are_dropped_case_insensitively() -> None:
    assert keyword_terms("The ABOUT Those ox go big") == ["big"]


def test_contractions_of_stop_words_are_stop_words() -> None:
    assert keyword_terms("it's") == []


def test_duplicates_are_dropped_case_insensitively_keeping_the_first_spelling() -> None:
    assert keyword_terms("Apollo apollo APOLLO Apollo's") == ["Apollo", "Apollo's"]


def test_surrounding_punctuation_is_trimmed() -> None:
    assert keyword_terms('(hello) "world"! ¿qué? «Zürich»') == ["hello", "world", "qué", "Zürich"]


def test_control_format_and_surrogate_characters_split_tokens() -> None:
    assert keyword_terms("abc\x00def ghi\u200bjkl mno\ud800pqr") == [
        "abc",
        "def",
        "ghi",
        "jkl",
        "mno",
        "pqr",
    ]


def test_marks_stay_inside_words() -> None:
    decomposed = "Zu\u0308rich"
    assert keyword_terms(decomposed) == [decomposed]
    assert keyword_terms("हिन्दी भाषा") == ["हिन्दी", "भाषा"]


def test_a_term_needs_a_letter_or_digit() -> None:
    assert keyword_terms("___ +++ ### ... 😀😀😀") == []


def test_terms_are_capped_in_number_and_length() -> None:
    many = " ".join(f"word{i}" for i in range(500))
    terms = keyword_terms(many)
    assert len(terms) == MAX_TERMS
    assert terms[0] == "word0"
    assert keyword_terms("x" * (MAX_TERM_LENGTH + 1)) == []
    assert keyword_terms("y" * MAX_TERM_LENGTH) == ["y" * MAX_TERM_LENGTH]
    assert keyword_terms("a" * 10_000 + " apollo") == ["apollo"]


def test_fts5_quotes_are_doubled() -> None:
    assert fts5_match_expression(['say"hi', "ok"]) == '"say""hi" OR "ok"'


def test_fts5_expression_drops_blank_and_cleans_foreign_terms() -> None:
    assert fts5_match_expression(["", "  ", "\x00"]) is None
    assert fts5_match_expression(["a\x00b"]) == '"a b"'


def test_tsquery_terms_are_the_terms_without_control_characters() -> None:
    assert tsquery_terms(["node.js", "e-mail", "Zürich"]) == ["node.js", "e-mail", "Zürich"]
    assert tsquery_terms(["", "nul\x00x"]) == ["nul x"]
    assert tsquery_terms([]) == []


# --- LIKE fallback -----------------------------------------------------------------------------


def test_like_patterns_escape_wildcards_and_backslash() -> None:
    assert like_patterns(r"50%off a_b back\slash") == [r"%50\%off%", r"%a\_b%", r"%back\\slash%"]


def test_like_patterns_trim_surrounding_punctuation() -> None:
    assert like_patterns("Apollo? (100%)") == ["%Apollo%", "%100%"]


def test_like_patterns_keep_short_and_stop_words_and_internal_punctuation() -> None:
    assert like_patterns("the node.js e-mail of C#") == [
        "%the%",
        "%node.js%",
        "%e-mail%",
        "%of%",
        "%C#%",
    ]


def test_like_patterns_fall_back_to_the_whole_query() -> None:
    assert like_patterns("😀 !!") == ["%😀 !!%"]
    assert like_patterns("") == []
    assert like_patterns(" \x00 ") == []


def test_like_patterns_truncate_long_tokens() -> None:
    (pattern,) = like_patterns("z" * 500)
    assert pattern == "%" + "z" * MAX_TERM_LENGTH + "%"


def test_like_patterns_match_in_sqlite() -> None:
    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE t (content TEXT)")
    con.executemany(
        "INSERT INTO t VALUES (?)", [("a 100% sure",), ("a_b",), ("aXb",), ("node.js rocks",)]
    )

    def like(query: str) -> set[str]:
        found: set[str] = set()
        for pattern in like_patterns(query):
            rows = con.execute("SELECT content FROM t WHERE content LIKE ? ESCAPE '\\'", (pattern,))
            found.update(row[0] for row in rows)
        return found

    assert like("100%sure") == set()
    assert like("a\\b") == set()
    con.execute("INSERT INTO t VALUES ('odds 50%off')")
    assert like("50%off") == {"odds 50%off"}
    assert like("a_b") == {"a_b"}  # "_" is literal, so "aXb" is not matched
    assert like("NODE.JS") == {"node.js rocks"}
