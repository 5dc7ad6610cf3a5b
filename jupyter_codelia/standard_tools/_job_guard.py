"""The guard of one background shell job: a small process that outlives the kernel.

The kernel runs this file with ``python -I -S`` (the standard library only, nothing of the
package is imported) for every shell job. The guard makes itself a child subreaper
(``PR_SET_CHILD_SUBREAPER``) and starts the job's command in a session of its own, so every
process of the job stays its descendant, even one that calls ``setsid`` or forks twice. It ends
that whole tree (SIGTERM, a grace period, then SIGKILL until no process is left) when

* the kernel asks: a line ``stop`` on the guard's stdin (``job_stop``, a card's Stop button,
  ``%codelia jobs stop``, the kernel's own exit);
* the kernel is gone: the kernel's end of the guard's stdin closed, or the guard's parent is no
  longer the kernel, whichever is noticed first; that covers a kernel killed with SIGKILL, one
  that crashed and a restart;
* the guard itself gets SIGTERM or SIGHUP.

The command's own process also gets ``PR_SET_PDEATHSIG``, so it dies with a guard killed by
SIGKILL. The guard lives in a session of its own too, so signals to the kernel's process group
(an interrupt, the SIGKILL of a forced restart) do not reach it.

With ``--track`` the same file is the kernel's :class:`Tracker` instead: it ends the processes
python jobs started themselves once the kernel is gone.

Status lines go to the kernel on the pipe named by the first argument: ``started PID``, then
``exit CODE`` or ``signal N`` when the command's own process ends, ``killed N`` when N processes
needed SIGKILL, and ``done`` when the last process of the job is gone. When the kernel is gone
the guard also marks the job's record file (written by the kernel) as stopped, so the next
kernel can say what was stopped. The job's stdout and stderr are the pipes the guard was given;
the guard writes there only when it cannot start the command.

    python -I -S _job_guard.py STATUS_FD KERNEL_PID RECORD_PATH|- GRACE_SECONDS -- ARGV...
    python -I -S _job_guard.py --track KERNEL_PID GRACE_SECONDS
"""

from __future__ import annotations

import ctypes
import json
import os
import select
import signal
import sys
import time
from typing import TextIO

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
STOP_COMMAND = b"stop\n"
#: How long the guard waits between checks that its kernel is still there.
_PARENT_CHECK_SECONDS = 0.5
#: SIGKILL rounds before giving up on a process that does not die (uninterruptible sleep).
_KILL_ROUNDS = 200
_FORWARDED = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)
_INHERITED_IGNORES = ("SIGPIPE", "SIGXFSZ")


