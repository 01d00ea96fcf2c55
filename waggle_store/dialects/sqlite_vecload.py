"""Reading a whole (mind, model) out of SQLite into the in-process vector index's rows
(:class:`~waggle_store.vectorindex.rows.Rows`).

Only frames whose manifest is ready for the model with the frame's current content hash are
kept (:func:`current_frames`, one indexed join; the vectors are filtered against it in numpy).

Two readers of the vectors. The public one is vec0's own full scan (``SELECT rowid, embedding,
created_ts FROM frame_vectors_N WHERE mind_id = ?``), which returns one row at a time through
the virtual table: ~45 µs a row on a 2-core machine (4.6 s at 100k frames of 384 dimensions,
against 0.8 s for the other reader). The fast one reads sqlite-vec's shadow tables, where
vec0 keeps the vectors 1,024 per chunk: ``<table>_chunks(chunk_id, size, partition00,
validity, rowids)``, ``<table>_vector_chunks00(rowid = chunk_id, vectors)`` (``size``
little-endian float32 rows) and ``<table>_metadatachunks01`` (``created_ts``: float64s): a few
large blobs per 1,024 frames. That layout is sqlite-vec's, not a public API, so it is used only
when every one of those tables exists and every blob is exactly the size the layout implies;
anything else falls back to the public scan, and the tests check both readers give the same
index.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import text

from waggle_store.dialects.base import T_EMBEDDINGS, T_FRAMES, Executor, vector_table_name
from waggle_store.dialects.common import connection_of, run_lane
from waggle_store.vectorindex.rows import Rows


def current_frames(executor: Executor, mind_id: int, model_id: int) -> list[Any]:
    """``(id, gop_id)`` of the mind's frames whose manifest is ready for the model with the
    frame's current content hash, by id."""
    return run_lane(
        executor,
        f"SELECT f.id, f.gop_id FROM {T_FRAMES} f JOIN {T_EMBEDDINGS} e ON e.frame_id = f.id "
        "AND e.status = 'ready' AND e.model_id = :model_id AND e.content_hash = f.content_hash "
        "WHERE f.mind_id = :mind_id ORDER BY f.id",
        {"mind_id": mind_id, "model_id": model_id},
    )


def changed_rows_sql(model_id: int) -> str:
    """``(id, embedding, gop_id, created_ts)`` of the mind's current frames among the JSON
    array ``:ids`` (a refresh after writes)."""
    return (
        f"SELECT v.rowid, v.embedding, v.gop_id, v.created_ts FROM {vector_table_name(model_id)} v "
        f"JOIN {T_EMBEDDINGS} e ON e.frame_id = v.rowid AND e.status = 'ready' "
        "AND e.model_id = :model_id "
        f"JOIN {T_FRAMES} f ON f.id = v.rowid AND f.content_hash = e.content_hash "
        "AND f.mind_id = :mind_id WHERE v.mind_id = :mind_id "
        "AND v.rowid IN (SELECT value FROM json_each(:ids))"
    )


class _Current:
    """The current frames as sorted ids and their session codes: which rows of a batch to keep."""

    def __init__(self, np_: Any, rows: Rows, current: list[Any]) -> None:
        count = len(current)
        self.np = np_
        self.ids = np_.fromiter((int(r[0]) for r in current), np_.int64, count)
        self.gops = np_.fromiter((rows.gop_code(str(r[1])) for r in current), np_.int32, count)

    def keep(self, ids: Any, used: Any = None) -> tuple[Any, Any]:
        """(mask of the batch's current rows, their session codes)."""
        np_ = self.np
        if not len(self.ids):
            return np_.zeros(len(ids), np_.bool_), self.gops[:0]
        # ``self.ids`` is sorted: a binary search per row says whether (and where) it is current.
        at = np_.minimum(np_.searchsorted(self.ids, ids), len(self.ids) - 1)
        keep = self.ids[at] == ids
        if used is not None:
            keep &= used
        return keep, self.gops[at[keep]]


