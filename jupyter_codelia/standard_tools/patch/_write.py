"""Writing a validated patch all-or-nothing, safe against concurrent changes and SIGKILL.

New contents go to temp files created in their targets' directories (through the directories'
fds, so renames are atomic and nothing can be redirected). Then, in patch order, each source is
re-validated (same file identity and content hash as when the patch was planned) and the
renames are made: a replaced file keeps a hard-linked backup, a deleted one is renamed to its
backup, a new file is linked into place (never over an existing name). Every step is described
beforehand in a journal under ``<root>/.codelia-journal/``, held under ``flock`` while the patch
runs. Any failure - or, after a crash, the next :func:`recover_journals` - reads the journal and
rolls the whole patch back (before its commit record) or forward (after it), and removes every
``.codelia-*`` temp and backup file it names. POSIX rename is atomic per file; the journal is
what makes the patch atomic across files. The guarantee is against the process dying (SIGKILL,
the OOM killer): nothing is fsynced, so a power cut may still lose the page cache.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import secrets
import stat
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

from ..._text import describe_exc
from ...errors import CodeliaError
from .._fdpath import Entry, Walker
from .._fileio import temp_name
from .._sandbox import Sandbox
from ._lines import Buffer

Action = Literal["add", "delete", "update", "move"]
JOURNAL_DIR = ".codelia-journal"
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_JOURNAL_FLAGS = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# Buffers one writev may take (-1 would mean no limit; 16 is the least POSIX allows).
_IOV_MAX = max(os.sysconf("SC_IOV_MAX"), 16)


class PatchConflictError(CodeliaError):
    """A file changed between planning and writing the patch; nothing was written."""


@dataclass
class Identity:
    """What a source file was when the patch was planned: which file, and its exact bytes
    (compared whole, which is both stricter and faster than comparing hashes)."""

    device: int
    inode: int
    content: bytes


@dataclass
class Planned:
    """One validated section: the action, its paths as given and resolved, new content, diff."""

    action: Action
    path: str
    source: Path
    target: Path | None = None
    move_to: str | None = None
    content: Sequence[Buffer] | None = None  # UTF-8, in pieces written in order
    diff: str = ""
    identity: Identity | None = None  # of the source, for update/delete/move


def identity_of(fd: int, data: bytes) -> Identity:
    info = os.fstat(fd)
    return Identity(info.st_dev, info.st_ino, data)


@dataclass
class _Step:
    """One file of the journal: its directory (real path), name, and our temp/backup names."""

    kind: Literal["replace", "remove", "create"]
    dir: str
    name: str
    temp: str | None = None
    backup: str | None = None
    temp_inode: int | None = None


@dataclass
class _Journal:
    token: str
    steps: list[_Step] = field(default_factory=list)
    created_dirs: list[str] = field(default_factory=list)
    state: Literal["staging", "committing", "committed"] = "staging"


def _real_dir(entry: Entry) -> str:
    """The path of the directory ``entry`` is in, as the kernel knows it (Linux ``/proc``,
    ``F_GETPATH`` on macOS)."""
    if hasattr(fcntl, "F_GETPATH"):
        raw = fcntl.fcntl(entry.dir_fd, fcntl.F_GETPATH, bytes(4096))
        return os.fsdecode(raw.split(b"\0", 1)[0])
    return os.readlink(f"/proc/self/fd/{entry.dir_fd}")


def _journal_dir(sandbox: Sandbox, *, create: bool) -> int | None:
    """An fd of ``<root>/.codelia-journal`` (made when ``create``), None when it is missing.

    Opened through the root's fd with ``O_NOFOLLOW``: a symlink planted there is refused
    instead of sending the journal elsewhere.
    """
    root = os.open(sandbox.root_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        if create:
            with contextlib.suppress(FileExistsError):
                os.mkdir(JOURNAL_DIR, 0o700, dir_fd=root)
        try:
            return os.open(JOURNAL_DIR, _DIR_FLAGS, dir_fd=root)
        except FileNotFoundError:
            return None
    finally:
        os.close(root)


def _remove_journal_dir(sandbox: Sandbox) -> None:
    """Remove the journal directory once it is empty (another patch may be using it)."""
    with contextlib.suppress(OSError):
        root = os.open(sandbox.root_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.rmdir(JOURNAL_DIR, dir_fd=root)
        finally:
            os.close(root)


class _JournalFile:
    """The journal of one patch on disk, locked for as long as the patch runs."""

    def __init__(self, sandbox: Sandbox, journal: _Journal) -> None:
        self.sandbox = sandbox
        self.name = f"{journal.token}.json"
        self.journal = journal
        for _ in range(3):  # another patch may remove the (empty) directory in between
            directory = _journal_dir(sandbox, create=True)
            if directory is None:
                continue
            try:
                self.fd = os.open(self.name, _JOURNAL_FLAGS, 0o600, dir_fd=directory)
            except FileNotFoundError:
                os.close(directory)
                continue
            self.directory = directory
            break
        else:
            raise FileNotFoundError(errno.ENOENT, "Journal directory vanished", JOURNAL_DIR)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        self.size = 0
        self.save()

    def save(self) -> None:
        """Overwrite the record in place with one ``pwrite`` (a SIGKILL cannot split a write of
        a few KiB to a regular file); padding keeps a shorter record from leaving a stale tail,
        and trailing spaces are valid JSON."""
        data = json.dumps(asdict(self.journal)).encode()
        self.size = max(self.size, len(data))
        os.pwrite(self.fd, data.ljust(self.size), 0)

    def remove(self) -> None:
        os.unlink(self.name, dir_fd=self.directory)
        os.close(self.fd)
        os.close(self.directory)
        _remove_journal_dir(self.sandbox)


def write_planned(planned: Sequence[Planned], sandbox: Sandbox) -> None:
    """Apply the planned changes all-or-nothing; raises ``OSError("Error applying patch: ...")``."""
    journal = _Journal(secrets.token_hex(4))
    with Walker(sandbox) as walker:
        # Directories first (a new file may need them), then the journal of every name we will
        # touch, then the temp files: a crash at any point leaves nothing the journal misses.
        entries: list[tuple[Planned, Entry | None, Entry | None]] = []
        try:
            for item in planned:
                source = None
                if item.action != "add":
                    follow = item.action == "update"
                    source = walker.locate(item.source, item.path, follow=follow)
                target = None
                if item.action in ("add", "move"):
                    assert item.target is not None
                    target = walker.locate(
                        item.target, item.move_to or item.path, follow=False, create_parents=True
                    )
                elif item.action == "update":
                    target = source
                entries.append((item, source, target))
        except Exception as exc:
            _remove_created(walker)
            raise OSError(
                f"Error applying patch: {describe_exc(exc)} (no file was changed)"
            ) from None
        journal.created_dirs = [
            os.path.join(_real_dir(entry), entry.name) for entry in walker.created
        ]
        dirs: dict[int, int] = {}  # id of a step -> the fd of its directory, held since planning

        def add_step(step: _Step, entry: Entry) -> None:
            journal.steps.append(step)
            dirs[id(step)] = entry.dir_fd

        for item, source, target in entries:
            if item.action in ("delete", "move"):
                assert source is not None
                backup = _backup(source, journal)
                add_step(_Step("remove", _real_dir(source), source.name, backup=backup), source)
            if item.action in ("add", "move"):
                assert target is not None
                temp = _temp(target, journal)
                add_step(_Step("create", _real_dir(target), target.name, temp=temp), target)
            if item.action == "update":
                assert target is not None
                replace = _Step(
                    "replace",
                    _real_dir(target),
                    target.name,
                    temp=_temp(target, journal),
                    backup=_backup(target, journal),
                )
                add_step(replace, target)
        try:
            journal_file = _JournalFile(sandbox, journal)
        except OSError as exc:
            _remove_created(walker)
            raise OSError(
                f"Error applying patch: cannot write the patch journal {JOURNAL_DIR}/: "
                f"{describe_exc(exc)} (no file was changed)"
            ) from None

        def dir_of(step: _Step) -> int:
            return dirs[id(step)]  # no lookup by name: nothing can redirect the undo

        try:
            _commit(entries, journal_file)
        except Exception as exc:
            problems = _roll_back(journal, dir_of)
            _remove_created(walker)
            if problems:  # the journal stays for recover_journals to finish the job
                raise OSError(
                    f"Error applying patch: {describe_exc(exc)}; rollback was incomplete: "
                    + "; ".join(problems)
                ) from None
            journal_file.remove()
            raise OSError(
                f"Error applying patch: {describe_exc(exc)} (no file was changed)"
            ) from None
        _finish(journal, dir_of)
        journal_file.remove()


def _temp(entry: Entry, journal: _Journal) -> str:
    return temp_name(entry.name, journal.token, "tmp")


def _backup(entry: Entry, journal: _Journal) -> str:
    return temp_name(entry.name, journal.token, "bak")


def _remove_created(walker: Walker) -> None:
    for entry in reversed(walker.created):
        with contextlib.suppress(OSError):
            os.rmdir(entry.name, dir_fd=entry.dir_fd)


def _commit(
    entries: list[tuple[Planned, Entry | None, Entry | None]], journal_file: _JournalFile
) -> None:
    journal = journal_file.journal
    steps = iter(journal.steps)
    staged: list[tuple[Planned, Entry | None, Entry | None, list[_Step]]] = []
    for item, source, target in entries:
        mine = [next(steps)]
        if item.action == "move":
            mine.append(next(steps))
        for step in mine:
            if step.temp is not None:
                assert target is not None
                assert item.content is not None
                mode = None
                if item.action in ("update", "move") and item.identity is not None:
                    assert source is not None
                    mode = stat.S_IMODE(os.stat(source.name, dir_fd=source.dir_fd).st_mode)
                fd = os.open(step.temp, _NEW_FILE, 0o666, dir_fd=target.dir_fd)
                try:
                    _write_pieces(fd, item.content)
                    if mode is not None:
                        os.fchmod(fd, mode)
                    step.temp_inode = os.fstat(fd).st_ino
                finally:
                    os.close(fd)
        staged.append((item, source, target, mine))
    journal.state = "committing"
    journal_file.save()
    for item, source, target, mine in staged:
        if item.identity is not None:
            assert source is not None
            _revalidate(item, source)
        for step in mine:
            entry = target if step.kind in ("create", "replace") else source
            assert entry is not None
            if step.kind == "remove":
                assert step.backup is not None
                os.rename(step.name, step.backup, src_dir_fd=entry.dir_fd, dst_dir_fd=entry.dir_fd)
            elif step.kind == "create":
                assert step.temp is not None
                _link_new(entry, step.temp)
            else:
                assert step.temp is not None
                assert step.backup is not None
                os.link(
                    step.name,
                    step.backup,
                    src_dir_fd=entry.dir_fd,
                    dst_dir_fd=entry.dir_fd,
                    follow_symlinks=False,
                )
                os.rename(step.temp, step.name, src_dir_fd=entry.dir_fd, dst_dir_fd=entry.dir_fd)
    journal.state = "committed"
    journal_file.save()


def _write_pieces(fd: int, pieces: Sequence[Buffer]) -> None:
    """Write ``pieces`` in order with ``writev``: a big file patched in a few places is mostly
    views of its old bytes, and joining them first would copy all of it."""
    for first in range(0, len(pieces), _IOV_MAX):
        batch = pieces[first : first + _IOV_MAX]
        written = os.writev(fd, batch)
        if written < sum(map(len, batch)):  # a short write (rare): the rest with plain writes
            rest = memoryview(b"".join(batch))[written:]
            while rest:
                rest = rest[os.write(fd, rest) :]


def _link_new(entry: Entry, temp: str) -> None:
    """Put ``temp`` at ``entry`` only if nothing is there (``link`` refuses an existing name)."""
    try:
        os.link(
            temp,
            entry.name,
            src_dir_fd=entry.dir_fd,
            dst_dir_fd=entry.dir_fd,
            follow_symlinks=False,
        )
    except FileExistsError:
        raise FileExistsError(errno.EEXIST, "File exists", entry.shown) from None
    os.unlink(temp, dir_fd=entry.dir_fd)


def _revalidate(item: Planned, source: Entry) -> None:
    """Refuse to go on when ``source`` is no longer the file the patch was planned against."""
    assert item.identity is not None
    try:
        fd = source.open_read() if item.action == "update" else _open_through(source)
    except FileNotFoundError:
        raise PatchConflictError(
            f"{item.path} was removed while the patch was being applied"
        ) from None
    try:
        info = os.fstat(fd)
        wanted = item.identity
        same = (info.st_dev, info.st_ino) == (wanted.device, wanted.inode)
        same = same and _same_content(fd, wanted.content)
    finally:
        os.close(fd)
    if not same:
        raise PatchConflictError(
            f"{item.path} changed while the patch was being applied; read it again and retry"
        )


_COMPARE_BLOCK = 1 << 18


def _same_content(fd: int, content: bytes) -> bool:
    """Whether the file at ``fd`` holds exactly ``content``, read in blocks into one reused
    buffer: a second whole copy of a big file is a fresh allocation the kernel must fault in
    page by page, which cost more than the comparison."""
    buffer = bytearray(min(len(content) + 1, _COMPARE_BLOCK))
    view = memoryview(buffer)
    position = 0
    while True:
        got = os.readv(fd, [buffer])
        if not got:
            return position == len(content)
        if not content.startswith(view[:got], position):
            return False
        position += got


def _open_through(entry: Entry) -> int:
    """Read fd of ``entry``'s file, following a symlink entry by name within its directory."""
    info = entry.lstat()
    if info is not None and stat.S_ISLNK(info.st_mode):
        return os.open(entry.name, os.O_RDONLY | os.O_CLOEXEC, dir_fd=entry.dir_fd)
    return entry.open_read()


