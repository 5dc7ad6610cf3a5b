"""The ``shell`` tool: run one command in the sandbox's working directory.

Owns the foreground part of the shell family: the command runs as ``$SHELL -c`` in a process group
of its own, with a timeout and cancellation (the run's CancelSignal or task cancellation) that stop
the whole group, so no child outlives the call. Output is streamed: secrets are masked, the full
streams go to the output cache through ``store.writer(...)`` and only a bounded inline copy (the
whole stream, or an 80-line head and tail excerpt) is kept in memory and returned to the model.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import re
import secrets
import shutil
import signal
import sys
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from .._redact import StreamRedactor, redact_secrets, register_secret
from .._text import js_round, split_lines, utf8_len
from ..cache.protocol import OutputWriter, ToolOutputStore
from ..tools import (
    FunctionTool,
    ToolContext,
    ToolError,
    ToolResultData,
    ToolReturn,
    ToolRisk,
    define_tool,
)
from ._cancel import run_cancellable
from .jobs import JobRegistry, start_shell_job

DEFAULT_TIMEOUT_S = 120
MAX_TIMEOUT_S = 300
INLINE_MAX_LINES = 160
INLINE_MAX_BYTES = 64 * 1024
EXCERPT_LINES = 80
EXCERPT_SECTION_BYTES = 16 * 1024  # cap per head / tail section, whatever the line lengths
LINE_CAP_CHARS = 2000  # longer lines are clipped in the excerpt (never in the cache)
TERMINATE_GRACE_S = 2.0
DRAIN_AFTER_EXIT_S = 2.0
REAP_WAIT_S = 10.0
# SIGKILL rounds, 10 ms apart, for a group whose members keep appearing (reaped zombies go).
_SWEEP_ROUNDS = 50
_READ_CHUNK = 64 * 1024
# Trailing blank lines are trimmed away, so keep a few more tail lines than are shown.
_TRIM_SLACK = 64
# The inline copy is dropped a little past the inline limit: trailing blanks are trimmed later.
_INLINE_SLACK_BYTES = 4096
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD", re.IGNORECASE)


class ShellInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    command: str = Field(min_length=1, description="The command line, run with $SHELL -c.")
    label: str | None = Field(
        default=None, max_length=80, description="A short title for the UI (at most 80 chars)."
    )
    timeout: int | None = Field(
        default=None,
        ge=1,
        le=MAX_TIMEOUT_S,
        description=f"Seconds before the command is stopped (default {DEFAULT_TIMEOUT_S}, "
        f"max {MAX_TIMEOUT_S}).",
    )
    include_stderr_on_success: bool = Field(
        default=False, description="Also return stderr when the command succeeds."
    )
    background: bool = Field(
        default=False,
        description="Start the command as a background job (its own process group, no timeout) "
        "and return its job id at once; watch it with job_output / job_wait / job_stop.",
    )


# --- streaming pieces -------------------------------------------------------------------------


def _clip(line: str, extra: int = 0) -> str:
    if len(line) > LINE_CAP_CHARS:
        extra += len(line) - LINE_CAP_CHARS
        line = line[:LINE_CAP_CHARS]
    return f"{line} … [+{extra} chars]" if extra else line


@dataclass
class _StreamCapture:
    """One output stream: the cache writer, plus the bounded copy kept for the model.

    Holds the exact text only while it may still fit inline; beyond that only the first
    ``EXCERPT_LINES`` lines, a window of the last lines and counters, so a 50 MB stream costs a
    few hundred KB of memory.
    """

    name: str
    writer: OutputWriter | None
    total_bytes: int = 0
    lines_done: int = 0
    head: list[str] = field(default_factory=list)
    tail: deque[tuple[int, str]] = field(
        default_factory=lambda: deque(maxlen=EXCERPT_LINES + _TRIM_SLACK)
    )
    inline: list[str] | None = field(default_factory=list)
    _inline_bytes: int = 0
    _inline_newlines: int = 0
    _partial: list[str] = field(default_factory=list)
    _partial_len: int = 0
    _partial_extra: int = 0
    # The newest tail window as raw text, split into lines only when needed: on a big stream
    # every chunk replaces it, so splitting each one would be wasted work.
    _tail_raw: str | None = None
    _tail_raw_first: int = 0

    def feed(self, text: str) -> None:
        if not text:
            return
        if self.writer is not None:
            self.writer.write(text)
        if self.inline is not None:
            self.inline.append(text)
            self._inline_bytes += utf8_len(text)
            self._inline_newlines += text.count("\n")
            if (
                self._inline_bytes > INLINE_MAX_BYTES + _INLINE_SLACK_BYTES
                or self._inline_newlines > INLINE_MAX_LINES + _TRIM_SLACK
            ):
                self.inline = None
        self._take_lines(text)

    def _take_lines(self, text: str) -> None:
        newlines = text.count("\n")
        if newlines == 0:
            self._extend_partial(text)
            return
        first, rest = text.split("\n", 1)
        self._extend_partial(first)
        self._finish_partial()
        inner = newlines - 1  # complete lines inside ``rest``; its last piece is unfinished
        head_need = max(0, EXCERPT_LINES - len(self.head))
        window = self.tail.maxlen or 0
        if inner <= head_need + window:
            pieces = rest.split("\n")
            for line in pieces[:-1]:
                self._add_line(line)
            self._extend_partial(pieces[-1])
            return
        # Only the first lines (for the head) and the last ones (for the tail) matter: skip the
        # middle without touching each line.
        if head_need:
            for line in rest.split("\n", head_need)[:head_need]:
                self._add_line(line)
        self.lines_done += inner - head_need - window
        last_newline = rest.rfind("\n")
        cut = last_newline
        for _ in range(window):
            cut = rest.rfind("\n", 0, cut)
        self.tail.clear()
        self._tail_raw = rest[cut + 1 : last_newline]
        self._tail_raw_first = self.lines_done
        self.lines_done += window
        self._extend_partial(rest[last_newline + 1 :])

    def _materialize_tail(self) -> None:
        if self._tail_raw is None:
            return
        raw, self._tail_raw = self._tail_raw, None
        for offset, line in enumerate(raw.split("\n")):
            self.tail.append((self._tail_raw_first + offset, _clip(line)))

    def _extend_partial(self, piece: str) -> None:
        room = LINE_CAP_CHARS - self._partial_len
        if room > 0:
            kept = piece[:room]
            self._partial.append(kept)
            self._partial_len += len(kept)
            self._partial_extra += len(piece) - len(kept)
        else:
            self._partial_extra += len(piece)

    def _finish_partial(self) -> None:
        self._add_line("".join(self._partial), self._partial_extra)
        self._partial, self._partial_len, self._partial_extra = [], 0, 0

    def _add_line(self, line: str, extra: int = 0) -> None:
        self._materialize_tail()
        clipped = _clip(line, extra)
        if len(self.head) < EXCERPT_LINES:
            self.head.append(clipped)
        else:
            self.tail.append((self.lines_done, clipped))
        self.lines_done += 1

    def finish(self) -> None:
        if self._partial_len or self._partial_extra:
            self._finish_partial()
        self._materialize_tail()

    def inline_text(self) -> str | None:
        """The whole stream trimmed at the end, when it is within the inline limits."""
        if self.inline is None:
            return None
        text = "".join(self.inline).rstrip()
        if utf8_len(text) <= INLINE_MAX_BYTES and len(split_lines(text)) <= INLINE_MAX_LINES:
            return text
        return None

    def excerpt(self, ref_id: str | None) -> str:
        """The first and last lines with a marker saying what was left out and where it is."""
        head = list(self.head)
        tail = [line for _index, line in self.tail]
        total = self.lines_done
        # Trim the end like str.rstrip() would: drop blank lines, then trailing spaces.
        for section in (tail, head):
            while section and not section[-1].strip():
                section.pop()
                total -= 1
            if section:
                section[-1] = section[-1].rstrip()
                break
        head_shown = _fit(head, from_end=False)
        tail_shown = _fit(tail[-EXCERPT_LINES:], from_end=True)
        omitted = total - len(head_shown) - len(tail_shown)
        size = f"{total:,} lines, {self.total_bytes:,} bytes in all"
        if ref_id is not None:
            where = (
                f"the full {self.name} is in the output cache: "
                f'tool_output_cache({{"ref_id":"{ref_id}"}}) reads it, '
                "tool_output_cache_grep searches it"
            )
        else:
            where = f"the full {self.name} was not kept (no output cache configured)"
        marker = f"[... {omitted:,} lines omitted ({size}); {where} ...]"
        return "\n".join([*head_shown, marker, *tail_shown])


def _fit(lines: list[str], *, from_end: bool) -> list[str]:
    """As many of ``lines`` (from the start, or from the end) as fit the section byte cap."""
    kept: list[str] = []
    used = 0
    for line in reversed(lines) if from_end else lines:
        size = utf8_len(line) + 1
        if kept and used + size > EXCERPT_SECTION_BYTES:
            break
        kept.append(line)
        used += size
    return kept[::-1] if from_end else kept


async def _pump(
    stream: asyncio.StreamReader | None, capture: _StreamCapture, redactor: StreamRedactor
) -> None:
    if stream is None:
        return
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    while True:
        chunk = await stream.read(_READ_CHUNK)
        if not chunk:
            break
        capture.total_bytes += len(chunk)
        capture.feed(redactor.feed(decoder.decode(chunk)))
    capture.feed(redactor.feed(decoder.decode(b"", final=True)))
    capture.feed(redactor.flush())


# --- process group handling ----------------------------------------------------------------


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass  # the whole group is already gone


async def _exited(process: asyncio.subprocess.Process, within_s: float) -> bool:
    """Whether the shell itself has exited within ``within_s`` seconds.

    ``Process.wait()`` also waits for the pipes to close (Python 3.11), which a background job
    holding stdout can delay forever, so the exit status is polled instead.
    """
    deadline = time.monotonic() + within_s
    delay = 0.002
    while process.returncode is None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        await asyncio.sleep(min(delay, remaining))
        delay = min(delay * 2, 0.05)
    return True


async def _sweep_group(pgid: int) -> None:
    """SIGKILL the group again until it is empty: a process forked while the first SIGKILL
    went out can miss it (a shell starting its next background child under load)."""
    for _round in range(_SWEEP_ROUNDS):
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            return  # nothing of the group is left
        await asyncio.sleep(0.01)


async def _stop_group(process: asyncio.subprocess.Process) -> None:
    """Stop every process of the command's group: SIGTERM, a grace period, then SIGKILL."""
    _signal_group(process.pid, signal.SIGTERM)
    await _exited(process, TERMINATE_GRACE_S)
    _signal_group(process.pid, signal.SIGKILL)
    await _exited(process, REAP_WAIT_S)
    await _sweep_group(process.pid)


