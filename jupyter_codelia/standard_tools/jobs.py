"""Background jobs: the registry, their live output, and the ``job_*`` tools the model uses.

A job is long work (a training loop, a slow query, a server) that runs while the conversation
goes on and outlives the turn that started it, but never the kernel. This module is the generic
part: a thread-safe :class:`JobRegistry` of :class:`Job` records, each with its output so far
(interleaved stdout and stderr, masked and bounded, see ``_job_output``), the images it
displayed, a stop function and a finish event. What a job *runs* is up to its starter: ``shell``
with ``background: true`` starts a guarded process tree (``_shell_job``), and the notebook
starts Python jobs on threads in the live namespace.

Everything a job shows is masked like the agent's events: its title when it is registered, its
output as it arrives, its summary when it ends. With ``records`` the registry keeps a file per
running job (``_job_records``), so a kernel restarted after a crash or a kill says which jobs of
the previous one were stopped; with an output store each job's whole output streams into the
output cache.

The model watches jobs with ``job_list``, ``job_output`` (new output since its last read; the
agent's output cache keeps long reads and pages them), ``job_wait`` (bounded, returns early when
the job ends) and ``job_stop``. :meth:`JobRegistry.turn_notice` tells the next turn which jobs
are still running, which finished since the model last heard of them, and which the previous
kernel took with it.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .._redact import redact_secrets
from .._text import js_round
from ..errors import CodeliaError
from ..llm.messages import ImagePart, TextPart
from ..tools import FunctionTool, ToolContext, ToolError, ToolRisk, define_tool
from ._job_output import LAST_LINES, MAX_JOB_IMAGES, MAX_JOB_OUTPUT_CHARS, JobOutput, Progress
from ._job_records import JobRecords, PreviousJob

if TYPE_CHECKING:
    from pathlib import Path

    from ..cache.protocol import ToolOutputStore

__all__ = [
    "LAST_LINES",
    "MAX_JOB_IMAGES",
    "MAX_JOB_OUTPUT_CHARS",
    "Job",
    "JobNotFoundError",
    "JobOutput",
    "JobRecords",
    "JobRegistry",
    "PreviousJob",
    "Progress",
    "job_tools",
    "png_of_display",
    "start_shell_job",
]

JobState = Literal["running", "completed", "failed", "stopped"]
JobKind = Literal["python", "shell"]

MAX_WAIT_SECONDS = 600.0
DEFAULT_WAIT_SECONDS = 30.0
STOP_GRACE_SECONDS = 3.0
_POLL_SECONDS = 0.05
_ids = itertools.count(1)

# The agent watching and stopping the jobs it started itself (starting one was approved).
WATCHES_ITS_JOBS = ToolRisk(kind="agent_state")


class JobNotFoundError(ToolError):
    """No job with the given id in this kernel's registry."""


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
    note: str | None = None
    """Said while it runs: why a stop has not taken effect yet, or what keeps it running."""
    output: JobOutput = field(default_factory=JobOutput)
    full_output_ref: str | None = None
    """The output-cache entry with the whole output, kept when memory had to drop part of it."""
    stop_requested: bool = False
    record_extra: dict[str, Any] = field(default_factory=dict)
    """What the starter added to the job's record on disk (see ``JobRegistry.update_record``)."""
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

    def write(self, text: str, stream: str = "stdout") -> None:
        self.output.write(text, stream)

    def finish(self, state: JobState, summary: str | None = None) -> None:
        """Record the end (the first call wins: a stop racing a natural end keeps one outcome)."""
        if self.done.is_set():
            return
        if self.stop_requested and state != "completed":
            state = "stopped"
        self.full_output_ref = self.output.close()
        self.state = state
        self.summary = redact_secrets(summary)
        self.note = None
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
        self.note = None  # what held it up before is no longer the news
        self.stop_fn()

    def status_line(self) -> str:
        elapsed = _seconds(self.elapsed_seconds)
        line = f"{self.job_id} [{self.kind}] {self.state} after {elapsed}: {self.title}"
        progress = self.output.progress()
        if progress is not None and self.running:
            line += f" ({progress.percent}%, {progress.done}/{progress.total})"
        note = self.note
        if note is not None and self.running:
            line += f"\n  note: {note}"
        return line


