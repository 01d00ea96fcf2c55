"""The record types format version 2 adds: ``conversation``, ``message`` and ``agent``.

Built from :mod:`.format`'s own field checkers (passed in, so this module imports nothing of
it): :data:`.format.SPECS` includes ``conversation_specs(...)``.

* ``conversation``: one conversation of the mind, a channel's (``kind`` "channel") or the mind's
  canonical one (``kind`` "canonical", its ``summary`` the compacted text); defined before its
  messages. ``last_seq`` is the number of the newest message ever appended.
* ``message``: one message, numbered ``seq`` within its conversation.
* ``agent``: the agent whose memory this mind is (at most one); imported under the name of the
  mind it is imported into.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from waggle_store.models.conversations import (
    CONVERSATION_KINDS,
    CONVERSATION_STATUSES,
    MESSAGE_ROLES,
)
from waggle_store.pipeline.transfer.format_checks import INT64

__all__ = ["V2_TYPES", "conversation_specs"]

V2_TYPES: Final = ("conversation", "message", "agent")
Checker = Callable[[Any], Any]
_NAME: Final = 255


def conversation_specs(*, text: Callable[..., Checker], integer: Callable[..., Checker],
                       time: Checker, choice: Callable[..., Checker], obj: Checker,
                       optional: Callable[[Checker], Checker], anything: Checker
                       ) -> dict[str, dict[str, Checker]]:
    """The fields of the three record types, from the format's checker factories."""
    name = text(_NAME, empty=False)
    return {
        "conversation": {
            "id": integer(1, bits=None),
            "kind": choice(CONVERSATION_KINDS),
            "channel": optional(name),
            "label": optional(name),
            "status": choice(CONVERSATION_STATUSES),
            "summary": optional(text()),
            "last_seq": integer(0, bits=INT64),
            "created_at": time,
            "updated_at": time,
        },
        "message": {
            "conversation_id": integer(1, bits=None),
            "seq": integer(1, bits=INT64),
            "role": choice(MESSAGE_ROLES),
            "content": text(),
            "tool_calls": optional(anything),
            "tool_call_id": optional(name),
            "metadata": optional(obj),
            "created_at": time,
        },
        "agent": {
            "name": text(200, empty=False),
            "manifest": obj,
            "state": obj,
            "created_at": time,
            "updated_at": time,
        },
    }