def _default_shell(env: dict[str, str]) -> str:
    for candidate in (env.get("SHELL"), shutil.which("bash"), "/bin/sh"):
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    raise ToolError("No shell found: set SHELL to an executable shell such as /bin/bash.")


def _retrieved(future: asyncio.Future[Any]) -> None:
    """Mark the outcome of cancelled pumps as seen (what they read is not wanted)."""
    if not future.cancelled():
        future.exception()


async def _start(
    shell: str, command: str, cwd: Path, env: dict[str, str]
) -> asyncio.subprocess.Process:
    """Start ``shell -c command`` in a process group of its own.

    A cancellation while it starts does not interrupt the start: asyncio would then kill the
    shell alone and wait for its pipes, which children it already forked keep open (a hang,
    and the children left running). The start finishes, the whole group is stopped, and the
    cancellation goes on.
    """
    starting = asyncio.ensure_future(
        asyncio.create_subprocess_exec(
            shell,
            "-c",
            command,
            cwd=str(cwd),
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,  # its own process group, so one signal reaches every child
        )
    )
    try:
        return await asyncio.shield(starting)
    except asyncio.CancelledError:
        while not starting.done():
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait([starting])
        if starting.exception() is not None:
            raise  # nothing started
        process = starting.result()
        _signal_group(process.pid, signal.SIGKILL)
        await asyncio.shield(_exited(process, REAP_WAIT_S))
        await asyncio.shield(_sweep_group(process.pid))
        raise
    except OSError as exc:
        raise ToolError(f"Could not start {shell}: {exc}") from exc


