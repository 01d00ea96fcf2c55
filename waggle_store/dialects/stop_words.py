"""PostgreSQL's ``english`` stop words, which its keyword lane never matches: the SQLite lane
drops a query term made only of them too, so both dialects rank alike."""

from __future__ import annotations

import re
from typing import Final

#: PostgreSQL's ``english`` stop words (``tsearch_data/english.stop``, the Snowball list),
#: which ``to_tsvector``/``plainto_tsquery`` drop before stemming.
# fmt: off
POSTGRES_ENGLISH_STOP_WORDS: Final[frozenset[str]] = frozenset((
    "i", "me", "my", "myself", "we", "our", "ours", "ourselves", "you", "your", "yours",
    "yourself", "yourselves", "he", "him", "his", "himself", "she", "her", "hers", "herself",
    "it", "its", "itself", "they", "them", "their", "theirs", "themselves", "what", "which",
    "who", "whom", "this", "that", "these", "those", "am", "is", "are", "was", "were", "be",
    "been", "being", "have", "has", "had", "having", "do", "does", "did", "doing", "a", "an",
    "the", "and", "but", "if", "or", "because", "as", "until", "while", "of", "at", "by", "for",
    "with", "about", "against", "between", "into", "through", "during", "before", "after",
    "above", "below", "to", "from", "up", "down", "in", "out", "on", "off", "over", "under",
    "again", "further", "then", "once", "here", "there", "when", "where", "why", "how", "all",
    "any", "both", "each", "few", "more", "most", "other", "some", "such", "no", "nor", "not",
    "only", "own", "same", "so", "than", "too", "very", "s", "t", "can", "will", "just", "don",
    "should", "now",
))
# fmt: on

#: A word as both tokenizers cut one: a run of letters and digits (``_`` separates, as in FTS5's
#: unicode61 and Postgres's parser).
_WORD = re.compile(r"[^\W_]+")


def only_stop_words(term: str) -> bool:
    """Whether every word of ``term`` is a Postgres stop word: Postgres finds nothing for it."""
    words = _WORD.findall(term.lower())
    return bool(words) and all(w in POSTGRES_ENGLISH_STOP_WORDS for w in words)
