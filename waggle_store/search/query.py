"""Turn free user text into keyword-lane terms that no input can turn into a syntax error.

Raw query text never reaches FTS5 ``MATCH`` or a Postgres tsquery parser. Instead the text is cut
into *terms* here, without knowing the backend; the dialect adapter builds its query from them
(``waggle_store.dialects.sqlite.fts5_match_expression``: each term a quoted FTS5 string;
``waggle_store.dialects.postgres.tsquery_terms``: each a bound ``plainto_tsquery`` parameter).
Both of those re-tokenise the term with the same tokenizer that indexed the
frames (FTS5 ``porter unicode61``; Postgres ``to_tsvector('english', ...)``), so a term only has to
be *the same text the user typed*, trimmed of sentence punctuation, for the frame to be found.

Why not an ASCII-only tokenizer: one that deletes every non-ASCII ``\\w``
character turns "Zürich" into "Zrich" and "node.js" into "nodejs" — tokens that neither index
contains. Here:

* A *word character* is a Unicode letter, digit, combining mark or underscore, so accents and
  Indic vowel signs survive ("Zürich", "café", "हिन्दी").
* Leading and trailing non-word characters are trimmed ("Apollo?" → "Apollo", "(hello)" →
  "hello"), except a trailing run of ``+``/``#`` which is part of names such as "C++" and "g++".
* *Internal* punctuation is kept: "node.js", "e-mail", "2026-05-13", "Apollo's" stay whole. This
  joined form is what makes such frames findable on both backends: FTS5 reads the quoted
  ``"node.js"`` as the phrase ``node js`` (how it indexed the frame), and Postgres indexes
  "node.js" as the single lexeme ``node.js`` and "e-mail" as ``e-mail``/``e``/``mail``, which
  ``plainto_tsquery`` of the same text reproduces. Searching only for "node" would miss the frame
  on Postgres, and "nodejs" would miss it everywhere.
* The word runs inside such a token ("node" in "node.js", "mail" in "e-mail") are added after the
  joined form when they pass the filters, so a query for "node.js" also reaches frames that just
  say "Node". The lane ORs terms, so this only widens recall.
* Terms shorter than :data:`MIN_TERM_LENGTH` and Waggle's stop words are dropped
  (case-insensitively; "it's" is checked as "its" too, as Waggle's stripping does).
  "C++" is 3 characters long and survives; the backends then search for the token ``c``.
* Control, format and surrogate characters (category ``C*``) split tokens: a NUL makes FTS5 raise
  "unterminated string" and psycopg refuse the parameter, and a lone surrogate cannot be encoded.
* At most :data:`MAX_TERMS` terms of at most :data:`MAX_TERM_LENGTH` characters are produced, and
  tokens longer than :data:`MAX_TOKEN_LENGTH` are skipped without being scanned, so a 10 kB (or
  10 MB) query costs linear time and yields a bounded query. An over-long term is dropped rather
  than truncated: a truncated word is no longer a token of the index and would match nothing.

Nothing in this module raises, whatever string it is given. The character rules (what is
scrubbed, how LIKE is escaped) are :mod:`waggle_store.textinput`'s, shared with every read API.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from typing import Final

from waggle_store.textinput import LIKE_ESCAPE, is_other_char, like_contains, scrub

__all__ = [
    "LIKE_ESCAPE",
    "MAX_TERMS",
    "MAX_TERM_LENGTH",
    "MAX_TOKEN_LENGTH",
    "MIN_TERM_LENGTH",
    "STOP_WORDS",
    "keyword_terms",
    "like_patterns",
    "text_terms",
]

#: The stop words of Waggle's original search, exactly (65 distinct entries), compared
#: case-insensitively.
# fmt: off
STOP_WORDS: Final[frozenset[str]] = frozenset((
    "the", "a", "an", "is", "are", "was", "were", "be", "been", "being", "have", "has", "had",
    "do", "does", "did", "will", "would", "could", "should", "may", "might", "shall", "can", "to",
    "of", "in", "for", "on", "with", "at", "by", "from", "as", "into", "about", "this", "that",
    "these", "those", "it", "its", "my", "your", "our", "their", "what", "which", "who", "whom",
    "how", "when", "where", "why", "all", "each", "every", "both", "some", "any", "no", "not",
    "and", "or", "but",
))
# fmt: on

#: Terms shorter than this are noise ("a", "of", "C#"), as in Waggle (length >= 3).
MIN_TERM_LENGTH: Final = 3
#: Upper bound on the number of terms, so a pasted document cannot build a huge OR query.
MAX_TERMS: Final = 64
#: Longer terms are dropped (a truncated word would not be an index token any more).
MAX_TERM_LENGTH: Final = 100
#: Whitespace-separated tokens longer than this are skipped without being scanned.
MAX_TOKEN_LENGTH: Final = 1000

_NON_SPACE: Final = re.compile(r"\S+")
#: Letters, digits and underscore only: the common token, which needs no per-character work.
_PLAIN_WORD: Final = re.compile(r"\w+")
#: Kept after a name's last word character: "C++", "g++" (and "F#", which is too short anyway).
_NAME_SUFFIX: Final = frozenset("+#")


def _is_word_char(ch: str) -> bool:
    """Letters, digits, marks and ``_``: marks so that decomposed accents and Indic vowel signs
    stay inside their word instead of splitting it."""
    return ch == "_" or unicodedata.category(ch)[0] in "LNM"


def _is_alnum_char(ch: str) -> bool:
    """A term needs one of these: a term of only marks or underscores has no index token."""
    return unicodedata.category(ch)[0] in "LN"


_is_other_char = is_other_char  # control/format/surrogate/private/unassigned: never sent


def _tokens(text: str) -> Iterator[str]:
    """Distinct whitespace tokens, split at ``C*`` characters; over-long tokens are skipped.

    A repeated token is yielded once: it would produce the same terms again, and skipping it
    keeps a long text of repeated words (or stop words) cheap.
    """
    visited: set[str] = set()
    for match in _NON_SPACE.finditer(text):
        raw = match.group()
        if len(raw) > MAX_TOKEN_LENGTH or raw in visited:
            continue
        visited.add(raw)
        if _PLAIN_WORD.fullmatch(raw):
            yield raw
            continue
        start = 0
        for i, ch in enumerate(raw):
            if _is_other_char(ch):
                if i > start:
                    yield raw[start:i]
                start = i + 1
        if start < len(raw):
            yield raw[start:]


def _trim(token: str) -> str:
    """Drop sentence punctuation around a token but keep a name suffix like the ``++`` of C++."""
    first = next((i for i, ch in enumerate(token) if _is_word_char(ch)), None)
    if first is None:
        return ""
    last = max(i for i, ch in enumerate(token) if _is_word_char(ch))
    end = last + 1
    while end < len(token) and token[end] in _NAME_SUFFIX:
        end += 1
    return token[first:end]


def _word_runs(token: str) -> list[str]:
    """Maximal runs of word characters: "node.js" → ["node", "js"]."""
    runs: list[str] = []
    current: list[str] = []
    for ch in token:
        if _is_word_char(ch):
            current.append(ch)
        elif current:
            runs.append("".join(current))
            current = []
    if current:
        runs.append("".join(current))
    return runs


def _is_stop_word(term: str) -> bool:
    folded = term.casefold()
    if folded in STOP_WORDS:
        return True
    if _PLAIN_WORD.fullmatch(folded):  # every character a word character: nothing to squash
        return False
    squashed = "".join(ch for ch in folded if _is_word_char(ch))
    return squashed in STOP_WORDS


def keyword_terms(query: str) -> list[str]:
    """The keyword-lane terms of ``query``, in query order, deduplicated case-insensitively.

    An empty list means the keyword lane has nothing to look for (empty text, only stop words,
    only punctuation); the search then runs the vector lane only.
    """
    return _terms(query, MAX_TERMS)


def text_terms(text: str) -> list[str]:
    """Every term of ``text`` by the rules of :func:`keyword_terms` but without its
    :data:`MAX_TERMS` cap: the terms of a frame's content, which the match score
    (:mod:`waggle_store.search.match`) compares with the query's."""
    return _terms(text, None)


