"""Background jobs: the registry, their live output, and the ``job_*`` tools the model uses.

A job is long work (a training loop, a slow query, a server) that runs while the conversation
goes on and outlives the turn that started it. This module is the generic part: a thread-safe
:class:`JobRegistry` of :class:`Job` records, each with its output so far (interleaved stdout and
stderr, bounded in memory), the images it displayed, a stop function and a finish event. What a
job *runs* is up to its starter: ``shell`` with ``background: true`` starts a detached process
group here (:func:`start_shell_job`), and the notebook starts Python jobs on threads in the live
namespace.

The model watches jobs with ``job_list``, ``job_output`` (new output since its last read; the
agent's output cache keeps long reads and pages them), ``job_wait`` (bounded, returns early when
the job ends) and ``job_stop``. :meth:`JobRegistry.turn_notice` tells the next turn which jobs
are still running and which finished since the model last heard of them.
"""

from __future__ import annotations

import asyncio
import base64
import codecs
import itertools
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .._redact import redact_secrets
from .._text import js_round
from ..llm.messages import ImagePart, TextPart
from ..tools import FunctionTool, ToolContext, ToolError, define_tool

JobState = Literal["running", "completed", "failed", "stopped"]
JobKind = Literal["python", "shell"]

MAX_JOB_OUTPUT_CHARS = 2_000_000
"""Output a job keeps in memory; older text is dropped (and counted) beyond this."""
MAX_JOB_IMAGES = 20
MAX_WAIT_SECONDS = 600.0
DEFAULT_WAIT_SECONDS = 30.0
STOP_GRACE_SECONDS = 3.0
LAST_LINES = 5
_POLL_SECONDS = 0.05
_READ_CHUNK = 64 * 1024
# tqdm's bar: " 45%|████▌     | 45/100 [00:04<00:05, 9.8it/s]"; the numbers are what matters.
_TQDM = re.compile(r"(\d{1,3})%\|[^|\n\r]*\|\s*(\d+(?:\.\d+)?[kMG]?)/(\d+(?:\.\d+)?[kMG]?)")
_ids = itertools.count(1)


class JobNotFoundError(ToolError):
    """No job with the given id in this kernel's registry."""


@dataclass(frozen=True)
class Progress:
    """The latest tqdm-style progress line of a job's output."""

    percent: int
    done: str
    total: str


@dataclass
class JobOutput:
    """Interleaved output text of one job, bounded; thread-safe appends from any writer."""

    text: str = ""
    dropped_chars: int = 0
    images: list[bytes] = field(default_factory=list)
    dropped_images: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def end(self) -> int:
        """Characters written so far (dropped ones included): the cursor of the next write."""
        return self.dropped_chars + len(self.text)

    def write(self, text: str) -> None:
        if not text:
            return
        with self._lock:
            combined = self.text + text
            overflow = len(combined) - MAX_JOB_OUTPUT_CHARS
            if overflow > 0:
                combined = combined[overflow:]
                self.dropped_chars += overflow
            self.text = combined

    def add_image(self, png: bytes) -> None:
        with self._lock:
            self.images.append(png)
            if len(self.images) > MAX_JOB_IMAGES:
                self.images.pop(0)
                self.dropped_images += 1

    def since(self, cursor: int) -> tuple[str, int]:
        """(text written after ``cursor``, characters of it that were already dropped)."""
        with self._lock:
            lost = max(0, self.dropped_chars - cursor)
            start = max(0, cursor - self.dropped_chars)
            return self.text[start:], lost

    def images_since(self, cursor: int) -> list[bytes]:
        with self._lock:
            start = max(0, cursor - self.dropped_images)
            return list(self.images[start:])

    @property
    def image_count(self) -> int:
        return self.dropped_images + len(self.images)

    def last_lines(self, count: int = LAST_LINES) -> list[str]:
        """The last non-empty lines as a terminal would show them (``\\r`` rewrites a line)."""
        with self._lock:
            tail = self.text[-8192:]
        lines = [line.rsplit("\r", 1)[-1] if "\r" in line else line for line in _rows(tail)]
        return [line for line in lines if line.strip()][-count:]

    def progress(self) -> Progress | None:
        with self._lock:
            tail = self.text[-4096:]
        matches = list(_TQDM.finditer(tail))
        if not matches:
            return None
        last = matches[-1]
        return Progress(
            percent=min(100, int(last.group(1))), done=last.group(2), total=last.group(3)
        )


