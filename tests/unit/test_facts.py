"""The rule-based extractor's changing facts: works_at, located_in, reports_to."""

from __future__ import annotations

from waggle_store.knowledge.extract import extract_entities, extract_relations


def facts(text: str) -> list[tuple[str, str, str]]:
    entities = extract_entities(text)
    names = {e.name for e in entities}
    found = [(r.source, r.relation_type, r.target) for r in extract_relations(text, entities)
             if r.relation_type in ("works_at", "located_in", "reports_to")]
    assert all(s in names and t in names for s, _, t in found)  # both ends are entities
    return found


def test_one_word_names() -> None:
    assert facts("Alice works at Acme.") == [("Alice", "works_at", "Acme")]
    assert facts("Bob reports to Carol.") == [("Bob", "reports_to", "Carol")]
    assert facts("Dana moved to Lisbon last spring.") == [("Dana", "located_in", "Lisbon")]


def test_adverbs_openers_and_articles() -> None:
    assert facts("Alice now works at Globex; she left Acme.") == [
        ("Alice", "works_at", "Globex")]
    assert facts("Today Bob said that Alice works at the Acme Corp.") == [
        ("Alice", "works_at", "Acme Corp")]


def test_a_pronoun_stands_for_the_subject_of_the_last_sentence() -> None:
    text = "Yesterday Alice Smith met Bob Jones at the Acme Corp office. She now works at Globex."
    assert facts(text) == [("Alice Smith", "works_at", "Globex")]
    assert facts("She works at Acme. He lives in Paris.") == []  # nobody named: nothing


def test_the_entity_types_of_the_ends() -> None:
    types = {e.name: e.type for e in extract_entities("Erin lives in Oslo. Erin reports to Finn.")}
    assert types == {"Erin": "person", "Oslo": "location", "Finn": "person"}
