"""SQL lives in ``repositories/`` and ``dialects/`` only: the layers above them (the pipeline,
search, the facades, the MCP server, the CLI, migrations from code and the store's own modules)
build no SQLAlchemy statement and run no ORM query themselves; they call a repository, which
takes their Session or Connection. The embeddings layer, below the repositories, builds none
either: its quota counts through the repository the store hands it.

Read from the source with :mod:`ast`: a name imported from ``sqlalchemy`` that builds a
statement or an expression (``select``, ``insert``, ``func``, ``text``, ``and_`` ...), the same
reached as an attribute (``sa.select``), or a query method called on a ``session``/``conn``
(``session.get(Row, id)``, ``conn.execute(...)``) is a finding."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "waggle_store"

#: The layers above the repositories, and the embeddings and knowledge layers below them (they
#: use no repository, so they must hold no SQL either), as paths under the package.
CHECKED = ("pipeline", "search", "facade", "knowledge", "embeddings", "mcp", "store.py",
           "store_bound.py", "store_support.py", "store_transfer.py", "mind.py", "migrate.py",
           "migrate_filters.py", "aio.py", "context.py", "cli.py", "cli_conversations.py",
           "cli_lifecycle.py", "cli_ops.py", "cli_output.py", "cli_usage.py")

#: SQLAlchemy names that build statements or SQL expressions.
CONSTRUCTS = frozenset({
    "select", "insert", "update", "delete", "text", "func", "and_", "or_", "not_", "case",
    "exists", "bindparam", "literal", "literal_column", "tuple_", "union", "union_all", "cast",
    "column", "table", "values", "lambda_stmt", "null", "true", "false", "distinct", "join",
    "outerjoin", "over", "Table", "MetaData",
})

#: Methods that run SQL when called on a Session or Connection.
QUERIES = frozenset({"get", "add", "add_all", "merge", "query", "delete", "execute", "scalar",
                     "scalars", "exec_driver_sql"})
RECEIVERS = frozenset({"session", "s", "conn", "connection"})

#: The findings a checked module may keep (by what is found, not by line), each with its reason.
ALLOWED: dict[str, frozenset[str]] = {
    # The reader of a Waggle ``.mind`` file: its SQL (stdlib ``sqlite3``) reads the file being
    # imported, not the store's database, and stays in this one module.
    "pipeline/transfer/waggle_mind_rows.py": frozenset({"conn.execute(...)"}),
    # Alembic from code: the models' tables copied into a schema-less MetaData (autogenerate's
    # comparison target) and Alembic's version table dropped by a downgrade to "base". Schema
    # objects handed to Alembic, not queries of the store's rows: no repository owns them.
    "migrate.py": frozenset({"sa.MetaData", "sa.Table"}),
}


def _modules() -> list[Path]:
    found: list[Path] = []
    for name in CHECKED:
        path = PACKAGE / name
        found.extend(sorted(path.rglob("*.py")) if path.is_dir() else [path])
    return found


def findings(path: Path) -> list[str]:
    """Each statement construct or session query in ``path``, as ``line: what``."""
    tree = ast.parse(path.read_text(), str(path))
    aliases: set[str] = set()  # local names of the sqlalchemy module (``sa``)
    imported: dict[str, str] = {}  # local name -> construct imported from sqlalchemy
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            aliases.update(a.asname or a.name for a in node.names
                           if a.name.split(".")[0] == "sqlalchemy")
        elif (isinstance(node, ast.ImportFrom) and node.module
              and node.module.split(".")[0] == "sqlalchemy"):
            for a in node.names:
                if a.name in CONSTRUCTS:
                    imported[a.asname or a.name] = a.name
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in imported:
            found.append(f"{node.lineno}: {imported[node.id]}")
        elif (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in aliases and node.attr in CONSTRUCTS):
            found.append(f"{node.lineno}: {node.value.id}.{node.attr}")
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and isinstance(node.func.value, ast.Name) and node.func.value.id in RECEIVERS
              and node.func.attr in QUERIES):
            found.append(f"{node.lineno}: {node.func.value.id}.{node.func.attr}(...)")
    return sorted(found, key=lambda f: int(f.split(":")[0]))


def _key(path: Path) -> str:
    return path.relative_to(PACKAGE).as_posix()


@pytest.mark.parametrize("path", _modules(), ids=_key)
def test_no_sql_above_the_repositories(path: Path) -> None:
    allowed = ALLOWED.get(_key(path), frozenset())
    assert [f for f in findings(path) if f.split(": ", 1)[1] not in allowed] == []


@pytest.mark.parametrize("name", sorted(ALLOWED))
def test_each_allowance_is_still_needed(name: str) -> None:
    """An allowance whose module no longer holds what it allows is removed, not kept."""
    assert any(name == _key(p) for p in _modules())
    kept = {f.split(": ", 1)[1] for f in findings(PACKAGE / name)}
    assert ALLOWED[name] <= kept


def test_the_check_finds_a_statement(tmp_path: Path) -> None:
    """The check itself sees each shape it looks for."""
    probe = tmp_path / "probe.py"
    probe.write_text("import sqlalchemy as sa\nfrom sqlalchemy import func as f\n"
                     "def q(session, Row):\n"
                     "    session.get(Row, 1)\n"
                     "    return sa.select(f.count())\n")
    assert [line.split(": ")[1] for line in findings(probe)] == [
        "session.get(...)", "sa.select", "func"]
