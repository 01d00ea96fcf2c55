"""Retrieval quality on LoCoMo through the public API: recall@k of the evidence turns.

    python benchmarks/locomo_recall.py PATH [--embedder hashing|local|both]
                                            [--url URL | --embedded-pg] [--stale-context]
                                            [--whole-vectors-first] [--no-expand] [--save FILE]
                                            [--ranks FILE]

For each embedder it builds one store (SQLite in a temporary directory unless ``--url`` names a
database, or a throwaway embedded PostgreSQL with ``--embedded-pg``), one mind per conversation,
one session per LoCoMo session and one frame per turn
(``mind.frames.create_i(..., created_at=<session date>)``), embeds with ``store.reconcile()``
(``--stale-context``: after clearing every frame's search context, as in a store built before
revision 0006, so reconcile must restore them; ``--whole-vectors-first``: the local model's store
first built and embedded with ``text_form="whole"``, as before revision 0007, then opened with
the default embedder, whose ``store.reconcile()`` re-embeds every vector of the other form),
then asks every category 1-4 question three
ways with ``mind.search(question, limit=50, lanes=...)``: keyword only, vector only, and
hybrid (both lanes, the default).

PATH is a LoCoMo data file in its original JSON layout (``data/locomo10.json`` of the
snap-research/LoCoMo repository, or a subset of its samples). A question's gold set is its
``evidence`` dia_ids (split on ``;`` and whitespace, ``D:11:26`` read as ``D11:26``, ids that name
no turn dropped; questions left without one skipped); recall@k is the share of them among the
top k frames.

Prints recall@{1,5,10,20,50}, hit@10, MRR and recall@10 per category for each lane set, then
recall@{1,5,10,20} and MRR per category (``--save FILE``: the summary as JSON too;
``--ranks FILE``: per question, its category and the rank of each gold turn in each lane set's top
50, as JSON lines, to see where the misses are).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout, uninstalled

import waggle_store as ws
from waggle_store.testing import embedded_postgres

KS = (1, 5, 10, 20, 50)
LANE_SETS: dict[str, tuple[str, ...]] = {
    "keyword": ("keyword",),
    "vector": ("vector",),
    "hybrid": ("keyword", "vector"),
}
_DATE = re.compile(r"(\d{1,2}):(\d{2})\s*([ap]m) on (\d{1,2}) (\w+),? (\d{4})", re.IGNORECASE)
_MONTHS = {
    m: i
    for i, m in enumerate(
        [
            "january",
            "february",
            "march",
            "april",
            "may",
            "june",
            "july",
            "august",
            "september",
            "october",
            "november",
            "december",
        ],
        start=1,
    )
}


def parse_session_date(text: str) -> datetime:
    """ "1:56 pm on 8 May, 2023" → an aware UTC datetime (LoCoMo gives no zone; UTC is assumed)."""
    m = _DATE.search(text)
    if not m:
        raise ValueError(f"unrecognised LoCoMo date {text!r}")
    hour, minute, ampm, day, month, year = m.groups()
    h = int(hour) % 12 + (12 if ampm.lower() == "pm" else 0)
    return datetime(int(year), _MONTHS[month.lower()], int(day), h, int(minute), tzinfo=UTC)


def normalise_dia_id(raw: str) -> str:
    """ "D:11:26" → "D11:26", "D30:05" → "D30:5"."""
    m = re.fullmatch(r"D:?(\d+):(\d+)", raw.strip())
    return f"D{int(m.group(1))}:{int(m.group(2))}" if m else raw.strip()


def gold_ids(evidence: Sequence[str], known: set[str]) -> set[str]:
    out: set[str] = set()
    for entry in evidence:
        for part in re.split(r"[;\s]+", entry):
            if part:
                dia = normalise_dia_id(part)
                if dia in known:
                    out.add(dia)
    return out


def session_numbers(conv: dict[str, Any]) -> list[int]:
    """The numbers of the conversation's sessions, in order (some date keys have no session)."""
    return sorted(int(k.split("_")[1]) for k in conv if re.fullmatch(r"session_\d+", k))


def turn_text(turn: dict[str, Any]) -> str:
    """A turn's frame text, as the protocol writes it: speaker, text, and the shared image."""
    text = f"{turn['speaker']}: {turn['text']}"
    if turn.get("blip_caption"):
        text += f" [shares {turn['blip_caption']}]"
    return text


