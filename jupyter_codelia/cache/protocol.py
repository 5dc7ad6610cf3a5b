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
    """A ref id is the tool call id with every char outside ``[A-Za-z0-9_-]`` replaced by ``_``
    (the store adds ``-2``, ``-3``, ... when an entry of that id exists already)."""
    return _UNSAFE.sub("_", tool_call_id)


_REF_NOTE = re.compile(r"\[tool output (?:truncated|trimmed); ref=([A-Za-z0-9_-]+)\]")


def ref_note(ref_id: str, *, trimmed: bool = False) -> str:
    """The note that ends a cut tool output (or replaces a trimmed one) in the model's context:
    the ref id it reads the rest back with."""
    return f"[tool output {'trimmed' if trimmed else 'truncated'}; ref={ref_id}]"


def refs_in(text: str) -> list[str]:
    """The ref ids the :func:`ref_note` notes in ``text`` name, in order: what a reader of the
    output (the model, or a script playing it) passes to the ``tool_output_cache*`` tools."""
    return _REF_NOTE.findall(text)


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
