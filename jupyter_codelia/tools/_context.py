"""What a tool receives besides its input: cancellation, logging, time and dependencies.

``ToolContext`` is the dependency-injection receptacle of seed §2.2/§4. A fresh context (and so a
fresh dependency cache) is made for every tool call with :meth:`ToolContext.fork`.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Generic, TypeVar, cast

T = TypeVar("T")

logger = logging.getLogger("jupyter_codelia.tools")


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


@dataclass(frozen=True, eq=False)
class DependencyKey(Generic[T]):
    """A named dependency; ``create`` (sync or async) builds it unless an override is given."""

    id: str
    create: Callable[[], T | Awaitable[T]]


@dataclass(frozen=True)
class Depends:
    """Marks a ``@tool`` parameter as injected from ``key``: ``db: DB = Depends(DB_KEY)``."""

    key: DependencyKey[Any]


EventSink = Callable[[Any], None]


def _utc_now() -> datetime:
    return datetime.now(timezone.utc)


@dataclass(slots=True)
class ToolContext:
    """Everything a tool may use besides its validated input.

    ``ToolContext()`` works with no arguments. ``overrides`` maps dependency ids to factories
    (sync or async) that replace ``DependencyKey.create``; resolved values are cached per context,
    and the executor forks a fresh context for every call.
    """

    signal: CancelSignal | None = None
    logger: logging.Logger = field(default=logger)
    now: Callable[[], datetime] = field(default=_utc_now)
    deps: dict[str, Any] = field(default_factory=dict)
    overrides: dict[str, Callable[[], Any]] = field(default_factory=dict)
    emit: EventSink | None = None
    tool_call_id: str | None = None
    tool_name: str | None = None
    # Made on first resolve: most tool calls resolve nothing, and a fork happens per call.
    _cache: dict[str, Any] | None = field(default=None, repr=False)
    _locks: dict[str, asyncio.Lock] | None = field(default=None, repr=False)

    async def resolve(self, key: DependencyKey[T]) -> T:
        """The value of ``key``: an override, a value in ``deps``, or ``key.create()``; cached."""
        cache = self._cache
        if cache is None:
            cache = self._cache = {}
            self._locks = {}
        elif key.id in cache:
            return cast(T, cache[key.id])
        assert self._locks is not None
        lock = self._locks.setdefault(key.id, asyncio.Lock())
        async with lock:
            if key.id in cache:
                return cast(T, cache[key.id])
            factory = self.overrides.get(key.id)
            if factory is not None:
                value = factory()
            elif key.id in self.deps:
                value = self.deps[key.id]
            else:
                value = key.create()
            if inspect.isawaitable(value):
                value = await value
            cache[key.id] = value
            return cast(T, value)

    def fork(self, *, tool_call_id: str | None = None, tool_name: str | None = None) -> ToolContext:
        """A context sharing signal, logger, clock, deps, overrides and sink; empty cache."""
        return ToolContext(
            self.signal,
            self.logger,
            self.now,
            self.deps,
            self.overrides,
            self.emit,
            tool_call_id,
            tool_name,
        )

    def check_cancelled(self) -> None:
        if self.signal is not None:
            self.signal.raise_if_cancelled()

    def send(self, event: Any) -> None:
        """Forward a front-end event (e.g. ``todos.updated``) when the host listens."""
        if self.emit is not None:
            self.emit(event)
