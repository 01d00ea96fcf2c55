"""Running the store's extractor: before the write, again for a stored memory, and in reconcile.

The extractor is the store's (``open_store(extractor=...)``), the rule-based one by default, so
no text leaves the machine unless the user configured an extractor that sends it. It runs with
no transaction open (it may be a network call). When it fails, the memory is stored all the
same, without its entities, and marked pending (:class:`PendingExtractionRepository`):
``store.reconcile()`` and ``mind.recognify(frame_id)`` extract it again. What an extractor
reports it cost (:class:`~waggle_store.records.ExtractionUsage`) goes to the usage log in the
transaction that stores what it found.

An extractor's output is outside input: names, types, confidences and properties are checked
here, and what fails a check is dropped (and logged), never stored.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Final

from sqlalchemy.orm import Session

from waggle_store.context import MindContext, StoreContext
from waggle_store.errors import InvalidInputError, NotFoundError, WaggleStoreError
from waggle_store.knowledge.extract import Extractor, RuleBasedExtractor
from waggle_store.pipeline.ingest import Item, write_graph
from waggle_store.records import (
    CognifyResult,
    ExtractedEntity,
    ExtractedRelation,
    Extraction,
    ExtractionUsage,
)
from waggle_store.repositories.frame_upkeep import frame_content, vector_status
from waggle_store.repositories.knowledge import KnowledgeRepository
from waggle_store.repositories.knowledge_common import (
    MAX_NAME_LENGTH,
    MAX_TYPE_LENGTH,
    check_confidence,
    check_label,
    check_properties,
)
from waggle_store.repositories.pending import PendingExtractionRepository
from waggle_store.repositories.usage import UsageRepository
from waggle_store.textinput import check_id

__all__ = ["EXTRACT_CHARS", "Outcome", "check_extractor", "extract", "extractor_of", "recognify",
           "retry_pending", "settle"]

log = logging.getLogger(__name__)

#: Extraction reads at most this much of a text: a 1 MB paste should not turn into thousands of
#: graph writes (nor into one huge request to a model).
EXTRACT_CHARS: Final = 10_000
MAX_ENTITIES: Final = 200
MAX_RELATIONS: Final = 400
_RETRY_PAGE: Final = 100
_DEFAULT: Final = RuleBasedExtractor()


@dataclass
class Outcome:
    """One text's extraction: what was found, what it cost, or why it failed."""

    entities: list[ExtractedEntity] = field(default_factory=list)
    relations: list[ExtractedRelation] = field(default_factory=list)
    usage: ExtractionUsage | None = None
    error: str | None = None


def check_extractor(extractor: object) -> None:
    """``open_store(extractor=...)`` takes None or an object with an ``extract`` method."""
    if extractor is not None and not callable(getattr(extractor, "extract", None)):
        raise InvalidInputError(
            f"extractor must have an extract(text) method, got {type(extractor).__name__}")


def extractor_of(store: StoreContext) -> Extractor:
    found: Extractor | None = getattr(store, "extractor", None)
    return _DEFAULT if found is None else found


def extract(extractor: Extractor, text: str) -> Outcome:
    """Run ``extractor`` on (the head of) ``text``; a failure is returned, never raised."""
    head = text[:EXTRACT_CHARS]
    if extractor is _DEFAULT:  # trusted and local: the hot path skips the checks below
        entities = _DEFAULT.extract_entities(head)
        return Outcome(entities, _DEFAULT.extract_relations(head, entities))
    try:
        found = extractor.extract(head)
        if not isinstance(found, Extraction):
            raise TypeError(f"extract() returned {type(found).__name__}, not an Extraction")
        return _checked(found)
    except Exception as exc:  # noqa: BLE001 - any extractor failure leaves the memory pending
        log.warning("extraction failed; the memory is stored with extraction pending: %s", exc)
        return Outcome(error=f"{type(exc).__name__}: {exc}")


