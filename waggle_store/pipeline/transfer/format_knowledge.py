"""The record types format version 3 adds: the knowledge graph's history and settings, and what
a mind remembers about its harvests and extractions.

Built from :mod:`.format`'s own field checkers (passed in, so this module imports nothing of
it): :data:`.format.SPECS` includes ``knowledge_specs(...)``.

* ``alias``: one of the mind's own entity aliases (``mind.knowledge.add_alias``); every alias is
  on a line before the first entity, whose names resolve through them.
* ``entity_version`` / ``relation_version``: an earlier state of an entity or a relation in
  recorded time (``recorded_from`` until ``recorded_to``), after the entity or relation it is of.
* ``extraction_pending``: a frame whose extraction failed, for ``reconcile`` to extract again.
* ``harvest_tombstone``: a harvested memory the user deleted, so a sync of its source does not
  store it again.
* ``exclusive_relations``: the mind's own choice of exclusive relation types (at most one).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from waggle_store.repositories.knowledge_common import MAX_NAME_LENGTH, MAX_TYPE_LENGTH

__all__ = ["V3_TYPES", "knowledge_specs"]

V3_TYPES: Final = ("alias", "entity_version", "relation_version", "extraction_pending",
                   "harvest_tombstone", "exclusive_relations")
Checker = Callable[[Any], Any]
#: The longest error text a pending extraction keeps (``repositories/pending.py``).
MAX_ERROR: Final = 2000


def knowledge_specs(*, text: Callable[..., Checker], integer: Callable[..., Checker],
                    time: Checker, obj: Checker, optional: Callable[[Checker], Checker],
                    confidence: Checker) -> dict[str, dict[str, Checker]]:
    """The fields of the version 3 record types, from the format's checker factories."""
    name = text(MAX_NAME_LENGTH, empty=False)
    label = text(MAX_TYPE_LENGTH, empty=False)
    state = {"valid_from": time, "valid_to": optional(time), "recorded_from": time,
             "recorded_to": time}
    return {
        "alias": {
            "alias": name,
            "canonical_name": name,
            # NFKC folding can lengthen a name: the key may be longer than the name.
            "canonical_key": text(4 * MAX_NAME_LENGTH, empty=False),
            "created_at": time,
        },
        "entity_version": {
            "entity_id": integer(1, bits=None),
            "version": integer(0),
            "entity_type": label,
            "name": name,
            "properties": obj,
            **state,
        },
        "relation_version": {
            "relation_id": integer(1, bits=None),
            "version": integer(0),
            "source_id": integer(1, bits=None),
            "target_id": integer(1, bits=None),
            "relation_type": label,
            "confidence": confidence,
            "properties": obj,
            **state,
        },
        "extraction_pending": {
            "frame_id": integer(1, bits=None),
            "error": text(MAX_ERROR),
            "attempts": integer(1),
            "updated_at": time,
        },
        "harvest_tombstone": {
            "source": text(255, empty=False),
            "content_hash": text(64, empty=False),
            "forgotten_at": time,
        },
        "exclusive_relations": {"relation_types": obj},
    }