def _seconds(value: float) -> str:
    return f"{value:.1f} s" if value < 60 else f"{int(value // 60)} min {int(value % 60)} s"


class JobRegistry:
    """The jobs of one kernel (or one agent host); outlives agents and turns.

    ``records`` keeps a file per running job so the next kernel can report them; without it
    nothing is written. ``output_store`` gives the output cache each job's whole output streams
    into (``standard_tools`` fills it with its own store when it is unset).
    """

    def __init__(
        self,
        *,
        records: JobRecords | None = None,
        output_store: Callable[[], ToolOutputStore | None] | None = None,
    ) -> None:
        self._jobs: dict[str, Job] = {}
        self._lock = threading.Lock()
        self._listeners: list[Callable[[Job], None]] = []
        self.records = records
        self.output_store = output_store
        self._reported_previous: set[tuple[str, float]] = set()
        self._kernel_ending = False

    def create(
        self, kind: JobKind, title: str, stop_fn: Callable[[], None], *, announce: bool = True
    ) -> Job:
        """Register a new running job; listeners hear of it now, or at :meth:`announce`."""
        job_id = f"job-{next(_ids)}"
        job = Job(
            job_id=job_id,
            kind=kind,
            # Masked before it is clipped: a cut through a secret would leave half of it.
            title=_title(redact_secrets(title)),
            stop_fn=stop_fn,
            output=JobOutput(self._sink(job_id)),
        )
        with self._lock:
            self._jobs[job.job_id] = job
        if self.records is not None:
            self.records.save(job.job_id, kind, job.title, job.started_at)
            job.on_finish(self._forget_record)
        if announce:
            self.announce(job)
        return job

    def _sink(self, job_id: str) -> Any:
        store = self.output_store() if self.output_store is not None else None
        if store is None:
            return None
        # A restarted kernel numbers its jobs from 1 again: the suffix keeps ref ids unique.
        try:
            return store.writer(
                tool_call_id=f"{job_id}_output_{secrets.token_hex(3)}", tool_name="job_output"
            )
        except (OSError, CodeliaError):
            return None  # the job still runs and keeps its output in memory

    def record_path(self, job: Job) -> Path | None:
        """Where ``job``'s record is (for a guard that updates it when the kernel is gone)."""
        return self.records.path_for(job.job_id) if self.records is not None else None

    def update_record(self, job: Job, **extra: Any) -> None:
        """Add ``extra`` to ``job``'s record (a shell job's guard, once it runs)."""
        job.record_extra.update(extra)
        if self.records is not None and job.running:
            self.records.save(job.job_id, job.kind, job.title, job.started_at, **job.record_extra)

    def announce(self, job: Job) -> None:
        for listener in list(self._listeners):
            listener(job)

    def discard(self, job_id: str) -> None:
        """Forget a job that never ran (its code ended before it was handed over)."""
        with self._lock:
            job = self._jobs.pop(job_id, None)
        if job is not None:
            job.output.close()
            if self.records is not None:
                self.records.forget(job_id)

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

    def end_with_the_kernel(self) -> None:
        """The kernel is exiting: stop every job, and keep the records of those still running
        so the next kernel says they were stopped (the guards finish the stopping)."""
        self._kernel_ending = True
        for job in self.running():
            if job.kind == "shell":
                self.update_record(job, state="stopped")
        self.stop_all()

    def _forget_record(self, job: Job) -> None:
        if self.records is not None and not self._kernel_ending:
            self.records.forget(job.job_id)

    def previous_lines(self) -> list[str]:
        """The jobs the previous kernel with this id had running, and how each ended."""
        if self.records is None:
            return []
        return [job.line() for job in self.records.previous()]

    def turn_notice(self) -> str | None:
        """What the next request should tell the model: running jobs, and ends not yet reported.

        An end counts as reported once a notice or a ``job_*`` tool result showed it; the jobs
        an earlier kernel took with it are told once.
        """
        running = [job for job in self.jobs() if job.running]
        ended = [job for job in self.jobs() if not job.running and not job.reported_end]
        previous: list[PreviousJob] = []
        if self.records is not None:
            for old in self.records.previous():
                key = (old.job_id, old.started_at)
                if key not in self._reported_previous:
                    self._reported_previous.add(key)
                    previous.append(old)
        if not running and not ended and not previous:
            return None
        lines = ["[background jobs]"]
        for old in previous:
            lines.append(f"from before the kernel restarted: {old.line()}")
        for job in ended:
            job.reported_end = True
            unread = job.output.end - job.model_cursor
            note = f" ({job.summary})" if job.summary else ""
            lines.append(f"finished since your last turn: {job.status_line()}{note}")
            if unread > 0:
                lines.append(f"  {unread} characters of output not read yet (job_output)")
        for job in running:
            lines.append(f"still running: {job.status_line()}")
        if running or ended:
            lines.append("Use job_output / job_wait / job_stop with the job id.")
        return "\n".join(lines)


