"""Python background jobs in the live namespace.

``python`` with ``background: true`` starts the code on its own thread here; a foreground call
that outlives its timeout is adopted the same way (:func:`adopt_python_job`). The job's thread
keeps its own output routing (see ``_execute``), and so do the threads it starts, so its prints,
warnings and ``display()`` calls land in the job, never in whatever cell happens to be running.
Stopping raises an exception in the job's thread at its next Python step; code stuck in native
code cannot be interrupted from another thread, and the job's note then says so plainly.

Their cards are drawn by ``ui/job_cards.py`` and announced to the side panel by
``run/job_updates.py``.
"""

from __future__ import annotations

import linecache
import os
import sys
import threading
from typing import TYPE_CHECKING, Any

from ..._redact import redact_secrets
from ..._text import clip_chars
from ...standard_tools._process_watch import end_trees, process_tracker, thread_children
from ...standard_tools.jobs import STOP_GRACE_SECONDS, Job, JobRegistry, png_of_display
from ._execute import (
    MAX_STREAM_CHARS,
    SNIPPET_FILENAME_PREFIX,
    Capture,
    WriteBuffer,
    start_thread,
    stop_arrived,
    stop_thread,
)

if TYPE_CHECKING:
    from .._shell import KernelShell

CHILDREN_POLL_SECONDS = 0.5
"""How often a running python job's threads are asked which processes they started."""
PYTHON_STOP_GRACE_SECONDS = 1.0
"""How long a stopped python job may take to reach its next Python step before its note says
why it has not stopped."""


class _Children:
    """The processes a python job's threads started: seen twice a second while it runs (and
    once more as its code ends), told to the kernel's tracker, ended when the job is stopped."""

    def __init__(self, job: Job, capture: Capture) -> None:
        self.job = job
        self.capture = capture
        self.seen: dict[int, str] = {}
        self._lock = threading.Lock()

    def follow(self) -> None:
        threading.Thread(
            target=self._loop, name=f"codelia-{self.job.job_id}-children", daemon=True
        ).start()

    def _loop(self) -> None:
        while not self.job.done.wait(CHILDREN_POLL_SECONDS):
            self.look()

    def look(self) -> None:
        threads = [self.capture.thread, *list(self.capture.started_threads)]
        native_ids = [t.native_id for t in threads if t is not None and t.native_id is not None]
        found = thread_children(native_ids)
        with self._lock:
            new = {pid: start for pid, start in found.items() if pid not in self.seen}
            self.seen.update(new)
        tracker = process_tracker(STOP_GRACE_SECONDS)
        for pid, start in new.items():
            tracker.track(pid, start)

    def end(self) -> None:
        """End every process the job started, and what they started (SIGTERM, then SIGKILL)."""
        self.look()
        with self._lock:
            seen = dict(self.seen)
        end_trees(seen, STOP_GRACE_SECONDS)


class _JobForward:
    """Routes a capture's output into a job and records the end of the code there."""

    def __init__(self, job: Job, format_value: Any, children: _Children) -> None:
        self.job = job
        self.format_value = format_value
        self.children = children

    def buffered(self) -> WriteBuffer:
        return self.job.output.buffer()

    def write(self, stream: str, text: str) -> None:
        self.job.write(text, stream)

    def display(self, data: dict[str, Any]) -> None:
        png = png_of_display(data)
        if png is not None:
            self.job.output.add_image(png)
        elif "text/plain" in data:
            self.job.write(f"{data['text/plain']}\n")

    def finished(self, capture: Capture) -> None:
        # Still on the job's thread: the processes it started are listed as its children
        # for the last time (they stay tracked: a server it started outlives the job, not the
        # kernel).
        self.children.look()
        if capture.error is not None:
            self.job.write(capture.error + "\n", "stderr")
            last = capture.error.strip().splitlines()[-1] if capture.error.strip() else "error"
            self.job.finish("failed", last[:200])
            return
        if capture.has_result:
            text = self.format_value(capture.result)
            self.job.write("[result]\n" + clip_chars(text, MAX_STREAM_CHARS) + "\n")
        self.job.finish("completed")


