"""The text file tools ``read``, ``read_line``, ``write`` and ``edit``,
and :func:`file_tools`, which builds the whole local file tool family around one sandbox.

Every tool resolves its sandbox through the ``"sandbox-context"`` dependency (defaulting to the
sandbox given to :func:`file_tools`), so a ``ToolContext`` override can swap it.
"""

from __future__ import annotations

import asyncio
import errno
import os
import stat
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from ..._text import clip_utf8, compact_json, describe_exc, line_prefix, split_lines, utf8_len
from ...cache.protocol import ToolOutputStore
from ...llm.messages import DocumentPart, TextPart
from ...tools import (
    DependencyKey,
    FunctionTool,
    JsonResult,
    ToolContext,
    ToolReturn,
    ToolRisk,
    define_tool,
)
from .._fdpath import Entry, Walker
from .._fileio import (
    ExpectedHash,
    SandboxPathError,
    check_expected_hash,
    is_crlf_text,
    locate,
    metadata_footer,
    path_arg,
    read_utf8,
    resolve_in_sandbox,
    string_arg,
    write_text,
)
from .._sandbox import Sandbox, sandbox_key
from ..diff import define_file_change_tool, diff_data, diff_payload, unified_diff
from ..patch._write import recover_journals
from ._edit_match import Match, MatchMode, explain_no_match, find_matches
from ._filescan import FileFacts, GraphemeWindow, LineWindow, scan_file

DEFAULT_READ_LIMIT = 2000
DEFAULT_MAX_LINE_LENGTH = 1000
DEFAULT_MAX_READ_BYTES = 65536
MAX_PDF_BYTES = 20 * 1024 * 1024
"""Largest PDF ``read`` attaches as a document (the API takes requests up to 32 MB, base64
grows a file by a third, and the session keeps it)."""
READ_LINE_MAX_LIMIT = 100_000
# read and read_line hash the whole file for the footer up to this size: SHA-256 runs at a few
# hundred MB/s here, and a window of a huge file must come back in well under a second.
DEFAULT_READ_HASH_MAX_BYTES = 128 << 20


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

READS = ToolRisk(kind="read_only")

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


class _UnreadableError(Exception):
    """The file cannot be shown; the message is the tool's text result."""


def _open_entry(walker: Walker, path: Path, file_path: str) -> int:
    """An fd on the regular file ``file_path``; raises :class:`_UnreadableError` with the
    tool's text result."""
    try:
        return locate(walker, path, file_path).open_read()
    except (FileNotFoundError, NotADirectoryError):
        raise _UnreadableError(f"File not found: {file_path}") from None
    except IsADirectoryError:
        raise _UnreadableError(f"Path is a directory: {file_path}") from None
    except OSError as exc:
        raise _UnreadableError(f"Error reading file: {describe_exc(exc)}") from None


def _load(sandbox: Sandbox, path: Path, file_path: str) -> str:
    """The whole file decoded with replacement characters; raises :class:`_UnreadableError`."""
    with (
        Walker(sandbox) as walker,
        os.fdopen(_open_entry(walker, path, file_path), "rb") as handle,
    ):
        try:
            return handle.read().decode("utf-8", errors="replace")
        except OSError as exc:
            raise _UnreadableError(f"Error reading file: {describe_exc(exc)}") from None


def _not_utf8_note(scan: FileFacts) -> str:
    """The label of a file that is not UTF-8 (shown with replacement characters), else ""."""
    if scan.bad_offset is None:
        return ""
    return (
        f"\n\n[not UTF-8: the first invalid byte is at offset {scan.bad_offset}; invalid bytes "
        "are shown as U+FFFD replacement characters, and write, edit and apply_patch refuse "
        "this file]"
    )


def _hash_limit() -> int:
    return _env_int("CODELIA_READ_HASH_MAX_BYTES", DEFAULT_READ_HASH_MAX_BYTES)


def _footer(scan: FileFacts, sandbox: Sandbox, path: Path, file_path: str) -> str:
    """The ``[read_metadata]`` footer: the SHA-256 of the text as the tools decode it, which is
    the hash of the bytes for a UTF-8 file (only a file that is not needs a second pass)."""
    if scan.sha256 is None:
        return (
            f"\n\n[read_metadata] content_sha256 not computed: the file is larger than "
            f"{_hash_limit()} bytes (CODELIA_READ_HASH_MAX_BYTES)"
        )
    if scan.bad_offset is None:
        return f"\n\n[read_metadata] content_sha256={scan.sha256}"
    try:
        return metadata_footer(_load(sandbox, path, file_path))
    except _UnreadableError as exc:
        return f"\n\n[read_metadata] unavailable: {exc}"


