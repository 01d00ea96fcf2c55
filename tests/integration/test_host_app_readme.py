"""examples/host_app/README.md as a newcomer uses it: its Python snippet runs, and runs again
(both dialects); a PostgreSQL URL without psycopg installed says which extra to install."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa

from tests.integration.test_host_app import HOST, REPO, _alembic, host_env  # noqa: F401

from conftest import Target


def _snippet() -> str:
    blocks = re.findall(r"```python\n(.*?)```", (HOST / "README.md").read_text(), re.DOTALL)
    assert len(blocks) == 1
    return str(blocks[0])


def test_the_readme_snippet_runs_twice(target: Target, host_env: dict[str, str]) -> None:  # noqa: F811
    assert _alembic(host_env, "upgrade", "head").returncode == 0
    for _ in range(2):
        exec(compile(_snippet(), "README.md", "exec"), {})
    engine = sa.create_engine(host_env["HOST_DATABASE_URL"])
    with engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT count(*) FROM notes").scalar() == 2
    engine.dispose()


@pytest.mark.sqlite
def test_the_readme_names_the_extras() -> None:
    text = (HOST / "README.md").read_text()
    assert "[sqlite]" in text
    assert "[postgres]" in text


@pytest.mark.sqlite
def test_a_postgres_url_without_psycopg_names_the_extra(tmp_path: Path) -> None:
    code = ("import sys; sys.modules['psycopg'] = None\n"
            "from host_app.db import make_engine\n"
            "make_engine('postgresql+psycopg://app@127.0.0.1:9/app')\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120,
                          env={"PYTHONPATH": f"{HOST}:{REPO}", "PATH": "/usr/bin:/bin"})
    assert done.returncode == 1
    assert "MissingExtensionError" in done.stderr
    assert "pip install 'waggle-store[postgres]'" in done.stderr
