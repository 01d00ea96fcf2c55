"""How much memory text one tool answer carries.

A memory may hold up to a megabyte, and a recall up to 100 of them, but a client reads one
answer as one message: the official SDK's streamable-HTTP client refuses an SSE event above
1 MiB (1048576 bytes), and a model's context is smaller still. So an answer is bounded in the
bytes its text takes once JSON-encoded (the wire form: an escaped control character costs six
bytes, a non-ASCII one up to four):

- ``recall_memory`` shares :data:`RECALL_BYTES` among its hits, best first, each getting at
  most :data:`HIT_BYTES` and at least :data:`MIN_HIT_BYTES` of its content, in its structured
  content (at most 100 hits: about 600 KB in all); a cut content ends with
  :data:`MARKER` and the hit says ``truncated: true`` and the full ``content_chars``, and
  ``get_memory(frame_id, offset=...)`` reads the rest. Its text block (for models that read
  only text) repeats no more than :data:`PREVIEW_BYTES` of each hit: the large part of an
  answer is sent once.
- ``get_memory`` gives at most :data:`PAGE_BYTES` of one memory per call, from ``offset``.
"""

from __future__ import annotations

import json
from typing import Final

HIT_BYTES: Final = 64 * 1024
MIN_HIT_BYTES: Final = 1024
RECALL_BYTES: Final = 512 * 1024
PREVIEW_BYTES: Final = 600
PAGE_BYTES: Final = 256 * 1024
MARKER: Final = " […truncated]"


def encoded_size(text: str) -> int:
    """Bytes ``text`` takes inside a JSON string (without the quotes), as the SDK sends it."""
    return len(json.dumps(text, ensure_ascii=False).encode("utf-8")) - 2


def prefix_within(text: str, max_bytes: int) -> str:
    """The longest prefix of ``text`` whose JSON-encoded size is at most ``max_bytes``."""
    if encoded_size(text) <= max_bytes:
        return text
    low, high = 0, min(len(text), max_bytes)  # every character costs at least one byte
    while low < high:  # binary search on the prefix length
        middle = (low + high + 1) // 2
        if encoded_size(text[:middle]) <= max_bytes:
            low = middle
        else:
            high = middle - 1
    return text[:low]


def clip(text: str, max_bytes: int) -> tuple[str, bool]:
    """``text`` if it fits in ``max_bytes``; else a prefix ending with :data:`MARKER` that fits,
    and whether it was cut."""
    if encoded_size(text) <= max_bytes:
        return text, False
    room = max(0, max_bytes - encoded_size(MARKER))
    return prefix_within(text, room) + MARKER, True


def preview(text: str) -> str:
    """One line of at most :data:`PREVIEW_BYTES` for a text block."""
    line = " ".join(text.split())
    return clip(line, PREVIEW_BYTES)[0]
