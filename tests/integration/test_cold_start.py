"""Cold start (issue 15): ``import waggle_store`` and opening a migrated store import neither
Alembic nor torch/transformers, and "already at head" is one query. Behaviour, not timing
(the times are in ``benchmarks/cold_start.py``)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy import event

import waggle_store as ws
from waggle_store import migrate, schema_version

HEAVY = ("alembic", "torch", "transformers", "sentence_transformers")


def _run(code: str) -> Any:
    """Run ``code`` in a fresh interpreter (nothing imported yet); it prints one JSON value."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, env=env, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_head_revision_constant_is_alembics_head() -> None:
    """The constant the one-query check compares with must follow the migration scripts: a new
    migration that does not update it would leave stores at the old head unmigrated."""
    assert migrate.head() == schema_version.HEAD_REVISION
    assert migrate.VERSION_TABLE == schema_version.VERSION_TABLE


def test_import_pulls_in_no_alembic_and_no_torch() -> None:
    """Nor numpy (sqlite-vec's package imports it) or httpx (one provider's client): both are
    imported at first use."""
    heavy = (*HEAVY, "numpy", "httpx")
    loaded = _run(f"""
        import json, sys
        import waggle_store
        print(json.dumps([m for m in {heavy!r} if m in sys.modules]))
    """)
    assert loaded == []


def test_opening_a_migrated_store_with_auto_imports_no_alembic_and_no_torch(target) -> None:  # type: ignore[no-untyped-def]
    """Where the local model is installed, "auto" plans it first and loads it on the first
    embedding, not at open."""
    target.open(embedder=None).close()  # migrated once, here
    loaded, candidates = _run(f"""
        import json, sys, warnings
        warnings.simplefilter("ignore")
        import waggle_store as ws
        from waggle_store.embeddings.auto import plan_auto
        store = ws.open_store({target.url!r}, schema={target.schema!r}, embedder="auto")
        mind = store.mind("cold")
        store.close()
        print(json.dumps([[m for m in {HEAVY!r} if m in sys.modules],
                          list(plan_auto(None, None).candidates)]))
    """)
    assert loaded == []
    if importlib.util.find_spec("sentence_transformers") is not None:
        assert candidates[0] == "local"


def test_already_at_head_is_one_query(target) -> None:  # type: ignore[no-untyped-def]
    target.open(embedder=None).close()
    statements: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        statements.append(statement)

    event.listen(sa.Engine, "before_cursor_execute", record)
    try:
        store = target.open(embedder="hashing")
    finally:
        event.remove(sa.Engine, "before_cursor_execute", record)
    store.close()
    ours = [s for s in statements if "waggle" in s.lower()]
    assert len(ours) == 1, ours
    assert ours[0].lstrip().upper().startswith("SELECT")
    assert schema_version.VERSION_TABLE in ours[0]


def test_a_store_behind_head_is_still_migrated_on_open(target) -> None:  # type: ignore[no-untyped-def]
    target.open(embedder=None).close()
    engine = sa.create_engine(target.url)
    try:
        migrate.downgrade(engine, "0004", schema=target.schema)
        assert migrate.current(engine, schema=target.schema) == "0004"
        with target.open(embedder=None) as store:
            assert store.health().versions["schema_revision"] == schema_version.HEAD_REVISION
        assert migrate.current(engine, schema=target.schema) == migrate.head()
    finally:
        engine.dispose()


def test_upgrade_false_names_the_revision_it_found(target) -> None:  # type: ignore[no-untyped-def]
    target.open(embedder=None).close()
    engine = sa.create_engine(target.url)
    try:
        migrate.downgrade(engine, "0004", schema=target.schema)
    finally:
        engine.dispose()
    found = f"at revision 0004, the code needs {migrate.head()}"
    with pytest.raises(ws.MigrationError, match=found):
        target.open(upgrade=False, embedder=None)
