"""Tie a tool's long-running work to the run's :class:`CancelSignal` (webfetch, search, shell)."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

from ..tools import CancelSignal, RunCancelled

T = TypeVar("T")


async def run_cancellable(work: Coroutine[Any, Any, T], signal: CancelSignal | None) -> T:
    """Await ``work``; if ``signal`` fires first, cancel it (cleanup runs), raise RunCancelled.

    Cancelling the calling task cancels ``work`` too, as awaiting any task does.
    """
    if signal is None:
        return await work
    if signal.is_set():
        work.close()
        signal.raise_if_cancelled()
    task = asyncio.ensure_future(work)
    loop = asyncio.get_running_loop()

    def cancel_task() -> None:
        # The signal may fire on any thread (a kernel interrupt, a widget callback).
        if not loop.is_closed():
            loop.call_soon_threadsafe(task.cancel)

    remove = signal.add_callback(cancel_task)
    try:
        return await task
    except asyncio.CancelledError:
        if signal.is_set():
            raise RunCancelled(signal.reason or "run cancelled") from None
        raise
    finally:
        remove()