def _prctl(option: int, value: int) -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(option, value, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False  # not Linux: the process group is all the guard can reach


class Guard:
    """The loop of one guard: start, watch, reap, and end the tree when it must."""

    def __init__(self, status: TextIO, kernel_pid: int, record: str | None, grace: float) -> None:
        self.status = status
        self.kernel_pid = kernel_pid
        self.record = record
        self.grace = grace
        self.child = 0
        self.kernel_gone = False
        self.stop_asked = False
        self.stopped = False
        self.wake_r, wake_w = os.pipe()
        for fd in (self.wake_r, wake_w):
            os.set_blocking(fd, False)
        signal.set_wakeup_fd(wake_w)
        self._wake_w = wake_w
        signal.signal(signal.SIGCHLD, self._on_signal)
        for number in _FORWARDED:
            signal.signal(number, self._on_signal)

    def _on_signal(self, number: int, _frame: object) -> None:
        if number != signal.SIGCHLD:
            self.stop_asked = True

    def say(self, line: str) -> None:
        try:
            self.status.write(line + "\n")
            self.status.flush()
        except OSError:
            pass  # the kernel is gone; nobody is listening any more

    # --- starting ----------------------------------------------------------------------

    def start(self, argv: list[str]) -> None:
        guard_pid = os.getpid()
        pid = os.fork()
        if pid == 0:
            self._exec(argv, guard_pid)
        self.child = pid
        # The guard keeps no end of the job's pipes: the kernel's readers see their end when
        # the job's last process closes them.
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 1)
        os.dup2(null, 2)
        os.close(null)
        self.say(f"started {pid}")

    def _exec(self, argv: list[str], guard_pid: int) -> None:
        try:
            os.setsid()
            _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
            if os.getppid() != guard_pid:
                os._exit(137)  # the guard died before the line above took effect
            signal.set_wakeup_fd(-1)
            for number in (signal.SIGCHLD, *_FORWARDED):
                signal.signal(number, signal.SIG_DFL)
            for name in _INHERITED_IGNORES:  # Python ignores these; a command must not
                if hasattr(signal, name):
                    signal.signal(getattr(signal, name), signal.SIG_DFL)
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0)
            os.closerange(3, 65536)
            os.execvp(argv[0], argv)
        except BaseException as exc:  # the child must never return into the guard's loop
            try:
                os.write(2, f"codelia job guard: cannot run {argv[0]}: {exc}\n".encode())
            finally:
                os._exit(127)

    # --- watching ----------------------------------------------------------------------

    def run(self) -> None:
        while not self._reap():
            if self.stop_asked or self.kernel_gone:
                self.terminate()
                break
            self._wait(_PARENT_CHECK_SECONDS)
        self.finish()

    def _wait(self, timeout: float) -> None:
        """Sleep until a signal, a line on stdin or ``timeout``; note what happened."""
        watched = [self.wake_r] if self.kernel_gone else [self.wake_r, 0]
        try:
            readable, _w, _x = select.select(watched, [], [], max(0.0, timeout))
        except InterruptedError:
            readable = []
        if self.wake_r in readable:
            try:
                while os.read(self.wake_r, 512):
                    pass
            except BlockingIOError:
                pass
        if 0 in readable:
            data = os.read(0, 4096)
            if not data:
                self.kernel_gone = True
            elif STOP_COMMAND.strip() in data:
                self.stop_asked = True
        if os.getppid() != self.kernel_pid:
            self.kernel_gone = True

    def _reap(self) -> bool:
        """Collect ended children; True once the guard has none left (the job is over)."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return True
            if pid == 0:
                return False
            if pid == self.child:
                if os.WIFSIGNALED(status):
                    self.say(f"signal {os.WTERMSIG(status)}")
                else:
                    self.say(f"exit {os.waitstatus_to_exitcode(status)}")

    # --- ending ------------------------------------------------------------------------

    def terminate(self) -> None:
        """End every process of the job: SIGTERM, up to ``grace`` seconds, then SIGKILL."""
        self.stopped = True
        self._signal_all(signal.SIGTERM)
        deadline = time.monotonic() + self.grace
        while time.monotonic() < deadline:
            if self._reap():
                return
            self._wait(min(0.1, deadline - time.monotonic()))
        killed: set[int] = set()
        for _round in range(_KILL_ROUNDS):
            killed |= self._signal_all(signal.SIGKILL)
            if self._reap():
                break
            self._wait(0.05)
        self.say(f"killed {len(killed)}")

    def _signal_all(self, number: int) -> set[int]:
        """Send ``number`` to every live process of the job; the pids it reached."""
        reached: set[int] = set()
        found = _descendants(os.getpid())  # before the group's signal makes them zombies
        try:
            os.killpg(self.child, number)
        except OSError:
            pass  # the command's own group is gone already
        for pid in found:
            try:
                os.kill(pid, number)
                reached.add(pid)
            except OSError:
                continue
        return reached

    def finish(self) -> None:
        if self.kernel_gone and self.record is not None:
            _mark_stopped(self.record, stopped=self.stopped)
        self.say("done")


def process_start(pid: int) -> str | None:
    """When ``pid`` started (clock ticks since boot, from /proc): with the pid, a process's
    identity, since pids are reused. None without /proc or once the process is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    if len(fields) < 20 or fields[0] in (b"Z", b"X"):
        return None  # a zombie has ended already
    return fields[19].decode()


def end_trees(roots: dict[int, str], grace: float) -> int:
    """End processes that are not our children, and everything below them: SIGTERM, up to
    ``grace`` seconds, then SIGKILL. ``roots`` maps each pid to its :func:`process_start`, so
    a reused pid is left alone. Returns how many processes needed SIGKILL."""
    targets = _trees(roots)
    for pid in targets:
        _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and _alive(targets):
        time.sleep(0.05)
    killed: set[int] = set()
    for _round in range(_KILL_ROUNDS):
        left = _alive({**targets, **_trees(_alive(roots))})
        if not left:
            break
        for pid in left:
            _signal(pid, signal.SIGKILL)
        killed |= set(left)
        time.sleep(0.02)
    return len(killed)


