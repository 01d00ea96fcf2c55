"""Rule-based relation extraction between capitalised names.

Each relation type reads one way: ``led_by(Project Apollo -> Sarah Chen)`` means "Project Apollo
is led by Sarah Chen". Every trigger phrase is either *forward* (its subject is the relation's
source) or *inverse*
(its subject is the target, and the ends are swapped), so "Sarah Chen leads Project Apollo"
and "Project Apollo is led by Sarah Chen" give the same edge.

The patterns run in a fixed order, each as one left-to-right scan in which a
match consumes its text, and a match counts only when one of its ends is an extracted entity.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from waggle_store.knowledge.propernouns import HSPACE, endpoint_name, run_spans, shape
from waggle_store.records import ExtractedEntity, ExtractedRelation

MIN_TEXT_LENGTH = 20

_S = HSPACE
# Optional passive auxiliary: "is led by", "was built by", "has been approved by", "led by".
_AUX = rf"(?:(?:is|are|was|were|will{_S}be|(?:has|have|had){_S}been|being|been){_S})?"


@dataclass(frozen=True)
class RelationRule:
    """One relation type: its trigger phrases and whether the source may carry an appositive.

    ``forward`` phrases keep the written order (subject = source); ``inverse`` phrases swap it.
    ``appositive`` lets the subject be followed by "from/at <Name>" ("John Smith from Acme Corp
    approved ..."), so that the verb's subject, not the organisation, becomes the source.
    """

    relation_type: str
    confidence: float
    forward: str
    inverse: str | None = None
    appositive: bool = True


RULES: tuple[RelationRule, ...] = (
    RelationRule(
        "led_by",
        0.9,
        forward=rf"{_AUX}(?:led|managed){_S}by",
        inverse=r"leads?|led|manages?|managed",
    ),
    RelationRule(
        "reports_to",
        0.9,
        forward=rf"reports?{_S}to|works?{_S}(?:for|under)",
    ),
    RelationRule(
        "depends_on",
        0.85,
        forward=rf"depends?{_S}on|requires?|relies?{_S}on",
        inverse=rf"{_AUX}(?:required|needed|used){_S}by",
    ),
    RelationRule(
        "maintained_by",
        0.85,
        forward=rf"{_AUX}(?:maintained|built|created|owned){_S}by",
        inverse=r"maintains|maintained|builds|built|creates|created|owns|owned",
    ),
    RelationRule(
        "affiliated_with",
        0.75,
        forward=rf"from|at|works?{_S}at",
        appositive=False,
    ),
    # ``approved``: the approver is the source, what was approved the target.
    RelationRule(
        "approved",
        0.8,
        forward=r"approved|signed|confirmed",
        inverse=rf"{_AUX}(?:approved|signed|confirmed){_S}by",
    ),
)


@dataclass(frozen=True)
class _Compiled:
    rule: RelationRule
    link: re.Pattern[str]  # the whole gap between two names: " is led by ", " leads the "


def _compile(rule: RelationRule) -> _Compiled:
    trigger = f"(?P<fwd>{rule.forward})"
    if rule.inverse is not None:
        trigger = f"(?:{trigger}|(?P<inv>{rule.inverse}))"
    return _Compiled(rule, re.compile(rf"{_S}{trigger}{_S}(?:the{_S})?", re.ASCII))


# Matched against the text's shape (see propernouns.shape), in a fixed order.
_COMPILED: tuple[_Compiled, ...] = tuple(_compile(rule) for rule in RULES)
_APPOSITIVE = re.compile(rf"{_S}(?:from|at){_S}", re.ASCII)


def _scan(
    compiled: _Compiled, shaped: str, runs: list[tuple[int, int]]
) -> list[tuple[int, int, bool]]:
    """(subject run, object run, inverse?) for each match, left to right, matches consuming.

    Equivalent to one regex per type scanning the text: a name is a maximal capitalised run, so a
    match always starts and ends on whole runs, and what lies between two names either is a
    trigger phrase or is not. Walking the runs keeps the scan linear; the regex form
    backtracked quadratically over long capitalised stretches.
    """
    found: list[tuple[int, int, bool]] = []
    index = 0
    while index + 1 < len(runs):
        gap = shaped[runs[index][1] : runs[index + 1][0]]
        link = compiled.link.fullmatch(gap)
        target = index + 1
        appositive = (
            link is None
            and compiled.rule.appositive
            and index + 2 < len(runs)
            and _APPOSITIVE.fullmatch(gap) is not None
        )
        if appositive:
            link = compiled.link.fullmatch(shaped[runs[index + 1][1] : runs[index + 2][0]])
            target = index + 2
        if link is None:
            index += 1
            continue
        found.append((index, target, link.groupdict().get("inv") is not None))
        index = target + 1
    return found


def extract_relations(text: str, entities: Sequence[ExtractedEntity]) -> list[ExtractedRelation]:
    """Relations stated in ``text`` between capitalised names, at least one end an entity.

    The same edge stated twice (or once actively and once passively) is returned once.
    """
    if len(entities) < 2 or len(text) < MIN_TEXT_LENGTH:
        return []
    text = unicodedata.normalize("NFC", text)
    shaped = shape(text)
    runs = run_spans(shaped)
    known = {unicodedata.normalize("NFC", e.name).casefold() for e in entities}
    seen: set[tuple[str, str, str]] = set()
    relations: list[ExtractedRelation] = []
    for compiled in _COMPILED:
        rule = compiled.rule
        for subject_run, object_run, inverse in _scan(compiled, shaped, runs):
            subject = endpoint_name(text[slice(*runs[subject_run])])
            obj = endpoint_name(text[slice(*runs[object_run])])
            if subject is None or obj is None:
                continue
            source, target = (obj, subject) if inverse else (subject, obj)
            if source.casefold() == target.casefold():
                continue
            if source.casefold() not in known and target.casefold() not in known:
                continue
            key = (rule.relation_type, source.casefold(), target.casefold())
            if key in seen:
                continue
            seen.add(key)
            relations.append(
                ExtractedRelation(
                    source=source,
                    target=target,
                    relation_type=rule.relation_type,
                    confidence=rule.confidence,
                )
            )
    return relations


__all__ = ["MIN_TEXT_LENGTH", "RULES", "RelationRule", "extract_relations"]