def load_sample(store: ws.Store, sample: dict[str, Any]) -> tuple[ws.Mind, dict[int, set[str]]]:
    """Create the sample's mind; returns it and frame id → dia_ids (dedup can merge turns)."""
    mind = store.mind(f"{sample['sample_id']}-{uuid.uuid4().hex[:6]}")
    conv = sample["conversation"]
    frame_dias: dict[int, set[str]] = defaultdict(set)
    for n in session_numbers(conv):
        when = parse_session_date(conv[f"session_{n}_date_time"])
        gop = mind.sessions.ensure(f"session_{n}").gop_id
        for turn in conv[f"session_{n}"]:
            frame = mind.frames.create_i(gop, turn_text(turn), created_at=when)
            frame_dias[frame.id].add(normalise_dia_id(turn["dia_id"]))
    return mind, frame_dias


def clear_contexts(store: ws.Store) -> None:
    """Make the store look like one built before frame contexts (revision 0005: no context
    anywhere), so that the ``store.reconcile()`` below has to restore them."""
    from sqlalchemy import text

    with store.write() as session:
        session.execute(text("UPDATE waggle_memory_frames SET search_context = NULL"))


def evaluate(
    store: ws.Store, data: list[dict[str, Any]], *, stale_context: bool = False,
    ranks: list[dict[str, Any]] | None = None, **search: Any
) -> dict[str, dict[str, Any]]:
    """Load every sample (one mind each), embed with ``store.reconcile()``, then :func:`score`."""
    loaded = [(sample, *load_sample(store, sample)) for sample in data]
    if stale_context:
        clear_contexts(store)
    store.reconcile()
    return score(loaded, ranks, **search)


CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
#: The ks of the per-category table.
CAT_KS = (1, 5, 10, 20)


def _mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs) if xs else 0.0


def _summary(rows: Sequence[tuple[int, list[float], float, float]], ks: Sequence[int]
             ) -> dict[str, float]:
    """recall@k (each of ``ks``), hit@10 and MRR over ``rows``: (category, recall per k of
    :data:`KS`, hit@10, reciprocal rank) per question."""
    return {**{f"recall@{k}": _mean([r[1][KS.index(k)] for r in rows]) for k in ks},
            "hit@10": _mean([r[2] for r in rows]), "mrr": _mean([r[3] for r in rows]),
            "questions": len(rows)}


def score(
    loaded: Sequence[tuple[dict[str, Any], ws.Mind, dict[int, set[str]]]],
    ranks: list[dict[str, Any]] | None = None,
    **search: Any,
) -> dict[str, dict[str, Any]]:
    """Ask every category 1-4 question of each loaded sample per lane set (``search``: more
    arguments of ``mind.search``); the summary, overall and per category. ``ranks``, when
    given, receives a row per question: its gold turns' ranks (1-based, None past 50) per lane."""
    per_lane: dict[str, list[tuple[int, list[float], float, float]]] = {
        name: [] for name in LANE_SETS}
    for sample, mind, frame_dias in loaded:
        known = set().union(*frame_dias.values())
        for qa in sample["qa"]:
            if qa.get("category") not in CATEGORIES:
                continue
            gold = gold_ids(qa.get("evidence", []), known)
            if not gold:
                continue
            row: dict[str, Any] = {"category": CATEGORIES[qa["category"]],
                                   "question": qa["question"], "gold": sorted(gold)}
            for name, lanes in LANE_SETS.items():
                results = mind.search(qa["question"], limit=max(KS), lanes=lanes, **search)
                ranked: list[str] = []
                for r in results:  # a frame merged by dedup stands for each of its turns
                    ranked.extend(sorted(frame_dias[r.frame.id]))
                row[name] = [ranked.index(d) + 1 if d in ranked else None for d in row["gold"]]
                first = next((i for i, d in enumerate(ranked) if d in gold), None)
                per_lane[name].append((
                    qa["category"], [len(set(ranked[:k]) & gold) / len(gold) for k in KS],
                    1.0 if set(ranked[:10]) & gold else 0.0,
                    0.0 if first is None else 1.0 / (first + 1)))
            if ranks is not None:
                ranks.append(row)
    summary: dict[str, dict[str, Any]] = {}
    for name, rows in per_lane.items():
        summary[name] = {
            **_summary(rows, KS),
            **{f"cat{c}_recall@10": _mean([r[1][KS.index(10)] for r in rows if r[0] == c])
               for c in sorted({r[0] for r in rows})},
            "by_category": {CATEGORIES[c]: _summary([r for r in rows if r[0] == c], CAT_KS)
                            for c in sorted({r[0] for r in rows})},
        }
    return summary


