"""Pass 1 of an import: check every record before anything is written.

The import reads its source twice. This pass holds no database transaction and writes nothing;
it checks what one line alone cannot show (duplicate ids, references to records the file does
not define, two frames at the same place of a session, a vector of the wrong length) and raises
:class:`~waggle_store.errors.InvalidInputError` naming the 1-based line, so a bad file imports
nothing. What it keeps for pass 2 is small: the ids the file defines (one int each) and the
models of its vectors.

References must point at a record on an *earlier* line (an export writes sessions before frames,
frames and entities before mentions ...), except frame-to-frame references (a P-frame's base, a
B-frame's targets), which may point anywhere in the file; a frame reference to a frame the file
does not hold is repaired (dropped), not refused, because stores lose such frames legitimately.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from waggle_store.pipeline.transfer.conversations import ConversationChecks
from waggle_store.pipeline.transfer.format import Line, line_error
from waggle_store.pipeline.transfer.format_conversations import V2_TYPES
from waggle_store.pipeline.transfer.format_knowledge import V3_TYPES
from waggle_store.pipeline.transfer.problems import Problems
from waggle_store.pipeline.transfer.validate_knowledge import KnowledgeChecks

__all__ = ["Plan", "b_references", "check_records"]


@dataclass
class Plan:
    """What pass 1 learnt that pass 2 needs."""

    lines: int = 0
    records: int = 0
    frame_ids: set[int] = field(default_factory=set)
    models: dict[int, tuple[str, str, int]] = field(default_factory=dict)
    vectors: int = 0
    problems: Problems = field(default_factory=Problems)


def b_references(content: str) -> tuple[dict[str, Any], list[int]] | None:
    """A B-frame's JSON object and its references, or None when the content is not a B-frame
    document with a non-empty list of integer references (the old Waggle app wrote such frames)."""
    try:
        doc = json.loads(content)
    except ValueError:
        return None
    if not isinstance(doc, dict):
        return None
    refs = doc.get("references")
    if not isinstance(refs, list) or not refs or not all(
        isinstance(r, int) and not isinstance(r, bool) for r in refs
    ):
        return None
    return doc, list(refs)


def check_records(records: Iterable[tuple[int, Line]], problems: Problems | None = None) -> Plan:
    """Check every record (see the module docstring); the plan for pass 2. Repairable problems
    are added to ``problems`` (a new list if None), which becomes ``plan.problems``."""
    plan = Plan(problems=problems if problems is not None else Problems())
    seen: dict[str, set[Any]] = {kind: set() for kind in (
        "awareness", "session", "entity", "relation", "kv", "harvest_source", "embedding_model")}
    gops: set[str] = set()
    places: set[tuple[str, int]] = set()
    vectors: set[tuple[int, int]] = set()
    singles: set[str] = set()
    frame_refs: list[tuple[int, int, int]] = []  # (line, frame id, referenced id) not yet seen
    conversations = ConversationChecks()
    knowledge = KnowledgeChecks()
    for line_no, line in records:
        plan.lines = max(plan.lines, line_no)
        plan.records += 1
        f = line.fields
        kind = line.type
        if kind in ("identity", "validation_schema"):
            if kind in singles:
                raise line_error(line_no, f"a second {kind} record (a mind has one)")
            singles.add(kind)
        elif kind == "frame":
            fid = f["id"]
            if fid in plan.frame_ids:
                raise line_error(line_no, f"frame id {fid} is defined twice")
            if f["gop_id"] not in gops:
                raise line_error(line_no, f"frame {fid} is in session {f['gop_id']!r}, which no "
                                          "earlier session record defines")
            place = (f["gop_id"], f["t"])
            if place in places:
                raise line_error(
                    line_no,
                    f"frame {fid}: session {place[0]!r} already has a frame at t={place[1]}",
                )
            places.add(place)
            plan.frame_ids.add(fid)
            refs = [f["base_frame_id"]] if f["base_frame_id"] is not None else []
            if f["frame_type"] == "B":
                parsed = b_references(f["content"])
                if parsed is None:
                    plan.problems.add(
                        "B-frame without references",
                        f"frame {fid}",
                        "kept as it is, with nothing to remap",
                    )
                else:
                    refs.extend(parsed[1])
            frame_refs.extend((line_no, fid, ref) for ref in refs if ref not in plan.frame_ids)
        elif kind in V2_TYPES:
            conversations.check(line_no, line)
        elif kind in V3_TYPES:
            knowledge.check(line_no, line, plan.frame_ids)
        elif kind == "mention":
            # A mention given twice is harmless (the writer skips pairs the mind has), and a set
            # of every pair would be the largest thing pass 1 holds: no duplicate check.
            pair = (f["entity_id"], f["frame_id"])
            if f["entity_id"] not in seen["entity"] or f["frame_id"] not in plan.frame_ids:
                raise line_error(
                    line_no,
                    f"mention of entity {pair[0]} in frame {pair[1]}: both must be "
                    "defined on earlier lines",
                )
        elif kind == "vector":
            model = plan.models.get(f["model_id"])
            if model is None or f["frame_id"] not in plan.frame_ids:
                raise line_error(
                    line_no,
                    f"vector of frame {f['frame_id']} in model {f['model_id']}: the "
                    "frame and the embedding_model must be defined on earlier lines",
                )
            if len(f["vector"]) != model[2]:
                raise line_error(
                    line_no,
                    f"vector of frame {f['frame_id']} has {len(f['vector'])} "
                    f"dimensions; model {f['model_id']} has {model[2]}",
                )
            key = (f["frame_id"], f["model_id"])
            if key in vectors:
                raise line_error(line_no, f"a second vector of frame {key[0]} in model {key[1]}")
            vectors.add(key)
            plan.vectors += 1
        else:
            ident = (
                f["key"] if kind == "kv" else f["source"] if kind == "harvest_source" else f["id"]
            )
            if ident in seen[kind]:
                raise line_error(line_no, f"{kind} {ident!r} is defined twice")
            if kind == "session":
                if f["gop_id"] in gops:
                    raise line_error(line_no, f"session {f['gop_id']!r} is defined twice")
                gops.add(f["gop_id"])
            elif kind == "relation":
                for end in ("source_id", "target_id"):
                    if f[end] not in seen["entity"]:
                        raise line_error(
                            line_no,
                            f"relation {ident}: {end} {f[end]} is not an entity "
                            "defined on an earlier line",
                        )
            elif kind == "embedding_model":
                plan.models[ident] = (f["provider"], f["model"], f["dimensions"])
            if kind in ("entity", "relation"):
                knowledge.saw(line)
            seen[kind].add(ident)
    dangling = [(at, fid, ref) for at, fid, ref in frame_refs if ref not in plan.frame_ids]
    if dangling:
        at, fid, ref = dangling[0]
        plan.problems.add(
            "frame reference to a frame not in the file",
            f"frame {fid} -> {ref} (line {at})",
            "reference dropped",
            len(dangling),
        )
    return plan