@dataclass
class _Outcome:
    exit_code: int | None
    timed_out: bool
    duration_ms: int


async def _run(
    command: str,
    cwd: Path,
    env: dict[str, str],
    timeout_s: int,
    stdout: _StreamCapture,
    stderr: _StreamCapture,
) -> _Outcome:
    shell = _default_shell(env)
    started = time.monotonic()
    process = await _start(shell, command, cwd, env)
    pumps = asyncio.gather(
        _pump(process.stdout, stdout, StreamRedactor()),
        _pump(process.stderr, stderr, StreamRedactor()),
    )
    timed_out = False
    try:
        if not await _exited(process, timeout_s):
            timed_out = True
            await _stop_group(process)
    except BaseException:
        # Cancelled (signal or task): kill at once, synchronously, so nothing survives even if
        # this cleanup is interrupted again; then reap the shell.
        _signal_group(process.pid, signal.SIGKILL)
        pumps.cancel()
        pumps.add_done_callback(_retrieved)
        await asyncio.shield(_exited(process, REAP_WAIT_S))
        await asyncio.shield(_sweep_group(process.pid))
        raise
    # Background jobs of the command would keep the pipes open: end the rest of the group.
    await _sweep_group(process.pid)
    try:
        await asyncio.wait_for(pumps, DRAIN_AFTER_EXIT_S)
    except asyncio.TimeoutError:
        pass  # a process that left the group still holds a pipe; keep what was read
    stdout.finish()
    stderr.finish()
    return _Outcome(
        exit_code=process.returncode,
        timed_out=timed_out,
        duration_ms=js_round((time.monotonic() - started) * 1000),
    )


