"""Processes that python jobs start themselves: ended with the job, and with the kernel.

A python job runs on a kernel thread, so a process it starts (``subprocess.Popen``,
``os.system``, a ``multiprocessing`` worker) is the kernel's own child, not a guarded shell job.
While a python job runs, its starter looks at the children of the job's threads
(``/proc/self/task/<tid>/children``, :func:`thread_children`) and reports each new one here;
the kernel's one :class:`ProcessTracker` (``_job_guard.py --track``, started on first use, in a
session of its own) ends them and the processes below them when the kernel is gone, however it
went. Stopping the job ends them at once (:func:`end_trees`).
"""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Iterable

from ._job_guard import end_trees, process_start
from ._shell_job import GUARD_SCRIPT, guard_python

__all__ = ["ProcessTracker", "end_trees", "process_tracker", "thread_children"]


class ProcessTracker:
    """The kernel's end of its tracker process: a ``track PID START`` line on its stdin for each
    process to end with the kernel (one that ended already is skipped then: its start differs
    or it is gone)."""

    def __init__(self, grace: float) -> None:
        self.grace = grace
        self._process: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()

    def track(self, pid: int, start: str) -> None:
        """Have ``pid`` (started at ``start``) ended when the kernel is gone."""
        self._send(f"track {pid} {start}\n")

    def _send(self, line: str) -> None:
        with self._lock:
            process = self._running()
            if process is None or process.stdin is None:
                return
            try:
                process.stdin.write(line.encode())
                process.stdin.flush()
            except (OSError, ValueError):
                self._process = None  # it was killed: the next line starts a new one

    def _running(self) -> subprocess.Popen[bytes] | None:
        if self._process is not None and self._process.poll() is None:
            return self._process
        try:
            self._process = subprocess.Popen(
                [
                    guard_python(),
                    "-I",
                    "-S",
                    str(GUARD_SCRIPT),
                    "--track",
                    str(os.getpid()),
                    str(self.grace),
                ],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,  # the kernel's group may get SIGKILL: not the tracker
            )
        except OSError:
            self._process = None
        return self._process


_tracker: ProcessTracker | None = None
_tracker_lock = threading.Lock()


def process_tracker(grace: float) -> ProcessTracker:
    """This process's tracker (one per kernel)."""
    global _tracker
    with _tracker_lock:
        if _tracker is None:
            _tracker = ProcessTracker(grace)
        return _tracker


def thread_children(native_ids: Iterable[int]) -> dict[int, str]:
    """The live children these threads of this process started, each with its start time.

    Empty where /proc has no per-thread ``children`` (not Linux).
    """
    found: dict[int, str] = {}
    for native_id in native_ids:
        try:
            with open(f"/proc/self/task/{native_id}/children", encoding="ascii") as handle:
                pids = [int(word) for word in handle.read().split()]
        except (OSError, ValueError):
            continue  # the thread ended, or no such file here
        for pid in pids:
            start = process_start(pid)
            if start is not None:
                found[pid] = start
    return found
