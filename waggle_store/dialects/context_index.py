"""A frame's conversational context: the text its keyword index carries beside its own words.

Many turns of a conversation are short replies whose meaning lives in the turn they answer ("Yes!
I went there last week with my kids"), and questions name what that turn said, not the reply.
So each frame carries ``search_context``: the content of the **preceding frame of its session**
(the highest ``t`` below its own in the same ``(mind_id, gop_id)``), NULL for a session's first
frame. It is derived data: never exported, never returned by search, never part of the frame's
content or content hash; the keyword lane indexes it in a second column at half the weight of
the frame's own words (:data:`CONTEXT_WEIGHT`).

Why one preceding frame: a reply answers the turn before it. Why database triggers rather than
Python on every write path: the context of a frame depends on *another* frame, so every write of
either (``create_i``/``create_p``, the set-based ``cognify_batch`` write, import, harvest,
consolidation's merges and prunes, ``forget``, a cascade delete of a session) must recompute it,
in the same transaction; a trigger does that by construction, including for writes a later
feature adds, and costs one index seek on ``(mind_id, gop_id, t)`` per written frame. Privacy
follows: when a frame is deleted or its content edited, the frame after it gets its context
recomputed at once, so forgotten text is not searchable through its neighbour.

Triggers (``T`` = the frames table):

* insert: the new frame's context is its predecessor's content; its successor's context becomes
  the new frame's content (frames inserted out of order, as an import may, stay right);
* delete: the successor's context is recomputed (the deleted frame's predecessor, or NULL);
* update of ``content``/``mind_id``/``gop_id``/``t``: the frame's own context (if it moved) and
  the successors at its old and new places are recomputed.

Writes that would not change a context are skipped (``IS NOT``/``IS DISTINCT FROM`` guards), so
an append-only ingest writes each frame once. SQLite's FTS5 row is written by the update trigger
of ``search_context``/``content`` (``derived.FTS5_TRIGGERS``); Postgres's ``context_tsv`` is a
generated column of ``search_context``.

Migration 0006 creates these objects under frozen copies of the statements; ``derived`` checks
them on every ``health()`` and ``reconcile(repair=True)`` recreates them; ``reconcile()``
recomputes contexts that are stale (:func:`stale_context_update`).
"""

from __future__ import annotations

from typing import Final

from waggle_store.dialects.base import T_FRAMES

#: The weight of a context word relative to one of the frame's own words: half a word. The
#: context says what the frame is *about*, not what it *says*; a frame that says the query's
#: words itself must rank above one whose neighbour does, and two context matches may equal one
#: own-word match. The keyword lane's per-term factor on both dialects (``keyword_rank``).
CONTEXT_WEIGHT: Final = 0.5

CONTEXT_COLUMN: Final = "search_context"


def predecessor(alias: str) -> str:
    """The content of the frame before ``alias``'s frame in its session (a scalar subquery)."""
    return (
        f"(SELECT p.content FROM {T_FRAMES} p WHERE p.mind_id = {alias}.mind_id "
        f"AND p.gop_id = {alias}.gop_id AND p.t < {alias}.t ORDER BY p.t DESC LIMIT 1)"
    )


def successor(mind: str, gop: str, t: str) -> str:
    """The id of the first frame after position ``(mind, gop, t)`` (a scalar subquery)."""
    return (
        f"(SELECT n.id FROM {T_FRAMES} n WHERE n.mind_id = {mind} AND n.gop_id = {gop} "
        f"AND n.t > {t} ORDER BY n.t LIMIT 1)"
    )


def _recompute(where_id: str) -> str:
    """Recompute one frame's context if it is stale (no write, so no re-index, otherwise)."""
    pred = predecessor(T_FRAMES)
    return (
        f"UPDATE {T_FRAMES} SET {CONTEXT_COLUMN} = {pred} "
        f"WHERE id = {where_id} AND {CONTEXT_COLUMN} IS NOT {pred};"
    )


# -- SQLite ------------------------------------------------------------------------------------