def _terms(query: str, cap: int | None) -> list[str]:
    if not isinstance(query, str):  # defensive: the contract is "never raises"
        return []
    terms: list[str] = []
    seen: set[str] = set()
    for raw in _tokens(query):
        if _PLAIN_WORD.fullmatch(raw):
            token, runs = raw, [raw]
        else:
            token = _trim(raw)
            if not token:
                continue
            runs = _word_runs(token)
        candidates = [token] if runs == [token] else [token, *runs]
        for candidate in candidates:
            if not MIN_TERM_LENGTH <= len(candidate) <= MAX_TERM_LENGTH:
                continue
            # A plain word's characters are letters, digits or "_" (``str.isalnum`` or "_"):
            # it has an alphanumeric one unless it is all underscores. The general check runs
            # unicodedata per character, which the match score paid for every word of a page.
            if _PLAIN_WORD.fullmatch(candidate):
                if not candidate.strip("_"):
                    continue
            elif not any(_is_alnum_char(ch) for ch in candidate):
                continue
            key = candidate.casefold()
            if key in seen or _is_stop_word(candidate):
                continue
            seen.add(key)
            terms.append(candidate)
            if cap is not None and len(terms) >= cap:
                return terms
    return terms


def like_patterns(query: str) -> list[str]:
    """``%term%`` patterns for the LIKE fallback, ``\\``, ``%`` and ``_`` escaped with ``\\``.

    The fallback only runs when the keyword index itself fails, so it favours finding something
    over precision: no stop-word or length filter, and if
    no token has a word character the whole (cleaned) query is the single pattern, so a query of
    only "😀" still finds frames containing it. Tokens keep their internal punctuation ("node.js",
    "e-mail") because LIKE matches substrings of the raw content, where a joined "nodejs" would
    never occur. Unlike keyword terms, long tokens are *truncated* to :data:`MAX_TERM_LENGTH`: a
    prefix of a substring is still a substring. Bind each as ``content LIKE ? ESCAPE '\\'`` (use
    ``ILIKE`` on Postgres, whose LIKE is case-sensitive), ORed; at most :data:`MAX_TERMS`.
    """
    if not isinstance(query, str):
        return []
    terms: list[str] = []
    seen: set[str] = set()
    for raw in _tokens(query):
        token = (raw if _PLAIN_WORD.fullmatch(raw) else _trim(raw))[:MAX_TERM_LENGTH]
        key = token.casefold()
        if not token or key in seen:
            continue
        seen.add(key)
        terms.append(token)
        if len(terms) >= MAX_TERMS:
            break
    if not terms:
        whole = scrub(query[: MAX_TOKEN_LENGTH * 4])[:MAX_TERM_LENGTH].strip()
        if whole:
            terms.append(whole)
    return [like_contains(term) for term in terms]
