"""Python background jobs in the live namespace, and their cards in the cell panel.

``python`` with ``background: true`` starts the code on its own thread here; a foreground call
that outlives its timeout is adopted the same way (:func:`adopt_python_job`). The job's thread
keeps its own output routing (see ``_execute``), and so do the threads it starts, so its prints,
warnings and ``display()`` calls land in the job, never in whatever cell happens to be running.
Stopping raises an exception in the job's thread at its next Python step; code stuck in native
code cannot be interrupted from another thread, and the job's note then says so plainly.

:class:`JobCards` draws one card per job (elapsed time, last lines, a tqdm progress bar and a
Stop button) and keeps them fresh from a daemon thread, since jobs outlive the turn whose panel
shows them.
"""

from __future__ import annotations

import linecache
import os
import sys
import threading
import time
import weakref
from typing import TYPE_CHECKING, Any, Protocol

from .._redact import redact_secrets
from ..standard_tools.jobs import Job, JobRegistry, png_of_display
from ..wire import JobProgress, JobUpdated, JobView
from . import _describe
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
    import ipywidgets as widgets

REFRESH_SECONDS = 0.5
PYTHON_STOP_GRACE_SECONDS = 1.0
"""How long a stopped python job may take to reach its next Python step before its note says
why it has not stopped."""
_IDLE_ROUNDS = 4


class _JobForward:
    """Routes a capture's output into a job and records the end of the code there."""

    def __init__(self, job: Job, format_value: Any) -> None:
        self.job = job
        self.format_value = format_value

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
        if capture.error is not None:
            self.job.write(capture.error + "\n", "stderr")
            last = capture.error.strip().splitlines()[-1] if capture.error.strip() else "error"
            self.job.finish("failed", last[:200])
            return
        if capture.has_result:
            text = self.format_value(capture.result)
            self.job.write("[result]\n" + _describe.clip_chars(text, MAX_STREAM_CHARS) + "\n")
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

    def __call__(self) -> None:
        stop_thread(self.capture)
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
    shell: Any,
    format_value: Any,
) -> Job:
    """Run ``code`` in ``namespace`` on a new thread as a background job."""
    capture = Capture()
    stopper = _PythonStop(capture)
    job = registry.create("python", code, stopper)
    stopper.job = job
    capture.adopt(_JobForward(job, format_value))
    start_thread(code, namespace, shell, capture, name=f"codelia-{job.job_id}")
    return job


def adopt_python_job(
    registry: JobRegistry, code: str, capture: Capture, format_value: Any
) -> Job | None:
    """Turn a foreground call that timed out into a job; None if it ended meanwhile.

    What the call printed so far is the job's first output, already shown to the model.
    """
    stopper = _PythonStop(capture)
    job = registry.create("python", code, stopper, announce=False)
    stopper.job = job
    for text in capture.stdout:
        job.write(text, "stdout")
    for text in capture.stderr:
        job.write(text, "stderr")
    job.model_cursor = job.output.end
    if not capture.adopt(_JobForward(job, format_value)):
        registry.discard(job.job_id)
        return None
    registry.announce(job)
    return job


def job_view(job: Job) -> JobView:
    """A job as the side panel sees it: state, elapsed time, last lines and progress.

    Its parts are masked where they are made (title, output, summary); the view is masked
    once more, like every agent event, since it leaves the kernel.
    """
    progress = job.output.progress()
    view = JobView(
        job_id=job.job_id,
        kind=job.kind,
        title=job.title,
        state=job.state,
        elapsed_s=round(job.elapsed_seconds, 1),
        summary=job.summary if job.summary is not None or not job.running else job.note,
        last_lines=job.output.last_lines(),
        progress=None
        if progress is None
        else JobProgress(percent=progress.percent, done=progress.done, total=progress.total),
    )
    return redact_secrets(view)


class JobNotifier:
    """Broadcasts ``job.updated`` envelopes to the comm listeners while jobs run (and their end).

    Driven by the same ticker as the cards: at most one envelope per job per refresh, and only
    when its output or state changed (front ends count the elapsed time on from ``elapsed_s``).
    """

    def __init__(self, registry: JobRegistry, broadcast: Any) -> None:
        self.registry = registry
        self.broadcast = broadcast
        self._sent: dict[str, tuple[int, str, str | None]] = {}
        registry.subscribe(lambda job: self._started(job))

    def _started(self, job: Job) -> None:
        self._send(job)
        _ticker.watch(self)

    def _send(self, job: Job) -> None:
        self._sent[job.job_id] = (job.output.end, job.state, job.note)
        self.broadcast(JobUpdated(job=job_view(job)).dump())

    def refresh(self) -> bool:
        alive = False
        for job in self.registry.jobs():
            last = self._sent.get(job.job_id)
            if last is not None and last[1] != "running":
                continue  # its end was sent already
            if last != (job.output.end, job.state, job.note):
                self._send(job)
            alive = alive or job.running
        return alive


