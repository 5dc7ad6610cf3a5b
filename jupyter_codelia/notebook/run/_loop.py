"""The event loop blocking turns run on: one per kernel, on a thread of its own, kept between turns.

A blocking turn cannot use the kernel's loop (the cell's thread is waiting in it), so it runs
elsewhere. A fresh loop per turn (``asyncio.run`` on a new thread) cost every turn a thread, a
selector, the loop's executor threads and, because SDK clients belong to the loop they were made
on, a new HTTP client with its connection pool and TLS context; each new thread also allocates
in malloc arenas of its own, and the kernel's memory grew by a fraction of a megabyte a turn
that was never given back. Here the loop, its executor and the clients live as long as the
kernel; each turn is a task on it.

A turn ends the way ``asyncio.run`` would end it: tasks it left behind are cancelled and
awaited, so nothing of a finished turn keeps running or stays referenced by the loop.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from concurrent.futures import Future
from typing import Any, TypeVar

T = TypeVar("T")


class TurnLoop:
    """A daemon thread running one event loop; :meth:`submit` runs a turn's coroutine on it."""

    def __init__(self, name: str = "codelia-turns") -> None:
        self._name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()

    def _running_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._loop.is_closed():
                loop = asyncio.new_event_loop()
                started = threading.Event()

                def serve() -> None:
                    asyncio.set_event_loop(loop)
                    loop.call_soon(started.set)
                    loop.run_forever()

                threading.Thread(target=serve, name=self._name, daemon=True).start()
                started.wait()
                self._loop = loop
            return self._loop

    def submit(self, coro: Coroutine[Any, Any, T]) -> Future[T]:
        """Run ``coro`` on the loop as a turn; the future has its result once the tasks it
        started are gone too."""
        return asyncio.run_coroutine_threadsafe(_turn(coro), self._running_loop())


async def _turn(coro: Coroutine[Any, Any, T]) -> T:
    before = asyncio.all_tasks()
    try:
        return await coro
    finally:
        await _cancel_left_behind(before)


async def _cancel_left_behind(before: set[asyncio.Task[Any]]) -> None:
    """Cancel and await the tasks started since ``before`` (not this one), as ``asyncio.run``
    does at its end; their errors are theirs (retrieved, not raised)."""
    current = asyncio.current_task()
    left = [t for t in asyncio.all_tasks() if t not in before and t is not current]
    for task in left:
        task.cancel()
    if left:
        await asyncio.gather(*left, return_exceptions=True)
