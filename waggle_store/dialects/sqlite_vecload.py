"""Reading a whole (mind, model) out of SQLite for the in-process vector index
(:mod:`waggle_store.dialects.sqlite_vecindex`).

Why two readers: vec0's own full scan (``SELECT rowid, embedding, ... FROM frame_vectors_N WHERE
mind_id = ?``) returns one row at a time through the virtual table, ~10–40 µs a row here (1–4 s
at 100k frames, tens of seconds at 1M). sqlite-vec keeps the vectors in ordinary shadow tables,
1,024 per chunk: ``<table>_chunks(chunk_id, size, partition00, validity, rowids)``,
``<table>_vector_chunks00(rowid = chunk_id, vectors)`` (``size`` little-endian float32 rows) and
one ``<table>_metadatachunksNN`` per metadata column (``created_ts`` is the second: float64s).
Reading those is a few large blobs per 1,024 frames. The layout is sqlite-vec's, not a public
API, so it is used only when the shadow tables exist with every blob exactly the size that
layout implies; anything else falls back to vec0's scan. Either way only frames whose manifest
is ready for the model with the frame's current content hash are kept (one indexed join), and a
full reload is checked against vec0's answers by the tests.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import text

from waggle_store.dialects.base import T_EMBEDDINGS, T_FRAMES, Executor, vector_table_name
from waggle_store.dialects.common import connection_of, run_lane


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


def qualifying_sql(model_id: int, some: bool) -> str:
    """Through vec0: ``(id, embedding, gop_id, created_ts)`` of the mind's current frames (all,
    or those of the JSON array ``:ids``)."""
    ids = "AND v.rowid IN (SELECT value FROM json_each(:ids))" if some else ""
    return (
        f"SELECT v.rowid, v.embedding, v.gop_id, v.created_ts FROM {vector_table_name(model_id)} v "
        f"JOIN {T_EMBEDDINGS} e ON e.frame_id = v.rowid AND e.status = 'ready' "
        "AND e.model_id = :model_id "
        f"JOIN {T_FRAMES} f ON f.id = v.rowid AND f.content_hash = e.content_hash "
        f"AND f.mind_id = :mind_id WHERE v.mind_id = :mind_id {ids}"
    )


def _has_shadow_tables(executor: Executor, table: str) -> bool:
    names = [f"{table}_chunks", f"{table}_vector_chunks00", f"{table}_metadatachunks01"]
    found = run_lane(executor, "SELECT count(*) FROM sqlite_master WHERE type = 'table' "
                     "AND name IN (:a, :b, :c)", dict(zip("abc", names, strict=True)))
    return int(found[0][0]) == len(names)


def load_chunks(executor: Executor, np_: Any, lane: Any, mind_id: int, model_id: int,
                valid_ids: Any, gop_codes: Any) -> bool:
    """Fill ``lane`` (a ``_Lane`` with room for every valid frame) from the shadow tables; False
    (``lane`` left empty) when they are not laid out as expected."""
    table = vector_table_name(model_id)
    if not _has_shadow_tables(executor, table):
        return False
    dims = lane.dims
    # ``+c.chunk_id``: the chunk tables' ``rowid`` is a declared column without a type, whose
    # unique index the planner did not use against the INTEGER ``chunk_id`` — it scanned them
    # and sorted every row, blobs and all, for the ORDER BY (6.3 s of a 1M-frame load here).
    # Without the affinity, each chunk is looked up through that index while ``c`` is scanned
    # in ``chunk_id`` (its rowid) order: no sort (1.1 s, the same rows).
    result = connection_of(executor).execute(
        text(f"SELECT c.size, c.validity, c.rowids, v.vectors, m.data FROM {table}_chunks c "
             f"JOIN {table}_vector_chunks00 v ON v.rowid = +c.chunk_id "
             f"JOIN {table}_metadatachunks01 m ON m.rowid = +c.chunk_id "
             "WHERE c.partition00 = :mind_id ORDER BY c.chunk_id"),
        {"mind_id": mind_id},
    )
    n = 0
    for size, validity, rowids, vectors, times in result:
        size = int(size)
        if (len(validity) * 8 < size or len(rowids) != 8 * size
                or len(vectors) != 4 * dims * size or len(times) != 8 * size):
            lane.n = 0
            return False
        used = np_.unpackbits(np_.frombuffer(validity, np_.uint8), bitorder="little")[:size]
        ids = np_.frombuffer(rowids, "<i8")
        # ``valid_ids`` is sorted: a binary search per row says whether (and where) it is current.
        at = np_.minimum(np_.searchsorted(valid_ids, ids), max(len(valid_ids) - 1, 0))
        keep = used.astype(np_.bool_) & (valid_ids[at] == ids) if len(valid_ids) else used < 0
        m = int(keep.sum())
        if n + m > len(lane.ids):  # more current rows than current frames: not that layout
            lane.n = 0
            return False
        lane.ids[n:n + m] = ids[keep]
        lane.matrix[n:n + m] = np_.frombuffer(vectors, "<f4").reshape(size, dims)[keep]
        lane.ts[n:n + m] = np_.frombuffer(times, "<f8")[keep]
        lane.gops[n:n + m] = gop_codes[at[keep]]
        n += m
    lane.alive[:n] = True
    lane.rows = {int(i): row for row, i in enumerate(lane.ids[:n].tolist())}
    lane.n = n
    return True


def load_rows(executor: Executor, np_: Any, lane: Any, mind_id: int, model_id: int) -> None:
    """Fill ``lane`` through vec0's own scan (any layout), streamed in batches."""
    result = connection_of(executor).execute(
        text(qualifying_sql(model_id, False)), {"mind_id": mind_id, "model_id": model_id})
    dims = lane.dims
    for batch in result.partitions(20_000):
        n, m = lane.n, len(batch)
        m = min(m, len(lane.ids) - n)  # the same snapshot: never more than the current frames
        batch = batch[:m]
        # vec0 returns a float[] column as its little-endian float32 blob.
        lane.matrix[n:n + m] = np_.frombuffer(b"".join(bytes(r[1]) for r in batch),
                                              dtype="<f4").reshape(m, dims)
        lane.ids[n:n + m] = [int(r[0]) for r in batch]
        lane.ts[n:n + m] = [float(r[3]) for r in batch]
        lane.gops[n:n + m] = [lane.gop_codes.setdefault(str(r[2]), len(lane.gop_codes))
                              for r in batch]
        lane.alive[n:n + m] = True
        lane.rows.update((int(r[0]), n + i) for i, r in enumerate(batch))
        lane.n = n + m
