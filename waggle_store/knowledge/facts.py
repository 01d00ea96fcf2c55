"""Facts that change: who works where, where someone is, who reports to whom.

These are the relation types that hold for one target at a time (a new employer ends the old
one: see ``set_exclusive``), so the extractor must catch them even in short sentences with
one-word names ("Alice works at Acme."), which the capitalised-run rules skip. A sentence's
subject may be a pronoun ("she", "he", "they"): it stands for the last named subject before it
in the same text.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Final

from waggle_store.records import ExtractedEntity, ExtractedRelation

__all__ = ["FACT_CONFIDENCE", "Fact", "extract_facts"]

FACT_CONFIDENCE: Final = 0.85

_UPPER = r"[A-ZÀ-ÖØ-Þ]"
_WORD = rf"{_UPPER}[\w'&-]*"
_NAME = rf"(?:{_WORD}(?:[ \t]+{_WORD}){{0,4}})"
_PRONOUN = r"(?:[Ss]he|[Hh]e|[Tt]hey)"
_ADVERB = r"(?:(?:now|currently|still|also)[ \t]+)?"

# (relation type, verb phrase between subject and object, subject type, object type)
_RULES: Final = (
    ("works_at", (r"(?:works|worked|is[ \t]+working|started[ \t]+working)[ \t]+at"
                 r"|(?:has[ \t]+)?joined|is[ \t]+employed[ \t]+(?:at|by)"), "person",
     "organization"),
    ("located_in", (r"(?:lives|lived|is[ \t]+based|is[ \t]+located|resides)[ \t]+in"
                   r"|(?:has[ \t]+)?moved[ \t]+to|relocated[ \t]+to"), "person", "location"),
    ("reports_to", r"reports[ \t]+to|reported[ \t]+to", "person", "person"),
)
_PATTERNS: Final = tuple(
    (rtype, re.compile(rf"(?<![\w'])(?P<subject>{_NAME}|{_PRONOUN})[ \t]+{_ADVERB}"
                       rf"(?:{verbs})[ \t]+(?:the[ \t]+)?(?P<object>{_NAME})"), stype, otype)
    for rtype, verbs, stype, otype in _RULES
)
_SUBJECT = re.compile(rf"(?<![\w'])(?P<subject>{_NAME})[ \t]+{_ADVERB}[a-z]")
_STOP: Final = frozenset({"The", "A", "An", "This", "That", "Today", "Yesterday", "Now", "We",
                          "I", "You", "It", "Our", "My", "Their", "His", "Her"})


@dataclass(frozen=True)
class Fact:
    """One extracted fact with the types its two ends get when nothing else typed them."""

    relation: ExtractedRelation
    source_type: str
    target_type: str


def _clean(name: str) -> str | None:
    words = name.split()
    while words and words[0] in _STOP:
        words = words[1:]
    name = " ".join(words)
    return name if len(name) >= 2 else None


def extract_facts(text: str) -> list[Fact]:
    """The facts of the changing types in ``text``, in text order, each at most once."""
    text = unicodedata.normalize("NFC", text)
    found: list[tuple[int, Fact]] = []
    for relation_type, pattern, source_type, target_type in _PATTERNS:
        for match in pattern.finditer(text):
            subject = match.group("subject")
            if re.fullmatch(_PRONOUN, subject):
                named = _last_subject(text, match.start())
                if named is None:
                    continue
                subject = named
            source, target = _clean(subject), _clean(match.group("object"))
            if source is None or target is None or source.casefold() == target.casefold():
                continue
            found.append((match.start(), Fact(
                ExtractedRelation(source, target, relation_type, FACT_CONFIDENCE),
                source_type, target_type)))
    seen: set[tuple[str, str, str]] = set()
    facts: list[Fact] = []
    for _, fact in sorted(found, key=lambda pair: pair[0]):
        r = fact.relation
        key = (r.relation_type, r.source.casefold(), r.target.casefold())
        if key not in seen:
            seen.add(key)
            facts.append(fact)
    return facts


def _last_subject(text: str, before: int) -> str | None:
    """The last capitalised name followed by a lower-case word before ``before``: the subject a
    pronoun stands for."""
    subject: str | None = None
    for match in _SUBJECT.finditer(text, 0, before):
        name = _clean(match.group("subject"))
        if name is not None:
            subject = name
    return subject


def fact_entities(facts: list[Fact], known: list[ExtractedEntity]) -> list[ExtractedEntity]:
    """The facts' ends that ``known`` lacks, typed by the rule that found them."""
    have = {e.name.casefold() for e in known}
    extra: list[ExtractedEntity] = []
    for fact in facts:
        for name, entity_type in ((fact.relation.source, fact.source_type),
                                  (fact.relation.target, fact.target_type)):
            if name.casefold() not in have:
                have.add(name.casefold())
                extra.append(ExtractedEntity(name, entity_type, FACT_CONFIDENCE))
    return extra
