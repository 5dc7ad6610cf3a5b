"""Job cards: one card per background job (elapsed time, last lines, a tqdm progress bar and
a Stop button) below the panel of the turn that started it.

Jobs outlive the turn whose panel shows them, so one daemon thread (:func:`watch`) keeps every
live set of cards fresh while any job runs; the side panel's ``job.updated`` notices ride the
same thread. Like the panel, the cards carry their static form in their display data, and once
the last of their jobs ended they become that static output for good (``_static``).
"""

from __future__ import annotations

import functools
import threading
import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from ...standard_tools.jobs import Job, JobRegistry
from ._finals import FINALS

if TYPE_CHECKING:
    from ._kit import WidgetKit

REFRESH_SECONDS = 0.5
_IDLE_ROUNDS = 4


class JobCards:
    """A VBox of job cards for one panel; refreshed every ``REFRESH_SECONDS`` while jobs run.

    :meth:`show` displays it (live, or static where no front end renders widgets); after the
    turn, :meth:`turn_ended` leaves nothing behind when no job started, and once the last job
    ended the cards are replaced by their static form. A static box is shown only once it has
    a card (:meth:`show` with ``until_jobs``: a headless notebook keeps no empty output).
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
        self._shown = False
        self._unsubscribe: Callable[[], None] | None = registry.subscribe(self.add)

    def show(self, *, until_jobs: bool = False) -> None:
        """Display the box now, or (``until_jobs``, a static box in a cell that still runs when
        the turn ends) at the turn's end if a job started."""
        from . import _static

        if until_jobs and not self.kit.live:
            return
        self._shown = True
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
            if self._shown:
                publish(self.display_id, {"text/plain": ""})
            _static.close_tree(self.box)
        elif not self._shown:
            self._shown = True
            _static.show(self.box, self.kit, self.static_bundle(), display_id=self.display_id)
        elif not self.kit.live:
            publish(self.display_id, self.static_bundle())

    def _finish(self) -> None:
        """The last job ended: its static form replaces the cards for good."""
        from . import _static

        self._final = True
        bundle = self.static_bundle()
        _static.display_static_later(self.display_id, bundle)
        if self.kit.live:
            # The front ends swap it in; the widgets stay for those without jupyter-codelia
            # (within the finals' budget of open widgets).
            FINALS.finished(
                self.box.model_id, bundle, functools.partial(_static.close_tree, self.box)
            )
        else:
            _static.close_tree(self.box)

    def add(self, job: Job) -> None:
        with self._lock:
            if job.job_id in self._cards or self._final:
                return
            card = _JobCard(job, self.kit)
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
        with self._lock:
            unsubscribe, self._unsubscribe = self._unsubscribe, None
        if unsubscribe is not None:
            unsubscribe()
        if not self.empty:
            watch(self)  # jobs that already ended: the next round makes the cards static

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


class Refreshing(Protocol):
    """Something the ticker refreshes: returns whether it still has a running job."""

    def refresh(self) -> bool: ...


class _Ticker:
    """One daemon thread refreshing every live set of cards while any job runs.

    It holds each set it watches until that set's last job has ended (the turn whose panel
    showed the cards is long over by then, and nothing else keeps them).
    """

    def __init__(self) -> None:
        self._cards: set[Refreshing] = set()
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
            alive = self._round()
            with self._lock:
                # A few rounds after the last job ended, so its end is drawn, then sleep until
                # the next watch().
                self._rounds_left = _IDLE_ROUNDS if alive else self._rounds_left - 1
                if self._rounds_left <= 0:
                    self._running = False
                    return

    def _round(self) -> bool:
        """Refresh every watched set once; whether any still has a running job. (A method of
        its own: the sleep between rounds holds no set that finished.)"""
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
        return alive


_ticker = _Ticker()


def watch(cards: Refreshing) -> None:
    """Refresh ``cards`` every ``REFRESH_SECONDS`` until no job of theirs runs."""
    _ticker.watch(cards)
