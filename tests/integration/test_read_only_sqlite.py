"""A store file that cannot be written (read-only media, another user's file, a read-only
directory) opens read-only: reads work, writes fail with ReadOnlyStorageError, and health()
says so. The reader runs in a subprocess without the privilege to write anyway (root's
CAP_DAC_OVERRIDE dropped), as an ordinary user would."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import waggle_store as ws

REPO = Path(__file__).resolve().parents[2]

READER = """
import waggle_store as ws
store = ws.open_store({url!r}, embedder="hashing")
print([h.frame.content for h in store.mind("m").search("read only")])
print([r for r in store.health().reasons if "read-only" in r])
try:
    store.mind("m").cognify("a write")
except ws.ReadOnlyStorageError as exc:
    print("refused:", type(exc).__name__)
store.close()
"""


def _unprivileged(code: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-W", "ignore", "-c", code]
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.fail("running as root needs setpriv (util-linux) to drop CAP_DAC_OVERRIDE")
        command = [setpriv, "--bounding-set=-dac_override,-dac_read_search,-fowner", *command]
    env = {k: v for k, v in os.environ.items() if not k.startswith("WAGGLE_")}
    env["PYTHONPATH"] = str(REPO)
    return subprocess.run(command, capture_output=True, text=True, timeout=120, env=env,
                          check=False)


@pytest.mark.sqlite
@pytest.mark.parametrize("directory_writable", [False, True], ids=["ro-dir", "rw-dir"])
def test_a_read_only_file_opens_for_reading(tmp_path: Path, directory_writable: bool) -> None:
    folder = tmp_path / "media"
    folder.mkdir()
    db = folder / "store.db"
    with ws.open_store(f"sqlite:///{db}", embedder="hashing") as store:
        store.mind("m").cognify("a read only memory")
    db.chmod(0o444)
    if not directory_writable:
        folder.chmod(0o555)
    try:
        done = _unprivileged(READER.format(url=f"sqlite:///{db}"))
    finally:
        folder.chmod(0o755)
        db.chmod(0o644)
    assert done.returncode == 0, done.stderr
    found, said, refused = done.stdout.splitlines()
    assert found == "['a read only memory']"
    assert "opened read-only" in said
    assert refused == "refused: ReadOnlyStorageError"
    assert min(p.name for p in folder.iterdir()) == "store.db"