def _run(
    args: argparse.Namespace, names: list[str], data: list[dict[str, Any]], report: dict[str, Any],
    ranks: list[dict[str, Any]],
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            from waggle_store.embeddings import HashingEmbedder, LocalEmbedder

            embedder = HashingEmbedder() if name == "hashing" else LocalEmbedder()
            url = args.url or f"sqlite:///{Path(tmp) / f'locomo-{name}.db'}"
            schema = f"locomo_{uuid.uuid4().hex[:8]}" if url.startswith("postgresql") else None
            started = time.perf_counter()
            refreshed = None
            mine: list[dict[str, Any]] = []
            if args.whole_vectors_first and name == "local":
                with ws.open_store(url, embedder=LocalEmbedder(text_form="whole"),
                                   schema=schema) as store:
                    loaded = [(sample, *load_sample(store, sample)) for sample in data]
                    store.reconcile()
                refreshed = [(sample, mind.name, dias) for sample, mind, dias in loaded]
            with ws.open_store(url, embedder=embedder, schema=schema) as store:
                if refreshed is None:
                    report[name] = evaluate(store, data, stale_context=args.stale_context,
                                            ranks=mine, expand=not args.no_expand)
                else:
                    fixed = store.reconcile().vectors_fixed
                    report[name] = score([(sample, store.mind(mind), dias)
                                          for sample, mind, dias in refreshed],
                                         mine, expand=not args.no_expand)
                    report[name]["re-embedded by reconcile"] = fixed
                report[name]["dialect"] = store.engine.dialect.name
                if schema:
                    with store.engine.begin() as conn:
                        conn.exec_driver_sql(f'DROP SCHEMA "{schema}" CASCADE')
            report[name]["seconds"] = round(time.perf_counter() - started, 1)
            ranks.extend({"embedder": name, **row} for row in mine)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("path", type=Path)
    parser.add_argument("--embedder", choices=("hashing", "local", "both"), default="both")
    parser.add_argument("--url", help="database URL (default: a temporary SQLite file)")
    parser.add_argument(
        "--embedded-pg",
        action="store_true",
        help="start a throwaway embedded PostgreSQL and run on it",
    )
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.add_argument("--save", type=Path, help="also write the summary as JSON to this file")
    parser.add_argument("--ranks", type=Path,
                        help="write each question's gold-turn ranks per lane set (JSON lines)")
    parser.add_argument("--no-expand", action="store_true",
                        help="search with expand=False (no turns beside the best hits)")
    parser.add_argument(
        "--stale-context",
        action="store_true",
        help="clear every frame's search context before reconcile (a mind built before them)",
    )
    parser.add_argument(
        "--whole-vectors-first",
        action="store_true",
        help="embed the local model's store whole first (a mind built before revision 0007)",
    )
    args = parser.parse_args(argv)
    data = json.loads(args.path.read_text())
    names = ["hashing", "local"] if args.embedder == "both" else [args.embedder]
    report: dict[str, Any] = {}
    ranks: list[dict[str, Any]] = []
    stop_pg: Callable[[], None] | None = None
    if args.embedded_pg:
        if args.url:
            parser.error("--url and --embedded-pg are exclusive")
        args.url, stop_pg = embedded_postgres("waggle-locomo-pg-")
    try:
        _run(args, names, data, report, ranks)
    finally:
        if stop_pg is not None:
            stop_pg()
    if args.save:
        args.save.write_text(json.dumps(report, indent=2))
    if args.ranks:
        args.ranks.write_text("".join(json.dumps(row) + "\n" for row in ranks))
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    for name, by_lane in report.items():
        print(f"\n== embedder: {name} ({by_lane['dialect']}, {by_lane['seconds']} s) ==")
        cols = [f"recall@{k}" for k in KS] + ["hit@10", "mrr"]
        cats = sorted(c for c in by_lane["hybrid"] if c.startswith("cat"))
        print(
            f"{'lanes':8} "
            + " ".join(f"{c:>9}" for c in cols + [c.replace("_recall@10", " r@10") for c in cats])
        )
        for lane in LANE_SETS:
            row = by_lane[lane]
            print(f"{lane:8} " + " ".join(f"{row[c]:9.3f}" for c in cols + cats))
        print(f"questions: {by_lane['hybrid']['questions']}")
        print(f"by category: {' '.join(f'R@{k}' for k in CAT_KS)} MRR (questions)")
        for lane in LANE_SETS:
            for cat, row in by_lane[lane]["by_category"].items():
                print(f"  {lane:8} {cat:12} "
                      + " ".join(f"{row[f'recall@{k}']:.3f}" for k in CAT_KS)
                      + f" {row['mrr']:.3f} ({row['questions']})")
        if "re-embedded by reconcile" in by_lane:
            print(f"vectors re-embedded by reconcile: {by_lane['re-embedded by reconcile']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
