"""The per-mind API objects (``mind.identity``, ``mind.frames``, ...).

Each method is one unit of work: it opens ``store.write()`` or ``store.read()``, builds the
layer's repository over that Session, and returns ``records`` dataclasses, so a caller never holds
a live ORM object and every call either fully happens or leaves nothing behind.
"""
