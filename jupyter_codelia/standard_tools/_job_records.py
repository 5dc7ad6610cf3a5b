"""Job records on disk: which jobs a kernel runs, so the next kernel can say what was stopped.

Each running job has a small JSON file under ``<home>/jobs/<kernel>/`` (owner-only), written
when it starts and removed when it ends while its kernel lives. ``<kernel>`` is the kernel's id,
which a restart keeps. A kernel that dies leaves its files behind: a shell job's guard marks its
file ``stopped`` once it has ended the job's processes, and a python job (a thread of the dead
kernel) ended with it. The next kernel with the same id reads them (:meth:`JobRecords.previous`)
and tells the person (``%codelia jobs``) and the model (the next turn's notice).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .._private import make_private_dirs, write_private
from ._job_guard import process_start

#: Records of dead kernels older than this are deleted unread (a kernel id never came back).
MAX_RECORD_AGE_SECONDS = 7 * 24 * 3600


@dataclass(frozen=True)
class PreviousJob:
    """A job of an earlier kernel process with this kernel's id, and how it ended."""

    job_id: str
    kind: str
    title: str
    started_at: float
    outcome: str

    def line(self) -> str:
        started = time.strftime("%H:%M:%S", time.localtime(self.started_at))
        return f"{self.job_id} [{self.kind}] started {started}: {self.title} — {self.outcome}"


class JobRecords:
    """This kernel's job records, in ``directory()`` (resolved at each use: the home may move)."""

    def __init__(self, directory: Callable[[], Path], kernel_pid: int | None = None) -> None:
        self._directory = directory
        self._pid = os.getpid() if kernel_pid is None else kernel_pid
        self._start = process_start(self._pid)
        self._seen: list[PreviousJob] = []

    def path_for(self, job_id: str) -> Path | None:
        """Where the record of ``job_id`` goes; None when the directory cannot be made."""
        directory = self._directory()
        try:
            make_private_dirs(directory)
        except OSError:
            return None
        return directory / f"{self._pid}-{job_id}.json"

    def save(
        self, job_id: str, kind: str, title: str, started_at: float, **extra: Any
    ) -> Path | None:
        path = self.path_for(job_id)
        if path is None:
            return None
        record = {
            "job_id": job_id,
            "kind": kind,
            "title": title,
            "started_at": started_at,
            "kernel_pid": self._pid,
            "kernel_start": self._start,
            # "stopped" once the exiting kernel or, after the kernel, the guard stopped it.
            "state": "running",
            **extra,
        }
        try:
            write_private(path, json.dumps(record).encode("utf-8"))
        except OSError:
            return None
        return path

    def forget(self, job_id: str) -> None:
        path = self.path_for(job_id)
        if path is not None:
            with contextlib.suppress(OSError):
                path.unlink()

    def previous(self) -> list[PreviousJob]:
        """Jobs of earlier kernel processes with this id, and how each ended.

        A record whose guard is still ending the job stays on disk and is read again next
        time; every other one moves into memory (reported for this kernel's life) and its file
        is removed.
        """
        directory = self._directory()
        try:
            paths = sorted(directory.glob("*.json"))
        except OSError:
            paths = []
        ending: list[PreviousJob] = []
        for path in paths:
            found = self._take(path)
            if found is None:
                continue
            job, final = found
            (self._seen if final else ending).append(job)
        return [*self._seen, *ending]

    def _take(self, path: Path) -> tuple[PreviousJob, bool] | None:
        """The job of a record of a dead kernel, and whether that record is final (removed)."""
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
            pid = int(record["kernel_pid"])
            found = PreviousJob(
                job_id=str(record["job_id"]),
                kind=str(record["kind"]),
                title=str(record["title"]),
                started_at=float(record["started_at"]),
                outcome=_outcome(record),
            )
        except (OSError, ValueError, KeyError, TypeError):
            with contextlib.suppress(OSError):
                path.unlink()  # unreadable: nothing to report from it
            return None
        if pid == self._pid or _alive(pid, record.get("kernel_start")):
            return None  # this kernel's own, or a kernel that is still there
        if _alive(record.get("guard_pid"), record.get("guard_start")):
            outcome = "being stopped: its guard is ending its processes (the kernel ended)"
            return replace(found, outcome=outcome), False
        try:
            fresh = time.time() - path.stat().st_mtime < MAX_RECORD_AGE_SECONDS
            path.unlink()
        except OSError:
            return None  # another kernel took it meanwhile
        return (found, True) if fresh else None


def _outcome(record: dict[str, Any]) -> str:
    state = record.get("state")
    if record.get("kind") == "python":
        return "ended with the kernel (python jobs run on the kernel's threads)"
    if state == "stopped":
        return "stopped when the kernel ended (its processes got SIGTERM, then SIGKILL)"
    if state == "ended":
        return "its processes ended on their own after the kernel did"
    return "ended with the kernel (its guard process is gone too)"


def _alive(pid: object, start: object) -> bool:
    """Whether the process ``pid`` that started at ``start`` still runs."""
    if not isinstance(pid, int) or pid <= 0:
        return False
    now = process_start(pid)
    if now is not None:
        return start is None or now == start
    if os.path.isdir("/proc"):
        return False
    try:  # no /proc: trust the pid
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
