"""OpenFang's memory JSON export, written from a mind (the other direction is :mod:`.openfang`).

Split from :mod:`.openfang` because writing shares nothing with reading but the vocabulary
below: the reader converts a whole parsed document into checked records for the import path,
the writer streams the store's rows out in keyset pages like the JSONL export (:mod:`.export`),
through the same reads (:class:`~waggle_store.repositories.mind_export.MindExportRows`).
The vocabulary lives here, not in :mod:`.openfang`, so that :mod:`.openfang` can re-export
:func:`export_openfang` (where callers import it from) without an import cycle. The shape and
the mapping are described in :mod:`.openfang`'s docstring and ``docs/export-format.md``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from waggle_store.context import MindContext
from waggle_store.pipeline.transfer.export import Destination, open_destination
from waggle_store.pipeline.transfer.format import dump_line, iso
from waggle_store.records import ExportReport
from waggle_store.repositories.mind_export import MindExportRows
from waggle_store.timeutil import utcnow

__all__ = ["FORMAT", "LEVELS", "export_openfang"]

FORMAT: Final = "openfang-memory"
_FROM_SOURCE: Final = {
    "user_stated": "UserMessage",
    "agent_inferred": "AgentResponse",
    "tool_verified": "ToolResult",
    "system": "SystemNote",
    "import": "Import",
}
#: Level -> the importance an export writes; a read importance takes the highest level it reaches
#: (:mod:`.openfang` reads with this same table, so a round trip keeps every level).
LEVELS: Final = (
    ("critical", 1.0),
    ("important", 0.8),
    ("normal", 0.5),
    ("temporary", 0.2),
    ("deprecated", 0.05),
)


def _element(n: int, obj: dict[str, object]) -> str:
    """One element of a JSON array written item by item: a comma before all but the first, each
    on its own line (``dump_line`` without its newline)."""
    return ("," if n else "") + "\n" + dump_line(obj)[:-1]


def export_openfang(
    mind: MindContext, dest: Destination, progress: Callable[[int, int], None] | None = None
) -> ExportReport:
    """Write the mind in OpenFang's export shape: every frame a fragment, the active entities
    and relations, the kv pairs (see the module docstring)."""
    counts = {"fragments": 0, "entities": 0, "relations": 0, "kv": 0}
    agent = mind.name
    # One snapshot, as in the JSONL export.
    with (open_destination(dest) as (write, path),
          mind.store.read_connection(snapshot=True) as conn):
        head = {"format": FORMAT, "version": 1, "agent_id": agent, "exported_at": iso(utcnow())}
        write(dump_line(head)[:-2] + ',"fragments":[')
        rows = MindExportRows(conn, mind.id)
        for n, r in enumerate(rows.frames()):
            write(
                _element(
                    n,
                    {
                        "id": str(r[0]),
                        "agent_id": agent,
                        "content": r[5],
                        "source": _FROM_SOURCE[r[7]],
                        "importance": dict(LEVELS)[r[6]],
                        "access_count": r[8],
                        "created_at": iso(r[9]),
                        "last_accessed_at": iso(r[10]),
                        "scope": "episodic",
                        "metadata": {
                            "waggle": {
                                "frame_type": r[1],
                                "gop_id": r[2],
                                "t": r[3],
                                "importance": r[6],
                                "source": r[7],
                            }
                        },
                    },
                )
            )
            counts["fragments"] += 1
        write('],\n"entities":[')
        for n, r in enumerate(rows.entities(active=True)):
            write(
                _element(
                    n,
                    {
                        "id": str(r[0]),
                        "agent_id": agent,
                        "entity_type": r[1],
                        "name": r[2],
                        "attributes": r[3] or {},
                        "created_at": iso(r[4]),
                    },
                )
            )
            counts["entities"] += 1
        write('],\n"relations":[')
        for n, r in enumerate(rows.relations(active=True)):
            write(
                _element(
                    n,
                    {
                        "id": str(r[0]),
                        "agent_id": agent,
                        "from_entity_id": str(r[1]),
                        "relation_type": r[3],
                        "to_entity_id": str(r[2]),
                        "properties": r[5] or {},
                        "confidence": r[4],
                        "created_at": iso(r[6]),
                    },
                )
            )
            counts["relations"] += 1
        write('],\n"kv":[')
        total = rows.kv_count()
        for n, (key, value, at) in enumerate(rows.kv()):
            write(_element(n, {"key": key, "value": value, "updated_at": iso(at)}))
            counts["kv"] += 1
        write("]}\n")
        if progress is not None:
            done = sum(counts.values())
            progress(done, max(done, int(total)))
    return ExportReport(
        path, sum(counts.values()), counts["fragments"], counts["entities"], counts["relations"]
    )
