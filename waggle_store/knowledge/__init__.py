"""Entity and relation extraction (the knowledge graph's input), and status polarity."""

from __future__ import annotations

from waggle_store.knowledge.extract import (
    EntityExtractor,
    Extractor,
    RuleBasedExtractor,
    extract_entities,
    extract_relations,
)

__all__ = ["EntityExtractor", "Extractor", "RuleBasedExtractor", "extract_entities",
           "extract_relations"]
