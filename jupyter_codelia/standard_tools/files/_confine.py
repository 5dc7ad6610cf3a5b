"""ripgrep run inside the sandbox's walls, enforced by the kernel.

``grep`` and ``glob`` hand the directory walk to ripgrep, which opens files by path: between
its directory listing and its open, a directory inside the sandbox could be swapped for a
symlink to ``/etc`` and the open would follow it. So ripgrep starts in a directory held open by
descriptor (its working directory is ``/proc/self/fd/<fd>``: the very directory the sandbox
walk opened, never a path looked up again), and on Linux with Landlock (5.13+) it runs under a
ruleset that lets it read only beneath the sandbox root, the ignore files of the root's
ancestors (``.gitignore`` above the root still applies) and its own executable. A read outside
fails with EACCES whatever path leads there; the rules are given by descriptor, so nothing is
looked up by name either.

Landlock restricts the calling *thread* and what it starts, so each confined ripgrep is started
from a fresh thread that restricts itself, spawns it and ends; the rest of the process is
untouched. Without Landlock (another OS, an old kernel) ripgrep still starts from the held
descriptor, which it never follows out of (it does not follow symlinks).
"""

from __future__ import annotations

import ctypes
import functools
import logging
import os
import struct
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

from ...errors import CodeliaError

# Landlock's system calls (the same numbers on every architecture) and constants.
_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_READ_FILE, _READ_DIR = 1 << 2, 1 << 3
_PR_SET_NO_NEW_PRIVS = 38
# What ripgrep reads in the root's ancestors: ignore files, and a worktree's ``.git`` file (a
# ``.git`` directory itself stays closed: its config may hold credentials).
_IGNORE_FILES = (".gitignore", ".ignore", ".rgignore", ".git/info/exclude", ".git")
_PATH_FLAGS = getattr(os, "O_PATH", os.O_RDONLY) | os.O_CLOEXEC

log = logging.getLogger("jupyter_codelia.standard_tools")


class ConfinementError(CodeliaError, OSError):
    """The ruleset could not be applied (the thread was not restricted, nothing was run)."""


@functools.cache
def landlock_abi() -> int:
    """The kernel's Landlock ABI version, 0 when Landlock is not there."""
    if not sys.platform.startswith("linux"):
        return 0
    libc = ctypes.CDLL(None, use_errno=True)
    version = libc.syscall(_CREATE_RULESET, None, ctypes.c_size_t(0), _CREATE_RULESET_VERSION)
    return max(int(version), 0)


def _restrict_this_thread(readable: Sequence[int], listable: Sequence[int] = ()) -> None:
    """Let this thread (and what it starts) read only beneath the ``O_PATH`` fds
    ``readable``, and list (not read) the directories beneath ``listable``."""
    libc = ctypes.CDLL(None, use_errno=True)
    handled = struct.pack("=Q", _READ_FILE | _READ_DIR)
    ruleset = libc.syscall(_CREATE_RULESET, handled, ctypes.c_size_t(len(handled)), 0)
    if ruleset < 0:
        raise ConfinementError(ctypes.get_errno(), "landlock_create_ruleset failed")
    try:
        for fd in readable:
            is_dir = os.path.isdir(f"/proc/self/fd/{fd}")
            allowed = _READ_FILE | _READ_DIR if is_dir else _READ_FILE
            _add_rule(libc, ruleset, allowed, fd)
        for fd in listable:
            _add_rule(libc, ruleset, _READ_DIR, fd)
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0:
            raise ConfinementError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
        if libc.syscall(_RESTRICT_SELF, ruleset, 0) < 0:
            raise ConfinementError(ctypes.get_errno(), "landlock_restrict_self failed")
    finally:
        os.close(ruleset)


def _add_rule(libc: ctypes.CDLL, ruleset: int, allowed: int, fd: int) -> None:
    rule = struct.pack("=Qi", allowed, fd)
    if libc.syscall(_ADD_RULE, ruleset, _RULE_PATH_BENEATH, rule, 0) < 0:
        raise ConfinementError(ctypes.get_errno(), "landlock_add_rule failed")


