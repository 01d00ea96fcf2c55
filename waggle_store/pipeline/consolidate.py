"""Consolidation: decay, merge near-duplicates, prune what is no longer worth keeping.

Salience. A frame's salience is a pure function of what the store already keeps::

    salience = min(1, BASE[importance] * (1 + 0.1 * ln(1 + access_count))) * decay_rate ** days

where ``days`` is the number of *whole* days since ``last_accessed``. It is derived afresh from
``last_accessed`` on every run, never multiplied onto the previous value (OpenFang multiplied
its stored confidence on every run, so running twice decayed twice): two runs on the same day
compute the same numbers, which is what makes consolidation idempotent. The value is also
stored (``memory_frames.salience``, migration 0002) so that it can be read and so that a run
can say how many frames actually *decayed* since the last one: ``fragments_decayed`` counts the
frames whose salience fell below the stored value (below the undecayed value on a first run).
A run that computes what is stored writes nothing.

Merge. Near-duplicates (:mod:`waggle_store.pipeline.near_duplicates`; same mind, same source)
are folded into the most important frame of their group (importance, then access count, then the
oldest id): the survivor takes the summed access count and the latest ``last_accessed``, the
others are deleted, and the mind's KV key ``consolidation/merged/<survivor id>`` lists what was
merged (id, content hash, importance, access count, times, similarity; the newest
:data:`MERGED_HISTORY` records). Survivors of a run are
pairwise dissimilar, so a second run merges nothing.

Prune. Frames whose salience is below ``prune_below`` are deleted, except ``critical`` and
``important`` ones, which are never pruned.

Scope: I- and P-frames. B-frames are references between frames, not memories, and are left
alone. Deleting goes through the frame repository (the keyword index follows by trigger or
generated column, manifests by cascade, P-frames based on a deleted frame keep working with no
base) and drops the vector rows of every model, as ``mind.frames.delete`` does.

Transactions. The plan (the nearest-neighbour queries are the slow part) is made in a read
transaction, so writers are not held up meanwhile; the write transaction then reloads the
frames and applies the plan only if nothing it depends on changed (frames, their importance,
access counts and times, content, vectors, the active model); otherwise it plans again under the
write lock. A dry run is the first step alone: it computes exactly what the real run would do,
from the same state, and writes nothing.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from sqlalchemy.orm import Session

from waggle_store.context import MindContext
from waggle_store.errors import InvalidInputError
from waggle_store.pipeline.near_duplicates import Candidate, near_duplicates, normalise
from waggle_store.records import ConsolidationReport
from waggle_store.repositories.frame_upkeep import (
    drop_vectors,
    salience_inputs,
    set_accesses,
    set_salience,
)
from waggle_store.repositories.frames import FrameRepository
from waggle_store.repositories.kv import KVRepository
from waggle_store.repositories.mind_models import MindModelRepository
from waggle_store.timeutil import optional_utc, utcnow

__all__ = ["BASE_SALIENCE", "MERGED_KEY_PREFIX", "PROTECTED", "consolidate", "salience"]

BASE_SALIENCE: Final = {"critical": 1.0, "important": 0.8, "normal": 0.5, "temporary": 0.25,
                        "deprecated": 0.1}
PROTECTED: Final = ("critical", "important")
MERGED_KEY_PREFIX: Final = "consolidation/merged/"
#: Records kept per survivor (the newest): a KV value is bounded (1 MiB of JSON).
MERGED_HISTORY: Final = 500
_RANK: Final = {level: rank for rank, level in enumerate(BASE_SALIENCE)}
_DAY: Final = 86_400


def salience(importance: str, access_count: int, last_accessed: datetime, now: datetime,
             decay_rate: float) -> float:
    """See the module docstring."""
    days = max(0, int((now - last_accessed).total_seconds() // _DAY))
    base = min(1.0, BASE_SALIENCE.get(importance, 0.5) * (1 + 0.1 * math.log1p(access_count)))
    return float(base * decay_rate ** days)


@dataclass
class _Frame:
    id: int
    source: str
    importance: str
    access_count: int
    last_accessed: datetime
    created_at: datetime
    stored: float | None
    content_hash: str
    text: str
    has_vector: bool


@dataclass
class _Plan:
    processed: int = 0
    decayed: int = 0
    merged: dict[int, list[tuple[_Frame, float]]] = field(default_factory=dict)
    pruned: list[int] = field(default_factory=list)
    salience: dict[int, float] = field(default_factory=dict)  # survivors whose value changes
    keepers: dict[int, tuple[int, datetime]] = field(default_factory=dict)  # access, last access

    def report(self) -> ConsolidationReport:
        merges = sorted((m.id, keeper) for keeper, group in self.merged.items() for m, _ in group)
        return ConsolidationReport(self.processed, self.decayed, len(merges), len(self.pruned),
                                   merges=merges, pruned=sorted(self.pruned))


def _check(name: str, value: object, low: float, high: float, *, open_low: bool) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InvalidInputError(f"{name} must be a number, got {value!r}")
    number = float(value)
    if number > high or number < low or (open_low and number == low):
        bound = "(" if open_low else "["
        raise InvalidInputError(f"{name} must be in {bound}{low}, {high}], got {value!r}")
    return number


def _load(session: Session, mind: MindContext) -> tuple[list[_Frame], int | None]:
    model_id = MindModelRepository(session, mind.id).active()  # the mind's own model
    frames = [
        _Frame(int(r[0]), r[1], r[2], int(r[3]), r[4], r[5], r[6], r[7], normalise(r[8]),
               model_id is not None and r[9] == "ready" and r[10] == model_id and r[11] == r[7])
        for r in salience_inputs(session, mind.id)
    ]
    usable = model_id is not None and mind.adapter.vector_off(session) is None
    return frames, model_id if usable else None


def _state(frames: list[_Frame], model_id: int | None) -> list[tuple[Any, ...]]:
    """What a plan depends on: two equal states give the same plan."""
    return [(model_id,)] + [
        (f.id, f.source, f.importance, f.access_count, f.last_accessed, f.stored,
         f.content_hash, f.has_vector) for f in frames]


def _plan(frames: list[_Frame], edges: dict[int, dict[int, float]], now: datetime,
          decay_rate: float, prune_below: float) -> _Plan:
    plan = _Plan(processed=len(frames))
    order = sorted(frames, key=lambda f: (_RANK.get(f.importance, 2), -f.access_count, f.id))
    position = {f.id: i for i, f in enumerate(order)}
    by_id = {f.id: f for f in frames}
    gone: set[int] = set()
    for f in order:
        if f.id in gone:
            continue
        for other_id, similarity in sorted(edges.get(f.id, {}).items()):
            if other_id in gone or other_id not in position or position[other_id] <= position[f.id]:
                continue
            gone.add(other_id)
            plan.merged.setdefault(f.id, []).append((by_id[other_id], similarity))
    for f in order:
        if f.id in gone:
            continue
        access, last = f.access_count, f.last_accessed
        if f.id in plan.merged:
            access += sum(m.access_count for m, _ in plan.merged[f.id])
            last = max([last, *(m.last_accessed for m, _ in plan.merged[f.id])])
            plan.keepers[f.id] = (access, last)
        value = salience(f.importance, access, last, now, decay_rate)
        before = f.stored if f.stored is not None else salience(
            f.importance, access, last, last, decay_rate)
        if value < before:
            plan.decayed += 1
        if value < prune_below and f.importance not in PROTECTED:
            plan.pruned.append(f.id)
        elif f.stored != value:
            plan.salience[f.id] = value
    return plan


def _merge_record(frame: _Frame, similarity: float, now: datetime) -> dict[str, Any]:
    return {"frame_id": frame.id, "content_hash": frame.content_hash,
            "importance": frame.importance, "access_count": frame.access_count,
            "created_at": frame.created_at.isoformat(),
            "last_accessed": frame.last_accessed.isoformat(),
            "similarity": round(similarity, 6), "merged_at": now.isoformat()}


def _apply(session: Session, mind: MindContext, plan: _Plan, now: datetime) -> None:
    kv = KVRepository(session, mind.id)
    set_accesses(session, plan.keepers)
    for keeper in plan.keepers:
        if keeper in plan.pruned:
            continue
        key = f"{MERGED_KEY_PREFIX}{keeper}"
        history = kv.get(key, [])
        records = [*(history if isinstance(history, list) else [history]),
                   *(_merge_record(m, sim, now) for m, sim in plan.merged[keeper])]
        kv.set(key, records[-MERGED_HISTORY:])
    set_salience(session, plan.salience)
    doomed = [m.id for merged in plan.merged.values() for m, _ in merged] + plan.pruned
    if doomed:
        FrameRepository(session, mind.id).delete_many(doomed)
        drop_vectors(session, mind.adapter, doomed)


def consolidate(mind: MindContext, *, decay_rate: float = 0.95, prune_below: float = 0.1,
                merge_similarity: float = 0.9, dry_run: bool = False,
                now: datetime | str | None = None,
                progress: Callable[[int, int], None] | None = None) -> ConsolidationReport:
    """Decay, merge and prune one mind (see the module docstring); ``now`` defaults to the
    current time (tests pass one to be deterministic). ``progress(done, total)`` follows the
    search for near-duplicates, the slow part (frames compared of the mind's frames)."""
    rate = _check("decay_rate", decay_rate, 0.0, 1.0, open_low=True)
    floor = _check("prune_below", prune_below, 0.0, 1.0, open_low=False)
    similarity = _check("merge_similarity", merge_similarity, 0.0, 1.0, open_low=True)
    moment = optional_utc(now, name="now") or utcnow()

    def planned(session: Session) -> tuple[list[tuple[Any, ...]], _Plan]:
        frames, model_id = _load(session, mind)
        candidates = [Candidate(f.id, f.source, f.text, f.has_vector and model_id is not None)
                      for f in frames]
        edges = near_duplicates(session, mind.adapter, mind.id, model_id, candidates, similarity,
                                progress)
        return _state(frames, model_id), _plan(frames, edges, moment, rate, floor)

    with mind.read() as session:
        state, plan = planned(session)
    if dry_run:
        return plan.report()
    with mind.write() as session:
        frames, model_id = _load(session, mind)
        if _state(frames, model_id) != state:
            _, plan = planned(session)  # the mind changed meanwhile: plan again, under the lock
        _apply(session, mind, plan, moment)
    return plan.report()
