"""The text file tools ``read``, ``read_line``, ``write`` and ``edit``,
and :func:`file_tools`, which builds the whole local file tool family around one sandbox.

Every tool resolves its sandbox through the ``"sandbox-context"`` dependency (defaulting to the
sandbox given to :func:`file_tools`), so a ``ToolContext`` override can swap it.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from pydantic import BaseModel, Field

from .._text import clip_utf8, compact_json, describe_exc, line_prefix, split_lines, utf8_len
from ..cache.protocol import ToolOutputStore
from ..llm.messages import DocumentPart, TextPart
from ..tools import DependencyKey, FunctionTool, JsonResult, ToolContext, define_tool
from ._edit_match import Match, MatchMode, explain_no_match, find_matches
from ._fileio import (
    ExpectedHash,
    check_expected_hash,
    is_crlf_text,
    metadata_footer,
    read_text,
    resolve_in_sandbox,
    write_text,
)
from ._sandbox import Sandbox, sandbox_key
from .diff import diff_payload, unified_diff

DEFAULT_READ_LIMIT = 2000
DEFAULT_MAX_LINE_LENGTH = 1000
DEFAULT_MAX_READ_BYTES = 65536
MAX_PDF_BYTES = 20 * 1024 * 1024
"""Largest PDF ``read`` attaches as a document (the API takes requests up to 32 MB, base64
grows a file by a third, and the session keeps it)."""
READ_LINE_MAX_LIMIT = 100_000


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None:
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        return default
    return value if value > 0 else default


# --- read --------------------------------------------------------------------------------------

READ_DESCRIPTION = (
    "Read a text file as a bounded preview with line numbers. offset is the 0-based first line, "
    "limit the number of lines (default 2000). Output is truncated at 64 KiB; lines longer than "
    "1000 characters are clipped (use read_line for the full line). The result ends with "
    "[read_metadata] content_sha256=<hash> of the whole file: pass it as expected_hash to "
    "write/edit to make sure the file did not change in between. A PDF file is attached as a "
    "document you can read (up to 20 MiB)."
)


class ReadInput(BaseModel):
    file_path: str = Field(description="Path of the file, relative to the working directory.")
    offset: int = Field(0, ge=0, description="0-based index of the first line to show.")
    limit: int = Field(DEFAULT_READ_LIMIT, gt=0, description="Maximum number of lines to show.")


def _load(path: Path, file_path: str) -> str | tuple[str]:
    """The file text, or a 1-tuple with the text result for a missing/dir/unreadable file."""
    try:
        is_dir = path.is_dir()
        exists = is_dir or path.exists()
    except OSError:
        exists, is_dir = False, False
    if not exists:
        return (f"File not found: {file_path}",)
    if is_dir:
        return (f"Path is a directory: {file_path}",)
    try:
        return read_text(path)
    except Exception as exc:
        return (f"Error reading file: {describe_exc(exc)}",)


def render_read(content: str, file_path: str, offset: int, limit: int) -> str:
    """The windowed, line-numbered view of ``content``, without the footer."""
    lines = split_lines(content)
    if offset >= len(lines):
        return f"Offset exceeds output length: {file_path}"
    max_line = _env_int("CODELIA_READ_MAX_LINE_LENGTH", DEFAULT_MAX_LINE_LENGTH)
    max_bytes = _env_int("CODELIA_READ_MAX_BYTES", DEFAULT_MAX_READ_BYTES)
    kept: list[str] = []
    used = 0
    clipped: list[int] = []
    truncated_by_bytes = False
    for index in range(offset, min(len(lines), offset + limit)):
        number = index + 1
        line = lines[index]
        if len(line) > max_line:
            line = line[:max_line] + "..."
            clipped.append(number)
        prefix = line_prefix(number)
        numbered = prefix + line
        size = utf8_len(numbered) + (1 if kept else 0)
        if used + size > max_bytes:
            if not kept:
                budget = max_bytes - utf8_len(prefix)
                short = (
                    clip_utf8(line, budget - 3) + "..." if budget > 3 else clip_utf8(line, budget)
                )
                if short:
                    kept.append(prefix + short)
                    clipped.append(number)
            truncated_by_bytes = True
            break
        kept.append(numbered)
        used += size
    text = "\n".join(kept)
    if truncated_by_bytes or len(lines) > offset + len(kept):
        reason = (
            f"[output truncated at {max_bytes} bytes]"
            if truncated_by_bytes
            else "Output has more lines."
        )
        text += f"\n\n{reason} Use offset to read beyond line {offset + len(kept)}."
    unique = sorted(set(clipped))
    if unique:
        listed = "many" if len(unique) > 3 else ", ".join(str(n) for n in unique)
        text += f"\n\n[truncated lines: {listed}]"
        call = compact_json(
            {
                "file_path": file_path,
                "line_number": clipped[0],
                "char_offset": 0,
                "char_limit": 10000,
            }
        )
        text += f"\n\nFor full long-line content, use read_line({call})."
    return text


def _read_pdf(path: Path, file_path: str) -> list[TextPart | DocumentPart] | str | None:
    """A ``.pdf`` file as a document part the model reads itself; None when it is no PDF."""
    with path.open("rb") as handle:
        if handle.read(5) != b"%PDF-":
            return None
    size = path.stat().st_size
    if size > MAX_PDF_BYTES:
        return (
            f"{file_path} is a {size:,}-byte PDF, over the {MAX_PDF_BYTES:,}-byte limit for "
            "attaching it. Extract the pages you need to a smaller PDF or to text first "
            "(e.g. with pypdf in the python tool)."
        )
    document = DocumentPart.from_bytes(path.read_bytes())
    return [TextPart(text=f"{file_path} ({size:,} bytes) is attached as a PDF document."), document]


def _make_read(key: DependencyKey[Sandbox]) -> FunctionTool:
    async def read(params: ReadInput, ctx: ToolContext) -> str | list[TextPart | DocumentPart]:
        _, path = await resolve_in_sandbox(ctx, key, params.file_path)

        def work() -> str | list[TextPart | DocumentPart]:
            if path.suffix.lower() == ".pdf" and path.is_file():
                pdf = _read_pdf(path, params.file_path)
                if pdf is not None:
                    return pdf
            loaded = _load(path, params.file_path)
            if isinstance(loaded, tuple):
                return loaded[0]
            body = render_read(loaded, params.file_path, params.offset, params.limit)
            if body.startswith("Offset exceeds output length: "):
                return body
            return body + metadata_footer(loaded)

        return await asyncio.to_thread(work)

    return define_tool(name="read", description=READ_DESCRIPTION, input=ReadInput, execute=read)


# --- read_line ---------------------------------------------------------------------------------

READ_LINE_DESCRIPTION = (
    "Read one physical line of a text file in character windows (grapheme clusters), for lines "
    "too long for read. line_number is 1-based; char_offset/char_limit (default 0/10000, max "
    "100000) pick the window; the result says how to continue. Ends with the file's "
    "[read_metadata] content_sha256."
)


class ReadLineInput(BaseModel):
    file_path: str = Field(description="Path of the file, relative to the working directory.")
    line_number: int = Field(gt=0, description="1-based line number.")
    char_offset: int = Field(0, ge=0, description="First character (grapheme) to return.")
    char_limit: int = Field(
        10000, gt=0, le=READ_LINE_MAX_LIMIT, description="Maximum characters to return."
    )


def _make_read_line(key: DependencyKey[Sandbox]) -> FunctionTool:
    async def read_line(params: ReadLineInput, ctx: ToolContext) -> str:
        import regex

        _, path = await resolve_in_sandbox(ctx, key, params.file_path)

        def work() -> str:
            loaded = _load(path, params.file_path)
            if isinstance(loaded, tuple):
                return loaded[0]
            lines = split_lines(loaded)
            number = params.line_number
            if number > len(lines):
                return f"Line number out of range: {number} (total {len(lines)})"
            graphemes = regex.findall(r"\X", lines[number - 1])
            length = len(graphemes)
            offset = params.char_offset
            if offset > length:
                return f"char_offset out of range: {offset} (line length {length})"
            end = min(length, offset + params.char_limit)
            text = (
                f"line_number={number} line_length={length} "
                f"char_range={offset}..{max(end - 1, offset - 1)}"
                f"\n{''.join(graphemes[offset:end])}"
            )
            if end < length:
                call = compact_json(
                    {
                        "file_path": params.file_path,
                        "line_number": number,
                        "char_offset": end,
                        "char_limit": params.char_limit,
                    }
                )
                text += f"\n\nUse char_offset={end} to continue.\nread_line({call})"
            return text + metadata_footer(loaded)

        return await asyncio.to_thread(work)

    return define_tool(
        name="read_line", description=READ_LINE_DESCRIPTION, input=ReadLineInput, execute=read_line
    )


# --- write -------------------------------------------------------------------------------------

WRITE_DESCRIPTION = (
    "Write UTF-8 text to a file, replacing all existing content and creating parent directories. "
    "Pass expected_hash (content_sha256 from read) when overwriting a file you read, so a "
    "concurrent change is not lost. Returns a summary and a unified diff."
)


class WriteInput(BaseModel):
    file_path: str = Field(description="Path of the file, relative to the working directory.")
    content: str = Field(description="The complete new file content.")
    expected_hash: ExpectedHash


def _make_write(key: DependencyKey[Sandbox], store: ToolOutputStore | None) -> FunctionTool:
    async def write(params: WriteInput, ctx: ToolContext) -> JsonResult | str:
        _, path = await resolve_in_sandbox(ctx, key, params.file_path)

        def work() -> JsonResult | str:
            file_path = params.file_path
            try:
                exists = path.exists() or path.is_symlink()
                before = read_text(path) if exists else ""
                check_expected_hash(file_path, params.expected_hash, exists=exists, content=before)
                write_text(path, params.content)
            except Exception as exc:
                return f"Error writing file: {describe_exc(exc)}"
            placeholder = f"--- {file_path}\n+++ {file_path}\n@@ -0,0 +0,0 @@"
            payload = diff_payload(
                unified_diff(file_path, before, params.content),
                tool_name="write",
                store=store,
                placeholder=placeholder,
            )
            return JsonResult(
                value={
                    "summary": f"Wrote {utf8_len(params.content)} bytes to {file_path}",
                    **payload,
                    "file_path": file_path,
                }
            )

        return await asyncio.to_thread(work)

    return define_tool(name="write", description=WRITE_DESCRIPTION, input=WriteInput, execute=write)


# --- edit --------------------------------------------------------------------------------------

EDIT_DESCRIPTION = (
    "Replace text in a file. old_string must match exactly one place (or set replace_all); "
    'old_string "" replaces the whole file (creating it if missing). match_mode "auto" '
    "(default) tries exact, then line_trimmed (whole lines, ignoring leading/trailing whitespace "
    "and CRLF), then block_anchor (first and last lines anchor a block of 3+ lines). new_string "
    "is inserted as written (in a CRLF file its line breaks become CRLF). expected_replacements "
    "guards the count; dry_run previews the diff "
    "without writing; expected_hash (from read) guards against concurrent changes."
)


class EditInput(BaseModel):
    file_path: str = Field(description="Path of the file, relative to the working directory.")
    old_string: str = Field(description='Text to replace; "" replaces the whole file.')
    new_string: str = Field(description="Replacement text, inserted as written.")
    replace_all: bool = Field(False, description="Replace every match instead of exactly one.")
    match_mode: MatchMode = Field("auto", description="How old_string is matched.")
    expected_replacements: int | None = Field(
        None, ge=0, description="Fail unless exactly this many replacements are made."
    )
    dry_run: bool = Field(False, description="Only preview the change (no write).")
    expected_hash: ExpectedHash


def _non_overlapping(matches: list[Match]) -> list[Match]:
    chosen: list[Match] = []
    for match in sorted(matches, key=lambda m: m.start):
        if not chosen or match.start >= chosen[-1].end:
            chosen.append(match)
    return chosen


def _replacement_for(content: str, match: Match, new_string: str, crlf: bool) -> str:
    """``new_string`` with CRLF line endings when the file consistently uses them.

    Keeping a CRLF file CRLF is what a user expects; a line-based match of a CRLF file ends with
    the line's ``\\r``, which the replacement then has to carry too.
    """
    if not crlf:
        return new_string
    text = new_string.replace("\r\n", "\n").replace("\n", "\r\n")
    if content[match.start : match.end].endswith("\r") and not text.endswith("\r"):
        text += "\r"
    return text


def apply_edit(
    content: str,
    old_string: str,
    new_string: str,
    *,
    replace_all: bool,
    mode: MatchMode,
    file_path: str,
) -> tuple[str, int, str]:
    """``(new content, replacements, mode used)``; raises ``ValueError`` with model-facing texts."""
    matches, used = find_matches(content, old_string, mode)
    if not matches:
        explanation = explain_no_match(content, old_string, mode)
        raise ValueError(f"String not found in {file_path}\n{explanation}")
    if len(matches) > 1 and not replace_all:
        raise ValueError(f"Multiple matches ({len(matches)}) found in {file_path}")
    chosen = _non_overlapping(matches) if replace_all else matches[:1]
    crlf = is_crlf_text(content)
    pieces: list[str] = []
    position = 0
    for match in chosen:
        pieces.append(content[position : match.start])
        pieces.append(_replacement_for(content, match, new_string, crlf))
        position = match.end
    pieces.append(content[position:])
    return "".join(pieces), len(chosen), used


def _make_edit(key: DependencyKey[Sandbox], store: ToolOutputStore | None) -> FunctionTool:
    async def edit(params: EditInput, ctx: ToolContext) -> JsonResult:
        _, path = await resolve_in_sandbox(ctx, key, params.file_path)

        def work() -> JsonResult:
            file_path = params.file_path
            old, new = params.old_string, params.new_string
            if old != "" and old == new:
                return JsonResult(
                    value={
                        "summary": (
                            f"No changes needed in {file_path} (old_string equals new_string)"
                        ),
                        "replacements": 0,
                        "match_mode": "exact",
                        "diff": "",
                        "file_path": file_path,
                    }
                )
            try:
                if path.is_dir():
                    raise IsADirectoryError(file_path)
                content, exists = read_text(path), True
            except Exception:
                if old != "":
                    raise ValueError(f"File not found: {file_path}") from None
                content, exists = "", False
            check_expected_hash(file_path, params.expected_hash, exists=exists, content=content)
            if old == "":
                updated, count, used = new, (0 if new == content else 1), "exact"
            else:
                updated, count, used = apply_edit(
                    content,
                    old,
                    new,
                    replace_all=params.replace_all,
                    mode=params.match_mode,
                    file_path=file_path,
                )
            expected = params.expected_replacements
            if expected is not None and expected != count:
                raise ValueError(f"Expected {expected} replacements, found {count}")
            payload = diff_payload(
                unified_diff(file_path, content, updated), tool_name="edit", store=store
            )

            def result(summary: str) -> JsonResult:
                return JsonResult(
                    value={
                        "summary": summary,
                        "replacements": count,
                        "match_mode": used,
                        **payload,
                        "file_path": file_path,
                    }
                )

            if params.dry_run:
                return result(f"Preview: {count} replacement(s) in {file_path}")
            if updated == content:
                return result(f"No changes needed in {file_path}")
            try:
                write_text(path, updated)
            except Exception as exc:
                raise OSError(f"Error editing file: {describe_exc(exc)}") from None
            return result(f"Replaced {count} occurrence(s) in {file_path}")

        return await asyncio.to_thread(work)

    return define_tool(name="edit", description=EDIT_DESCRIPTION, input=EditInput, execute=edit)


# --- the family --------------------------------------------------------------------------------


def file_tools(sandbox: Sandbox, store: ToolOutputStore | None = None) -> list[FunctionTool]:
    """read, read_line, write, edit, apply_patch, grep, glob and view_image around ``sandbox``.

    ``store`` keeps full diffs that are too long for the inline preview (``diff_cache_id``).
    """
    from .file_search import make_glob_tool, make_grep_tool
    from .images import make_view_image_tool
    from .patch import make_apply_patch_tool

    key = sandbox_key(sandbox)
    return [
        _make_read(key),
        _make_read_line(key),
        _make_write(key, store),
        _make_edit(key, store),
        make_apply_patch_tool(key, store),
        make_grep_tool(key),
        make_glob_tool(key),
        make_view_image_tool(key),
    ]


__all__ = ["file_tools", "render_read"]
