"""What a tool receives besides its input: cancellation, logging, time and dependencies.

``ToolContext`` is where a tool's dependencies are injected. A fresh context (and so a
fresh dependency cache) is made for every tool call with :meth:`ToolContext.fork`.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Generic, TypeVar, cast

from .._cancellation import CancelSignal

T = TypeVar("T")

logger = logging.getLogger("jupyter_codelia.tools")


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