def _rows(text: str) -> list[str]:
    rows = text.split("\n")
    # A trailing "\r" bar update with no newline after it is still the visible line.
    return [row.rstrip("\r") if row.endswith("\r") else row for row in rows]


@dataclass
class Job:
    """One background job; its starter writes output and calls :meth:`finish` exactly once."""

    job_id: str
    kind: JobKind
    title: str
    stop_fn: Callable[[], None]
    started_at: float = field(default_factory=time.time)
    started_monotonic: float = field(default_factory=time.monotonic)
    state: JobState = "running"
    ended_monotonic: float | None = None
    summary: str | None = None
    output: JobOutput = field(default_factory=JobOutput)
    stop_requested: bool = False
    model_cursor: int = 0
    model_image_cursor: int = 0
    reported_end: bool = False
    done: threading.Event = field(default_factory=threading.Event)
    _listeners: list[Callable[[Job], None]] = field(default_factory=list, repr=False)

    @property
    def elapsed_seconds(self) -> float:
        end = self.ended_monotonic if self.ended_monotonic is not None else time.monotonic()
        return max(0.0, end - self.started_monotonic)

    @property
    def running(self) -> bool:
        return self.state == "running"

    def write(self, text: str) -> None:
        self.output.write(text)

    def finish(self, state: JobState, summary: str | None = None) -> None:
        """Record the end (the first call wins: a stop racing a natural end keeps one outcome)."""
        if self.done.is_set():
            return
        if self.stop_requested and state != "completed":
            state = "stopped"
        self.state = state
        self.summary = summary
        self.ended_monotonic = time.monotonic()
        self.done.set()
        for listener in list(self._listeners):
            listener(self)

    def on_finish(self, listener: Callable[[Job], None]) -> None:
        self._listeners.append(listener)
        if self.done.is_set():
            listener(self)

    def stop(self) -> None:
        """Ask the job to stop (no-op once it ended)."""
        if self.done.is_set():
            return
        self.stop_requested = True
        self.stop_fn()

    def status_line(self) -> str:
        elapsed = _seconds(self.elapsed_seconds)
        line = f"{self.job_id} [{self.kind}] {self.state} after {elapsed}: {self.title}"
        progress = self.output.progress()
        if progress is not None and self.running:
            line += f" ({progress.percent}%, {progress.done}/{progress.total})"
        return line


def _seconds(value: float) -> str:
    return f"{value:.1f} s" if value < 60 else f"{int(value // 60)} min {int(value % 60)} s"


