"""Ingest against the storage floor: the library and the raw rows it stores, side by side.

    python benchmarks/ingest_floor.py                          # SQLite and Postgres
    python benchmarks/ingest_floor.py --only sqlite --turns 5000 --session-turns 10000
    python benchmarks/ingest_floor.py --pg-url postgresql+psycopg://...   # else embedded PG
    python benchmarks/ingest_floor.py --locomo locomo10.json    # LoCoMo's turns, not synthetic

Three measurements per dialect, ratios from one run (absolute figures are noisy on a shared
machine; in 1. and 3. the two sides take turns, a tenth of the work at a time, so a slow minute
of the machine falls on both):

1. ``cognify_batch`` of ``--turns`` synthetic conversation turns (``ingest.py``'s generator,
   hashing embedder) vs the floor: the very rows the library stored (frames, manifests,
   entities, mentions, relations, vectors) read back and inserted into a fresh store of the same
   schema (FTS triggers / generated columns, vector table) with raw DBAPI ``executemany``, one
   transaction per 250 turns like the library (the floor writing the rows of the library's round
   just before).
2. Session length: one 10,000-turn session ingested 1,000 turns per call; the per-turn cost of
   the last 1,000 turns over the first 1,000 (1.0 = independent of the session's length).
3. ``frames.create_i`` in a loop (one call, one transaction) vs a raw insert of the frame and its
   manifest, one transaction each.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import uuid
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import sqlalchemy as sa

import waggle_store as ws
from waggle_store.dialects import vector_table_name
from waggle_store.engine import WaggleStoreWarning
from waggle_store.models import FrameEmbeddingRow, FrameRow
from waggle_store.models.base import table_name
from waggle_store.models.knowledge import EntityMentionRow, EntityRow, RelationRow
from waggle_store.testing import embedded_postgres

sys.path.insert(0, str(Path(__file__).parent))
from ingest import turns  # the generator of benchmarks/ingest.py

warnings.filterwarnings("ignore", category=WaggleStoreWarning)
warnings.filterwarnings("ignore", category=sa.exc.SAWarning)

CHUNK = 250  # turns per transaction on the floor side: the library's BATCH_CHUNK
LOCOMO: list[str] = []  # --locomo: the dataset's turns, used instead of the synthetic ones


def texts_for(n: int, seed: int) -> list[str]:
    """``n`` distinct turns: LoCoMo's (repeated with a pass number when it has fewer), else
    ``ingest.py``'s synthetic generator."""
    if not LOCOMO:
        return turns(n, seed)
    start = seed % len(LOCOMO)
    return [LOCOMO[(start + i) % len(LOCOMO)]
            + ("" if i < len(LOCOMO) else f" (pass {i // len(LOCOMO)})") for i in range(n)]


def load_locomo(path: Path) -> list[str]:
    out: list[str] = []
    for sample in json.loads(path.read_text()):
        conv = sample["conversation"]
        for key in sorted((k for k in conv if k.startswith("session_") and k[8:].isdigit()),
                          key=lambda k: int(k[8:])):
            out.extend(f"{t['speaker']}: {t['text']}" for t in conv[key])
    return list(dict.fromkeys(out))


