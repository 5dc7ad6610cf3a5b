"""What a tool receives besides its input: cancellation, logging, time and dependencies.

``ToolContext`` is where a tool's dependencies are injected. A fresh context (and so a
fresh dependency cache) is made for every tool call with :meth:`ToolContext.fork`.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
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
class _Shared:
    """The part of a context that every fork shares (never reassigned: not frozen only
    because a frozen dataclass's ``__init__`` costs six ``object.__setattr__`` calls)."""

    signal: CancelSignal | None
    logger: logging.Logger
    now: Callable[[], datetime]
    deps: dict[str, Any]
    overrides: dict[str, Callable[[], Any]]
    emit: EventSink | None


_new_object = object.__new__


class ToolContext:
    """Everything a tool may use besides its validated input.

    ``ToolContext()`` works with no arguments. ``overrides`` maps dependency ids to factories
    (sync or async) that replace ``DependencyKey.create``; resolved values are cached per context,
    and the executor forks a fresh context for every call.

    What forks share sits in one object, so a fork (one per tool call) points at it instead of
    copying every field.
    """

    __slots__ = ("_cache", "_locks", "_shared", "tool_call_id", "tool_name")

    def __init__(
        self,
        signal: CancelSignal | None = None,
        logger: logging.Logger = logger,
        now: Callable[[], datetime] = _utc_now,
        deps: dict[str, Any] | None = None,
        overrides: dict[str, Callable[[], Any]] | None = None,
        emit: EventSink | None = None,
        tool_call_id: str | None = None,
        tool_name: str | None = None,
    ) -> None:
        self._shared = _Shared(
            signal,
            logger,
            now,
            {} if deps is None else deps,
            {} if overrides is None else overrides,
            emit,
        )
        self.tool_call_id = tool_call_id
        self.tool_name = tool_name
        # Made on first resolve: most tool calls resolve nothing, and a fork happens per call.
        self._cache: dict[str, Any] | None = None
        self._locks: dict[str, asyncio.Lock] | None = None

    def __repr__(self) -> str:
        return (
            f"ToolContext(tool_call_id={self.tool_call_id!r}, tool_name={self.tool_name!r}, "
            f"signal={self.signal!r}, deps={sorted(self.deps)!r}, "
            f"overrides={sorted(self.overrides)!r})"
        )

    @property
    def signal(self) -> CancelSignal | None:
        return self._shared.signal

    @property
    def logger(self) -> logging.Logger:
        return self._shared.logger

    @property
    def now(self) -> Callable[[], datetime]:
        return self._shared.now

    @property
    def deps(self) -> dict[str, Any]:
        return self._shared.deps

    @property
    def overrides(self) -> dict[str, Callable[[], Any]]:
        return self._shared.overrides

    @property
    def emit(self) -> EventSink | None:
        return self._shared.emit

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
        child: ToolContext = _new_object(ToolContext)
        child._shared = self._shared
        child.tool_call_id = tool_call_id
        child.tool_name = tool_name
        child._cache = child._locks = None
        return child

    def check_cancelled(self) -> None:
        if self.signal is not None:
            self.signal.raise_if_cancelled()

    def send(self, event: Any) -> None:
        """Forward a front-end event (e.g. ``todos.updated``) when the host listens."""
        if self.emit is not None:
            self.emit(event)
