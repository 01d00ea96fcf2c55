"""Status polarity of short texts: does it say something was approved, or that it was rejected?

CombinedRetrieval uses it to notice that workspace memory and an external source disagree. The
status words are matched as whole words, never as substrings ("inactive" is not "active",
"unapproved" is not "approved"), and a
negation shortly before a status word in the same clause ("was not approved", "no longer
active") turns its polarity around, so "not approved" is not read as an approval.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from typing import Final, Literal

Polarity = Literal["positive", "negative", "neutral"]

POSITIVE_STATUS: Final = frozenset(
    {
        "approved", "accepted", "selected", "chose", "chosen", "decided", "confirmed",
        "active", "completed", "launched", "enabled",
    }
)  # fmt: skip
NEGATIVE_STATUS: Final = frozenset(
    {
        "rejected", "cancelled", "canceled", "postponed", "deprecated", "deferred",
        "suspended", "disabled", "abandoned", "declined", "revoked",
    }
)  # fmt: skip
NEGATORS: Final = frozenset({"not", "never", "no", "non", "without", "nor", "neither"})
# How many words before a status word a negation still reaches ("has not yet been approved").
NEGATION_WINDOW: Final = 3

_CLAUSE_SPLIT = re.compile(r"[.;:!?,\n]+")
_WORD = re.compile(r"[\w'’]+")


def _is_negator(word: str) -> bool:
    return word in NEGATORS or word.endswith(("n't", "n’t"))


def status_words(text: str) -> tuple[bool, bool]:
    """(says something positive, says something negative) about a status, in ``text``."""
    positive = negative = False
    folded = unicodedata.normalize("NFC", text).casefold()
    for clause in _CLAUSE_SPLIT.split(folded):
        words = _WORD.findall(clause)
        for index, word in enumerate(words):
            if word in POSITIVE_STATUS:
                is_positive = True
            elif word in NEGATIVE_STATUS:
                is_positive = False
            else:
                continue
            window = words[max(0, index - NEGATION_WINDOW) : index]
            if any(_is_negator(w) for w in window):
                is_positive = not is_positive
            if is_positive:
                positive = True
            else:
                negative = True
    return positive, negative


def polarity(texts: Iterable[str]) -> Polarity:
    """Positive or negative only when one side is present and the other absent."""
    positive = negative = False
    for text in texts:
        pos, neg = status_words(text)
        positive = positive or pos
        negative = negative or neg
    if positive and not negative:
        return "positive"
    if negative and not positive:
        return "negative"
    return "neutral"


__all__ = [
    "NEGATION_WINDOW",
    "NEGATIVE_STATUS",
    "NEGATORS",
    "POSITIVE_STATUS",
    "Polarity",
    "polarity",
    "status_words",
]