@contextmanager
def _store(dialect: str, pg_url: str | None, embedder: str | None = "hashing"
           ) -> Iterator[ws.Store]:
    """A fresh store: a new SQLite file, or a new Postgres schema (dropped afterwards)."""
    if dialect == "sqlite":
        tmp = Path(tempfile.mkdtemp(prefix="waggle-floor-"))
        try:
            with ws.open_store(f"sqlite:///{tmp / 'f.db'}", embedder=embedder) as store:
                yield store
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return
    assert pg_url is not None
    schema = "floor_" + uuid.uuid4().hex[:8]
    try:
        with ws.open_store(pg_url, schema=schema, embedder=embedder) as store:
            yield store
    finally:
        engine = sa.create_engine(pg_url)
        with engine.begin() as conn:
            conn.exec_driver_sql(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        engine.dispose()


def _read(store: ws.Store, sql: str) -> list[tuple[Any, ...]]:
    with store.engine.connect() as conn:
        rows = [tuple(r) for r in conn.exec_driver_sql(sql)]
    # Postgres returns JSON columns as dicts; the driver sends str as "unknown", cast on insert.
    return [tuple(json.dumps(v) if isinstance(v, (dict, list)) else v for v in r) for r in rows]


def _table_rows(store: ws.Store, table: Any, order: str, where: str = "true"
                ) -> tuple[list[str], list[tuple[Any, ...]]]:
    cols = [c.name for c in table.columns]
    return cols, _read(store, f"SELECT {', '.join(cols)} FROM {table.name} WHERE {where} "
                              f"ORDER BY {order}")


def _copy_new(source: ws.Store, target: ws.Store, name: str, mark: str) -> None:
    """Untimed set-up: the rows of ``name`` in ``source`` that ``target`` lacks (by primary key):
    what ``cognify_batch`` needs before its first turn (mind, session, model)."""
    table = sa.Table(table_name(name), sa.MetaData(), autoload_with=source.engine,
                     schema=source.schema)
    cols = [c.name for c in table.columns]
    keys = [c.name for c in table.primary_key.columns]
    have = set(_read(target, f"SELECT {', '.join(keys)} FROM {table_name(name)}"))
    at = [cols.index(k) for k in keys]
    rows = [r for r in _read(source, f"SELECT {', '.join(cols)} FROM {table_name(name)}")
            if tuple(r[i] for i in at) not in have]
    if not rows:
        return
    raw = target.engine.raw_connection()
    try:
        raw.cursor().executemany(_insert_sql(name, cols, mark, mark == "%s"), rows)
        raw.commit()
    finally:
        raw.close()


def _floor(source: ws.Store, target: ws.Store, vector_seconds: list[float] | None = None,
           copied: dict[str, int] | None = None) -> list[float]:
    """Insert ``source``'s ingested rows into ``target`` with raw executemany; the seconds of
    each 250-turn transaction (and in ``vector_seconds`` those of its vector-table insert).

    ``copied``: the highest frame, entity and relation ids copied by an earlier call, updated:
    only the rows added since are inserted (rows an ingest updated after they were copied are
    not written again: the floor writes each row once)."""
    pg = source.engine.dialect.name == "postgresql"
    mark = "%s" if pg else "?"
    copied = {} if copied is None else copied
    after_frame = copied.get("frame", 0)
    for name in ("minds", "sessions", "embedding_models", "mind_embedding_models"):
        _copy_new(source, target, name, mark)
    f_cols, frames = _table_rows(source, FrameRow.__table__, "id", f"id > {after_frame}")
    m_cols, manifests = _table_rows(source, FrameEmbeddingRow.__table__, "frame_id",
                                    f"frame_id > {after_frame}")
    e_cols, entities = _table_rows(source, EntityRow.__table__, "id",
                                   f"id > {copied.get('entity', 0)}")
    n_cols, mentions = _table_rows(source, EntityMentionRow.__table__, "frame_id, entity_id",
                                   f"frame_id > {after_frame}")
    r_cols, relations = _table_rows(source, RelationRow.__table__, "id",
                                    f"id > {copied.get('relation', 0)}")
    models = _read(source, "SELECT id, dimensions FROM waggle_embedding_models")
    vtable, v_cols, vectors = "", [], []  # no embedder: no vectors
    for model_id, dims in models:
        with target.write() as session:
            target.adapter.ensure_vector_table(session, model_id, dims, repair=False)
        vtable = vector_table_name(model_id)
        if pg:
            v_cols = ["frame_id", "mind_id", "embedding", "gop_id", "created_at"]
            vectors = _read(source, f"SELECT frame_id, mind_id, embedding::text, gop_id, "
                                    f"created_at FROM {vtable} WHERE frame_id > {after_frame} "
                                    "ORDER BY frame_id")
        else:
            v_cols = ["rowid", "mind_id", "embedding", "gop_id", "created_ts"]
            vectors = _read(source, f"SELECT rowid, mind_id, embedding, gop_id, created_ts "
                                    f"FROM {vtable} WHERE rowid > {after_frame} ORDER BY rowid")
    for key, rows in (("frame", frames), ("entity", entities), ("relation", relations)):
        if rows:
            copied[key] = max(r[0] for r in rows)
    # Each row goes into the chunk of the turn that first needed it (FKs hold chunk by chunk).
    chunk_of = {f[0]: i // CHUNK for i, f in enumerate(frames)}
    first_mention: dict[int, int] = {}
    for entity_id, frame_id in ((m[n_cols.index("entity_id")], m[n_cols.index("frame_id")])
                                for m in mentions):
        first_mention[entity_id] = min(first_mention.get(entity_id, 10**9), chunk_of[frame_id])
    # An entity of an earlier call is in the target already: its relations need no chunk of it.
    entity_chunk = {e[0]: first_mention.get(e[0], 0) for e in entities}
    src, tgt = r_cols.index("source_id"), r_cols.index("target_id")
    plan: list[tuple[str, list[str], list[tuple[Any, ...]], Callable[[tuple[Any, ...]], int]]] = [
        ("memory_frames", f_cols, frames, lambda r: chunk_of[r[0]]),
        ("frame_embeddings", m_cols, manifests, lambda r: chunk_of[r[0]]),
        ("knowledge_entities", e_cols, entities, lambda r: entity_chunk[r[0]]),
        ("entity_mentions", n_cols, mentions,
         lambda r: chunk_of[r[n_cols.index("frame_id")]]),
        ("knowledge_relations", r_cols, relations,
         lambda r: max(entity_chunk.get(r[src], 0), entity_chunk.get(r[tgt], 0))),
        (vtable, v_cols, vectors, lambda r: chunk_of[r[0]]),
    ]
    chunks = max(chunk_of.values(), default=-1) + 1
    batches = [[(name, cols, [r for r in rows if key(r) == c]) for name, cols, rows, key in plan]
               for c in range(chunks)]
    raw = target.engine.raw_connection()
    try:
        cur = raw.cursor()
        seconds: list[float] = []
        for batch in batches:
            started = time.perf_counter()
            if not pg:
                cur.execute("BEGIN IMMEDIATE")
            vector_s = 0.0
            for name, cols, rows in batch:
                if rows:
                    began = time.perf_counter()
                    cur.executemany(_insert_sql(name, cols, mark, pg), rows)
                    if name == vtable:
                        vector_s += time.perf_counter() - began
            raw.commit() if pg else cur.execute("COMMIT")
            seconds.append(time.perf_counter() - started)
            if vector_seconds is not None:
                vector_seconds.append(vector_s)
        return seconds
    finally:
        raw.close()


def _insert_sql(name: str, cols: list[str], mark: str, pg: bool) -> str:
    values = ", ".join("CAST(%s AS vector)" if pg and c == "embedding" else mark for c in cols)
    return f"INSERT INTO {table_name(name)} ({', '.join(cols)}) VALUES ({values})"


def bench_batch(dialect: str, pg_url: str | None, n: int, rounds: int = 10
                ) -> tuple[float, float]:
    """Turns per second of the library's ``cognify_batch`` and of the floor, taking turns
    ``n / rounds`` turns at a time (the floor writing the rows the library's round stored)."""
    texts = texts_for(n, 7)
    per_round = max(CHUNK, n // rounds // CHUNK * CHUNK)  # whole chunks, as the library's
    lib_s = floor_s = 0.0
    copied: dict[str, int] = {}
    with _store(dialect, pg_url) as lib, _store(dialect, pg_url) as floor:
        mind = lib.mind("bench")
        for start in range(0, n, per_round):
            started = time.perf_counter()
            result = mind.cognify_batch(texts[start:start + per_round])  # the active session
            lib_s += time.perf_counter() - started
            assert not result.failures, result.failures[:3]
            floor_s += sum(_floor(lib, floor, copied=copied))
    return n / lib_s, n / floor_s


def bench_session(dialect: str, pg_url: str | None, n: int, embedder: str | None,
                  window: int = 1000) -> tuple[list[float], list[float], list[float], list[float]]:
    """Milliseconds per turn of each ``window`` turns of one session of ``n`` turns: the
    library's, and the floor's for the same rows (whose indexes grow with the tables too); then
    the part of each that is the vector-table INSERT (the library's timed at the driver, every
    statement on the vector table that inserts)."""
    texts = texts_for(n, 11)
    per_turn: list[float] = []
    lib_vec: list[float] = []
    with _store(dialect, pg_url, embedder) as store:
        spent = [0.0]

        @sa.event.listens_for(store.engine, "before_cursor_execute")
        def _began(conn: Any, cursor: Any, statement: str, *_: Any) -> None:
            conn.info["waggle_bench_t0"] = time.perf_counter()

        @sa.event.listens_for(store.engine, "after_cursor_execute")
        def _ended(conn: Any, cursor: Any, statement: str, *_: Any) -> None:
            if statement.startswith("INSERT INTO waggle_frame_vectors_"):
                spent[0] += time.perf_counter() - conn.info.pop("waggle_bench_t0")

        mind = store.mind("long")
        gop = mind.sessions.ensure("long-session").gop_id
        for start in range(0, n, window):
            spent[0] = 0.0
            began = time.perf_counter()
            mind.cognify_batch(texts[start:start + window], gop_id=gop)
            per_turn.append(1000 * (time.perf_counter() - began) / window)
            lib_vec.append(1000 * spent[0] / window)
        with _store(dialect, pg_url, embedder) as floor:
            vector_chunks: list[float] = []
            chunks = _floor(store, floor, vector_chunks)
    step = window // CHUNK

    def per_window(seconds: list[float]) -> list[float]:
        return [1000 * sum(seconds[i:i + step]) / window for i in range(0, len(seconds), step)]

    return per_turn, per_window(chunks), lib_vec, per_window(vector_chunks)


def bench_create_i(dialect: str, pg_url: str | None, n: int, rounds: int = 10
                   ) -> tuple[float, float]:
    """Calls per second of the library's ``create_i`` and of the raw insert, taking turns
    ``n / rounds`` calls at a time, each into its own store."""
    texts = [f"create_i memory number {i}: {t}" for i, t in enumerate(texts_for(n, 3))]
    per_round = max(1, n // rounds)
    with _store(dialect, pg_url) as lib_store, _store(dialect, pg_url) as raw_store:
        mind = lib_store.mind("frames")
        lib_gop = mind.sessions.ensure("g").gop_id
        raw_gop = raw_store.mind("frames").sessions.ensure("g").gop_id
        (mind_id,), = _read(raw_store, "SELECT id FROM waggle_minds WHERE name = 'frames'")
        pg = dialect == "postgresql"
        mark = "%s" if pg else "?"
        cols = [c.name for c in FrameRow.__table__.columns if c.name != "id"]
        frame_sql = _insert_sql("memory_frames", cols, mark, pg) + " RETURNING id"
        manifest_sql = _insert_sql("frame_embeddings", ["frame_id", "content_hash", "status",
                                                        "updated_at"], mark, pg)
        from waggle_store.repositories.common import content_hash
        from waggle_store.timeutil import utcnow
        raw = raw_store.engine.raw_connection()
        lib_seconds = raw_seconds = 0.0
        try:
            cur = raw.cursor()
            for start in range(0, n, per_round):
                chunk = list(enumerate(texts[start:start + per_round], start))
                started = time.perf_counter()
                for _, text in chunk:
                    mind.frames.create_i(lib_gop, text)
                lib_seconds += time.perf_counter() - started
                started = time.perf_counter()
                for t, text in chunk:
                    now = utcnow() if pg else utcnow().isoformat(sep=" ")
                    digest = content_hash(text)
                    row = {"mind_id": mind_id, "frame_type": "I", "gop_id": raw_gop, "t": t,
                           "base_frame_id": None, "content": text, "content_hash": digest,
                           "importance": "normal", "source": "user_stated", "access_count": 0,
                           "created_at": now, "last_accessed": now, "salience": None,
                           "search_context": None,  # derived: set by the context triggers
                           "metadata": None}
                    if not pg:
                        cur.execute("BEGIN IMMEDIATE")
                    cur.execute(frame_sql, [row[c] for c in cols])
                    returned = cur.fetchone()
                    assert returned is not None  # RETURNING id: one row
                    (frame_id,) = returned
                    cur.execute(manifest_sql, (frame_id, digest, "pending", now))
                    raw.commit() if pg else cur.execute("COMMIT")
                raw_seconds += time.perf_counter() - started
        finally:
            raw.close()
    return n / lib_seconds, n / raw_seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=5000)
    parser.add_argument("--session-turns", type=int, default=10_000)
    parser.add_argument("--create-i", type=int, default=2000)
    parser.add_argument("--session-embedder", choices=["hashing", "none"], default="hashing",
                        help="none: no vectors (pgvector's HNSW insert cost grows with the "
                             "table, as any index's)")
    parser.add_argument("--only", choices=["sqlite", "postgres"])
    parser.add_argument("--skip", action="append", default=[],
                        choices=["batch", "session", "create_i"])
    parser.add_argument("--pg-url", default=os.environ.get("WAGGLE_BENCH_PG_URL"))
    parser.add_argument("--locomo", type=Path, help="LoCoMo JSON: ingest its turns instead")
    args = parser.parse_args()
    if args.locomo is not None:
        LOCOMO.extend(load_locomo(args.locomo))
    stop = None
    try:
        for dialect in ("sqlite", "postgresql"):
            if args.only is not None and not dialect.startswith(args.only):
                continue
            url = None
            if dialect == "postgresql":
                url = args.pg_url
                if url is None:
                    url, stop = embedded_postgres("waggle-floor-pg-")
            if "batch" not in args.skip:
                lib, floor = bench_batch(dialect, url, args.turns)
                print(f"{dialect:10s} cognify_batch {args.turns} turns: library {lib:7.0f} "
                      f"turns/s, floor {floor:7.0f} turns/s, ratio {floor / lib:5.2f}x",
                      flush=True)
            if "session" not in args.skip:
                embedder = None if args.session_embedder == "none" else "hashing"
                ms, fl, lv, fv = bench_session(dialect, url, args.session_turns, embedder)
                rows = [("library", ms), ("floor", fl)]
                if embedder is not None and dialect == "postgresql":
                    # pgvector's HNSW insert, on both sides, and everything else
                    rows += [("lib vector INSERT", lv), ("floor vector INSERT", fv),
                             ("lib minus vector", [a - b for a, b in zip(ms, lv, strict=True)]),
                             ("floor minus vector", [a - b for a, b in zip(fl, fv, strict=True)])]
                print(f"{dialect:10s} one session of {args.session_turns} turns "
                      f"({args.session_embedder}), ms/turn per 1,000:", flush=True)
                for label, values in rows:
                    print(f"  {label:19s} {' '.join(f'{m:.2f}' for m in values)}; last/first "
                          f"{values[-1] / max(values[0], 1e-9):.2f}x", flush=True)
            if "create_i" not in args.skip:
                lib, floor = bench_create_i(dialect, url, args.create_i)
                print(f"{dialect:10s} frames.create_i x{args.create_i}: library {lib:7.0f}/s, "
                      f"raw {floor:7.0f}/s, ratio {floor / lib:5.2f}x", flush=True)
    finally:
        if stop is not None:
            stop()


if __name__ == "__main__":
    main()