class JobRegistry:
    """The jobs of one kernel (or one agent host); outlives agents and turns."""

    def __init__(self) -> None:
        self._jobs: dict[str, Job] = {}
        self._lock = threading.Lock()
        self._listeners: list[Callable[[Job], None]] = []

    def create(
        self, kind: JobKind, title: str, stop_fn: Callable[[], None], *, announce: bool = True
    ) -> Job:
        """Register a new running job; listeners hear of it now, or at :meth:`announce`."""
        job = Job(job_id=f"job-{next(_ids)}", kind=kind, title=_title(title), stop_fn=stop_fn)
        with self._lock:
            self._jobs[job.job_id] = job
        if announce:
            self.announce(job)
        return job

    def announce(self, job: Job) -> None:
        for listener in list(self._listeners):
            listener(job)

    def discard(self, job_id: str) -> None:
        """Forget a job that never ran (its code ended before it was handed over)."""
        with self._lock:
            self._jobs.pop(job_id, None)

    def subscribe(self, listener: Callable[[Job], None]) -> Callable[[], None]:
        """Call ``listener`` with every job created from now on; returns an unsubscriber."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def get(self, job_id: str) -> Job:
        with self._lock:
            job = self._jobs.get(job_id.strip())
            known = list(self._jobs)
        if job is None:
            hint = f" Known jobs: {', '.join(known[-10:])}." if known else " No jobs were started."
            raise JobNotFoundError(f"No background job {job_id!r}.{hint} job_list lists them.")
        return job

    def jobs(self) -> list[Job]:
        with self._lock:
            return list(self._jobs.values())

    def running(self) -> list[Job]:
        return [job for job in self.jobs() if job.running]

    def stop_all(self) -> None:
        for job in self.running():
            job.stop()

    def turn_notice(self) -> str | None:
        """What the next request should tell the model: running jobs, and ends not yet reported.

        An end counts as reported once a notice or a ``job_*`` tool result showed it.
        """
        running = [job for job in self.jobs() if job.running]
        ended = [job for job in self.jobs() if not job.running and not job.reported_end]
        if not running and not ended:
            return None
        lines = ["[background jobs]"]
        for job in ended:
            job.reported_end = True
            unread = job.output.end - job.model_cursor
            note = f" ({job.summary})" if job.summary else ""
            lines.append(f"finished since your last turn: {job.status_line()}{note}")
            if unread > 0:
                lines.append(f"  {unread} characters of output not read yet (job_output)")
        for job in running:
            lines.append(f"still running: {job.status_line()}")
        lines.append("Use job_output / job_wait / job_stop with the job id.")
        return "\n".join(lines)


def _title(text: str) -> str:
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return first[:80] + ("…" if len(first) > 80 or text.strip().count("\n") else "")


# --- shell jobs --------------------------------------------------------------------------------


def start_shell_job(
    registry: JobRegistry, command: str, cwd: str, env: dict[str, str], shell: str
) -> Job:
    """Start ``command`` detached in its own process group; reader threads fill the job's output.

    The process is independent of any event loop, so it keeps running after the turn (and the
    turn's loop) ends. Stopping signals the whole group: SIGTERM, then SIGKILL after a grace.
    """
    try:
        process = subprocess.Popen(
            [shell, "-c", command],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as exc:
        raise ToolError(f"Could not start {shell}: {exc}") from exc

    def stop() -> None:
        _signal_group(process.pid, signal.SIGTERM)
        threading.Thread(target=_kill_later, args=(process,), daemon=True).start()

    job = registry.create("shell", redact_secrets(command), stop)
    readers = [
        threading.Thread(target=_read_stream, args=(process.stdout, job), daemon=True),
        threading.Thread(target=_read_stream, args=(process.stderr, job), daemon=True),
    ]
    for reader in readers:
        reader.start()

    def watch() -> None:
        code = process.wait()
        # A child that left the group may still hold a pipe: do not wait for it forever.
        for reader in readers:
            reader.join(2.0)
        if code == 0:
            job.finish("completed", "exit code 0")
        elif code < 0:
            job.finish("failed", f"terminated by {_signal_name(-code)}")
        else:
            job.finish("failed", f"exit code {code}")

    threading.Thread(target=watch, name=f"codelia-{job.job_id}", daemon=True).start()
    return job


def _read_stream(stream: Any, job: Job) -> None:
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    carry = ""
    while True:
        chunk = os.read(stream.fileno(), _READ_CHUNK)
        if not chunk:
            break
        # Mask secrets line by line; an unfinished line waits for its end (or a long pause).
        buffered = carry + decoder.decode(chunk)
        cut = max(buffered.rfind("\n"), buffered.rfind("\r")) + 1
        carry = buffered[cut:]
        if cut:
            job.write(redact_secrets(buffered[:cut]))
    job.write(redact_secrets(carry + decoder.decode(b"", final=True)))
    stream.close()


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass  # the whole group is already gone


def _kill_later(process: subprocess.Popen[bytes]) -> None:
    try:
        process.wait(STOP_GRACE_SECONDS)
    except subprocess.TimeoutExpired:
        pass
    _signal_group(process.pid, signal.SIGKILL)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


# --- the tools ---------------------------------------------------------------------------------


class JobListInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    running_only: bool = Field(default=False, description="Only jobs that are still running.")


class JobOutputInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    job_id: str = Field(description="The job id, e.g. 'job-3'.")
    since: Literal["new", "start"] = Field(
        default="new",
        description="'new': output since your last job_output/job_wait of this job; "
        "'start': everything kept from the start.",
    )
    tail_lines: int | None = Field(
        default=None, ge=1, le=10_000, description="Only the last N lines of that output."
    )


class JobWaitInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    job_id: str = Field(description="The job id, e.g. 'job-3'.")
    timeout_seconds: float = Field(
        default=DEFAULT_WAIT_SECONDS,
        gt=0,
        le=MAX_WAIT_SECONDS,
        description="Wait at most this long; returns as soon as the job ends.",
    )


class JobStopInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    job_id: str = Field(description="The job id, e.g. 'job-3'.")


def read_new_output(job: Job, since: Literal["new", "start"], tail_lines: int | None) -> Any:
    """The job's status and output (all kept, or unread), with images it displayed meanwhile.

    Advances the model's read cursor and marks a finished job's end as reported.
    """
    cursor = 0 if since == "start" else job.model_cursor
    end = job.output.end
    text, lost = job.output.since(cursor)
    image_cursor = 0 if since == "start" else job.model_image_cursor
    images = job.output.images_since(image_cursor)
    job.model_cursor = end
    job.model_image_cursor = job.output.image_count
    if not job.running:
        job.reported_end = True
    sections = [job.status_line() + (f" ({job.summary})" if job.summary else "")]
    if lost:
        sections.append(f"[note] {lost:,} earlier characters were dropped (memory bound)")
    if tail_lines is not None:
        text = "\n".join(text.rstrip("\n").split("\n")[-tail_lines:])
    label = "output since last read" if since == "new" else "output"
    sections.append(f"[{label}]\n{text.rstrip()}" if text.strip() else f"[{label}] (none)")
    if images:
        sections.append(f"[images] {len(images)} image(s) attached below")
    body = "\n\n".join(sections)
    if not images:
        return body
    return [TextPart(text=body), *(ImagePart.from_bytes(png, "image/png") for png in images)]


async def wait_for_job(job: Job, timeout: float, ctx: ToolContext) -> bool:
    """Wait until ``job`` ends or ``timeout`` passes (cancellable); whether it ended."""
    deadline = time.monotonic() + timeout
    while not job.done.is_set():
        ctx.check_cancelled()
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        await asyncio.sleep(min(_POLL_SECONDS * 4, remaining))
    return True


def job_tools(registry: JobRegistry) -> list[FunctionTool]:
    """``job_list``, ``job_output``, ``job_wait`` and ``job_stop`` over ``registry``."""

    def job_list(params: JobListInput, ctx: ToolContext) -> str:
        jobs = registry.running() if params.running_only else registry.jobs()
        if not jobs:
            return "No running background jobs." if params.running_only else "No background jobs."
        rows = []
        for job in jobs:
            row = job.status_line()
            last = job.output.last_lines(1)
            if last:
                row += f"\n  last line: {last[-1][:200]}"
            rows.append(row)
        return "\n".join(rows)

    def job_output(params: JobOutputInput, ctx: ToolContext) -> Any:
        return read_new_output(registry.get(params.job_id), params.since, params.tail_lines)

    async def job_wait(params: JobWaitInput, ctx: ToolContext) -> Any:
        job = registry.get(params.job_id)
        ended = await wait_for_job(job, params.timeout_seconds, ctx)
        result = read_new_output(job, "new", 200)
        if ended:
            return result
        note = f"[wait] still running after {js_round(params.timeout_seconds)} s of waiting\n"
        if isinstance(result, str):
            return note + result
        first = result[0]
        return [TextPart(text=note + first.text), *result[1:]]

    async def job_stop(params: JobStopInput, ctx: ToolContext) -> Any:
        job = registry.get(params.job_id)
        if not job.running:
            return read_new_output(job, "new", 50)
        job.stop()
        ended = await wait_for_job(job, STOP_GRACE_SECONDS + 2.0, ctx)
        result = read_new_output(job, "new", 50)
        if ended:
            return result
        note = (
            "[stop] asked to stop; it has not ended yet (native code stops at its next Python "
            "step, a process after SIGKILL)\n"
        )
        return note + result if isinstance(result, str) else result

    return [
        define_tool(
            name="job_list",
            description="List background jobs (python or shell started with background: true, "
            "or a python call that outlived its timeout): id, state, elapsed time, last line.",
            input=JobListInput,
            execute=job_list,
        ),
        define_tool(
            name="job_output",
            description="Read a background job's output (stdout and stderr interleaved) and the "
            "images it displayed: by default only what is new since your last read. Long "
            "output is kept in the output cache and can be paged with tool_output_cache.",
            input=JobOutputInput,
            execute=job_output,
        ),
        define_tool(
            name="job_wait",
            description="Wait for a background job to finish (at most timeout_seconds, default "
            f"{js_round(DEFAULT_WAIT_SECONDS)}); returns early when it ends, with its new output.",
            input=JobWaitInput,
            execute=job_wait,
        ),
        define_tool(
            name="job_stop",
            description="Stop a background job (a python job at its next Python step, a shell "
            "job's whole process group) and return its last output.",
            input=JobStopInput,
            execute=job_stop,
        ),
    ]


def png_of_display(data: dict[str, Any]) -> bytes | None:
    """The PNG bytes of a display bundle (IPython sends base64 text), if it has one."""
    payload = data.get("image/png")
    if isinstance(payload, bytes):
        return payload
    if isinstance(payload, str):
        try:
            return base64.b64decode(payload)
        except ValueError:
            return None
    return None
