"""Background shell jobs: a command under its guard, with reader threads filling its output.

The command does not run as the kernel's child but as the child of a guard process
(``_job_guard.py``, started here with ``python -I -S``), which keeps every process of the job in
its tree and ends that tree when asked or when the kernel is gone, however the kernel ended.
The kernel reads the job's stdout and stderr from pipes and the guard's status lines from a
third pipe; stopping writes ``stop`` to the guard's stdin.

A job lasts as long as any of its processes: when the command's own process exits while
processes it started still run (``server &``), the job keeps running and says so in its note.
"""

from __future__ import annotations

import codecs
import os
import select
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, TYPE_CHECKING

from ..tools import ToolError
from ._job_guard import STOP_COMMAND, process_start

if TYPE_CHECKING:
    from .jobs import Job, JobRegistry

GUARD_SCRIPT = Path(__file__).with_name("_job_guard.py")
_READ_CHUNK = 64 * 1024
# The guard reports "done" right after "exit" unless processes of the job still run.
_LEFTOVER_SECONDS = 0.5
_READER_JOIN_SECONDS = 2.0


class _Guarded:
    """The kernel's handle on one guard: its process, and the pid of the command once known."""

    def __init__(self) -> None:
        self.guard: subprocess.Popen[bytes] | None = None
        self.command_pid: int | None = None
        self._lock = threading.Lock()

    def stop(self) -> None:
        """Ask the guard to end the job's tree (SIGTERM, grace, SIGKILL)."""
        with self._lock:
            guard = self.guard
        if guard is None or guard.stdin is None:
            return
        try:
            guard.stdin.write(STOP_COMMAND)
            guard.stdin.flush()
        except (OSError, ValueError):
            # The guard is gone (killed from outside): reach what is left of the command's group.
            if self.command_pid is not None:
                try:
                    os.killpg(self.command_pid, signal.SIGKILL)
                except OSError:
                    pass


def guard_python() -> str:
    """The interpreter that runs guards: this one, or a ``python3`` on PATH."""
    for candidate in (sys.executable, shutil.which("python3")):
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    raise ToolError(
        "Background shell jobs need a Python interpreter to guard them and none was found "
        "(sys.executable is empty and there is no python3 on PATH)."
    )


def start_guarded(
    registry: JobRegistry, command: str, cwd: str, env: dict[str, str], shell: str, *, grace: float
) -> Job:
    """Start ``command`` under a new guard; reader threads fill the job's output."""
    python = guard_python()
    handle = _Guarded()
    job = registry.create("shell", command, handle.stop, announce=False)
    record = registry.record_path(job)
    status_read, status_write = os.pipe()
    try:
        guard = subprocess.Popen(
            [
                python,
                "-I",
                "-S",
                str(GUARD_SCRIPT),
                str(status_write),
                str(os.getpid()),
                str(record) if record is not None else "-",
                str(grace),
                "--",
                shell,
                "-c",
                command,
            ],
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            pass_fds=(status_write,),
            # Its own session: the kernel's interrupt and a forced restart's SIGKILL go to the
            # kernel's process group, and must not take the guard along.
            start_new_session=True,
        )
    except OSError as exc:
        os.close(status_read)
        registry.discard(job.job_id)
        raise ToolError(f"Could not start {shell} under its guard ({python}): {exc}") from exc
    finally:
        os.close(status_write)
    with handle._lock:
        handle.guard = guard
    registry.update_record(job, guard_pid=guard.pid, guard_start=process_start(guard.pid))
    readers = [
        threading.Thread(target=_read, args=(guard.stdout, job, "stdout"), daemon=True),
        threading.Thread(target=_read, args=(guard.stderr, job, "stderr"), daemon=True),
    ]
    for reader in readers:
        reader.start()
    threading.Thread(
        target=_watch,
        args=(status_read, guard, handle, job, readers),
        daemon=True,
        name=f"codelia-{job.job_id}",
    ).start()
    registry.announce(job)
    return job


def _read(stream: IO[bytes] | None, job: Job, name: str) -> None:
    if stream is None:
        return
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    fd = stream.fileno()
    while True:
        chunk = os.read(fd, _READ_CHUNK)
        if not chunk:
            break
        job.write(decoder.decode(chunk), name)
    job.write(decoder.decode(b"", final=True), name)
    stream.close()


class _Status:
    """What the guard reported about the command and the tree."""

    def __init__(self) -> None:
        self.exit_code: int | None = None
        self.signal_number: int | None = None
        self.killed = 0
        self.done = False


def _watch(
    status_fd: int,
    guard: subprocess.Popen[bytes],
    handle: _Guarded,
    job: Job,
    readers: list[threading.Thread],
) -> None:
    status = _Status()
    buffered = b""
    with os.fdopen(status_fd, "rb", buffering=0) as pipe:
        while not status.done:
            waiting = status.exit_code is not None or status.signal_number is not None
            readable, _w, _x = select.select([pipe], [], [], _LEFTOVER_SECONDS if waiting else None)
            if not readable:
                job.note = (
                    f"its command exited ({_ending(status)}); processes it started are still "
                    "running, and the job lasts until they end (job_stop ends them)"
                )
                continue
            data = pipe.read(4096)
            if not data:
                break  # the guard is gone without saying done
            buffered += data
            *lines, buffered = buffered.split(b"\n")
            for line in lines:
                _note_status(line.decode("utf-8", "replace"), status, handle)
    guard.wait()
    for reader in readers:
        # A process outside the tree (handed the pipe by the job) may keep it open.
        reader.join(_READER_JOIN_SECONDS)
    if not status.done:
        job.finish(
            "failed", f"its guard process ended unexpectedly ({_code_text(guard.returncode)})"
        )
    elif job.stop_requested:
        killed = f", then SIGKILL for {status.killed} process(es)" if status.killed else ""
        job.finish("stopped", f"{_ending(status)}{killed}")
    elif status.exit_code == 0:
        job.finish("completed", "exit code 0")
    else:
        job.finish("failed", _ending(status))


def _note_status(line: str, status: _Status, handle: _Guarded) -> None:
    word, _space, value = line.partition(" ")
    if word == "started" and value.isdigit():
        handle.command_pid = int(value)
    elif word == "exit":
        status.exit_code = int(value)
    elif word == "signal":
        status.signal_number = int(value)
    elif word == "killed":
        status.killed = int(value)
    elif word == "done":
        status.done = True


def _ending(status: _Status) -> str:
    if status.signal_number is not None:
        return f"terminated by {_signal_name(status.signal_number)}"
    if status.exit_code is not None:
        return f"exit code {status.exit_code}"
    return "no exit status"


def _code_text(code: int | None) -> str:
    if code is None:
        return "still running"
    return f"terminated by {_signal_name(-code)}" if code < 0 else f"exit code {code}"


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