def render_read(content: str, file_path: str, offset: int, limit: int) -> str:
    """The windowed, line-numbered view of ``content``, without the footer."""
    lines = split_lines(content)
    return _render_window(lines[offset : offset + limit], len(lines), file_path, offset)


def _render_window(window: list[str], total: int, file_path: str, offset: int) -> str:
    """Lines ``offset ..`` of a file of ``total`` lines as ``read`` shows them."""
    if offset >= total:
        return f"Offset exceeds output length: {file_path}"
    max_line = _env_int("CODELIA_READ_MAX_LINE_LENGTH", DEFAULT_MAX_LINE_LENGTH)
    max_bytes = _env_int("CODELIA_READ_MAX_BYTES", DEFAULT_MAX_READ_BYTES)
    kept: list[str] = []
    used = 0
    clipped: list[int] = []
    truncated_by_bytes = False
    for index, line in enumerate(window, start=offset):
        number = index + 1
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
    if truncated_by_bytes or total > offset + len(kept):
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


def _read_pdf(fd: int, file_path: str) -> list[TextPart | DocumentPart] | str | None:
    """A ``.pdf`` file (open at ``fd``) as a document part the model reads itself; None when it
    is no PDF."""
    if os.pread(fd, 5, 0) != b"%PDF-":
        return None
    size = os.fstat(fd).st_size
    if size > MAX_PDF_BYTES:
        return (
            f"{file_path} is a {size:,}-byte PDF, over the {MAX_PDF_BYTES:,}-byte limit for "
            "attaching it. Extract the pages you need to a smaller PDF or to text first "
            "(e.g. with pypdf in the python tool)."
        )
    with os.fdopen(os.dup(fd), "rb") as handle:
        document = DocumentPart.from_bytes(handle.read())
    return [TextPart(text=f"{file_path} ({size:,} bytes) is attached as a PDF document."), document]