def _title(text: str) -> str:
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return first[:80] + ("…" if len(first) > 80 or text.strip().count("\n") else "")


def start_shell_job(
    registry: JobRegistry, command: str, cwd: str, env: dict[str, str], shell: str
) -> Job:
    """Start ``command`` as a guarded background job (see ``_shell_job``)."""
    from ._shell_job import start_guarded

    return start_guarded(registry, command, cwd, env, shell, grace=STOP_GRACE_SECONDS)


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
    ended = not job.running
    text, lost = job.output.since(cursor)
    image_cursor = 0 if since == "start" else job.model_image_cursor
    images = job.output.images_since(image_cursor)
    job.model_cursor = cursor + lost + len(text)
    job.model_image_cursor = image_cursor + len(images)
    if ended:
        job.reported_end = True
    sections = [job.status_line() + (f" ({job.summary})" if job.summary else "")]
    if lost:
        sections.append(
            f"[note] {lost:,} earlier characters were dropped from memory; " + _where_whole(job)
        )
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


def _where_whole(job: Job) -> str:
    if job.full_output_ref is not None:
        return (
            "the whole output is in the output cache: "
            f'tool_output_cache({{"ref_id": "{job.full_output_ref}"}}) reads it, '
            "tool_output_cache_grep searches it"
        )
    if job.running and job.output.streams_to_cache:
        return "the whole output goes to the output cache, readable there once the job ends"
    return job.output.cache_problem or "no output cache keeps the whole output here"


async def wait_for_job(
    job: Job, timeout: float, ctx: ToolContext, *, or_note: bool = False
) -> bool:
    """Wait until ``job`` ends (or, with ``or_note``, says why it does not) or ``timeout``
    passes (cancellable); whether it ended."""
    deadline = time.monotonic() + timeout
    while not job.done.is_set():
        if or_note and job.note is not None:
            return False
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
        ended = await wait_for_job(job, STOP_GRACE_SECONDS + 2.0, ctx, or_note=True)
        result = read_new_output(job, "new", 50)
        if ended:
            return result
        note = f"[stop] {job.note or 'asked to stop; it has not ended yet'}\n"
        if isinstance(result, str):
            return note + result
        return [TextPart(text=note + result[0].text), *result[1:]]

    return [
        define_tool(
            name="job_list",
            description="List background jobs (python or shell started with background: true, "
            "or a python call that outlived its timeout): id, state, elapsed time, last line.",
            input=JobListInput,
            execute=job_list,
            risk=WATCHES_ITS_JOBS,
        ),
        define_tool(
            name="job_output",
            description="Read a background job's output (stdout and stderr interleaved) and the "
            "images it displayed: by default only what is new since your last read. Long "
            "output is kept in the output cache and can be paged with tool_output_cache.",
            input=JobOutputInput,
            execute=job_output,
            risk=WATCHES_ITS_JOBS,
        ),
        define_tool(
            name="job_wait",
            description="Wait for a background job to finish (at most timeout_seconds, default "
            f"{js_round(DEFAULT_WAIT_SECONDS)}); returns early when it ends, with its new output.",
            input=JobWaitInput,
            execute=job_wait,
            risk=WATCHES_ITS_JOBS,
        ),
        define_tool(
            name="job_stop",
            description="Stop a background job (a python job at its next Python step, a shell "
            "job's whole process group) and return its last output.",
            input=JobStopInput,
            execute=job_stop,
            risk=WATCHES_ITS_JOBS,
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
