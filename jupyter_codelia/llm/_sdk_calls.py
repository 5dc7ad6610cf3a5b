"""What every SDK-backed provider needs around a call: a client per event loop, cancellation.

Pooled connections belong to the event loop that opened them, so a chat used from a second
``asyncio.run(...)`` needs a fresh client (one chat model serves every turn of its agent, on
whatever loop the turn runs); and a cancel signal (possibly fired from another
thread) must cancel exactly the one streaming call it was given. Both SDKs (anthropic, openai)
sit on httpx2, so one helper serves both.

A client is released by whoever holds it, never left to the SDK's ``__del__``: that schedules
``aclose()`` on whatever loop happens to run when the garbage collector gets there, and when
the client's own loop is already closed the close fails and asyncio prints "Task exception was
never retrieved ... Event loop is closed" into the person's cell.
"""

from __future__ import annotations

import asyncio
import os
import weakref
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from .._cancellation import CancelSignal

ClientT = TypeVar("ClientT")
ResultT = TypeVar("ResultT")

# Close tasks scheduled on a client's own loop, kept referenced until they finish.
_closing: set[asyncio.Future[Any]] = set()


class _Held:
    """The client in use and the loop it belongs to; the chat model's finalizer releases it
    (it must not reference the :class:`LoopBoundClient` itself, or that would never die)."""

    def __init__(self) -> None:
        self.client: Any = None
        self.loop: asyncio.AbstractEventLoop | None = None

    def release(self) -> None:
        client, loop = self.client, self.loop
        self.client = self.loop = None
        if client is not None:
            release_client(client, loop)


class LoopBoundClient(Generic[ClientT]):
    """An SDK client built on first use and rebuilt when used from another event loop, or when
    the environment it was built from changed.

    ``build`` makes the client. ``environment`` names the variables the build reads (the SDK's
    ``*_API_KEY`` and ``*_BASE_URL``): a key set with ``%env`` after the chat model was made is
    picked up by its next call. Their values are only compared in memory, never kept elsewhere.
    ``owned=False`` means the caller gave us the client: it is kept whatever the loop or the
    environment (it is theirs to manage). An owned client is released when it is replaced and
    when this object is collected (its chat model was dropped): closed on its own loop if that
    still runs, else retired quietly (see :func:`release_client`).
    """

    def __init__(
        self, build: Callable[[], ClientT], *, owned: bool, environment: tuple[str, ...] = ()
    ) -> None:
        self._build = build
        self._owned = owned
        self._environment = environment
        self._held = _Held()
        self._built_from: tuple[str | None, ...] = ()
        if owned:
            weakref.finalize(self, self._held.release)

    def get(self, loop: asyncio.AbstractEventLoop | None) -> ClientT:
        held = self._held
        moved = held.loop is not None and loop is not None and loop is not held.loop
        current = tuple(os.environ.get(name) for name in self._environment)
        stale = moved or current != self._built_from
        if held.client is not None and stale and self._owned:
            held.release()
        if held.client is None:
            held.client = self._build()
            held.loop = loop
            self._built_from = current
        elif held.loop is None:
            held.loop = loop
        client: ClientT = held.client
        return client


def release_client(client: Any, loop: asyncio.AbstractEventLoop | None) -> None:
    """Close ``client`` on ``loop``, the loop its connections belong to, when that loop still
    runs (from any thread); otherwise retire it (:func:`retire_client`)."""
    if loop is not None and loop.is_running():

        def close_there() -> None:
            task = loop.create_task(client.close())
            _closing.add(task)
            task.add_done_callback(_closed)

        try:
            loop.call_soon_threadsafe(close_there)
            return
        except RuntimeError:  # the loop closed meanwhile
            pass
    retire_client(client)


def _closed(task: asyncio.Future[Any]) -> None:
    _closing.discard(task)
    if not task.cancelled():
        task.exception()  # retrieved: a failed close of a dropped client is not news


def retire_client(client: Any) -> None:
    """Drop a client whose event loop is gone without the SDK's ``__del__`` trying to close
    it on the current loop (that fails loudly with "Event loop is closed"). Its sockets are
    closed when their transports are collected. Uses httpx2's client state: if that ever
    changes, the only cost is the SDK's noisy log line."""
    try:
        from httpx2._client import ClientState

        client._client._state = ClientState.CLOSED
    except Exception:  # pragma: no cover - a different httpx2 layout
        pass


async def run_cancellable(
    call: Coroutine[Any, Any, ResultT], signal: CancelSignal | None
) -> ResultT:
    """Await ``call`` in its own task so ``signal`` cancels exactly it (closing its HTTP
    response); raises ``RunCancelled`` when the signal fired. Cancelling the caller's task
    cancels the inner task the same way."""
    from .._cancellation import RunCancelled

    loop = asyncio.get_running_loop()
    task = loop.create_task(call)

    def cancel_task() -> None:
        try:
            loop.call_soon_threadsafe(task.cancel)
        except RuntimeError:  # the loop closed meanwhile: nothing left to cancel
            pass

    remove_callback = signal.add_callback(cancel_task) if signal is not None else None
    try:
        return await task
    except asyncio.CancelledError:
        if signal is not None and signal.is_set():
            raise RunCancelled(signal.reason or "run cancelled") from None
        raise
    finally:
        if remove_callback is not None:
            remove_callback()


__all__ = ["LoopBoundClient", "release_client", "retire_client", "run_cancellable"]
