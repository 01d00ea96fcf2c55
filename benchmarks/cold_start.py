"""Cold start: ``import waggle_store`` and the first ``open_store`` of an existing store, each
in a fresh interpreter.

    python benchmarks/cold_start.py                 # SQLite, 9 runs per measurement
    python benchmarks/cold_start.py --runs 15
    python benchmarks/cold_start.py --url postgresql+psycopg://... --schema bench_cold

A store is created (and migrated) once; then every run starts a new interpreter that imports
waggle_store and opens that store, with ``embedder="hashing"`` and with ``embedder="auto"``
(HF_HUB_OFFLINE=1: where the local MiniLM is installed "auto" plans it, and loads it on the
first embedding, not at open). The floor is a fresh interpreter importing what waggle_store
cannot start without: SQLAlchemy's engine and ORM (plus, for the open, SQLAlchemy's own
``create_engine`` + one ``SELECT 1`` on the same file). Printed: the median and the spread of
each, the ratio to the floor, and which heavy modules (Alembic, torch, transformers) the child
had imported by the end: there must be none.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import warnings
from pathlib import Path
from typing import Any

import waggle_store as ws
from waggle_store.engine import WaggleStoreWarning

warnings.filterwarnings("ignore", category=WaggleStoreWarning)

HEAVY = ("alembic", "torch", "transformers", "sentence_transformers")

CHILD = """
import json, sys, time, warnings
warnings.simplefilter("ignore")
t0 = time.perf_counter()
import waggle_store as ws
t1 = time.perf_counter()
store = ws.open_store({url!r}, schema={schema!r}, embedder={embedder!r})
t2 = time.perf_counter()
store.close()
print(json.dumps({{"import": t1 - t0, "open": t2 - t1,
                  "heavy": [m for m in {heavy!r} if m in sys.modules]}}))
"""

FLOOR = """
import json, time
t0 = time.perf_counter()
import sqlalchemy as sa
import sqlalchemy.orm
t1 = time.perf_counter()
engine = sa.create_engine({url!r})
with engine.connect() as conn:
    conn.exec_driver_sql("SELECT 1").all()
t2 = time.perf_counter()
print(json.dumps({{"import": t1 - t0, "open": t2 - t1, "heavy": []}}))
"""


def child(code: str, cwd: Path) -> dict[str, Any]:
    """Run ``code`` in a new interpreter; ``cwd`` away from any checkout, so ``-c`` (which puts
    the current directory first on sys.path) imports the waggle_store of PYTHONPATH / the venv."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, env=env, cwd=cwd, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def summary(samples: list[float]) -> str:
    ms = sorted(s * 1000 for s in samples)
    return f"{statistics.median(ms):7.1f} ms (min {ms[0]:.1f}, max {ms[-1]:.1f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--url", help="an existing database (default: a new SQLite file)")
    parser.add_argument("--schema", default=None)
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="waggle-cold-"))
    url = args.url or f"sqlite:///{workdir / 'cold.db'}"
    try:
        with ws.open_store(url, schema=args.schema, embedder="hashing") as store:
            mind = store.mind("cold")
            mind.frames.create_i(mind.sessions.ensure_active().gop_id, "an existing memory")
        cases = {
            "floor (sqlalchemy)": FLOOR.format(url=url),
            "hashing": CHILD.format(url=url, schema=args.schema, embedder="hashing",
                                    heavy=HEAVY),
            "auto": CHILD.format(url=url, schema=args.schema, embedder="auto", heavy=HEAVY),
        }
        results: dict[str, list[dict[str, Any]]] = {name: [] for name in cases}
        for _ in range(args.runs):  # interleaved: machine noise hits every case alike
            for name, code in cases.items():
                results[name].append(child(code, workdir))
        floor = results["floor (sqlalchemy)"]
        floor_import = statistics.median(r["import"] for r in floor)
        floor_open = statistics.median(r["open"] for r in floor)
        print(f"{args.runs} runs each, fresh interpreter per run; {url.split(':')[0]}; "
              f"waggle_store from {Path(ws.__file__).parent}")
        for name, runs in results.items():
            imports = [r["import"] for r in runs]
            opens = [r["open"] for r in runs]
            heavy = sorted({m for r in runs for m in r["heavy"]})
            import_ratio = statistics.median(imports) / floor_import
            open_ratio = statistics.median(opens) / floor_open
            print(f"{name:<19} import {summary(imports)}  x{import_ratio:.2f}   "
                  f"open {summary(opens)}  x{open_ratio:.2f}   "
                  f"heavy modules: {', '.join(heavy) or 'none'}")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
