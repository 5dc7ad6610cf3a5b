"""Typed exceptions of the tool framework; their messages are written for the model to act on."""

from __future__ import annotations

from ..errors import CodeliaError


class ToolError(CodeliaError):
    """Base class for errors a tool call reports back to the model."""


class ToolArgumentsError(ToolError):
    """The arguments were not valid JSON."""


class ToolInputError(ToolError):
    """The arguments were valid JSON but did not match the tool's input schema."""


class ToolDefinitionError(CodeliaError, TypeError):
    """A tool was defined incorrectly (a programming error, raised at definition time)."""


class TaskComplete(Exception):  # noqa: N818 - a signal, not an error (public name)
    """Raised by the ``done`` tool to end the run with ``final_message``."""

    def __init__(self, final_message: str | None = None) -> None:
        super().__init__("Task complete")
        self.final_message = final_message
