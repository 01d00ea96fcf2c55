"""Import of a Waggle ``.mind`` file (Waggle's SQLite schema) with the data bugs its files hold."""

from __future__ import annotations

import json
import sqlite3
import struct
from pathlib import Path

import pytest

import waggle_store as ws
from waggle_store.engine import pick_sqlite_driver

# Waggle's DDL, memory tables only, as Waggle creates them in a .mind file.
WAGGLE_DDL = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS identity (
  id INTEGER PRIMARY KEY CHECK (id = 1), name TEXT NOT NULL,
  role TEXT NOT NULL DEFAULT '', department TEXT NOT NULL DEFAULT '',
  personality TEXT NOT NULL DEFAULT '', capabilities TEXT NOT NULL DEFAULT '',
  system_prompt TEXT NOT NULL DEFAULT '',
  created_at TEXT NOT NULL DEFAULT (datetime('now')),
  updated_at TEXT NOT NULL DEFAULT (datetime('now')));
CREATE TABLE IF NOT EXISTS awareness (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  category TEXT NOT NULL CHECK (category IN ('task', 'action', 'pending', 'flag')),
  content TEXT NOT NULL, priority INTEGER NOT NULL DEFAULT 0, metadata TEXT NOT NULL DEFAULT '{}',
  created_at TEXT NOT NULL DEFAULT (datetime('now')), expires_at TEXT);
CREATE TABLE IF NOT EXISTS sessions (
  id INTEGER PRIMARY KEY AUTOINCREMENT, gop_id TEXT NOT NULL UNIQUE, project_id TEXT,
  status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'closed', 'archived')),
  started_at TEXT NOT NULL DEFAULT (datetime('now')), ended_at TEXT, summary TEXT);
CREATE INDEX IF NOT EXISTS idx_sessions_project ON sessions (project_id, started_at);
CREATE TABLE IF NOT EXISTS memory_frames (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  frame_type TEXT NOT NULL CHECK (frame_type IN ('I', 'P', 'B')),
  gop_id TEXT NOT NULL, t INTEGER NOT NULL DEFAULT 0,
  base_frame_id INTEGER REFERENCES memory_frames(id), content TEXT NOT NULL,
  importance TEXT NOT NULL DEFAULT 'normal'
    CHECK (importance IN ('critical', 'important', 'normal', 'temporary', 'deprecated')),
  source TEXT NOT NULL DEFAULT 'user_stated'
    CHECK (source IN ('user_stated', 'tool_verified', 'agent_inferred', 'import', 'system')),
  access_count INTEGER NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL DEFAULT (datetime('now')),
  last_accessed TEXT NOT NULL DEFAULT (datetime('now')),
  FOREIGN KEY (gop_id) REFERENCES sessions(gop_id));
CREATE INDEX IF NOT EXISTS idx_frames_gop_t ON memory_frames (gop_id, t);
CREATE INDEX IF NOT EXISTS idx_frames_type ON memory_frames (frame_type, gop_id);
CREATE INDEX IF NOT EXISTS idx_frames_base ON memory_frames (base_frame_id);
CREATE VIRTUAL TABLE IF NOT EXISTS memory_frames_fts USING fts5(
  content, content_rowid='id', tokenize='porter unicode61');
CREATE TABLE IF NOT EXISTS knowledge_entities (
  id INTEGER PRIMARY KEY AUTOINCREMENT, entity_type TEXT NOT NULL, name TEXT NOT NULL,
  properties TEXT NOT NULL DEFAULT '{}', valid_from TEXT NOT NULL DEFAULT (datetime('now')),
  valid_to TEXT, recorded_at TEXT NOT NULL DEFAULT (datetime('now')));
CREATE INDEX IF NOT EXISTS idx_entities_type ON knowledge_entities (entity_type);
CREATE INDEX IF NOT EXISTS idx_entities_name ON knowledge_entities (name);
CREATE TABLE IF NOT EXISTS knowledge_relations (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  source_id INTEGER NOT NULL REFERENCES knowledge_entities(id),
  target_id INTEGER NOT NULL REFERENCES knowledge_entities(id),
  relation_type TEXT NOT NULL, confidence REAL NOT NULL DEFAULT 1.0,
  properties TEXT NOT NULL DEFAULT '{}', valid_from TEXT NOT NULL DEFAULT (datetime('now')),
  valid_to TEXT, recorded_at TEXT NOT NULL DEFAULT (datetime('now')));
