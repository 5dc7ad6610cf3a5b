"""The tool-set protocol: the tools an agent gets and the state they share with it.

A :class:`ToolSet` is a list of tools that also carries what the agent must wire for them:

* ``output_store``: where the agent saves every tool result, so a cut-off output's ref is one
  the cache-reader tools can read back (a ``cache.ToolOutputCacheStore``; typed loosely here
  because the cache package sits above this one, and checked by the agent);
* ``state_hooks``: state that lives beside the conversation and is saved in the session
  snapshot (the todo list), bound to the agent's session as it changes;
* ``sandbox_root``: the directory file paths are relative to (the agent tells the model).

Hosts ask the set for a hook by type (:meth:`ToolSet.hook`), never by probing attributes.
Adding a plain list to a ToolSet, in either order, keeps all of it.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Protocol, TypeVar

from ._define import Tool

HookT = TypeVar("HookT")
SetT = TypeVar("SetT", bound="ToolSet")


class SessionStateHook(Protocol):
    """State that lives beside the conversation and is saved in the snapshot's ``meta``."""

    def bind_session(self, session_id: str) -> None: ...

    def save_meta(self, session_id: str, meta: dict[str, Any]) -> None: ...

    def restore_meta(self, session_id: str, meta: dict[str, Any]) -> None: ...


class ToolSet(list[Tool]):
    """A list of tools plus the shared state the agent wires (see the module docstring)."""

    def __init__(
        self,
        tools: Iterable[Tool] = (),
        *,
        output_store: object | None = None,
        state_hooks: Iterable[SessionStateHook] = (),
        sandbox_root: Path | None = None,
    ) -> None:
        super().__init__(tools)
        self.output_store = output_store
        self.state_hooks: list[SessionStateHook] = list(state_hooks)
        self.sandbox_root = sandbox_root

    @classmethod
    def of(cls, tools: Iterable[Tool]) -> ToolSet:
        """``tools`` as a ToolSet: a copy of a ToolSet (same shared state), or a bare set."""
        if isinstance(tools, ToolSet):
            return tools.replacing(tools)
        return cls(tools)

    def names(self) -> list[str]:
        return [t.name for t in self]

    def hook(self, kind: type[HookT]) -> HookT | None:
        """The first state hook of type ``kind``, or None."""
        return next((h for h in self.state_hooks if isinstance(h, kind)), None)

    def replacing(self: SetT, tools: Iterable[Tool]) -> SetT:
        """The same set (its class and shared state) holding ``tools`` instead."""
        result = copy.copy(self)  # a shallow copy keeps subclass attributes without listing them
        result[:] = list(tools)
        result.state_hooks = list(self.state_hooks)
        return result

    # ``[my_tool] + standard_tools()`` must keep the shared state: Python tries a subclass's
    # reflected operator first, so both orders return a ToolSet.
    def __add__(self, other: Iterable[Tool]) -> ToolSet:  # type: ignore[override]
        return self.replacing([*self, *other])

    def __radd__(self, other: Iterable[Tool]) -> ToolSet:
        return self.replacing([*other, *self])
