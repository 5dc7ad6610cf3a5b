"""The three retrieval tools over the tool-output cache.

``tool_output_cache`` reads numbered lines, ``tool_output_cache_line`` reads a character window
of one line, ``tool_output_cache_grep`` searches. Expected failures (unknown or evicted ref,
invalid regex, out-of-range positions) come back as plain text the model can act on, never as
errors. The store does file I/O and may run ripgrep, so calls run in a worker thread.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from .._text import describe_exc
from ..cache._limits import DEFAULT_CHAR_LIMIT, DEFAULT_MAX_MATCHES, MAX_CHAR_LIMIT
from ..tools import FunctionTool, ToolContext, ToolRisk

if TYPE_CHECKING:
    from ..cache import ToolOutputCacheStore

_REF_HELP = (
    "Reference id of a cached tool output, as shown in '[tool output truncated; ref=<id>]' or "
    "'[tool output trimmed; ref=<id>]'."
)

# The page and grep readers' output is already a bounded view of the cache: never cut again
# (the line reader's is not bounded, so it is cut like any other output).
BOUNDED_VIEW = ToolRisk(kind="read_only", output_cut=False)


class ToolOutputCacheInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    ref_id: str = Field(description=_REF_HELP)
    offset: int | None = Field(
        default=None, ge=0, description="0-based line offset to start from (default 0)."
    )
    limit: int | None = Field(
        default=None,
        gt=0,
        description="Maximum number of lines to return (default: all, within the byte limit).",
    )


class ToolOutputCacheLineInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    ref_id: str = Field(description=_REF_HELP)
    line_number: int = Field(gt=0, description="1-based line number.")
    char_offset: int | None = Field(
        default=None,
        ge=0,
        description="0-based character offset in the line (characters = grapheme clusters; "
        "default 0).",
    )
    char_limit: int | None = Field(
        default=None,
        gt=0,
        description=f"Maximum characters to return (default {DEFAULT_CHAR_LIMIT}; values above "
        f"{MAX_CHAR_LIMIT} are clamped).",
    )


class ToolOutputCacheGrepInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    ref_id: str = Field(description=_REF_HELP)
    pattern: str = Field(
        description="Text to find in each line; a regular expression when regex is true."
    )
    regex: bool | None = Field(
        default=None,
        description="Treat pattern as a Rust-syntax regex, as in ripgrep (default false: "
        "literal text).",
    )
    before: int | None = Field(
        default=None, ge=0, description="Lines of context before each match (default 0)."
    )
    after: int | None = Field(
        default=None, ge=0, description="Lines of context after each match (default 0)."
    )
    max_matches: int | None = Field(
        default=None,
        gt=0,
        description=f"Maximum matches to return (default {DEFAULT_MAX_MATCHES}).",
    )


_READ_DESCRIPTION = (
    "Read a cached tool output by its ref id: numbered lines from a 0-based offset. Long lines "
    "are clipped and the output is bounded; follow the hints to continue (offset to read more "
    "lines, tool_output_cache_line for the rest of a long line)."
)
_LINE_DESCRIPTION = (
    "Read one line of a cached tool output by 1-based line number, as a character window "
    "(char_offset, char_limit; characters are grapheme clusters). Use it for lines that "
    "tool_output_cache clipped; the result says how to continue."
)
_GREP_DESCRIPTION = (
    "Search a cached tool output by its ref id and return matching lines with line numbers and "
    "optional context. Matching is per line and case-sensitive. By default the pattern is "
    "literal text; with regex=true it uses Rust regex syntax (as in ripgrep): (?i) for "
    "case-insensitive, \\d \\w \\s \\b, classes, alternation, counted repetition; no "
    "look-around and no backreferences. A pattern cannot match across lines."
)


def output_cache_tools(store: Any) -> list[FunctionTool]:
    """``tool_output_cache``, ``tool_output_cache_line`` and ``tool_output_cache_grep`` over
    ``store`` (a :class:`~jupyter_codelia.cache.ToolOutputCacheStore` or any object with the
    same ``read``/``read_line``/``grep`` methods; a missing method makes its tool say so)."""

    async def read(params: ToolOutputCacheInput, ctx: ToolContext) -> str:
        method = getattr(store, "read", None)
        if method is None:
            return "tool_output_cache is unavailable."
        try:
            return await asyncio.to_thread(method, params.ref_id, params.offset or 0, params.limit)
        except Exception as exc:
            return f"Error reading tool output cache: {describe_exc(exc)}"

    async def read_line(params: ToolOutputCacheLineInput, ctx: ToolContext) -> str:
        method = getattr(store, "read_line", None)
        if method is None:
            return "tool_output_cache_line is unavailable."
        limit = DEFAULT_CHAR_LIMIT if params.char_limit is None else params.char_limit
        try:
            return await asyncio.to_thread(
                method,
                params.ref_id,
                params.line_number,
                params.char_offset or 0,
                min(max(limit, 1), MAX_CHAR_LIMIT),
            )
        except Exception as exc:
            return f"Error reading cache line: {describe_exc(exc)}"

    async def grep(params: ToolOutputCacheGrepInput, ctx: ToolContext) -> str:
        method = getattr(store, "grep", None)
        if method is None:
            return "tool_output_cache_grep is unavailable."
        try:
            return await asyncio.to_thread(
                lambda: method(
                    params.ref_id,
                    params.pattern,
                    regex=bool(params.regex),
                    before=params.before or 0,
                    after=params.after or 0,
                    max_matches=params.max_matches or DEFAULT_MAX_MATCHES,
                )
            )
        except Exception as exc:
            return f"Error searching tool output cache: {describe_exc(exc)}"

    return [
        CacheReaderTool(
            store,
            name="tool_output_cache",
            description=_READ_DESCRIPTION,
            input=ToolOutputCacheInput,
            execute=read,
            risk=BOUNDED_VIEW,
        ),
        CacheReaderTool(
            store,
            name="tool_output_cache_line",
            description=_LINE_DESCRIPTION,
            input=ToolOutputCacheLineInput,
            execute=read_line,
            risk=ToolRisk(kind="read_only"),
        ),
        CacheReaderTool(
            store,
            name="tool_output_cache_grep",
            description=_GREP_DESCRIPTION,
            input=ToolOutputCacheGrepInput,
            execute=grep,
            risk=BOUNDED_VIEW,
        ),
    ]


class CacheReaderTool(FunctionTool):
    """A tool that reads ``output_store``; it carries the store so that an agent given these
    tools in any list (``[my_tool, *standard_tools()]``) saves outputs where they can be read."""

    __slots__ = ("output_store",)

    def __init__(self, output_store: ToolOutputCacheStore, **definition: Any) -> None:
        super().__init__(**definition)
        self.output_store = output_store
