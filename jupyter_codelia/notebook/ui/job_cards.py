"""Job cards: one card per background job (elapsed time, last lines, a tqdm progress bar and
a Stop button) below the panel of the turn that started it.

Jobs outlive the turn whose panel shows them, so one daemon thread (:func:`watch`) keeps every
live set of cards fresh while any job runs; the side panel's ``job.updated`` notices ride the
same thread.
"""

from __future__ import annotations

import threading
import time
import weakref
from typing import Protocol

from ...standard_tools.jobs import Job, JobRegistry

REFRESH_SECONDS = 0.5
_IDLE_ROUNDS = 4


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
        watch(self)

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


class Refreshing(Protocol):
    """Something the ticker refreshes: returns whether it still has a running job."""

    def refresh(self) -> bool: ...


class _Ticker:
    """One daemon thread refreshing every live set of cards while any job runs."""

    def __init__(self) -> None:
        self._cards: weakref.WeakSet[Refreshing] = weakref.WeakSet()
        self._rounds_left = _IDLE_ROUNDS
        self._running = False
        self._lock = threading.Lock()

    def watch(self, cards: Refreshing) -> None:
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


_ticker = _Ticker()


def watch(cards: Refreshing) -> None:
    """Refresh ``cards`` every ``REFRESH_SECONDS`` until no job of theirs runs."""
    _ticker.watch(cards)
