"""Python background jobs in the live namespace, and their cards in the cell panel.

``python`` with ``background: true`` starts the code on its own thread here; a foreground call
that outlives its timeout is adopted the same way (:func:`adopt_python_job`). The job's thread
keeps its own output routing (see ``_execute``), so its prints, warnings and ``display()`` calls
land in the job, never in whatever cell happens to be running. Stopping raises an exception in
the job's thread at its next Python step.

:class:`JobCards` draws one card per job (elapsed time, last lines, a tqdm progress bar and a
Stop button) and keeps them fresh from a daemon thread, since jobs outlive the turn whose panel
shows them. Like the panel, the cards carry their static form in their display data, and once
the last of their jobs ended they become that static output for good (``_static``).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from ..standard_tools.jobs import Job, JobRegistry, png_of_display
from ..wire import JobProgress, JobUpdated, JobView
from . import _describe
from ._execute import MAX_STREAM_CHARS, Capture, start_thread, stop_thread

if TYPE_CHECKING:
    from ._kit import WidgetKit

REFRESH_SECONDS = 0.5
_IDLE_ROUNDS = 4


class _JobForward:
    """Routes a capture's output into a job and records the end of the code there."""

    def __init__(self, job: Job, format_value: Any) -> None:
        self.job = job
        self.format_value = format_value

    def write(self, stream: str, text: str) -> None:
        self.job.write(text)

    def display(self, data: dict[str, Any]) -> None:
        png = png_of_display(data)
        if png is not None:
            self.job.output.add_image(png)
        elif "text/plain" in data:
            self.job.write(f"{data['text/plain']}\n")

    def finished(self, capture: Capture) -> None:
        if capture.error is not None:
            self.job.write(capture.error + "\n")
            last = capture.error.strip().splitlines()[-1] if capture.error.strip() else "error"
            self.job.finish("failed", last[:200])
            return
        if capture.has_result:
            text = self.format_value(capture.result)
            self.job.write("[result]\n" + _describe.clip_chars(text, MAX_STREAM_CHARS) + "\n")
        self.job.finish("completed")


def start_python_job(
    registry: JobRegistry,
    code: str,
    namespace: dict[str, Any],
    shell: Any,
    format_value: Any,
) -> Job:
    """Run ``code`` in ``namespace`` on a new thread as a background job."""
    capture = Capture()
    job = registry.create("python", code, lambda: stop_thread(capture))
    capture.adopt(_JobForward(job, format_value))
    start_thread(code, namespace, shell, capture, name=f"codelia-{job.job_id}")
    return job


def adopt_python_job(
    registry: JobRegistry, code: str, capture: Capture, format_value: Any
) -> Job | None:
    """Turn a foreground call that timed out into a job; None if it ended meanwhile.

    What the call printed so far is the job's first output, already shown to the model.
    """
    job = registry.create("python", code, lambda: stop_thread(capture), announce=False)
    for text in (*capture.stdout, *capture.stderr):
        job.write(text)
    job.model_cursor = job.output.end
    if not capture.adopt(_JobForward(job, format_value)):
        registry.discard(job.job_id)
        return None
    registry.announce(job)
    return job


def job_view(job: Job) -> JobView:
    """A job as the side panel sees it: state, elapsed time, last lines and progress."""
    progress = job.output.progress()
    return JobView(
        job_id=job.job_id,
        kind=job.kind,
        title=job.title,
        state=job.state,
        elapsed_s=round(job.elapsed_seconds, 1),
        summary=job.summary,
        last_lines=job.output.last_lines(),
        progress=None
        if progress is None
        else JobProgress(percent=progress.percent, done=progress.done, total=progress.total),
    )


class JobNotifier:
    """Broadcasts ``job.updated`` envelopes to the comm listeners while jobs run (and their end).

    Driven by the same ticker as the cards: at most one envelope per job per refresh, and only
    when its output or state changed (front ends count the elapsed time on from ``elapsed_s``).
    """

    def __init__(self, registry: JobRegistry, broadcast: Any) -> None:
        self.registry = registry
        self.broadcast = broadcast
        self._sent: dict[str, tuple[int, str]] = {}
        registry.subscribe(lambda job: self._started(job))

    def _started(self, job: Job) -> None:
        self._send(job)
        _ticker.watch(self)

    def _send(self, job: Job) -> None:
        self._sent[job.job_id] = (job.output.end, job.state)
        self.broadcast(JobUpdated(job=job_view(job)).dump())

    def refresh(self) -> bool:
        alive = False
        for job in self.registry.jobs():
            last = self._sent.get(job.job_id)
            if last is not None and last[1] != "running":
                continue  # its end was sent already
            if last != (job.output.end, job.state):
                self._send(job)
            alive = alive or job.running
        return alive


