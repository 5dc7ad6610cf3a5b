"""Race-proof path use for the file tools: every component is opened relative to a directory fd.

:meth:`Sandbox.resolve` checks a path by its name, but a check by name and a later use by name
are two operations: between them a directory can be swapped for a symlink to ``/etc``. So the
tools never use a checked path by name. A :class:`Walker` starts from the sandbox root's
directory fd and opens each component with ``openat``-style calls (``os.open(name,
dir_fd=..., O_NOFOLLOW | O_DIRECTORY)``): a component that is (or has just become) a symlink is
not followed by the kernel but read with ``readlink`` and expanded here, refused when it leads
out of the root. What a tool finally reads, writes, renames or deletes is an :class:`Entry` - a
directory fd plus one name in it - so nothing can redirect the use after the check. Temporary
files are created in the target's own directory through that fd.

Reading follows the rule of the kernel's own path sandboxes (Landlock): what is reachable by a
path inside the root is inside. A hard link inside the root to a file elsewhere is therefore
readable; a symlink is followed only while its target stays inside the root.
"""

from __future__ import annotations

import errno
import os
import stat
from collections import deque
from dataclasses import dataclass
from types import TracebackType

from ._sandbox import Sandbox, SecurityError, _shown

# O_PATH (Linux) opens a directory only to name things in it, so a directory we may traverse
# but not list (mode --x) still works, as it does for a lookup by path.
_DIR_FLAGS = getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_MAX_LINKS = 40  # Linux's limit on symlinks followed in one lookup (ELOOP beyond)


@dataclass(frozen=True)
class Entry:
    """One name in a directory that is held open: the only handle tools use on a file."""

    dir_fd: int
    name: str
    shown: str  # the path as the model gave it, for messages

    def lstat(self) -> os.stat_result | None:
        """The entry's own status (a symlink is not followed), or None when it does not exist."""
        try:
            return os.stat(self.name, dir_fd=self.dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            return None

    def open_read(self) -> int:
        """An fd to read the regular file at this entry (never through a symlink)."""
        fd = os.open(
            self.name,
            os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK,
            dir_fd=self.dir_fd,
        )
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            os.close(fd)
            if stat.S_ISDIR(info.st_mode):
                raise IsADirectoryError(errno.EISDIR, "Is a directory", self.shown)
            raise OSError(errno.EINVAL, "Not a regular file", self.shown)
        os.set_blocking(fd, True)
        return fd

    def read_bytes(self) -> bytes:
        fd = self.open_read()
        with os.fdopen(fd, "rb") as handle:
            return handle.read()


class Walker:
    """Resolves paths of one operation through fds; closes every fd it opened on exit."""

    def __init__(self, sandbox: Sandbox) -> None:
        self._sandbox = sandbox
        self._fds: list[int] = []
        self._root_fd: int | None = None
        self.created: list[Entry] = []  # directories made by ``locate(create_parents=True)``

    def __enter__(self) -> Walker:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        for fd in self._fds:
            os.close(fd)
        self._fds.clear()

    def open_dir(self, path: str, shown: str | None = None) -> int:
        """An fd of the directory at absolute ``path`` (held until the walker closes);
        ``shown`` is the path as given, for messages."""
        entry = self.locate(path, path if shown is None else shown, follow=True)
        fd = os.open(entry.name, _DIR_FLAGS, dir_fd=entry.dir_fd)
        self._fds.append(fd)
        return fd

    def _below_root(self, path: str, shown: str, *, through_link: bool) -> list[str]:
        """The names of absolute ``path`` below the walk's start (the root, or ``/``)."""
        sandbox = self._sandbox
        if sandbox.full_access:
            return path.split("/")
        for root in (str(sandbox.root_dir), sandbox.real_root):
            base = root.rstrip("/")
            if path == base or path.startswith(base + "/"):
                return path[len(base) + 1 :].split("/")
        how = " (through a symlink)" if through_link else ""
        raise SecurityError(f"Path escapes sandbox: {_shown(shown)} -> {path}{how}")

    def _root(self) -> int:
        """The root directory's fd, opened once per walker and shared by all its lookups."""
        if self._root_fd is None:
            where = "/" if self._sandbox.full_access else str(self._sandbox.root_dir)
            self._root_fd = os.open(where, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            self._fds.append(self._root_fd)
        return self._root_fd

    def locate(
        self,
        path: os.PathLike[str] | str,
        shown: str,
        *,
        follow: bool,
        create_parents: bool = False,
    ) -> Entry:
        """The :class:`Entry` for ``path`` (absolute, from :meth:`Sandbox.resolve`).

        ``follow`` expands a final symlink (within the root) like every other component; without
        it the entry is the link itself (deleting it deletes the link). ``create_parents`` makes
        missing directories on the way, recorded in :attr:`created`.
        """
        text = os.fspath(path)
        stack: list[int] = [self._root()]
        pending: deque[str] = deque(self._below_root(text, shown, through_link=False))
        links = 0

        def expand(link_dir: int, name: str) -> None:
            nonlocal links, stack
            links += 1
            if links > _MAX_LINKS:
                raise OSError(errno.ELOOP, "Too many levels of symbolic links", shown)
            target = os.readlink(name, dir_fd=link_dir)
            if target.startswith("/"):
                rest = self._below_root(target, shown, through_link=True)
                stack = stack[:1]
                pending.extendleft(reversed(rest))
            else:
                pending.extendleft(reversed(target.split("/")))

        while pending:
            name = pending.popleft()
            if name in ("", "."):
                continue
            current = stack[-1]
            if name == "..":
                if len(stack) == 1:
                    if self._sandbox.full_access:
                        continue
                    raise SecurityError(
                        f"Path escapes sandbox: {_shown(shown)} -> {text} (through a symlink)"
                    )
                stack.pop()
                continue
            if not any(part not in ("", ".") for part in pending):
                info = _lstat(current, name)
                if follow and info is not None and stat.S_ISLNK(info.st_mode):
                    expand(current, name)
                    continue
                return Entry(current, name, shown)
            try:
                fd = os.open(name, _DIR_FLAGS, dir_fd=current)
            except FileNotFoundError:
                if not create_parents:
                    raise
                os.mkdir(name, 0o777, dir_fd=current)
                self.created.append(Entry(current, name, shown))
                fd = os.open(name, _DIR_FLAGS, dir_fd=current)
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                    raise
                info = _lstat(current, name)
                if info is None or not stat.S_ISLNK(info.st_mode):
                    raise
                expand(current, name)
                continue
            self._fds.append(fd)
            stack.append(fd)
        # The path is the root (or a link chain ended there): the entry is "." in it.
        return Entry(stack[-1], ".", shown)


def _lstat(dir_fd: int, name: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