CREATE INDEX IF NOT EXISTS idx_relations_source ON knowledge_relations (source_id, relation_type);
CREATE INDEX IF NOT EXISTS idx_relations_target ON knowledge_relations (target_id, relation_type);
CREATE TABLE IF NOT EXISTS harvest_sources (
  id INTEGER PRIMARY KEY AUTOINCREMENT, source TEXT NOT NULL UNIQUE, display_name TEXT NOT NULL,
  source_path TEXT, last_synced_at TEXT, items_imported INTEGER NOT NULL DEFAULT 0,
  frames_created INTEGER NOT NULL DEFAULT 0, auto_sync INTEGER NOT NULL DEFAULT 0,
  sync_interval_hours INTEGER NOT NULL DEFAULT 24, last_content_hash TEXT,
  created_at TEXT NOT NULL DEFAULT (datetime('now')));
CREATE TABLE IF NOT EXISTS embedding_usage (
  id INTEGER PRIMARY KEY AUTOINCREMENT, user_id TEXT NOT NULL, year_month TEXT NOT NULL,
  count INTEGER NOT NULL DEFAULT 0, updated_at INTEGER NOT NULL, UNIQUE (user_id, year_month));
"""


def build_waggle_mind(path: Path) -> None:
    """A .mind file as Waggle writes it, with the known data bugs of Waggle's files."""
    driver, _ = pick_sqlite_driver()  # one that can load sqlite-vec, for the vec0 table
    conn = driver.connect(str(path))
    conn.executescript(WAGGLE_DDL)
    conn.execute(
        "INSERT INTO meta VALUES ('schema_version', '1'), "
        "('first_run_at', '2025-11-02T08:00:00.000Z')"
    )
    conn.execute(
        "INSERT INTO identity (id, name, role, created_at, updated_at) VALUES "
        "(1, 'Hive', 'assistant', '2025-11-02 08:00:00', '2025-11-03T09:30:00.000Z')"
    )
    conn.execute(
        "INSERT INTO awareness (category, content, priority, metadata, created_at) VALUES "
        "('task', 'finish the port', 2, '{\"ticket\": 7}', '2025-11-02 08:01:00'),"
        "('flag', 'broken metadata', 0, 'not json', '2025-11-02 08:02:00')"
    )
    conn.execute(
        "INSERT INTO sessions (gop_id, project_id, status, started_at) VALUES "
        "('session:a', NULL, 'active', '2025-11-02 08:00:00'),"
        "('harvest:chatgpt', NULL, 'active', '2025-11-02T08:00:00.000Z'),"
        "('session:b', NULL, 'active', '2025-11-04 10:00:00')"
    )  # two active auto sessions
    frames = [
        # id, type, gop, t, base, content, importance, source, access, created, last
        (
            1,
            "I",
            "session:a",
            0,
            None,
            "Kickoff of Project Apollo with Sarah Chen",
            "important",
            "user_stated",
            4,
            "2025-11-02 08:00:05",
            "2025-11-05T10:00:00.000Z",
        ),
        (
            2,
            "P",
            "session:a",
            1,
            1,
            "Apollo moves to PostgreSQL",
            "normal",
            "user_stated",
            0,
            "2025-11-02 08:05:00",
            "2025-11-02 08:05:00",
        ),
        (
            3,
            "P",
            "session:a",
            1,
            1,
            "Same t as frame 2 (racy nextT)",
            "normal",
            "agent_inferred",
            0,
            "2025-11-02T08:06:00.000Z",
            "2025-11-02T08:06:00.000Z",
        ),
        (
            4,
            "P",
            "session:a",
            3,
            999,
            "Delta whose base frame is gone",
            "normal",
            "user_stated",
            1,
            "2025-11-02 08:07:00",
            "garbage-time",
        ),
        (
            5,
            "B",
            "session:a",
            4,
            1,
            '{"description":"links without targets"}',
            "normal",
            "user_stated",
            0,
            "2025-11-02 08:08:00",
            "2025-11-02 08:08:00",
        ),
        (
            6,
            "B",
            "session:a",
            5,
            1,
            '{"description":"kickoff and a lost frame","references":[1,777]}',
            "normal",
            "user_stated",
            0,
            "2025-11-02 08:09:00",
            "2025-11-02 08:09:00",
        ),
        (
            7,
            "I",
            "harvest:chatgpt",
            0,
            None,
            "[chatgpt] Trip to Lisbon: the food was great",
            "normal",
            "import",
            0,
            "2024-06-01T12:00:00.000Z",
            "2024-06-01T12:00:00.000Z",
        ),
        (
            8,
            "I",
            "team-sync",
            0,
            None,
            "Team sync note with no session row",
            "normal",
            "user_stated",
            0,
            "2025-11-06 09:00:00",
            "2025-11-06 09:00:00",
        ),
    ]
    conn.execute("PRAGMA foreign_keys = OFF")  # how the orphans got there
    conn.executemany("INSERT INTO memory_frames VALUES (?,?,?,?,?,?,?,?,?,?,?)", frames)
    conn.execute("PRAGMA ignore_check_constraints = ON")
    # A frame whose source is none of the known sources, as Waggle's own files hold.
    conn.execute("UPDATE memory_frames SET source = 'team_sync' WHERE id = 8")
    conn.execute("PRAGMA ignore_check_constraints = OFF")
    conn.executemany(
        "INSERT INTO memory_frames_fts (rowid, content) VALUES (?, ?)",
        [(f[0], f[5]) for f in frames],
    )
    entities = [
        (1, "person", "Sarah Chen", '{"role": "lead"}', "2025-11-02 08:00:05", None),
        (2, "project", "Apollo", "{}", "2025-11-02 08:00:05", None),
        (3, "concept", "Phase", "{}", "2025-11-02 08:00:06", None),
        (4, "concept", "phase", "{}", "2025-11-02 08:00:07", None),  # the same entity again
        (5, "person", "Old Contact", "{}", "2025-01-01T00:00:00.000Z", "2025-06-01T00:00:00.000Z"),
    ]
    conn.executemany(
        "INSERT INTO knowledge_entities (id, entity_type, name, properties, valid_from, "
        "valid_to) VALUES (?,?,?,?,?,?)",
        entities,
    )
    conn.executemany(
        "INSERT INTO knowledge_relations (source_id, target_id, relation_type, confidence, "
        "valid_from) VALUES (?,?,?,?,?)",
        [
            (1, 2, "leads", 0.9, "2025-11-02 08:00:05"),
            (2, 3, "has", 1.0, "2025-11-02 08:00:06"),
            (2, 4, "has", 1.0, "2025-11-02 08:00:07"),  # same edge via the duplicate
            (1, 42, "knows", 1.0, "2025-11-02 08:00:08"),  # entity 42 is gone
        ],
    )
    conn.execute(
        "INSERT INTO harvest_sources (source, display_name, source_path, last_synced_at, "
        "items_imported, frames_created, auto_sync, last_content_hash) VALUES "
        "('chatgpt', 'ChatGPT export', '/tmp/conversations.json', '2025-11-01 07:00:00', "
        "12, 1, 1, 'abc')"
    )
    conn.execute(
        "INSERT INTO embedding_usage (user_id, year_month, count, updated_at) "
        "VALUES ('local', '2025-11', 8, 1762070400000)"
    )
    import sqlite_vec

    conn.enable_load_extension(True)
    sqlite_vec.load(conn)
    conn.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS memory_frames_vec USING vec0(embedding float[1024])"
    )
    padded = [0.1] * 384 + [0.0] * 640  # a 384-d model's vector, zero-padded to 1024
    conn.execute(
        "INSERT INTO memory_frames_vec (rowid, embedding) VALUES (1, ?)",
        (struct.pack("<1024f", *padded),),
    )
    conn.commit()
    conn.close()


