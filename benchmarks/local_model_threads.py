"""The in-process model's query embedding when more than one thread asks for it.

    HF_HUB_OFFLINE=1 python benchmarks/local_model_threads.py [--queries 150] [--threads 4]

torch runs a team of intra-op threads (OpenMP) for each thread that calls it, and a team keeps
spinning for a while after each call. Each line below is a fresh interpreter that loads
all-MiniLM-L6-v2 and embeds the same queries (one at a time, waiting for each) in three phases:
from the main thread, then from a pool of ``--threads`` threads, then from the main thread again
— a host whose searches come from the async API's pool, an MCP server's requests or a web
server's threads, and whose ingest runs on its main thread.

* floor: sentence-transformers' ``model.encode`` called from the main thread in all three phases
  (the model with one calling thread: what the library's call can cost at best);
* raw: ``model.encode`` called directly from the pool in the middle phase;
* library: ``LocalEmbedder.embed_query`` (which runs every embedding on its one model thread).

Printed: p50 and min in ms per phase, and the ratio of each phase's p50 to the floor's.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import textwrap

CHILD = """
import json, statistics, sys, time, warnings
from concurrent.futures import ThreadPoolExecutor
warnings.filterwarnings("ignore")
side, n, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
from waggle_store.embeddings.local import DEFAULT_MODEL, LocalEmbedder, bundled_model_path
if side == "library":
    local = LocalEmbedder()
    local.embed_query("warm up")  # loads the model (on the model thread)
else:  # loaded and called by the main thread alone: no library thread touches torch
    from sentence_transformers import SentenceTransformer
    model = SentenceTransformer(str(bundled_model_path(DEFAULT_MODEL) or DEFAULT_MODEL))
def direct(q):
    return model.encode([q], normalize_embeddings=True, convert_to_numpy=True,
                        show_progress_bar=False)
call = local.embed_query if side == "library" else direct
call("warm up")
queries = [f"what did caroline do with her kids at the lake, question {i}" for i in range(n)]
pool = ThreadPoolExecutor(threads)
def timed(run):
    out = []
    for q in queries:
        t = time.perf_counter()
        run(q)
        out.append((time.perf_counter() - t) * 1e3)
    out = out[10:]  # the first calls of a phase warm its threads up
    return [statistics.median(out), min(out)]
result = {"main": timed(call)}
if side == "floor":
    result["pool"] = timed(call)
else:
    result["pool"] = timed(lambda q: pool.submit(call, q).result())
result["main again"] = timed(call)
print(json.dumps(result))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--queries", type=int, default=150)
    parser.add_argument("--threads", type=int, default=4)
    args = parser.parse_args()
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    rows = {}
    for side in ("floor", "raw", "library"):
        done = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(CHILD), side, str(args.queries),
             str(args.threads)],
            env=env, capture_output=True, text=True, check=True)
        rows[side] = json.loads(done.stdout.strip().splitlines()[-1])
    phases = ("main", "pool", "main again")
    print(f"{'side':8} " + " ".join(f"{p + ' p50':>15} {'min':>6} {'×':>5}" for p in phases))
    for side, row in rows.items():
        cells = []
        for phase in phases:
            p50, low = row[phase]
            cells.append(f"{p50:15.2f} {low:6.2f} {p50 / rows['floor'][phase][0]:5.2f}")
        print(f"{side:8} " + " ".join(cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
