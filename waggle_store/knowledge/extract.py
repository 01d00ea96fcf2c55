"""Entity and relation extraction: a pluggable protocol and a rule-based extractor.

Cognify needs *some* extractor on every write, offline and without an API key, so the default is
Waggle's word-list and capitalisation rules, corrected (below). An application that
has an LLM can supply its own object satisfying :class:`EntityExtractor` instead.

Entity output order is Waggle's: every technology hit first (in text order), then capitalised
names in text order; the first occurrence of a (type, case-folded name) wins.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from waggle_store.knowledge import relations as _relations
from waggle_store.knowledge.facts import extract_facts, fact_entities
from waggle_store.knowledge.propernouns import classify_proper_noun, entity_name, find_runs
from waggle_store.knowledge.wordlists import DOTTED_TECH_SUFFIXES, TECH_TERMS
from waggle_store.records import ExtractedEntity, ExtractedRelation, Extraction

MIN_TEXT_LENGTH = 10
TECHNOLOGY_CONFIDENCE = 0.9
PROPER_NOUN_CONFIDENCE = 0.7

# Waggle's separators (whitespace , ; : . ! ? ( ) /) plus quotes, brackets, backticks and
# markdown emphasis, so that "`redis`" or "(Docker)" in an agent's text still count. A full stop
# separates only when it is not between two word characters: "node.js" stays one token, the
# full stop in "We use Docker." does not glue anything.
_TOKEN_SPLIT = re.compile(r"(?:[\s,;:!?()/\[\]{}\"'`*<>|]|(?<!\w)\.|\.(?!\w))+")


@runtime_checkable
class EntityExtractor(Protocol):
    """What cognify asks of an extractor; an LLM-backed one can stand in for the rules."""

    def extract_entities(self, text: str) -> list[ExtractedEntity]:
        """Entities named in ``text``, in a stable order, each (type, name) at most once."""
        ...

    def extract_relations(
        self, text: str, entities: Sequence[ExtractedEntity]
    ) -> list[ExtractedRelation]:
        """Typed edges stated in ``text``; ``entities`` is what extract_entities returned."""
        ...


@runtime_checkable
class Extractor(Protocol):
    """What ``open_store(extractor=...)`` takes: one call per text, entities and relations
    together (an LLM finds both in one request)."""

    def extract(self, text: str) -> Extraction:
        """Entities and relations named in ``text``."""
        ...


def _titled(token: str) -> str:
    return token[:1].upper() + token[1:]


def _technology_names(lowered: str) -> list[str]:
    """Technology names in text order: "postgresql" -> "Postgresql", "node.js" -> "Node.js"."""
    names: list[str] = []
    for token in _TOKEN_SPLIT.split(lowered):
        if not token:
            continue
        if token in TECH_TERMS:
            names.append(_titled(token))
            continue
        if "." not in token:
            continue
        head, _, suffix = token.rpartition(".")
        if suffix in DOTTED_TECH_SUFFIXES and (
            head in TECH_TERMS or token.replace(".", "") in TECH_TERMS
        ):
            names.append(_titled(token))
        else:
            # Not a "<term>.js" name: read the parts as Waggle does ("github.com" -> Github).
            names.extend(_titled(part) for part in token.split(".") if part in TECH_TERMS)
    return names


def _dedup_key(entity_type: str, name: str) -> str:
    folded = name.casefold()
    if entity_type == "technology":
        folded = folded.replace(".", "")  # "Node.js" and "nodejs" are one technology
    return f"{entity_type}:{folded}"


class RuleBasedExtractor:
    """Waggle's word-list and capitalisation rules, corrected.

    Corrected: names in any cased script ("Zürich Labs", "José García"); "<term>.js" names kept
    whole; sentence-opening words ("Yesterday", "However", ...) not glued onto the name
    that follows; names never run across a line break; relation direction follows meaning; the
    ``approved`` relation is emitted. Text is NFC-normalised first, so that the same name typed
    with combining accents and with precomposed ones is one entity.
    """

    def extract(self, text: str) -> Extraction:
        entities = self.extract_entities(text)
        return Extraction(entities, self.extract_relations(text, entities))

    def extract_entities(self, text: str) -> list[ExtractedEntity]:
        if len(text) < MIN_TEXT_LENGTH:
            return []
        text = unicodedata.normalize("NFC", text)
        seen: set[str] = set()
        entities: list[ExtractedEntity] = []

        def add(name: str, entity_type: str, confidence: float) -> None:
            key = _dedup_key(entity_type, name)
            if key not in seen:
                seen.add(key)
                entities.append(ExtractedEntity(name, entity_type, confidence))

        for name in _technology_names(text.lower()):
            add(name, "technology", TECHNOLOGY_CONFIDENCE)
        for run in find_runs(text):
            proper = entity_name(run)
            if proper is not None:
                add(proper, classify_proper_noun(proper), PROPER_NOUN_CONFIDENCE)
        # The ends of changing facts ("Alice works at Acme."), one-word names included.
        return entities + fact_entities(extract_facts(text), entities)

    def extract_relations(
        self, text: str, entities: Sequence[ExtractedEntity]
    ) -> list[ExtractedRelation]:
        relations = _relations.extract_relations(text, entities)
        seen = {(r.relation_type, r.source.casefold(), r.target.casefold()) for r in relations}
        for fact in extract_facts(text):
            r = fact.relation
            if (r.relation_type, r.source.casefold(), r.target.casefold()) not in seen:
                relations.append(r)
        return relations


_DEFAULT = RuleBasedExtractor()


def extract_entities(text: str) -> list[ExtractedEntity]:
    """Entities in ``text`` by the default rule-based extractor (see RuleBasedExtractor)."""
    return _DEFAULT.extract_entities(text)


def extract_relations(text: str, entities: Sequence[ExtractedEntity]) -> list[ExtractedRelation]:
    """Relations in ``text`` by the default rule-based extractor (see RuleBasedExtractor)."""
    return _DEFAULT.extract_relations(text, entities)


__all__ = [
    "EntityExtractor",
    "Extractor",
    "RuleBasedExtractor",
    "extract_entities",
    "extract_relations",
]