def test_waggle_mind_imports_with_its_bugs_repaired(store: ws.Store, tmp_path: Path) -> None:
    path = tmp_path / "hive.mind"
    build_waggle_mind(path)
    before = path.read_bytes()
    report = store.import_waggle_mind(str(path), into="hive")
    assert path.read_bytes() == before  # opened read-only

    assert (
        report.frames_imported,
        report.sessions_imported,
        report.entities_imported,
        report.relations_imported,
        report.awareness_imported,
        report.harvest_sources_imported,
    ) == (8, 4, 4, 2, 2, 1)
    assert report.duplicates_skipped == 0
    assert report.vectors_pending == 8
    problems = {p.split(" (first:")[0]: p for p in report.problems}
    expected = {
        "1 x two frames at the same t of a session",
        "1 x orphaned base frame",
        "1 x B-frame without references",
        "1 x frame reference to a frame not in the file",
        "1 x frame whose session is missing",
        "1 x frame source outside the schema",
        "1 x the same active entity stored twice",
        "1 x the same active relation stored twice",
        "1 x relation to a missing entity",
        "1 x unreadable time",
        "1 x unreadable JSON object",
        "1 x second active session for a project",
        "1 x vectors not imported",
        "1 x embedding_usage rows not imported",
    }
    assert expected <= set(problems), sorted(problems)
    naive = next(p for p in report.problems if "time without a zone" in p)
    assert int(naive.split(" x ")[0]) >= 20

    mind = store.mind("hive")
    identity = mind.identity.get()
    assert identity is not None
    assert identity.name == "Hive"
    assert identity.created_at.isoformat() == "2025-11-02T08:00:00+00:00"
    assert identity.updated_at.isoformat() == "2025-11-03T09:30:00+00:00"
    frames = {f.content: f for f in mind.frames.recent(100)}
    kickoff = frames["Kickoff of Project Apollo with Sarah Chen"]
    assert (kickoff.importance, kickoff.access_count) == ("important", 4)
    assert kickoff.created_at.isoformat() == "2025-11-02T08:00:05+00:00"
    assert kickoff.last_accessed.isoformat() == "2025-11-05T10:00:00+00:00"
    assert frames["Same t as frame 2 (racy nextT)"].t == 2
    assert frames["Delta whose base frame is gone"].base_frame_id is None
    linked = next(f for f in frames.values() if "lost frame" in f.content)
    assert json.loads(linked.content)["references"] == [kickoff.id]
    assert frames["Team sync note with no session row"].source == "import"
    assert mind.sessions.get("team-sync") is not None
    statuses = {s.gop_id: s.status for s in mind.sessions.list()}
    assert statuses["session:a"] == "active"
    assert statuses["session:b"] == "closed"
    phases = mind.knowledge.search_entities("phase")
    assert len(phases) == 1
    apollo = next(e for e in mind.knowledge.search_entities("apollo"))
    assert len(mind.knowledge.relations_from(apollo.id)) == 1
    assert mind.knowledge.entities_valid_at("2025-03-01T00:00:00Z")[0].name == "Old Contact"

    fixed = store.reconcile(mind="hive")
    assert fixed.vectors_fixed == 8
    assert mind.search("Lisbon food", limit=3)[0].frame.content.startswith(
        "[chatgpt] Trip to Lisbon"
    )

    again = store.import_waggle_mind(str(path), into="hive")  # a second import adds nothing
    assert again.frames_imported == 0
    assert again.duplicates_skipped == 8


def test_not_a_mind_file(store: ws.Store, tmp_path: Path) -> None:
    junk = tmp_path / "junk.mind"
    junk.write_text("hello")
    with pytest.raises(ws.InvalidInputError):
        store.import_waggle_mind(str(junk), into="x")
    empty = tmp_path / "empty.mind"
    sqlite3.connect(empty).close()
    with pytest.raises(ws.InvalidInputError, match=r"not a Waggle \.mind"):
        store.import_waggle_mind(str(empty), into="x")
    with pytest.raises(ws.InvalidInputError):
        store.import_waggle_mind(str(tmp_path / "missing.mind"), into="x")
