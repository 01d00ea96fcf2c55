"""SQL lives in ``repositories/`` and ``dialects/`` only: the layers above them (the pipeline, the
facades, the MCP server, the CLI and the store's own modules) build no SQLAlchemy statement and
run no ORM query themselves; they call a repository, which takes their Session or Connection.

Read from the source with :mod:`ast`: a name imported from ``sqlalchemy`` that builds a
statement or an expression (``select``, ``insert``, ``func``, ``text``, ``and_`` ...), the same
reached as an attribute (``sa.select``), or a query method called on a ``session``/``conn``
(``session.get(Row, id)``, ``conn.execute(...)``) is a finding."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "waggle_store"

#: The layers above the repositories, as paths under the package.
CHECKED = ("pipeline", "facade", "knowledge", "mcp", "store.py", "store_bound.py",
           "store_support.py", "store_transfer.py", "mind.py", "aio.py", "context.py",
           "cli.py", "cli_conversations.py", "cli_lifecycle.py", "cli_ops.py", "cli_output.py",
           "cli_usage.py")

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


#: The reader of a Waggle ``.mind`` file: its SQL (stdlib ``sqlite3``) reads the file being
#: imported, not the store's database, and stays in this one module.
FOREIGN_FILE_READER = "pipeline/transfer/waggle_mind_rows.py"


def _modules() -> list[Path]:
    found: list[Path] = []
    for name in CHECKED:
        path = PACKAGE / name
        found.extend(sorted(path.rglob("*.py")) if path.is_dir() else [path])
    return [p for p in found if p != PACKAGE / FOREIGN_FILE_READER]


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


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_sql_above_the_repositories(path: Path) -> None:
    assert findings(path) == []


def test_the_check_finds_a_statement(tmp_path: Path) -> None:
    """The check itself sees each shape it looks for."""
    probe = tmp_path / "probe.py"
    probe.write_text("import sqlalchemy as sa\nfrom sqlalchemy import func as f\n"
                     "def q(session, Row):\n"
                     "    session.get(Row, 1)\n"
                     "    return sa.select(f.count())\n")
    assert [line.split(": ")[1] for line in findings(probe)] == [
        "session.get(...)", "sa.select", "func"]