def _checked(found: Extraction) -> Outcome:
    entities: list[ExtractedEntity] = []
    for e in list(found.entities)[:MAX_ENTITIES]:
        try:
            entities.append(ExtractedEntity(
                check_label(e.name, "entity name", MAX_NAME_LENGTH).strip(),
                check_label(e.type, "entity type", MAX_TYPE_LENGTH).strip(),
                check_confidence(e.confidence), check_properties(e.properties) or None))
        except (WaggleStoreError, AttributeError) as exc:
            log.info("extraction: an entity is dropped: %s", exc)
    relations: list[ExtractedRelation] = []
    for r in list(found.relations)[:MAX_RELATIONS]:
        try:
            relations.append(ExtractedRelation(
                check_label(r.source, "relation source", MAX_NAME_LENGTH).strip(),
                check_label(r.target, "relation target", MAX_NAME_LENGTH).strip(),
                check_label(r.relation_type, "relation type", MAX_TYPE_LENGTH).strip(),
                check_confidence(r.confidence)))
        except (WaggleStoreError, AttributeError) as exc:
            log.info("extraction: a relation is dropped: %s", exc)
    usage = found.usage if isinstance(found.usage, ExtractionUsage) else None
    return Outcome(entities, relations, usage)


def settle(session: Session, mind_id: int, frame_id: int, outcome: Outcome) -> None:
    """In the write transaction of ``frame_id``: mark it pending if its extraction failed, and
    log what the extraction cost."""
    if outcome.error is not None:
        PendingExtractionRepository(session, mind_id).mark(frame_id, outcome.error)
    usage = outcome.usage
    if usage is not None:
        UsageRepository(session).record(mind_id, usage.model[:200], max(0, usage.prompt_tokens),
                                        max(0, usage.completion_tokens),
                                        max(0.0, usage.cost_usd))


def _write(session: Session, mind_id: int, frame_id: int, content: str,
           outcome: Outcome) -> tuple[int, int]:
    """A stored frame's entities, mentions and edges; (entities, new edges)."""
    kg = KnowledgeRepository(session, mind_id)
    kg.lock()
    item = Item(0, content, "normal", "user_stated", None, outcome.entities, outcome.relations)
    counts, created = write_graph(session, mind_id, [item], [frame_id], set(), kg.schema.get(),
                                  by="extraction")
    PendingExtractionRepository(session, mind_id).clear(frame_id)
    settle(session, mind_id, frame_id, Outcome(usage=outcome.usage))
    return counts[0], created


def _content(store: StoreContext, mind_id: int | None, frame_id: int) -> tuple[int, str] | None:
    with store.read() as session:
        return frame_content(session, frame_id, mind_id)


def recognify(mind: MindContext, frame_id: int) -> CognifyResult:
    """Extract a stored memory again and write what is found; no new frame.

    A failing extractor raises (nothing is written; a memory that was pending stays so)."""
    frame_id = check_id(frame_id, name="frame_id")
    found = _content(mind.store, mind.id, frame_id)
    if found is None:
        raise NotFoundError(f"frame {frame_id} does not exist in this mind")
    outcome = extract(extractor_of(mind.store), found[1])
    if outcome.error is not None:
        raise WaggleStoreError(f"extraction of frame {frame_id} failed: {outcome.error}")
    with mind.write() as session:
        entities, relations = _write(session, mind.id, frame_id, found[1], outcome)
        status = vector_status(session, frame_id)
    return CognifyResult(frame_id=frame_id, entities_extracted=entities,
                         relations_created=relations, related_frames=[],
                         vector_status="ready" if status == "ready" else "pending")


def retry_pending(store: StoreContext, mind_id: int | None = None) -> int:
    """Extract the pending memories again (of one mind, or all); returns how many succeeded.
    One that fails again stays pending, its attempts counted."""
    extractor = extractor_of(store)
    fixed, after = 0, 0
    while True:
        with store.read() as session:
            page = PendingExtractionRepository(session, mind_id).pending(_RETRY_PAGE, after)
        if not page:
            return fixed
        for frame_id, owner in page:
            after = frame_id
            found = _content(store, owner, frame_id)
            if found is None:
                continue
            outcome = extract(extractor, found[1])
            with store.write() as session:
                if outcome.error is not None:
                    PendingExtractionRepository(session, owner).mark(frame_id, outcome.error)
                    continue
                _write(session, owner, frame_id, found[1], outcome)
            fixed += 1