#: Trigger name -> DDL. The insert trigger of the FTS index (``derived``) sets the new frame's
#: context itself; these keep the *other* frames' contexts right.
SQLITE_CONTEXT_TRIGGERS: Final[dict[str, str]] = {
    f"{T_FRAMES}_ctx_ad": (
        f"CREATE TRIGGER IF NOT EXISTS {T_FRAMES}_ctx_ad AFTER DELETE ON {T_FRAMES} BEGIN "
        + _recompute(successor("old.mind_id", "old.gop_id", "old.t"))
        + " END"
    ),
    f"{T_FRAMES}_ctx_au": (
        f"CREATE TRIGGER IF NOT EXISTS {T_FRAMES}_ctx_au "
        f"AFTER UPDATE OF content, mind_id, gop_id, t ON {T_FRAMES} BEGIN "
        + _recompute("new.id")
        + " "
        + _recompute(successor("new.mind_id", "new.gop_id", "new.t"))
        + " "
        + _recompute(successor("old.mind_id", "old.gop_id", "old.t"))
        + " END"
    ),
}

#: The FTS5 insert trigger's body: set the new frame's context (which fires the FTS update
#: trigger, which writes the FTS row with both columns), then give its successor, if any, the
#: new frame's content as context.
SQLITE_INSERT_BODY: Final = (
    f"UPDATE {T_FRAMES} SET {CONTEXT_COLUMN} = {predecessor(T_FRAMES)} WHERE id = new.id; "
    f"UPDATE {T_FRAMES} SET {CONTEXT_COLUMN} = new.content "
    f"WHERE id = {successor('new.mind_id', 'new.gop_id', 'new.t')} "
    f"AND {CONTEXT_COLUMN} IS NOT new.content;"
)

SQLITE_STALE_CONTEXT: Final = (
    f"UPDATE {T_FRAMES} SET {CONTEXT_COLUMN} = {predecessor(T_FRAMES)} "
    f"WHERE {CONTEXT_COLUMN} IS NOT {predecessor(T_FRAMES)}"
)


# -- Postgres ----------------------------------------------------------------------------------

CONTEXT_TSV_COLUMN: Final = "context_tsv"
#: The trigger functions name the frames table unqualified, like all of waggle_store's SQL, and
#: a function resolves names on the search_path *of the session that fires it*. waggle_store's
#: own connections put the store's schema first, but a host or an operator writing the table by
#: its qualified name from a session with another search_path would fail ("relation does not
#: exist") or, with a second store's schema on that path, recompute contexts *in the other
#: store*. Pinned at creation (the migration's and repair's search_path: the store's schema
#: first), the functions always work on their own store's table.
PINNED_SEARCH_PATH: Final = "SET search_path FROM CURRENT"
#: The trigger functions' lookups (the frame before or after a position in its session) are
#: planned for each row they run on, never from a cached generic plan. Why: PL/pgSQL caches a
#: generic plan after a connection's fifth call, and on a new store that is when the frames table
#: holds a handful of rows: the planner then costs "the mind's frames by ``(mind_id,
#: created_at)``, filtered and sorted" the same as the ``(mind_id, gop_id, t)`` seek, may take
#: it, and keeps it until an ANALYZE of the table invalidates it. Every written frame then read
#: all of its mind's frames: a new store's first ingest was quadratic until autovacuum's first
#: analyze. A custom plan sees the values
#: and the table's current size, and costs a few tens of microseconds of planning per row.
CUSTOM_PLANS: Final = "SET plan_cache_mode = force_custom_plan"
CONTEXT_GIN_INDEX: Final = f"ix_{T_FRAMES}_context_tsv"
PG_BEFORE_FUNCTION: Final = f"{T_FRAMES}_ctx_before"
PG_AFTER_FUNCTION: Final = f"{T_FRAMES}_ctx_after"
PG_BEFORE_TRIGGER: Final = f"{T_FRAMES}_ctx_b"
PG_AFTER_TRIGGER: Final = f"{T_FRAMES}_ctx_a"

_PG_PRED_NEW = (
    f"(SELECT p.content FROM {T_FRAMES} p WHERE p.mind_id = NEW.mind_id "
    "AND p.gop_id = NEW.gop_id AND p.t < NEW.t ORDER BY p.t DESC LIMIT 1)"
)
_PG_PRED_F = (
    f"(SELECT p.content FROM {T_FRAMES} p WHERE p.mind_id = f.mind_id "
    "AND p.gop_id = f.gop_id AND p.t < f.t ORDER BY p.t DESC LIMIT 1)"
)

