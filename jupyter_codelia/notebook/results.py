"""What a ``%%codelia`` cell returns: the result of a turn and the handle of a background run."""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ..errors import CodeliaError

if TYPE_CHECKING:
    import asyncio

    from ._sink import ActiveRun

RunStatus = Literal["completed", "cancelled", "error"]


@dataclass
class RunResult:
    """What a finished turn returns: the value of a blocking ``%%codelia`` cell."""

    final_text: str
    status: RunStatus
    session_id: str
    run_id: str
    usage: dict[str, Any] = field(default_factory=dict)
    error: str | None = None

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


class RunNotFinishedError(CodeliaError, RuntimeError):
    """``RunHandle.result()`` was called while the background run is still going."""


class RunHandle:
    """A background run: awaitable (``await handle``), with ``.result()``, ``.cancel()``."""

    def __init__(self, run: ActiveRun, task: asyncio.Task[RunResult]) -> None:
        self._run = run
        self._task = task

    @property
    def run_id(self) -> str:
        return self._run.run_id

    @property
    def session_id(self) -> str:
        return self._run.session_id

    def done(self) -> bool:
        return self._task.done()

    def cancel(self) -> None:
        """Stop the run (history is repaired and the session saved)."""
        self._run.cancel("stopped by the user")

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

    def __repr__(self) -> str:
        state = "done" if self.done() else "running"
        return f"<RunHandle {self.run_id} session={self.session_id} {state}>"