def _finish(journal: _Journal, dir_of: Callable[[_Step], int]) -> None:
    """Roll forward: the patch is committed, only our backups (and stray temps) remain."""
    for step in journal.steps:
        for name in (step.backup, step.temp):
            if name is not None:
                with contextlib.suppress(OSError):
                    os.unlink(name, dir_fd=dir_of(step))


def _roll_back(journal: _Journal, dir_of: Callable[[_Step], int]) -> list[str]:
    """Undo every step of ``journal`` in reverse; returns what could not be undone."""
    problems: list[str] = []
    for step in reversed(journal.steps):
        try:
            _undo(dir_of(step), journal, step)
        except Exception as exc:
            problems.append(describe_exc(exc))
    return problems


def _undo(dir_fd: int, journal: _Journal, step: _Step) -> None:
    def info(name: str | None) -> os.stat_result | None:
        if name is None:
            return None
        with contextlib.suppress(FileNotFoundError):
            return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        return None

    here, temp, backup = info(step.name), info(step.temp), info(step.backup)
    placed = (
        journal.state != "staging"
        and step.temp_inode is not None
        and here is not None
        and here.st_ino == step.temp_inode
    )
    if step.kind == "create" and placed:
        os.unlink(step.name, dir_fd=dir_fd)
    if backup is not None:
        assert step.backup is not None
        if here is not None and here.st_ino == backup.st_ino and not placed:
            os.unlink(step.backup, dir_fd=dir_fd)  # the backup link was made, no more
        else:
            os.rename(step.backup, step.name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    if temp is not None:
        assert step.temp is not None
        os.unlink(step.temp, dir_fd=dir_fd)


def recover_journals(sandbox: Sandbox) -> list[str]:
    """Finish or undo every patch whose process died mid-way; returns the tokens handled.

    A journal still locked belongs to a patch that is running (in this or another process) and
    is left alone.
    """
    try:
        directory = _journal_dir(sandbox, create=False)
    except OSError:
        return []  # not a directory we made (a planted symlink): nothing of ours to recover
    if directory is None:
        return []
    handled: list[str] = []
    try:
        for name in sorted(os.listdir(directory)):
            if name.endswith(".json") and _recover_one(sandbox, directory, name):
                handled.append(name.removesuffix(".json"))
    finally:
        os.close(directory)
    _remove_journal_dir(sandbox)
    return handled


def _recover_one(sandbox: Sandbox, directory: int, name: str) -> bool:
    """Finish or undo the patch of journal ``name`` unless it is running; True when done."""
    try:
        fd = os.open(name, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=directory)
    except FileNotFoundError:
        return False
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False  # its patch is running
        try:
            os.stat(name, dir_fd=directory, follow_symlinks=False)
        except FileNotFoundError:
            return False  # finished and removed while we opened it
        journal = _load_journal(os.read(fd, 1 << 24))
        problems: list[str] = []
        with Walker(sandbox) as walker:
            if journal is not None:  # None: killed before the record was whole, no file staged

                def dir_of(step: _Step) -> int:
                    return walker.open_dir(step.dir)

                if journal.state == "committed":
                    _finish(journal, dir_of)
                else:
                    problems = _roll_back(journal, dir_of)
                    for created in reversed(journal.created_dirs):
                        with contextlib.suppress(OSError):
                            made = walker.locate(created, created, follow=False)
                            os.rmdir(made.name, dir_fd=made.dir_fd)
        if problems:
            return False  # kept for a later attempt
        os.unlink(name, dir_fd=directory)
        return True
    finally:
        os.close(fd)


def _load_journal(raw: bytes) -> _Journal | None:
    try:
        data = json.loads(raw)
        steps = [_Step(**step) for step in data["steps"]]
        return _Journal(data["token"], steps, list(data["created_dirs"]), data["state"])
    except (ValueError, KeyError, TypeError):
        return None
