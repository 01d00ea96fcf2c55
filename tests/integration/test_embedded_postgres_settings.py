"""``waggle_store.testing.embedded_postgres(settings=...)``: server parameters are in force when
the URL is handed out (benchmarks size the server for their data this way); a bad name starts
nothing, a refused value stops the server it started."""

from __future__ import annotations

import tempfile
from pathlib import Path

import psycopg
import pytest

from waggle_store.testing import embedded_postgres


def _dsn(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://", 1)


def test_settings_apply_before_the_url_is_returned() -> None:
    url, stop = embedded_postgres("waggle-settings-",
                                  settings={"shared_buffers": "160MB", "work_mem": "7MB"})
    try:
        with psycopg.connect(_dsn(url)) as conn:
            assert conn.execute("SHOW shared_buffers").fetchone() == ("160MB",)
            assert conn.execute("SHOW work_mem").fetchone() == ("7MB",)
    finally:
        stop()


def test_a_bad_parameter_name_starts_no_server() -> None:
    tmp = Path(tempfile.gettempdir())
    before = set(tmp.glob("waggle-badsetting-*"))
    with pytest.raises(ValueError, match="not a server parameter name"):
        embedded_postgres("waggle-badsetting-", settings={"shared_buffers; DROP": "1GB"})
    assert set(tmp.glob("waggle-badsetting-*")) == before


def test_a_refused_value_stops_the_server() -> None:
    tmp = Path(tempfile.gettempdir())
    before = set(tmp.glob("waggle-badvalue-*"))
    with pytest.raises(psycopg.Error):
        embedded_postgres("waggle-badvalue-", settings={"shared_buffers": "lots"})
    assert set(tmp.glob("waggle-badvalue-*")) == before  # stopped and removed
