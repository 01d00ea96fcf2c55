"""Context-aware keyword indexing: a frame is also found by the words of the turn before it in its
session, at a lower weight than its own words, without its stored or returned content changing;
the context follows every write (delete, edit, import, batch ingest) and reconcile restores it."""

from __future__ import annotations

import io

from sqlalchemy import create_engine, text

import waggle_store as ws
from waggle_store import migrate

from conftest import Target, only_postgres

QUESTION = "Did you ever visit the Rijksmuseum in Amsterdam?"
REPLY = "Yes! I went there last week with my kids."
OTHER = "I keep a list of Rijksmuseum paintings from my Amsterdam trip."


def _conversation(mind: ws.Mind) -> tuple[int, int, int]:
    gop = mind.sessions.ensure("s1").gop_id
    q = mind.frames.create_i(gop, QUESTION).id
    r = mind.frames.create_i(gop, REPLY).id
    later = mind.sessions.ensure("s2").gop_id
    o = mind.frames.create_i(later, OTHER).id
    return q, r, o


def _keyword_ids(mind: ws.Mind, query: str) -> list[int]:
    """What the keyword index finds (no expansion, which adds the turns beside its hits)."""
    return [h.frame.id for h in mind.search(query, lanes=("keyword",), limit=10, expand=False)]


def _context(store: ws.Store, frame_id: int) -> str | None:
    with store.read() as s:
        value = s.execute(
            text("SELECT search_context FROM waggle_memory_frames WHERE id = :id"), {"id": frame_id}
        ).scalar()
    return None if value is None else str(value)


def test_a_reply_is_found_by_the_turn_it_answers_below_own_word_matches(
    store: ws.Store, mind: ws.Mind
) -> None:
    q, r, o = _conversation(mind)
    ids = _keyword_ids(mind, "Rijksmuseum Amsterdam")
    assert r in ids  # the reply says neither word
    # Frames that say the words themselves rank above the one whose neighbour says them.
    assert ids.index(q) < ids.index(r)
    assert ids.index(o) < ids.index(r)
    results = {h.frame.id: h for h in mind.search("Rijksmuseum Amsterdam", limit=10)}
    assert results[r].frame.content == REPLY  # returned content is the frame's own
    assert mind.frames.get(r).content == REPLY  # and so is the stored one
    assert _context(store, r) == QUESTION
    assert _context(store, q) is None  # first of its session
    assert _context(store, o) is None  # contexts do not cross sessions


def test_deleting_or_editing_a_turn_removes_its_words_from_the_next_turns_index(
    store: ws.Store, mind: ws.Mind
) -> None:
    gop = mind.sessions.ensure("s").gop_id
    first = mind.frames.create_i(gop, "the zanzibar offsite is booked").id
    secret = mind.frames.create_i(gop, "my passphrase is quokka-lantern").id
    reply = mind.frames.create_i(gop, "noted, thanks").id
    assert reply in _keyword_ids(mind, "quokka lantern")
    mind.frames.update(secret, "my passphrase changed")
    assert _keyword_ids(mind, "quokka lantern") == []
    assert reply in _keyword_ids(mind, "passphrase changed")
    mind.frames.delete(secret)
    assert _keyword_ids(mind, "passphrase") == []  # forgotten text is not found via a neighbour
    assert _context(store, reply) == "the zanzibar offsite is booked"
    assert _keyword_ids(mind, "zanzibar")[:2] == [first, reply]


def test_reconcile_restores_contexts_of_a_store_written_without_them(
    store: ws.Store, mind: ws.Mind
) -> None:
    _q, r, _o = _conversation(mind)
    # What a store of revision 0005 looks like to the index: no context anywhere.
    with store.write() as s:
        s.execute(text("UPDATE waggle_memory_frames SET search_context = NULL"))
    assert r not in _keyword_ids(mind, "Rijksmuseum Amsterdam")
    report = store.reconcile()
    assert report.fts_fixed >= 1
    assert _context(store, r) == QUESTION
    assert r in _keyword_ids(mind, "Rijksmuseum Amsterdam")
    assert store.reconcile().fts_fixed == 0  # nothing stale left


def test_import_recomputes_contexts_and_export_does_not_carry_them(
    store: ws.Store, mind: ws.Mind
) -> None:
    _conversation(mind)
    out = io.StringIO()
    store.export_mind(mind, out)
    dump = out.getvalue()
    assert "search_context" not in dump
    store.import_mind(io.StringIO(dump), into="copy")
    copy = store.mind("copy")
    session = copy.sessions.ensure("s1").gop_id
    reply = next(f for f in copy.frames.gop(session) if f.content == REPLY)
    assert _context(store, reply.id) == QUESTION
    assert reply.id in _keyword_ids(copy, "Rijksmuseum Amsterdam")


def test_batch_ingest_gives_each_turn_the_previous_one_as_context(
    store: ws.Store, mind: ws.Mind
) -> None:
    gop = mind.sessions.ensure("b").gop_id
    turns = ["which trail did you hike near Chamonix?", "the one past the glacier", "beautiful"]
    mind.cognify_batch(turns[:2], gop_id=gop)
    mind.cognify_batch(turns[2:], gop_id=gop)  # the previous turn is in an earlier call
    frames = sorted(mind.frames.gop(gop), key=lambda f: f.t)
    assert [f.content for f in frames] == turns
    assert [_context(store, f.id) for f in frames] == [None, turns[0], turns[1]]
    assert frames[1].id in _keyword_ids(mind, "Chamonix")