class _PythonStop:
    """Stops a python job: an exception raised in its thread at the next Python step.

    Code inside native code (``time.sleep``, a C extension, a blocking read) gets it only when
    that call returns, and nothing can interrupt it from another thread: after a short grace
    the job's note says so plainly, naming the call, so the person and the model know what to
    expect and what their options are.
    """

    def __init__(self, capture: Capture) -> None:
        self.capture = capture
        self.job: Job | None = None
        self.children: _Children | None = None

    def __call__(self) -> None:
        stop_thread(self.capture)
        if self.children is not None:
            # A job waiting on a process it started gets to its next Python step when that
            # process ends.
            threading.Thread(target=self.children.end, daemon=True).start()
        timer = threading.Timer(PYTHON_STOP_GRACE_SECONDS, self._explain)
        timer.daemon = True
        timer.start()

    def _explain(self) -> None:
        job, thread = self.job, self.capture.thread
        if job is None or thread is None or job.done.is_set() or thread.ident is None:
            return
        frame = sys._current_frames().get(thread.ident)
        if job.done.is_set() or frame is None:
            return
        where = redact_secrets(_where(frame))  # the line may hold a token
        if not stop_arrived(self.capture):
            job.note = (
                f"did not stop: it is inside native code ({where}), which Python cannot "
                "interrupt from another thread. It stops by itself as soon as that call "
                "returns to Python (the stop stays requested). Interrupting the kernel does not "
                "reach a job's thread; to end it now, restart the kernel (this ends every job "
                "and clears the namespace)."
            )
        else:
            job.note = (
                f"did not stop: its code caught the stop and runs on ({where}; a bare "
                "`except:` or `except BaseException` swallows it). Stop it again, or restart "
                "the kernel to end it now."
            )


def _where(frame: Any) -> str:
    """The job's line that is running, and the library call below it if there is one."""
    innermost = frame
    job_frame = None
    while frame is not None:
        if frame.f_code.co_filename.startswith(SNIPPET_FILENAME_PREFIX):
            job_frame = frame
            break
        frame = frame.f_back
    parts = []
    if job_frame is not None:
        source = linecache.getline(job_frame.f_code.co_filename, job_frame.f_lineno).strip()
        parts.append(f"line {job_frame.f_lineno} of the job: `{source[:120]}`")
    if innermost is not job_frame:
        code = innermost.f_code
        parts.append(
            f"in {code.co_name} ({os.path.basename(code.co_filename)}:{innermost.f_lineno})"
        )
    return ", ".join(parts) or "no Python frame of its own"


def start_python_job(
    registry: JobRegistry,
    code: str,
    namespace: dict[str, Any],
    shell: KernelShell | None,
    format_value: Any,
) -> Job:
    """Run ``code`` in ``namespace`` on a new thread as a background job."""
    capture = Capture()
    job, children = _register(registry, code, capture, announce=True)
    capture.adopt(_JobForward(job, format_value, children))
    start_thread(code, namespace, shell, capture, name=f"codelia-{job.job_id}")
    children.follow()
    return job


def _register(
    registry: JobRegistry, code: str, capture: Capture, *, announce: bool
) -> tuple[Job, _Children]:
    stopper = _PythonStop(capture)
    job = registry.create("python", code, stopper, announce=announce)
    stopper.job = job
    stopper.children = _Children(job, capture)
    return job, stopper.children


def adopt_python_job(
    registry: JobRegistry, code: str, capture: Capture, format_value: Any
) -> Job | None:
    """Turn a foreground call that timed out into a job; None if it ended meanwhile.

    What the call printed so far is the job's first output, already shown to the model.
    """
    job, children = _register(registry, code, capture, announce=False)
    for text in capture.stdout:
        job.write(text, "stdout")
    for text in capture.stderr:
        job.write(text, "stderr")
    job.model_cursor = job.output.end
    if not capture.adopt(_JobForward(job, format_value, children)):
        registry.discard(job.job_id)
        return None
    children.follow()
    registry.announce(job)
    return job
