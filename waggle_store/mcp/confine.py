"""Where the MCP harvest tools may read: only under the server's ``--harvest-root`` folders.

A client names a path; the server reads it with its own permissions. So, before anything is read
or registered:

- symlinks are resolved first, and the real path must lie under a root;
- the path must be a regular file or a folder (a FIFO would block a worker forever, a device
  such as ``/dev/zero`` would fill memory);
- inside a folder, every symlink must also resolve under a root (the readers follow links to
  files);
- a path outside the roots, a missing one and a special file get the same answer, so the tool
  does not tell a client which paths exist on the server's machine.

A relative path a client names is taken relative to the first root; a registered source's
relative path is read, and so checked, relative to the server's working directory.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Final

from waggle_store.errors import InvalidInputError

#: Most entries a harvested folder may hold (files and folders, at any depth).
MAX_FOLDER_ENTRIES: Final = 100_000


class HarvestRefused(InvalidInputError):
    """A path the MCP harvest tools will not read."""


def no_roots() -> HarvestRefused:
    return HarvestRefused(
        "harvest is off on this server: it reads files only under folders its operator names "
        "with --harvest-root DIR (repeatable) when starting `waggle-store mcp`")


def confined(path: str | Path, roots: tuple[Path, ...]) -> Path:
    """The real path of ``path`` if the harvest tools may read it; :class:`HarvestRefused`
    otherwise."""
    if not roots:
        raise no_roots()
    refused = HarvestRefused(
        f"{str(path)!r} is not a regular file or folder under a harvest root of this server "
        f"({', '.join(map(str, roots))})")
    try:
        given = Path(path).expanduser()
        real = (given if given.is_absolute() else roots[0] / given).resolve()
    except (OSError, RuntimeError, ValueError):  # a symlink loop, a NUL byte, no home directory
        raise refused from None
    if not _under(real, roots):
        raise refused
    try:
        mode = os.stat(real).st_mode
    except OSError:
        raise refused from None
    if stat.S_ISDIR(mode):
        _check_folder(real, roots, str(path))
    elif not stat.S_ISREG(mode):
        raise refused
    return real


def confined_source(path: str, roots: tuple[Path, ...]) -> Path:
    """:func:`confined` for the path a registered source holds. The harvest reads a relative
    one (an imported mind may carry one) relative to the server's working directory, so it is
    checked there, not under the first root as a client's argument is."""
    given = Path(path)
    try:
        where = given.expanduser().absolute()
    except (OSError, RuntimeError):  # no home directory: confined refuses it for that too
        where = given
    return confined(where, roots)


def _under(real: Path, roots: tuple[Path, ...]) -> bool:
    return any(real == root or real.is_relative_to(root) for root in roots)


def _check_folder(folder: Path, roots: tuple[Path, ...], shown: str) -> None:
    """Every symlink in the folder resolves under a root; the folder is not unboundedly big."""
    seen = 0
    for top, dirs, files in os.walk(folder, followlinks=False):
        for entry in (*dirs, *files):
            seen += 1
            if seen > MAX_FOLDER_ENTRIES:
                raise HarvestRefused(
                    f"{shown!r} holds more than {MAX_FOLDER_ENTRIES} files and folders")
            full = Path(top, entry)
            if full.is_symlink():
                try:
                    target = full.resolve()
                except (OSError, RuntimeError):
                    target = None
                if target is None or not _under(target, roots):
                    rel = full.relative_to(folder).as_posix()
                    raise HarvestRefused(
                        f"{shown!r} contains a link ({rel}) leading outside the harvest roots")