def _trees(roots: dict[int, str]) -> dict[int, str]:
    """The live ones of ``roots`` and every live process below them, each with its start."""
    found: dict[int, str] = {}
    for pid in _alive(roots):
        for member in (pid, *_descendants(pid)):
            start = process_start(member)
            if start is not None:
                found[member] = start
    return found


def _alive(processes: dict[int, str]) -> dict[int, str]:
    return {pid: start for pid, start in processes.items() if process_start(pid) == start}


def _signal(pid: int, number: int) -> None:
    try:
        os.kill(pid, number)
    except OSError:
        pass  # it ended meanwhile


class Tracker:
    """The kernel's watch over processes that python jobs start themselves (``--track``).

    Those are the kernel's own children, not a guard's, so no subreaper keeps them; the kernel
    tells the tracker about each one it sees (``track PID START`` on stdin), and when the kernel
    is gone the tracker ends each of them that still runs and the processes below them.
    """

    def __init__(self, kernel_pid: int, grace: float) -> None:
        self.kernel_pid = kernel_pid
        self.grace = grace
        self.tracked: dict[int, str] = {}

    def run(self) -> None:
        buffered = b""
        while os.getppid() == self.kernel_pid:
            readable, _w, _x = select.select([0], [], [], _PARENT_CHECK_SECONDS)
            if not readable:
                continue
            data = os.read(0, 4096)
            if not data:
                break  # the kernel's end closed: it is gone
            *lines, buffered = (buffered + data).split(b"\n")
            for line in lines:
                self._note(line.decode("utf-8", "replace").split())
        end_trees(self.tracked, self.grace)

    def _note(self, words: list[str]) -> None:
        if len(words) == 3 and words[0] == "track" and words[1].isdigit():
            self.tracked[int(words[1])] = words[2]


def _descendants(root: int) -> list[int]:
    """Every live (not zombie) process below ``root``, from /proc (empty where there is none)."""
    children: dict[int, list[int]] = {}
    zombies: set[int] = set()
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                data = handle.read()
        except OSError:
            continue  # it ended while the list was read
        fields = data[data.rfind(b")") + 2 :].split()
        if len(fields) < 2:
            continue
        pid = int(name)
        children.setdefault(int(fields[1]), []).append(pid)
        if fields[0] in (b"Z", b"X"):
            zombies.add(pid)
    found: list[int] = []
    stack = list(children.get(root, []))
    while stack:
        pid = stack.pop()
        if pid not in zombies:
            found.append(pid)
        stack.extend(children.get(pid, []))
    return found


def _mark_stopped(path: str, *, stopped: bool) -> None:
    """Rewrite the job's record: it ended because the kernel did (the kernel cannot say so)."""
    try:
        with open(path, encoding="utf-8") as handle:
            record = json.load(handle)
    except (OSError, ValueError):
        return
    if not isinstance(record, dict):
        return
    record["state"] = "stopped" if stopped else "ended"
    record["ended_at"] = time.time()
    temporary = f"{path}.{os.getpid()}.tmp"
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(record, handle)
        os.replace(temporary, path)
    except OSError:
        return


def main(argv: list[str]) -> int:
    if len(argv) == 4 and argv[1] == "--track":
        Tracker(int(argv[2]), float(argv[3])).run()
        return 0
    if len(argv) < 7 or argv[5] != "--":
        sys.stderr.write(__doc__.rsplit("\n\n", 1)[-1] if __doc__ else "bad arguments\n")
        return 2
    status = os.fdopen(int(argv[1]), "w", encoding="utf-8")
    record = None if argv[3] == "-" else argv[3]
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    guard = Guard(status, int(argv[2]), record, float(argv[4]))
    if os.getppid() != guard.kernel_pid:
        guard.kernel_gone = True  # the kernel died while this process started
    guard.start(argv[6:])
    guard.run()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
