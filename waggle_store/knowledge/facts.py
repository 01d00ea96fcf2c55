"""Facts that change: who works where, where someone is, who reports to whom.

These are the relation types that hold for one target at a time (a new employer ends the old
one: see ``set_exclusive``), so the extractor must catch them even in short sentences with
one-word names ("Alice works at Acme."), which the capitalised-run rules skip. A sentence's
subject may be a pronoun ("she", "he", "they"): it stands for the name that opens the last
sentence before it in the same text.
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
# Each rule is found by its verb phrase (a linear scan), then the subject is read backwards
# from the verb within a short window: scanning for names at every capitalised word of a text
# first would cost a regex attempt per word.
_VERBS: Final = tuple(
    (rtype, re.compile(rf"[ \t]+{_ADVERB}(?:{verbs})[ \t]+(?:the[ \t]+)?(?P<object>{_NAME})"),
     stype, otype)
    for rtype, verbs, stype, otype in _RULES
)
_BEFORE: Final = re.compile(rf"(?<![\w'])(?P<subject>{_NAME}|{_PRONOUN})\Z")
_WINDOW: Final = 120
# A sentence's subject: the name that opens it, followed by a lower-case word.
_SUBJECT = re.compile(rf"(?:^|[.;!?][ \t]+|\n[ \t]*)(?P<subject>{_NAME})[ \t]+[a-z]",
                      re.MULTILINE)
_STOP: Final = frozenset({"The", "A", "An", "This", "That", "Today", "Yesterday", "Now", "We",
                          "I", "You", "It", "Our", "My", "Their", "His", "Her", "She", "He",
                          "They", "Then", "Later", "Also"})
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
    subjects: list[tuple[int, str]] | None = None
    for relation_type, verb, source_type, target_type in _VERBS:
        for match in verb.finditer(text):
            start = match.start()
            window = text[max(0, start - _WINDOW):start]
            before = _BEFORE.search(window)
            if before is None:
                continue
            subject = before.group("subject")
            if re.fullmatch(_PRONOUN, subject):
                if subjects is None:
                    subjects = _subjects(text)
                at = start - len(window) + before.start()
                named = [name for pos, name in subjects if pos < at]
                if not named:
                    continue
                subject = named[-1]
            source, target = _clean(subject), _clean(match.group("object"))
            if source is None or target is None or source.casefold() == target.casefold():
                continue
            found.append((start, Fact(
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


def _subjects(text: str) -> list[tuple[int, str]]:
    """(position, name) of each name opening a sentence: the subjects a later pronoun may
    stand for (the last one before it)."""
    out: list[tuple[int, str]] = []
    for match in _SUBJECT.finditer(text):
        name = _clean(match.group("subject"))
        if name is not None:
            out.append((match.start(), name))
    return out


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