def test_a_pruned_frames_words_leave_the_next_frames_index(
    store: ws.Store, mind: ws.Mind
) -> None:
    gop = mind.sessions.ensure("p").gop_id
    mind.frames.create_i(gop, "standup notes", importance="important")
    mind.frames.create_i(gop, "door code is marmoset-7", importance="temporary")
    reply = mind.frames.create_i(gop, "got it", importance="important").id
    assert reply in _keyword_ids(mind, "marmoset")
    # temporary: base salience 0.25, below 0.3; important frames are never pruned.
    report = mind.consolidate(prune_below=0.3)
    assert report.fragments_deleted == 1
    assert _keyword_ids(mind, "marmoset") == []
    assert _context(store, reply) == "standup notes"


@only_postgres  # the one backend with schemas, hence search paths that can differ
def test_contexts_follow_a_write_from_a_session_with_another_search_path(
    target: Target, store: ws.Store, mind: ws.Mind
) -> None:
    """An operator deleting a frame by its qualified name, from a session whose search_path does
    not name the store's schema (or names another store's), still gets this store's contexts
    recomputed: the trigger functions carry their own search_path."""
    gop = mind.sessions.ensure("s").gop_id
    mind.frames.create_i(gop, "the kickoff is in Lisbon")
    secret = mind.frames.create_i(gop, "the vault code is ocelot-harbor").id
    reply = mind.frames.create_i(gop, "noted").id
    assert _context(store, reply) == "the vault code is ocelot-harbor"
    schema = target.schema or "waggle"
    with store.engine.begin() as conn:  # LOCAL: the pooled connection keeps its own path
        conn.exec_driver_sql("SET LOCAL search_path TO public")
        conn.execute(text(f'DELETE FROM "{schema}".waggle_memory_frames WHERE id = :id'),
                     {"id": secret})
    assert _context(store, reply) == "the kickoff is in Lisbon"
    assert _keyword_ids(mind, "ocelot harbor") == []


#: The context trigger functions, and the setting that has them plan per row (migration 0009).
_CONTEXT_FUNCTIONS = ["waggle_memory_frames_ctx_after", "waggle_memory_frames_ctx_before"]
_PER_ROW_PLANS = "plan_cache_mode=force_custom_plan"


def _trigger_function_settings(store: ws.Store) -> dict[str, list[str]]:
    with store.read() as s:
        rows = s.execute(text(
            "SELECT proname, proconfig FROM pg_proc WHERE pronamespace = "
            "to_regnamespace(current_schema()) AND proname LIKE 'waggle_memory_frames_ctx_%'"
        )).all()
    return {str(r[0]): sorted(r[1] or []) for r in rows}


@only_postgres  # the one backend whose trigger functions cache plans
def test_the_context_triggers_plan_their_lookups_per_row(store: ws.Store, mind: ws.Mind) -> None:
    """The trigger functions find a written frame's neighbours with plans made for each row
    (``plan_cache_mode = force_custom_plan``), on a migrated store and on one whose functions
    ``reconcile(repair=True)`` recreated. A cached generic plan, made while a new store's table
    held a few rows, read every frame of the mind through ``(mind_id, created_at)`` instead of
    seeking ``(mind_id, gop_id, t)``: measured by ``auto_explain`` in a 5,000-turn
    ``cognify_batch`` with autoanalyze held off, 4,750 of its 5,000 inserts (the quadratic ingest
    of ``benchmarks/README.md``). Which plan wins that near tie of costs depends on the indexes'
    sizes, so this test checks the setting that rules it out, on both paths that create it."""
    settings = _trigger_function_settings(store)
    assert sorted(settings) == _CONTEXT_FUNCTIONS
    assert all(_PER_ROW_PLANS in found for found in settings.values()), settings
    with store.write() as s:  # a store whose functions predate migration 0009, trigger lost
        for name in _CONTEXT_FUNCTIONS:
            s.execute(text(f"ALTER FUNCTION {name}() RESET plan_cache_mode"))
        s.execute(text("DROP TRIGGER waggle_memory_frames_ctx_b ON waggle_memory_frames"))
    assert not any(_PER_ROW_PLANS in found for found in _trigger_function_settings(store).values())
    store.reconcile(repair=True)
    assert all(_PER_ROW_PLANS in found for found in _trigger_function_settings(store).values())
    gop = mind.sessions.ensure("g").gop_id  # and the recreated triggers keep contexts
    mind.frames.create_i(gop, "the first turn")
    second = mind.frames.create_i(gop, "the second turn").id
    assert _context(store, second) == "the first turn"


@only_postgres
def test_a_store_whose_context_functions_were_dropped_upgrades_and_repairs(
    target: Target, store: ws.Store
) -> None:
    """Migration 0009 changes the trigger functions only where they exist: a store at 0008 whose
    derived objects were dropped upgrades all the same, health() names the missing triggers, and
    the repair recreates the functions with their per-row plans."""
    store.close()
    migrate.downgrade(target.url, "0008", schema=target.schema)
    engine = create_engine(target.url)
    try:
        with engine.begin() as conn:
            conn.execute(text(f'SET LOCAL search_path TO "{target.schema}"'))
            for name in _CONTEXT_FUNCTIONS:
                conn.execute(text(f"DROP FUNCTION {name}() CASCADE"))
    finally:
        engine.dispose()
    migrate.upgrade(target.url, schema=target.schema)
    with target.open() as reopened:
        assert _trigger_function_settings(reopened) == {}
        assert any("ctx_b" in reason for reason in reopened.health().reasons)
        reopened.reconcile(repair=True)
        settings = _trigger_function_settings(reopened)
        assert sorted(settings) == _CONTEXT_FUNCTIONS
        assert all(_PER_ROW_PLANS in found for found in settings.values())