#: Every statement that builds Postgres's context index, in order (migration 0006 keeps a frozen
#: copy; repair runs these). ``CREATE OR REPLACE`` and ``IF NOT EXISTS``: idempotent.
PG_CONTEXT_DDL: Final = (
    f"ALTER TABLE {T_FRAMES} ADD COLUMN IF NOT EXISTS {CONTEXT_COLUMN} text",
    (
        f"ALTER TABLE {T_FRAMES} ADD COLUMN IF NOT EXISTS {CONTEXT_TSV_COLUMN} tsvector "
        f"GENERATED ALWAYS AS (to_tsvector('english', coalesce({CONTEXT_COLUMN}, ''))) STORED"
    ),
    (
        f"CREATE INDEX IF NOT EXISTS {CONTEXT_GIN_INDEX} ON {T_FRAMES} "
        f"USING gin ({CONTEXT_TSV_COLUMN})"
    ),
    # BEFORE: the written row's own context, without a second write of the row.
    (
        f"CREATE OR REPLACE FUNCTION {PG_BEFORE_FUNCTION}() RETURNS trigger LANGUAGE plpgsql "
        f"{PINNED_SEARCH_PATH} {CUSTOM_PLANS} AS $$ "
        "BEGIN "
        "IF TG_OP = 'INSERT' OR NEW.mind_id IS DISTINCT FROM OLD.mind_id "
        "OR NEW.gop_id IS DISTINCT FROM OLD.gop_id OR NEW.t IS DISTINCT FROM OLD.t THEN "
        f"NEW.{CONTEXT_COLUMN} := {_PG_PRED_NEW}; "
        "END IF; RETURN NEW; END $$"
    ),
    # AFTER: the successors at the new and the old place (sees the whole statement's rows).
    (
        f"CREATE OR REPLACE FUNCTION {PG_AFTER_FUNCTION}() RETURNS trigger LANGUAGE plpgsql "
        f"{PINNED_SEARCH_PATH} {CUSTOM_PLANS} AS $$ "
        "BEGIN "
        "IF TG_OP <> 'DELETE' THEN "
        f"UPDATE {T_FRAMES} f SET {CONTEXT_COLUMN} = NEW.content WHERE f.id = "
        f"{successor('NEW.mind_id', 'NEW.gop_id', 'NEW.t')} "
        f"AND f.{CONTEXT_COLUMN} IS DISTINCT FROM NEW.content; "
        "END IF; "
        "IF TG_OP <> 'INSERT' THEN "
        f"UPDATE {T_FRAMES} f SET {CONTEXT_COLUMN} = {_PG_PRED_F} WHERE f.id = "
        f"{successor('OLD.mind_id', 'OLD.gop_id', 'OLD.t')} "
        f"AND f.{CONTEXT_COLUMN} IS DISTINCT FROM {_PG_PRED_F}; "
        "END IF; RETURN NULL; END $$"
    ),
    f"DROP TRIGGER IF EXISTS {PG_BEFORE_TRIGGER} ON {T_FRAMES}",
    (
        f"CREATE TRIGGER {PG_BEFORE_TRIGGER} BEFORE INSERT OR UPDATE OF content, mind_id, "
        f"gop_id, t ON {T_FRAMES} FOR EACH ROW EXECUTE FUNCTION {PG_BEFORE_FUNCTION}()"
    ),
    f"DROP TRIGGER IF EXISTS {PG_AFTER_TRIGGER} ON {T_FRAMES}",
    (
        f"CREATE TRIGGER {PG_AFTER_TRIGGER} AFTER INSERT OR DELETE OR UPDATE OF content, mind_id, "
        f"gop_id, t ON {T_FRAMES} FOR EACH ROW EXECUTE FUNCTION {PG_AFTER_FUNCTION}()"
    ),
)

PG_STALE_CONTEXT: Final = (
    f"UPDATE {T_FRAMES} f SET {CONTEXT_COLUMN} = {_PG_PRED_F} "
    f"WHERE f.{CONTEXT_COLUMN} IS DISTINCT FROM {_PG_PRED_F}"
)


def stale_context_update(dialect: str, mind_id: int | None) -> str:
    """The statement that recomputes every stale context (of one mind, ``:mind_id``, or all):
    what ``reconcile()`` runs, so a store whose contexts were cleared or written around the
    triggers reaches the indexed state again."""
    if dialect == "sqlite":
        return SQLITE_STALE_CONTEXT + ("" if mind_id is None else " AND mind_id = :mind_id")
    return PG_STALE_CONTEXT + ("" if mind_id is None else " AND f.mind_id = :mind_id")