def load(executor: Executor, np_: Any, mind_id: int, model_id: int, seq: int, dims: int,
         current: list[Any]) -> Rows:
    """The mind's current rows as of log position ``seq`` (``current``: :func:`current_frames`)."""
    rows = Rows.empty(np_, seq, dims, len(current))
    known = _Current(np_, rows, current)
    if not _load_chunks(executor, np_, rows, mind_id, model_id, known):
        rows.n = 0
        rows.rows.clear()
        _load_scan(executor, np_, rows, mind_id, model_id, known)
    return rows


def _has_shadow_tables(executor: Executor, table: str) -> bool:
    names = [f"{table}_chunks", f"{table}_vector_chunks00", f"{table}_metadatachunks01"]
    found = run_lane(executor, "SELECT count(*) FROM sqlite_master WHERE type = 'table' "
                     "AND name IN (:a, :b, :c)", dict(zip("abc", names, strict=True)))
    return int(found[0][0]) == len(names)


def _load_chunks(executor: Executor, np_: Any, rows: Rows, mind_id: int, model_id: int,
                 known: _Current) -> bool:
    """Fill ``rows`` from the shadow tables; False when they are not laid out as expected."""
    table = vector_table_name(model_id)
    if not _has_shadow_tables(executor, table):
        return False
    dims = rows.dims
    # ``+c.chunk_id``: the chunk tables' ``rowid`` is a declared column without a type, whose
    # unique index the planner does not use against the INTEGER ``chunk_id`` (it scanned and
    # sorted every blob). Without the affinity each chunk is looked up through that index while
    # ``c`` is scanned in ``chunk_id`` order: no sort.
    result = connection_of(executor).execute(
        text(f"SELECT c.size, c.validity, c.rowids, v.vectors, m.data FROM {table}_chunks c "
             f"JOIN {table}_vector_chunks00 v ON v.rowid = +c.chunk_id "
             f"JOIN {table}_metadatachunks01 m ON m.rowid = +c.chunk_id "
             "WHERE c.partition00 = :mind_id ORDER BY c.chunk_id"),
        {"mind_id": mind_id},
    )
    for size, validity, rowids, vectors, times in result:
        size = int(size)
        if (len(validity) * 8 < size or len(rowids) != 8 * size
                or len(vectors) != 4 * dims * size or len(times) != 8 * size):
            return False
        used = np_.unpackbits(np_.frombuffer(validity, np_.uint8), bitorder="little")[:size]
        ids = np_.frombuffer(rowids, "<i8")
        keep, gops = known.keep(ids, used.astype(np_.bool_))
        if rows.n + int(keep.sum()) > len(rows.ids):  # more rows than frames: not that layout
            return False
        rows.extend(ids[keep], np_.frombuffer(vectors, "<f4").reshape(size, dims)[keep],
                    np_.frombuffer(times, "<f8")[keep], gops)
    return True


def _load_scan(executor: Executor, np_: Any, rows: Rows, mind_id: int, model_id: int,
               known: _Current) -> None:
    """Fill ``rows`` through vec0's own scan (any layout), streamed in batches."""
    result = connection_of(executor).execute(
        text(f"SELECT rowid, embedding, created_ts FROM {vector_table_name(model_id)} "
             "WHERE mind_id = :mind_id"), {"mind_id": mind_id})
    for batch in result.partitions(20_000):
        ids = np_.fromiter((int(r[0]) for r in batch), np_.int64, len(batch))
        keep, gops = known.keep(ids)  # vec0's rowids are unique: at most one row a frame
        # vec0 returns a float[] column as its little-endian float32 blob.
        vectors = np_.frombuffer(b"".join(bytes(r[1]) for r in batch), "<f4").reshape(-1, rows.dims)
        ts = np_.fromiter((float(r[2]) for r in batch), np_.float64, len(batch))
        rows.extend(ids[keep], vectors[keep], ts[keep], gops)
