"""The contract between tool-output producers and the output cache store.

Producers (the agent for every ToolMessage, write/edit/apply_patch for full diffs, the shell for
its streams) depend only on this protocol, so they can be built and tested with any store.
"""

from __future__ import annotations

import re
from typing import Any, Protocol, runtime_checkable

from ..llm.messages import ToolOutputRef

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def normalize_ref_id(tool_call_id: str) -> str:
    """A ref id is the tool call id with every char outside ``[A-Za-z0-9_-]`` replaced by ``_``."""
    return _UNSAFE.sub("_", tool_call_id)


@runtime_checkable
class OutputWriter(Protocol):
    """Streams one entry to the store chunk by chunk without holding it in memory."""

    @property
    def ref_id(self) -> str: ...

    def write(self, text: str) -> None: ...

    def close(self) -> ToolOutputRef: ...

    def abort(self) -> None: ...


@runtime_checkable
class ToolOutputStore(Protocol):
    def save(
        self,
        *,
        tool_call_id: str,
        tool_name: str,
        content: str | list[Any],
        is_error: bool = False,
    ) -> ToolOutputRef: ...

    def writer(self, *, tool_call_id: str, tool_name: str) -> OutputWriter: ...
