"""Running the ``waggle-store`` CLI in a subprocess, as a user would: shared by the CLI tests.

The store is named through WAGGLE_DATABASE_URL and (on PostgreSQL) WAGGLE_PG_SCHEMA, so the
environment defaults are exercised too; output is piped, so commands print their plain form.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


class Cli:
    def __init__(self, env: dict[str, str], cwd: Path) -> None:
        self.env = env
        self.cwd = cwd

    def __call__(
        self, *args: str, code: int = 0, stdin: str = ""
    ) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [sys.executable, "-m", "waggle_store", *args],
            env=self.env,
            cwd=self.cwd,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert done.returncode == code, (
            f"waggle-store {' '.join(args)} exited {done.returncode}, expected {code}\n"
            f"stdout: {done.stdout}\nstderr: {done.stderr}"
        )
        return done

    def json(self, *args: str) -> Any:
        return json.loads(self(*args, "--json").stdout)


def cli_for(target: Any, tmp_path: Path) -> Cli:
    env = {k: v for k, v in os.environ.items() if not k.startswith("WAGGLE_")}
    env.update(
        PYTHONPATH=str(REPO),
        WAGGLE_DATABASE_URL=target.url,
        WAGGLE_EMBEDDER="hashing",
        PYTHONWARNINGS="ignore",
    )
    if target.schema:
        env["WAGGLE_PG_SCHEMA"] = target.schema
    return Cli(env, tmp_path)