# --- cards -------------------------------------------------------------------------------------


class JobCards:
    """A VBox of job cards for one panel; refreshed every ``REFRESH_SECONDS`` while jobs run."""

    def __init__(self, registry: JobRegistry) -> None:
        import ipywidgets as widgets

        self.registry = registry
        self.box = widgets.VBox([])
        self.box.add_class("codelia-jobs")
        self._cards: dict[str, _JobCard] = {}
        self._lock = threading.Lock()
        self._unsubscribe = registry.subscribe(self.add)

    def add(self, job: Job) -> None:
        with self._lock:
            if job.job_id in self._cards:
                return
            card = _JobCard(job)
            self._cards[job.job_id] = card
        self.box.children = (*self.box.children, card.box)
        _ticker.watch(self)

    @property
    def empty(self) -> bool:
        """No job was started while this box followed the registry."""
        with self._lock:
            return not self._cards

    def stop_following(self) -> None:
        """New jobs no longer get a card here (the next turn's panel shows them)."""
        self._unsubscribe()

    def refresh(self) -> bool:
        """Update every card; whether any job is still running."""
        with self._lock:
            cards = list(self._cards.values())
        alive = False
        for card in cards:
            alive = card.refresh() or alive
        return alive


class _JobCard:
    def __init__(self, job: Job) -> None:
        import ipywidgets as widgets

        self.job = job
        self.header = widgets.HTML()
        self.lines = widgets.HTML()
        self.progress = widgets.FloatProgress(
            value=0, min=0, max=100, layout=widgets.Layout(display="none", width="60%")
        )
        self.stop_button = widgets.Button(
            description="Stop", icon="stop", button_style="warning", tooltip="Stop this job"
        )
        self.stop_button.on_click(lambda _b: job.stop())
        self.box = widgets.VBox(
            [widgets.HBox([self.header, self.stop_button]), self.progress, self.lines],
            layout=widgets.Layout(border="1px dashed #1a73e8", margin="4px 0", padding="2px 6px"),
        )
        self.box.add_class("codelia-job-card")
        self._shown_end = -1
        self.refresh()

    def refresh(self) -> bool:
        from . import renderers

        job = self.job
        header = (
            f'<div style="font-size:12px">⚙ <b>{renderers.escape(job.job_id)}</b> '
            f"[{job.kind}] <code>{renderers.escape(job.title)}</code>"
            f'<span style="color:#777"> · {job.state} · {job.elapsed_seconds:.0f} s'
            + (f" · {renderers.escape(job.summary)}" if job.summary else "")
            + (f" · {renderers.escape(job.note)}" if job.note and job.running else "")
            + "</span></div>"
        )
        if self.header.value != header:
            self.header.value = header
        end = job.output.end
        if end != self._shown_end:
            self._shown_end = end
            self.lines.value = renderers.pre("\n".join(job.output.last_lines()), max_height="8em")
            progress = job.output.progress()
            if progress is not None:
                self.progress.value = float(progress.percent)
                self.progress.description = f"{progress.done}/{progress.total}"
                self.progress.layout.display = None
        if not job.running and not self.stop_button.disabled:
            self.stop_button.disabled = True
            self.stop_button.layout.display = "none"
        return job.running


class _Refreshing(Protocol):
    def refresh(self) -> bool: ...


class _Ticker:
    """One daemon thread refreshing every live set of cards while any job runs."""

    def __init__(self) -> None:
        self._cards: weakref.WeakSet[_Refreshing] = weakref.WeakSet()
        self._rounds_left = _IDLE_ROUNDS
        self._running = False
        self._lock = threading.Lock()

    def watch(self, cards: _Refreshing) -> None:
        with self._lock:
            self._cards.add(cards)
            self._rounds_left = _IDLE_ROUNDS
            if not self._running:
                self._running = True
                threading.Thread(target=self._loop, name="codelia-job-cards", daemon=True).start()

    def _loop(self) -> None:
        while True:
            time.sleep(REFRESH_SECONDS)
            alive = False
            for cards in list(self._cards):
                try:
                    alive = cards.refresh() or alive
                except Exception:  # a closed widget must not end the refreshing of the others
                    continue
            with self._lock:
                # A few rounds after the last job ended, so its end is drawn, then sleep until
                # the next watch().
                self._rounds_left = _IDLE_ROUNDS if alive else self._rounds_left - 1
                if self._rounds_left <= 0:
                    self._running = False
                    return


_ticker = _Ticker()


def cards_for(registry: JobRegistry) -> widgets.VBox:
    """A new job-card box following ``registry`` (used by the cell panel)."""
    return JobCards(registry).box