def _failure_message(outcome: _Outcome, timeout_s: int) -> str | None:
    if outcome.timed_out:
        return f"timed out after {timeout_s}s; the command's process group was stopped"
    code = outcome.exit_code
    if code is None or code == 0:
        return None
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"terminated by {name}"
    return f"exited with code {code}"


def _register_env_secrets(env: dict[str, str]) -> None:
    """Values of secret-named variables in a custom env are masked like os.environ's."""
    for name, value in env.items():
        if _SECRET_NAME.search(name):
            register_secret(value)


def shell_tool(
    cwd: Path,
    store: ToolOutputStore | None = None,
    env: dict[str, str] | None = None,
    jobs: JobRegistry | None = None,
) -> FunctionTool:
    """The ``shell`` tool, running commands in ``cwd``.

    ``store`` receives the full stdout/stderr of long outputs (ref ids ``<tool_call_id>_stdout``
    and ``_stderr``); without it only the excerpt survives. ``env`` replaces the process
    environment for the commands (default: the current ``os.environ`` at each call). With
    ``jobs``, ``background: true`` starts the command as a job in that registry.
    """
    work_dir = Path(cwd)
    fixed_env = dict(env) if env is not None else None
    if fixed_env is not None:
        _register_env_secrets(fixed_env)

    async def shell(params: ShellInput, ctx: ToolContext) -> dict[str, Any] | ToolReturn:
        ctx.check_cancelled()
        if sys.platform == "win32":
            raise ToolError("The shell tool needs a POSIX system (process groups, $SHELL -c).")
        if not os.path.isdir(work_dir):  # noqa: ASYNC240 - one stat, cheaper than a thread hop
            raise ToolError(f"Working directory does not exist: {work_dir}")
        run_env = dict(fixed_env if fixed_env is not None else os.environ)
        run_env.setdefault("PAGER", "cat")
        run_env.setdefault("GIT_PAGER", "cat")
        if params.background:
            if jobs is None:
                raise ToolError(
                    "Background shell jobs are not available here (no job registry); run the "
                    "command in the foreground with a timeout instead."
                )
            job = start_shell_job(
                jobs, params.command, str(work_dir), run_env, _default_shell(run_env)
            )
            started = {
                "state": "background",
                "job_id": job.job_id,
                "command": job.title,
                "message": f"Started background job {job.job_id}; read it with job_output, "
                "wait with job_wait, stop with job_stop.",
            }
            return ToolReturn(started, ToolResultData(job_id=job.job_id))
        timeout_s = params.timeout or DEFAULT_TIMEOUT_S
        call_id = ctx.tool_call_id or f"shell_{secrets.token_hex(4)}"
        captures: dict[str, _StreamCapture] = {}
        try:
            for name in ("stdout", "stderr"):
                writer = (
                    store.writer(tool_call_id=f"{call_id}_{name}", tool_name="shell")
                    if store is not None
                    else None
                )
                captures[name] = _StreamCapture(name=name, writer=writer)
            outcome = await run_cancellable(
                _run(
                    params.command,
                    work_dir,
                    run_env,
                    timeout_s,
                    captures["stdout"],
                    captures["stderr"],
                ),
                ctx.signal,
            )
        except BaseException:
            for capture in captures.values():
                if capture.writer is not None:
                    capture.writer.abort()
            raise
        failure = _failure_message(outcome, timeout_s)
        state = "timed_out" if outcome.timed_out else ("failed" if failure else "completed")
        result: dict[str, Any] = {
            "state": state,
            "command": redact_secrets(params.command),
            "exit_code": outcome.exit_code,
            "duration_ms": outcome.duration_ms,
        }
        if failure:
            result["failure_message"] = failure
        streams = ["stdout"]
        if failure or params.include_stderr_on_success:
            streams.append("stderr")
        for name, capture in captures.items():
            text = capture.inline_text()
            ref_id: str | None = None
            if capture.writer is not None:
                # Keep a cache entry only where the model gets an excerpt pointing at it.
                if text is None and name in streams:
                    ref_id = capture.writer.close().id
                else:
                    capture.writer.abort()
            if name not in streams:
                continue
            result[name] = text if text is not None else capture.excerpt(ref_id)
            if ref_id is not None:
                result[f"{name}_cache_id"] = ref_id
                dropped = getattr(capture.writer, "dropped_bytes", 0)
                if dropped:
                    result[f"{name}_cache_note"] = (
                        f"the cached {name} passed the cache's per-entry size limit: "
                        f"{dropped} bytes in the middle were dropped; its head and tail are kept"
                    )
        return result

    return define_tool(
        name="shell",
        description=(
            f"Run a shell command ($SHELL -c) in {work_dir} and wait for it (timeout default "
            f"{DEFAULT_TIMEOUT_S}s, max {MAX_TIMEOUT_S}s; stdin is closed). Returns JSON with "
            "state, exit_code, duration_ms, stdout (and stderr on failure). Long output is cut "
            "to its first and last 80 lines; the full stream stays in the output cache "
            "(stdout_cache_id / stderr_cache_id). Processes a command leaves behind are stopped "
            "when it ends; for long work (servers, training) pass background: true"
            + (" to get a job id at once." if jobs is not None else " (unavailable here).")
            + " Secrets from the environment are masked."
        ),
        input=ShellInput,
        execute=shell,
        risk=ToolRisk(kind="run_code", command_arg="command"),
    )
