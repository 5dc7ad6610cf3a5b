"""Cancellation shared by every layer: a run's one-shot, thread-safe cancel flag.

The agent, the model providers (which abort a streamed reply) and the tools all watch the same
:class:`CancelSignal`, so it lives below all of them; ``jupyter_codelia.tools`` re-exports it.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable


class RunCancelled(asyncio.CancelledError):
    """Raised when a run's :class:`CancelSignal` fires; propagates like task cancellation."""


class CancelSignal:
    """A thread-safe, one-shot cancellation flag that coroutines can await.

    ``cancel()`` may be called from any thread (a kernel interrupt handler, a widget callback);
    waiters on any event loop are woken.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cancelled = False
        self.reason: str | None = None
        self._waiters: list[asyncio.Future[None]] = []
        self._callbacks: list[Callable[[], None]] = []

    def is_set(self) -> bool:
        return self._cancelled

    def cancel(self, reason: str | None = None) -> None:
        with self._lock:
            if self._cancelled:
                return
            self._cancelled = True
            self.reason = reason
            waiters, self._waiters = self._waiters, []
            callbacks, self._callbacks = self._callbacks, []
        for fut in waiters:
            loop = fut.get_loop()
            if not loop.is_closed():
                loop.call_soon_threadsafe(_resolve, fut)
        for callback in callbacks:
            callback()

    def add_callback(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback`` once on cancel (at once if already cancelled); returns a remover."""
        with self._lock:
            if not self._cancelled:
                self._callbacks.append(callback)
                return lambda: self._remove_callback(callback)
        callback()
        return lambda: None

    def _remove_callback(self, callback: Callable[[], None]) -> None:
        with self._lock:
            if callback in self._callbacks:
                self._callbacks.remove(callback)

    async def wait(self) -> None:
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        with self._lock:
            if self._cancelled:
                return
            self._waiters.append(fut)
        try:
            await fut
        finally:
            with self._lock:
                if fut in self._waiters:
                    self._waiters.remove(fut)

    def raise_if_cancelled(self) -> None:
        if self._cancelled:
            raise RunCancelled(self.reason or "run cancelled")


def _resolve(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)
