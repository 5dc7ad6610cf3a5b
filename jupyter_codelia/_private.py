"""Owner-only storage: every directory codelia creates is ``0700`` and every file ``0600``.

Tool outputs, session logs and snapshots hold file contents, data frames, shell output and web
pages; on a multi-user host with traversable home directories (the Debian default) anything
group- or world-readable would leak them. The process umask cannot be relied on (``022`` is the
usual default, ``000`` happens in containers), so the modes are set explicitly, and a store
written with looser modes (an older version, another umask) is tightened the first time it is
used, with one log line saying so.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
import threading
from pathlib import Path

__all__ = [
    "PRIVATE_DIR",
    "PRIVATE_FILE",
    "make_private_dirs",
    "make_private_file",
    "open_private",
    "tighten_once",
    "write_private",
]

log = logging.getLogger("jupyter_codelia")

PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600
# Group and other permission bits: a store with any of them set is readable by other users.
_SHARED_BITS = 0o077

_tightened: set[str] = set()
_tightened_lock = threading.Lock()


def make_private_dirs(path: Path) -> None:
    """Create ``path`` and its missing parents, each ``0700``.

    ``Path.mkdir(parents=True, mode=...)`` gives the parents the umask's mode, and the mode of
    the leaf is still masked by the umask; each new directory is chmod-ed instead.
    """
    missing: list[Path] = []
    current = path
    while not os.path.lexists(current) and current != current.parent:
        missing.append(current)
        current = current.parent
    for directory in reversed(missing):
        try:
            directory.mkdir(mode=PRIVATE_DIR)
        except FileExistsError:
            continue  # another process created it meanwhile; it tightens its own
        os.chmod(directory, PRIVATE_DIR)
    if not path.is_dir():
        raise NotADirectoryError(f"Not a directory: {path}")


def open_private(path: Path | str, flags: int) -> int:
    """``os.open`` that creates the file ``0600`` (and makes an existing one of ours so)."""
    fd = os.open(path, flags, PRIVATE_FILE)
    try:
        # The creation mode is masked by the umask; an existing file keeps its old mode.
        if stat.S_IMODE(os.fstat(fd).st_mode) != PRIVATE_FILE:
            os.fchmod(fd, PRIVATE_FILE)
    except PermissionError:
        pass  # not our file: nothing we may change
    except BaseException:
        os.close(fd)
        raise
    return fd


def write_private(path: Path, data: bytes) -> None:
    """Create or replace the contents of ``path`` as a ``0600`` file."""
    fd = open_private(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_BINARY", 0))
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


def make_private_file(path: Path) -> None:
    """Give an existing file (one a library created, e.g. SQLite's) mode ``0600``."""
    with contextlib.suppress(FileNotFoundError, PermissionError):
        if stat.S_IMODE(path.stat().st_mode) != PRIVATE_FILE:
            os.chmod(path, PRIVATE_FILE)


def tighten_once(root: Path) -> None:
    """Remove group and other access from everything of ours under ``root``, once per process.

    Logs one line when anything was loose. Files owned by other users and symlinks are left
    alone (changing them is not ours to do, and chmod would follow the link).
    """
    key = os.path.abspath(root)
    if os.name != "posix":
        return  # the modes are a POSIX notion; Windows protects a user's profile by ACLs
    with _tightened_lock:
        if key in _tightened:
            return
        _tightened.add(key)
    if not os.path.isdir(key):
        return
    me = os.geteuid()
    changed = 0
    for directory, _dirs, files in os.walk(key):
        for path in (directory, *(os.path.join(directory, name) for name in files)):
            try:
                info = os.lstat(path)
                if stat.S_ISLNK(info.st_mode) or info.st_uid != me:
                    continue
                if info.st_mode & _SHARED_BITS:
                    os.chmod(path, stat.S_IMODE(info.st_mode) & ~_SHARED_BITS)
                    changed += 1
            except (FileNotFoundError, PermissionError):
                continue
    if changed:
        log.warning(
            "codelia store %s: removed group/other access from %d files and directories "
            "(it holds tool outputs and conversations, readable by its owner only)",
            key,
            changed,
        )
