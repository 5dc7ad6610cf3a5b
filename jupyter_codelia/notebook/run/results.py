"""What a ``%%codelia`` cell returns: the result of a turn and the handle of a background run.

The cell's panel is its output, so the value a ``%%codelia`` cell returns shows nothing under
it (it is still ``_``, ``Out[n]`` and the cell's value); shown anywhere else it is one readable
line, never a raw dataclass repr nor a status that goes stale in a saved notebook.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ...errors import CodeliaError
from ..ui.renderers import escape, format_tokens

if TYPE_CHECKING:
    import asyncio

    from ._sink import LiveRun

FinalStatus = Literal["completed", "cancelled", "error"]


@dataclass
class RunResult:
    """What a finished turn returns: the value of a blocking ``%%codelia`` cell."""

    final_text: str
    status: FinalStatus
    session_id: str
    run_id: str
    usage: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    panel_shown: bool = field(default=False, repr=False, compare=False)
    """The run's panel is on screen in the cell that returned this: showing it there again
    would repeat the panel (the first display is skipped)."""

    def summary(self) -> str:
        """One line: status, tokens, session, and where the answer is."""
        tokens = (
            f"{format_tokens(self.usage.get('input_tokens', 0))} in / "
            f"{format_tokens(self.usage.get('output_tokens', 0))} out"
        )
        error = f": {self.error}" if self.error else ""
        return (
            f"codelia run {self.status}{error} · {tokens} · session {self.session_id[:8]} · "
            f"the answer is .final_text ({len(self.final_text):,} characters)"
        )

    def _ipython_display_(self) -> None:
        from IPython.display import display

        if self.panel_shown:
            self.panel_shown = False  # `result` in a later cell shows the summary
            return
        display(
            {"text/plain": self.summary(), "text/html": f"<code>{escape(self.summary())}</code>"},
            raw=True,
        )

    def __repr__(self) -> str:
        text = self.final_text if len(self.final_text) <= 60 else self.final_text[:59] + "…"
        tokens = f"{self.usage.get('input_tokens', 0)} in/{self.usage.get('output_tokens', 0)} out"
        extra = f", error={self.error!r}" if self.error else ""
        return (
            f"RunResult(status={self.status!r}, session_id={self.session_id!r}, "
            f"tokens={tokens!r}, final_text={text!r}{extra})"
        )

    def __str__(self) -> str:
        return self.final_text


class RunInterrupted(KeyboardInterrupt):
    """The kernel interrupt stopped a blocking run; shown as one line, not a traceback.

    It stays a KeyboardInterrupt so *Run All* stops at this cell.
    """

    def __init__(self, session_id: str) -> None:
        super().__init__(
            "codelia run stopped by the kernel interrupt: history repaired and session "
            f"{session_id} saved; the next %%codelia cell continues it."
        )
        self.session_id = session_id

    def _render_traceback_(self) -> list[str]:
        # IPython shows these lines instead of a traceback through the magic and the runner.
        return [f"{type(self).__name__}: {self}"]


class RunNotFinishedError(CodeliaError, RuntimeError):
    """``RunHandle.result()`` was called while the background run is still going."""


class RunHandle:
    """A background run: awaitable (``await handle``), with ``.result()``, ``.cancel()``."""

    def __init__(self, run: LiveRun, task: asyncio.Task[RunResult]) -> None:
        # Not the run itself: IPython keeps a cell's value (Out, _), and the run's state must
        # go when the run ends; its ids and its cancel signal are all a handle needs.
        self.run_id = run.run_id
        self.session_id = run.session_id
        self._signal = run.signal
        self._task = task

    def done(self) -> bool:
        return self._task.done()

    def cancel(self) -> None:
        """Stop the run (history is repaired and the session saved)."""
        self._signal.cancel("stopped by the user")

    def add_done_callback(self, callback: Callable[[RunHandle], None]) -> None:
        """Call ``callback(handle)`` on the kernel's loop once the run has finished."""
        self._task.add_done_callback(lambda _task: callback(self))

    def result(self) -> RunResult:
        if not self._task.done():
            raise RunNotFinishedError(
                f"run {self.run_id} is still going; `await handle` in a cell, or call "
                ".result() once the panel shows it finished"
            )
        return self._task.result()

    def __await__(self) -> Generator[Any, None, RunResult]:
        return self._task.__await__()

    @property
    def status(self) -> str:
        """``running``, ``stopping`` (Stop requested), or the finished run's status."""
        if self._task.done():
            if self._task.cancelled() or self._task.exception() is not None:
                return "error"
            return self._task.result().status
        return "stopping" if self._signal.is_set() else "running"

    def __repr__(self) -> str:
        return f"<RunHandle {self.run_id} session={self.session_id} {self.status}>"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        # A displayed handle is saved with the notebook: say nothing that goes stale.
        printer.text(
            f"codelia background run {self.run_id[:8]} (session {self.session_id[:8]}): its "
            "panel shows how it goes; `await` the handle for the result."
        )