def _make_read(key: DependencyKey[Sandbox]) -> FunctionTool:
    async def read(params: ReadInput, ctx: ToolContext) -> str | list[TextPart | DocumentPart]:
        sandbox, path = await resolve_in_sandbox(ctx, key, params.file_path)

        def work() -> str | list[TextPart | DocumentPart]:
            max_line = _env_int("CODELIA_READ_MAX_LINE_LENGTH", DEFAULT_MAX_LINE_LENGTH)
            max_bytes = _env_int("CODELIA_READ_MAX_BYTES", DEFAULT_MAX_READ_BYTES)
            with Walker(sandbox) as walker:
                try:
                    fd = _open_entry(walker, path, params.file_path)
                except _UnreadableError as exc:
                    return str(exc)
                window = LineWindow(max_line, max_bytes)
                try:
                    if path.suffix.lower() == ".pdf":
                        pdf = _read_pdf(fd, params.file_path)
                        if pdf is not None:
                            return pdf
                    scan = scan_file(
                        fd,
                        params.offset,
                        params.offset + params.limit,
                        window,
                        hash_limit=_hash_limit(),
                    )
                except OSError as exc:
                    return f"Error reading file: {describe_exc(exc)}"
                finally:
                    os.close(fd)
            body = _render_window(window.lines, scan.total, params.file_path, params.offset)
            if body.startswith("Offset exceeds output length: "):
                return body
            return body + _not_utf8_note(scan) + _footer(scan, sandbox, path, params.file_path)

        return await asyncio.to_thread(work)

    return define_tool(
        name="read", description=READ_DESCRIPTION, input=ReadInput, execute=read, risk=READS
    )


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
        sandbox, path = await resolve_in_sandbox(ctx, key, params.file_path)

        def work() -> str:
            number, offset = params.line_number, params.char_offset
            window = GraphemeWindow(offset, params.char_limit)
            with Walker(sandbox) as walker:
                try:
                    fd = _open_entry(walker, path, params.file_path)
                except _UnreadableError as exc:
                    return str(exc)
                try:
                    scan = scan_file(fd, number - 1, number, window, hash_limit=_hash_limit())
                except OSError as exc:
                    return f"Error reading file: {describe_exc(exc)}"
                finally:
                    os.close(fd)
            if not window.found:
                return f"Line number out of range: {number} (total {scan.total})"
            length = window.length
            if offset > length:
                return f"char_offset out of range: {offset} (line length {length})"
            end = min(length, offset + params.char_limit)
            text = (
                f"line_number={number} line_length={length} "
                f"char_range={offset}..{max(end - 1, offset - 1)}"
                f"\n{''.join(window.kept)}"
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
            return text + _not_utf8_note(scan) + _footer(scan, sandbox, path, params.file_path)

        return await asyncio.to_thread(work)

    return define_tool(
        name="read_line",
        description=READ_LINE_DESCRIPTION,
        input=ReadLineInput,
        execute=read_line,
        risk=READS,
    )


def _existing(walker: Walker, path: Path, file_path: str) -> Entry | None:
    """The entry of an existing file (symlinks inside the sandbox followed), None when missing;
    raises ``IsADirectoryError`` for a directory."""
    try:
        entry = locate(walker, path, file_path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    info = entry.lstat()
    if info is None:
        return None
    if stat.S_ISDIR(info.st_mode):
        raise IsADirectoryError(errno.EISDIR, "Is a directory", file_path)
    return entry


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


def _describe_write(args: dict[str, Any]) -> str:
    return f"write {path_arg(args)} ({utf8_len(string_arg(args, 'content'))} bytes)"


def _write_as_edit(args: dict[str, Any]) -> dict[str, Any]:
    """A write's change as the whole-file edit that previews it."""
    return {
        "file_path": args.get("file_path", ""),
        "old_string": "",
        "new_string": args.get("content", ""),
        "dry_run": True,
    }


def _make_write(
    key: DependencyKey[Sandbox], store: ToolOutputStore | None, edit: FunctionTool
) -> FunctionTool:
    async def write(params: WriteInput, ctx: ToolContext) -> ToolReturn | str:
        sandbox, path = await resolve_in_sandbox(ctx, key, params.file_path)

        def work() -> ToolReturn | str:
            file_path = params.file_path
            recover_journals(sandbox)  # a patch killed mid-way is finished or undone first
            try:
                with Walker(sandbox) as walker:
                    entry = _existing(walker, path, file_path)
                    before = "" if entry is None else read_utf8(entry)
                    check_expected_hash(
                        file_path, params.expected_hash, exists=entry is not None, content=before
                    )
                    if entry is None:
                        entry = locate(walker, path, file_path, create_parents=True)
                    write_text(entry, params.content)
            except SandboxPathError:
                raise
            except Exception as exc:
                return f"Error writing file: {describe_exc(exc)}"
            placeholder = f"--- {file_path}\n+++ {file_path}\n@@ -0,0 +0,0 @@"
            payload = diff_payload(
                unified_diff(file_path, before, params.content),
                tool_name="write",
                store=store,
                placeholder=placeholder,
            )
            value = {
                "summary": f"Wrote {utf8_len(params.content)} bytes to {file_path}",
                **payload,
                "file_path": file_path,
            }
            return ToolReturn(JsonResult(value=value), diff_data(value, file_path=file_path))

        return await asyncio.to_thread(work)

    return define_file_change_tool(
        name="write",
        description=WRITE_DESCRIPTION,
        input=WriteInput,
        execute=write,
        describe=_describe_write,
        preview_with=lambda: edit,
        edit_args=_write_as_edit,
    )


# --- edit --------------------------------------------------------------------------------------

# edit holds the file, its new text and their diff in memory: past this size it refuses (with
# the shell as the way), so one call cannot take seconds and a gigabyte.
EDIT_MAX_BYTES = 64 * 1024 * 1024
# The whitespace-tolerant strategies and the closest-lines hint split the file into lines (about
# 4x its size in memory, a second per 100 MB): past this size a miss is said at once.
EDIT_LENIENT_MAX_BYTES = 16 * 1024 * 1024

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
    """``(new content, replacements, mode used)``; raises ``ValueError`` with model-facing texts.

    A file over :data:`EDIT_LENIENT_MAX_BYTES` is searched exactly only (``str.find``, no split
    into lines), whatever ``mode`` asks, and a miss says so.
    """
    size = len(content)  # characters: at most the byte size, close to it for most files
    large = size > EDIT_LENIENT_MAX_BYTES
    matches, used = find_matches(content, old_string, "exact" if large else mode)
    if not matches and large:
        raise ValueError(
            f"String not found in {file_path} (searched exactly: the file has {size:,} "
            "characters, and whitespace-tolerant matching and the closest-lines hint run up to "
            f"{EDIT_LENIENT_MAX_BYTES:,}). Find the lines with grep, read them with read "
            "(offset), and copy old_string exactly from there."
        )
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


def _check_edit_size(entry: Entry, file_path: str) -> None:
    info = entry.lstat()
    if info is not None and info.st_size > EDIT_MAX_BYTES:
        raise ValueError(
            f"{file_path} is {info.st_size:,} bytes: edit changes files up to "
            f"{EDIT_MAX_BYTES:,} bytes (it holds the file and its diff in memory). Change it "
            "with the shell instead (for example sed -i 's/old/new/' FILE, or a Python script "
            "that streams it line by line); find the lines first with grep."
        )


def _make_edit(key: DependencyKey[Sandbox], store: ToolOutputStore | None) -> FunctionTool:
    async def edit(params: EditInput, ctx: ToolContext) -> JsonResult | ToolReturn:
        sandbox, path = await resolve_in_sandbox(ctx, key, params.file_path)

        def work() -> JsonResult | ToolReturn:
            recover_journals(sandbox)  # a patch killed mid-way is finished or undone first
            with Walker(sandbox) as walker:
                return edit_file(walker)

        def edit_file(walker: Walker) -> JsonResult | ToolReturn:
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
                entry = _existing(walker, path, file_path)
            except IsADirectoryError:
                entry = None  # whole-file mode then fails to write it, with the OS's reason
            if entry is None:
                if old != "":
                    raise ValueError(f"File not found: {file_path}")
                content, exists = "", False
            else:
                _check_edit_size(entry, file_path)
                content, exists = read_utf8(entry), True
            check_expected_hash(file_path, params.expected_hash, exists=exists, content=content)
            if old == "":
                if is_crlf_text(content):  # a CRLF file stays CRLF when rewritten whole too
                    new = new.replace("\r\n", "\n").replace("\n", "\r\n")
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

            def result(summary: str) -> ToolReturn:
                value = {
                    "summary": summary,
                    "replacements": count,
                    "match_mode": used,
                    **payload,
                    "file_path": file_path,
                }
                return ToolReturn(JsonResult(value=value), diff_data(value, file_path=file_path))

            if params.dry_run:
                return result(f"Preview: {count} replacement(s) in {file_path}")
            if updated == content:
                return result(f"No changes needed in {file_path}")
            try:
                if entry is None:
                    entry = locate(walker, path, file_path, create_parents=True)
                write_text(entry, updated)
            except Exception as exc:
                raise OSError(f"Error editing file: {describe_exc(exc)}") from None
            return result(f"Replaced {count} occurrence(s) in {file_path}")

        return await asyncio.to_thread(work)

    return define_file_change_tool(
        name="edit",
        description=EDIT_DESCRIPTION,
        input=EditInput,
        execute=edit,
        describe=_describe_edit,
    )


def _describe_edit(args: dict[str, Any]) -> str:
    return f"edit {path_arg(args)} (match={string_arg(args, 'match_mode') or 'auto'})"


# --- the family --------------------------------------------------------------------------------


def file_tools(sandbox: Sandbox, store: ToolOutputStore | None = None) -> list[FunctionTool]:
    """read, read_line, write, edit, apply_patch, grep, glob and view_image around ``sandbox``.

    ``store`` keeps full diffs that are too long for the inline preview (``diff_cache_id``).
    """
    from ..images import make_view_image_tool
    from ..patch import make_apply_patch_tool
    from .search import make_glob_tool, make_grep_tool

    key = sandbox_key(sandbox)
    edit = _make_edit(key, store)
    return [
        _make_read(key),
        _make_read_line(key),
        _make_write(key, store, edit),
        edit,
        make_apply_patch_tool(key, store),
        make_grep_tool(key),
        make_glob_tool(key),
        make_view_image_tool(key),
    ]


__all__ = ["file_tools", "render_read"]