# --- cards -------------------------------------------------------------------------------------


class JobCards:
    """A VBox of job cards for one panel; refreshed every ``REFRESH_SECONDS`` while jobs run.

    :meth:`show` displays it (live, or static where no front end renders widgets); after the
    turn, :meth:`turn_ended` leaves nothing behind when no job started, and once the last job
    ended the cards are replaced by their static form.
    """

    def __init__(self, registry: JobRegistry, kit: WidgetKit | None = None) -> None:
        from ._kit import LIVE

        self.registry = registry
        self.kit = kit or LIVE
        self.box = self.kit.VBox([])
        self.box.add_class("codelia-jobs")
        self.display_id = uuid.uuid4().hex
        self._cards: dict[str, _JobCard] = {}
        self._lock = threading.Lock()
        self._final = False
        self._unsubscribe: Callable[[], None] | None = registry.subscribe(self.add)

    def show(self) -> None:
        from . import _static

        _static.show(self.box, self.kit, self.static_bundle(), display_id=self.display_id)

    def static_bundle(self) -> dict[str, Any]:
        """The cards as static output now (no visible output while there is none)."""
        from . import _static

        with self._lock:
            jobs = [card.job for card in self._cards.values()]
        if not jobs:
            return {"text/plain": ""}
        lines = "\n".join(job.status_line() for job in jobs)
        static = _static.to_static(self.box)
        return _static.mime_bundle(static, markdown=f"```\n{lines}\n```", plain=lines)

    def turn_ended(self, *, cell_running: bool) -> None:
        """The turn is over: later jobs get the next panel's cards; with none started here,
        the empty box goes (a live one would be saved as a ``VBox(...)`` line)."""
        from . import _static

        self.stop_following()
        publish = _static.display_static if cell_running else _static.display_static_later
        if self.empty:
            self._final = True
            publish(self.display_id, {"text/plain": ""})
            _static.close_tree(self.box)
        elif not self.kit.live:
            publish(self.display_id, self.static_bundle())

    def _finish(self) -> None:
        """The last job ended: its static form replaces the cards for good."""
        from . import _static

        self._final = True
        bundle = self.static_bundle()
        _static.display_static_later(self.display_id, bundle)
        if self.kit.live:
            # The front ends swap it in; the widgets stay for those without jupyter-codelia.
            _static.FINALS.finished(self.box.model_id, bundle)
        else:
            _static.close_tree(self.box)

    def add(self, job: Job) -> None:
        with self._lock:
            if job.job_id in self._cards or self._final:
                return
            card = _JobCard(job, self.kit)
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
        with self._lock:
            unsubscribe, self._unsubscribe = self._unsubscribe, None
        if unsubscribe is not None:
            unsubscribe()
        _ticker.watch(self)  # jobs that already ended: the next round makes the cards static

    def refresh(self) -> bool:
        """Update every card; whether any job is still running (the last end makes them
        static once the turn is over)."""
        with self._lock:
            cards = list(self._cards.values())
            turn_over = self._unsubscribe is None
        if self._final:
            return False
        alive = False
        for card in cards:
            alive = card.refresh() or alive
        if not alive and cards and turn_over:
            self._finish()
        return alive


class _JobCard:
    def __init__(self, job: Job, kit: WidgetKit) -> None:
        self.job = job
        self.header = kit.HTML()
        self.lines = kit.HTML()
        self.progress = kit.FloatProgress(
            value=0, min=0, max=100, layout=kit.Layout(display="none", width="60%")
        )
        self.stop_button = kit.Button(
            description="Stop", icon="stop", button_style="warning", tooltip="Stop this job"
        )
        self.stop_button.on_click(lambda _b: job.stop())
        self.box = kit.VBox(
            [kit.HBox([self.header, self.stop_button]), self.progress, self.lines],
            layout=kit.Layout(border="1px dashed #1a73e8", margin="4px 0", padding="2px 6px"),
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
    """One daemon thread refreshing every live set of cards while any job runs.

    It holds each set it watches until that set's last job has ended (the turn whose panel
    showed the cards is long over by then, and nothing else keeps them).
    """

    def __init__(self) -> None:
        self._cards: set[_Refreshing] = set()
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
                    running = cards.refresh()
                except Exception:  # a closed widget must not end the refreshing of the others
                    running = False
                if not running:
                    with self._lock:
                        self._cards.discard(cards)
                alive = alive or running
            with self._lock:
                # A few rounds after the last job ended, so its end is drawn, then sleep until
                # the next watch().
                self._rounds_left = _IDLE_ROUNDS if alive else self._rounds_left - 1
                if self._rounds_left <= 0:
                    self._running = False
                    return


_ticker = _Ticker()