def _listable_fds() -> list[int]:
    """``O_PATH`` fd of ``/proc``, whose directories the child may list (never read a file
    of): between fork and exec it lists its own ``/proc/self/fd`` to close what it must not
    inherit, and refused that, it calls close() on every number up to the fd limit instead
    (20,000 calls per search here, a million where the limit is raised)."""
    try:
        return [os.open("/proc", _PATH_FLAGS | os.O_DIRECTORY)]
    except OSError:
        return []


def _readable_fds(root: Path, executable: str) -> list[int]:
    """``O_PATH`` fds of what ripgrep may read: the root, the ignore files of its ancestors
    and its executable (a dynamically linked one also needs the system libraries)."""
    paths = [str(root), executable]
    for parent in root.parents:
        paths += [os.path.join(parent, name) for name in _IGNORE_FILES]
    if _is_dynamic(executable):
        paths += ["/lib", "/lib64", "/usr/lib", "/usr/lib64", "/etc/ld.so.cache"]
    fds: list[int] = []
    for path in paths:
        try:
            fd = os.open(path, _PATH_FLAGS)
        except OSError:
            continue  # most ancestors have no ignore files
        if path.endswith("/.git") and os.path.isdir(f"/proc/self/fd/{fd}"):
            os.close(fd)
            continue
        fds.append(fd)
    return fds


@functools.cache
def _is_dynamic(executable: str) -> bool:
    """Whether the ELF file asks for a program interpreter (a dynamic loader)."""
    try:
        with open(executable, "rb") as handle:
            head = handle.read(4096)
    except OSError:
        return True
    if head[:4] != b"\x7fELF" or head[4] != 2:  # not a 64-bit ELF: assume the worst
        return True
    little = head[5] == 1
    order = "<" if little else ">"
    (phoff,) = struct.unpack_from(order + "Q", head, 0x20)
    phentsize, phnum = struct.unpack_from(order + "HH", head, 0x36)
    for index in range(phnum):
        at = phoff + index * phentsize
        if at + 4 > len(head):
            return True
        (kind,) = struct.unpack_from(order + "I", head, at)
        if kind == 3:  # PT_INTERP
            return True
    return False


def spawn_rg(argv: Sequence[str], cwd_fd: int, root: Path) -> subprocess.Popen[bytes]:
    """Start ``argv`` (ripgrep) in the directory held by ``cwd_fd``, confined to ``root``
    where the kernel has Landlock; stdout and stderr are pipes, stdin is ``/dev/null``."""
    stdin = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)  # before any restriction
    try:
        options = {
            "cwd": f"/proc/self/fd/{cwd_fd}",
            "pass_fds": (cwd_fd,),
            "stdin": stdin,
            "stdout": subprocess.PIPE,
            "stderr": subprocess.PIPE,
        }
        if not landlock_abi():
            return subprocess.Popen(argv, **options)  # type: ignore[call-overload, no-any-return]
        readable = _readable_fds(root, argv[0])
        listable = _listable_fds()
        outcome: list[subprocess.Popen[bytes] | BaseException] = []

        def confined() -> None:
            try:
                try:
                    _restrict_this_thread(readable, listable)
                except ConfinementError as exc:
                    # A container's seccomp profile may refuse the calls: ripgrep still starts
                    # from the held directory, as where the kernel has no Landlock.
                    log.warning("ripgrep runs without Landlock: %s", exc)
                outcome.append(subprocess.Popen(argv, **options))  # type: ignore[call-overload]
            except BaseException as exc:  # handed to the caller's thread
                outcome.append(exc)

        try:
            worker = threading.Thread(target=confined, name="codelia-rg-confined")
            worker.start()
            worker.join()
        finally:
            for fd in (*readable, *listable):
                os.close(fd)
        result = outcome[0]
        if isinstance(result, BaseException):
            raise result
        return result
    finally:
        os.close(stdin)


__all__ = ["ConfinementError", "landlock_abi", "spawn_rg"]
