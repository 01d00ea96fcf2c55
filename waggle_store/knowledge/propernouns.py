"""Capitalised runs ("Sarah Chen", "Project Apollo", "Zürich Labs") and their classification.

Names are matched in any cased script, so "José García" and "Zürich" are whole names, not
ASCII ``[A-Z][a-z]+`` fragments. Python's ``re`` has no ``\\p{Lu}``, and character classes
listing every cased letter are slow to build and to compile, so the patterns run instead over a
*shape* of the text: the same length, ASCII kept as it is, every other character replaced by a
marker for its class (uppercase letter, lowercase letter, other word character, space, line
break, punctuation). Match spans in the shape are spans in the text.
"""

from __future__ import annotations

import re
import unicodedata

from waggle_store.knowledge.wordlists import (
    LEADING_FILLER_WORDS,
    ORG_INDICATORS,
    PERSON_FIRST_NAMES,
    PROJECT_INDICATORS,
    SKIP_WORDS,
)

_UPPER = "\x02"  # a non-ASCII uppercase or titlecase letter
_LOWER = "\x01"  # a non-ASCII lowercase letter
_WORD = "\x03"  # any other non-ASCII word character (uncased letters, digits, marks)
_PUNCT = "\x04"  # anything else that is neither a word character nor whitespace
_LINE_BREAKS = frozenset("\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")


def _shape_of(char: str) -> str:
    if char in _LINE_BREAKS:
        return "\n"
    if char.isspace():
        return " "
    if char.isascii():
        return char if char >= " " else _PUNCT
    category = unicodedata.category(char)
    if category in ("Lu", "Lt"):
        return _UPPER
    if category == "Ll":
        return _LOWER
    if char.isalnum() or category.startswith("M"):
        return _WORD
    return _PUNCT


_SHAPE_CACHE_LIMIT = 1 << 16


class _ShapeTable(dict[int, str]):
    """A str.translate table that fills itself in, one code point at a time.

    It stops remembering after 65,536 code points, so text made of every code point there is
    cannot make it grow without bound; later lookups are computed each time instead.
    """

    def __missing__(self, code: int) -> str:
        value = _shape_of(chr(code))
        if len(self) < _SHAPE_CACHE_LIMIT:
            self[code] = value
        return value


_SHAPES = _ShapeTable()


def shape(text: str) -> str:
    """``text`` with one class marker per non-ASCII character; same length, same spans."""
    return text.translate(_SHAPES)


# Patterns over the shape (compile with re.ASCII). Horizontal whitespace only: a line break
# ends a sentence (a heading, a list item) as surely as a full stop, so no name runs across one.
HSPACE = r"[ ]+"
_WORD_CHAR = rf"[0-9A-Za-z_{_UPPER}{_LOWER}{_WORD}]"
WORD = rf"[A-Z{_UPPER}][a-z{_LOWER}]+"
# Two or more proper words, starting and ending on word boundaries.
RUN = rf"(?<!{_WORD_CHAR}){WORD}(?:{HSPACE}{WORD})+(?!{_WORD_CHAR})"

_RUN_RE = re.compile(RUN, re.ASCII)


def run_spans(shaped: str) -> list[tuple[int, int]]:
    """(start, end) of every maximal capitalised run in an already shaped text, left to right."""
    return [m.span() for m in _RUN_RE.finditer(shaped)]


def find_runs(text: str) -> list[str]:
    """Capitalised runs left to right, without overlap (a run consumes its words)."""
    return [text[start:end] for start, end in run_spans(shape(text))]


def strip_leading_fillers(words: list[str], *, also_skip_words: bool = False) -> list[str]:
    """Drop sentence-opening words from the front of a run.

    ``also_skip_words`` strips the skip words too; the entity pass keeps the rule
    of dropping such runs whole, but a relation endpoint is better served by the name that
    follows ("the Platform Team" at a sentence start is still the Platform Team).
    """
    start = 0
    while start < len(words) and (
        words[start] in LEADING_FILLER_WORDS or (also_skip_words and words[start] in SKIP_WORDS)
    ):
        start += 1
    return words[start:]


def entity_name(run: str) -> str | None:
    """The entity name a capitalised run stands for, or None when it names nothing.

    A run opening with a skip word is dropped whole (Waggle's skip rule).
    """
    words = run.split()
    if words[0] in SKIP_WORDS:
        return None
    words = strip_leading_fillers(words)
    if len(words) < 2 or words[0] in SKIP_WORDS:
        return None
    name = " ".join(words)
    return name if len(name) >= 3 else None


def endpoint_name(run: str) -> str | None:
    """The name a relation endpoint stands for (fillers and skip words stripped), or None."""
    words = strip_leading_fillers(run.split(), also_skip_words=True)
    if len(words) < 2:
        return None
    name = " ".join(words)
    return name if len(name) >= 3 else None


def _any_word(words: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile(r"\b(?:" + "|".join(words) + r")\b", re.IGNORECASE)


_ORG_RE = _any_word(ORG_INDICATORS)
_PROJECT_RE = re.compile(r"^(?:" + "|".join(PROJECT_INDICATORS) + r")\b", re.IGNORECASE)


def classify_proper_noun(name: str) -> str:
    """Type of a capitalised name: person > organization > project > concept.

    Waggle also computes a concept flag (CONCEPT_INDICATORS), but concept is both the lowest
    priority and the default, so the flag never changes the answer and is not evaluated here.
    """
    if name.split()[0].casefold() in PERSON_FIRST_NAMES:
        return "person"
    if _ORG_RE.search(name):
        return "organization"
    if _PROJECT_RE.search(name):
        return "project"
    return "concept"


__all__ = [
    "HSPACE",
    "RUN",
    "WORD",
    "classify_proper_noun",
    "endpoint_name",
    "entity_name",
    "find_runs",
    "run_spans",
    "shape",
    "strip_leading_fillers",
]
