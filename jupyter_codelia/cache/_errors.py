"""Typed errors of the tool-output cache store.

Every message says what happened to which ref id and what to do next, because the retrieval
tools show these texts to the model verbatim (``Error reading tool output cache: <Class>: <msg>``).
"""

from __future__ import annotations

from ..errors import CodeliaError


class ToolOutputCacheError(CodeliaError):
    """Base class of every error raised by the tool-output cache store."""


class ToolOutputNotFoundError(ToolOutputCacheError, LookupError):
    def __init__(self, ref_id: str) -> None:
        self.ref_id = ref_id
        shown = ref_id or "(empty)"
        super().__init__(
            f"Cached output {shown} not found: no tool output with this ref id is stored. "
            "Use the exact ref id shown in a '[tool output truncated; ref=...]' or "
            "'[tool output trimmed; ref=...]' note."
        )


class ToolOutputEvictedError(ToolOutputCacheError, LookupError):
    def __init__(self, ref_id: str) -> None:
        self.ref_id = ref_id
        super().__init__(
            f"Cached output {ref_id} was evicted from the tool output cache to keep it under its "
            "size cap (least recently used entries go first). Run the tool again to reproduce it."
        )


class ToolOutputCorruptedError(ToolOutputCacheError):
    def __init__(self, ref_id: str, problem: str) -> None:
        self.ref_id = ref_id
        super().__init__(
            f"Cached output {ref_id} is corrupted: {problem}. Run the tool again to reproduce it."
        )


class InvalidPatternError(ToolOutputCacheError, ValueError):
    """A grep pattern the regex engine rejects (message includes the engine's explanation)."""


class ToolOutputTooLargeError(ToolOutputCacheError):
    """The entry is too large for a whole-content read; read it by lines or grep it instead."""


class WriterClosedError(ToolOutputCacheError):
    """``write`` or ``close`` on an output writer that was already closed or aborted."""
