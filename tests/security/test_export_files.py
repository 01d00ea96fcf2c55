"""Files the store writes are private and written without following what others planted."""

from __future__ import annotations

import stat
from pathlib import Path

import waggle_store as ws
from tests.conftest import only_sqlite


def test_export_ignores_a_planted_part_symlink_and_is_private(store: ws.Store,
                                                              tmp_path: Path) -> None:
    store.mind("m").kv.set("k", "v")
    victim = tmp_path / "victim.txt"
    victim.write_text("must stay as it is", "utf-8")
    out = tmp_path / "m.jsonl"
    (tmp_path / "m.jsonl.part").symlink_to(victim)
    report = store.export_mind("m", out)
    assert report.path == str(out)
    assert victim.read_text("utf-8") == "must stay as it is"
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert not out.is_symlink()
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.endswith(".part")]
    assert leftovers == ["m.jsonl.part"]  # only the planted link: no temporary file left


@only_sqlite
def test_a_new_sqlite_store_file_is_private(target: object, tmp_path: Path) -> None:
    path = tmp_path / "private.db"
    with ws.open_store(f"sqlite:///{path}", embedder=None) as store:
        store.mind("m").kv.set("k", "v")
        modes = {p.name: stat.S_IMODE(p.stat().st_mode)
                 for p in tmp_path.iterdir() if p.name.startswith("private.db")}
    assert modes["private.db"] == 0o600
    assert all(mode == 0o600 for mode in modes.values()), modes
