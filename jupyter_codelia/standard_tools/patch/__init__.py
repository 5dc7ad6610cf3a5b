"""The ``apply_patch`` tool: codex-style multi-file patches, applied all-or-nothing.

Every section is validated and its new content
computed before anything is written; then new contents go to temp files next to their targets,
are renamed into place in patch order with the replaced/deleted files kept as backups, and any
failure undoes every step, so no partial patch is ever left on disk. The diff is built from the
hunks that were applied (never by diffing whole files), which keeps big files cheap.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from ..._text import split_lines
from ...cache.protocol import ToolOutputStore
from ...tools import (
    DependencyKey,
    FunctionTool,
    JsonResult,
    ToolContext,
    ToolReturn,
)
from .._fdpath import Walker
from .._fileio import NotUtf8Error, is_crlf_text, string_arg
from .._sandbox import Sandbox
from ..diff import (
    define_file_change_tool,
    diff_data,
    diff_payload,
    render_hunks,
    unified_diff,
)
from ._fast import apply_exact
from ._lines import PatchApplyError, UpdateResult, apply_update_lines
from ._parse import Chunk, PatchParseError, Section, parse_patch
from ._write import (
    Action,
    Identity,
    Planned,
    identity_of,
    recover_journals,
    write_planned,
)

__all__ = [
    "PatchApplyError",
    "PatchParseError",
    "apply_update",
    "make_apply_patch_tool",
    "parse_patch",
]


# --- applying an Update section ---------------------------------------------------


def apply_update(before: str | bytes, chunks: Sequence[Chunk], path: str) -> UpdateResult:
    """Apply ``chunks`` to ``before`` (a file's text, or its UTF-8 bytes); raises
    :class:`PatchApplyError`.

    A consistently CRLF file is patched as LF text and turned back into CRLF, so every line of
    the result - added lines and a line that gained a successor after being the unterminated
    last one included - ends in CRLF (the mapping is exact both ways because every ``\\n`` of
    such a file follows a ``\\r``). When every chunk matches exactly the work is done on the
    bytes themselves (``_patch_fast``), with the same result as the line algorithm.
    """
    data = before if isinstance(before, bytes) else before.encode("utf-8", errors="surrogatepass")
    crlf = b"\r" in data and is_crlf_text(data)
    if crlf:
        data = data.replace(b"\r\n", b"\n")
    result = apply_exact(data, chunks)
    if result is None:
        if isinstance(before, str) and not crlf:
            text = before
        else:
            text = data.decode("utf-8", errors="surrogatepass")
        result = apply_update_lines(text, chunks, path)
    if crlf:
        result.to_crlf()
    return result


def update_diff(old_path: str, new_path: str, before: str | bytes, update: UpdateResult) -> str:
    if not before or update.empty:
        if isinstance(before, bytes):
            before = before.decode("utf-8", errors="surrogatepass")
        return unified_diff(old_path, before, update.text, new_path=new_path)
    if update.hunks is not None:
        return f"--- {old_path}\n+++ {new_path}\n{update.hunks}"
    return render_hunks(old_path, new_path, update.old_view, update.new_view, update.blocks)


# --- validation ------------------------------------------------------------------


def _exists(walker: Walker, path: Path, shown: str) -> bool:
    """Whether anything (a dangling symlink included) is at ``path``."""
    try:
        return walker.locate(path, shown, follow=False).lstat() is not None
    except (FileNotFoundError, NotADirectoryError):
        return False


def _read_source(walker: Walker, path: Path, shown: str) -> tuple[bytes, Identity]:
    """The bytes of an existing source file and its identity."""
    try:
        fd = walker.locate(path, shown, follow=True).open_read()
    except (FileNotFoundError, NotADirectoryError):
        raise PatchApplyError(f"File not found: {shown}") from None
    except IsADirectoryError:
        raise PatchApplyError(f"Path is a directory: {shown}") from None
    with os.fdopen(fd, "rb") as handle:
        data = handle.read()
        return data, identity_of(handle.fileno(), data)


def _check_utf8(data: bytes, shown: str) -> None:
    """Refuse a file that is not UTF-8 (rewriting it would destroy its other bytes); an ASCII
    file is checked without decoding it."""
    if not data.isascii():
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise NotUtf8Error(shown, exc.start) from None


def plan_patch(sections: Sequence[Section], sandbox: Sandbox) -> list[Planned]:
    """Validate every section and compute its result; nothing is written."""
    with Walker(sandbox) as walker:
        return _plan(sections, sandbox, walker)


def _plan(sections: Sequence[Section], sandbox: Sandbox, walker: Walker) -> list[Planned]:
    sources: set[Path] = set()
    targets: set[Path] = set()
    vacated: set[Path] = set()
    planned: list[Planned] = []
    for section in sections:
        source = sandbox.resolve(section.path)
        if source in sources:
            raise PatchApplyError(f"Patch apply failed: duplicate source path {section.path}")
        sources.add(source)
        if section.kind == "add":
            if _exists(walker, source, section.path):
                raise PatchApplyError(f"File already exists: {section.path}")
            if source in targets:
                raise PatchApplyError(f"Patch apply failed: duplicate target path {section.path}")
            targets.add(source)
            content = section.add_text
            diff = unified_diff(section.path, "", content)
            pieces = [content.encode("utf-8", errors="surrogatepass")]
            planned.append(Planned("add", section.path, source, source, None, pieces, diff))
            continue
        before, identity = _read_source(walker, source, section.path)
        if section.kind == "delete":  # not rewritten, so it may be in any encoding
            vacated.add(source)
            diff = unified_diff(section.path, before.decode("utf-8", errors="replace"), "")
            planned.append(
                Planned("delete", section.path, source, None, None, None, diff, identity)
            )
            continue
        _check_utf8(before, section.path)
        update = apply_update(before, section.chunks, section.path)
        target = source
        action: Action = "update"
        shown = section.path
        if section.move_to is not None:
            target = sandbox.resolve(section.move_to)
            if target != source:
                if _exists(walker, target, section.move_to) and target not in vacated:
                    raise PatchApplyError(f"Move target already exists: {section.move_to}")
                action = "move"
            shown = section.move_to
        if target in targets:
            raise PatchApplyError(f"Patch apply failed: duplicate target path {shown}")
        targets.add(target)
        if action == "move":
            vacated.add(source)
        diff = update_diff(section.path, shown, before, update)
        planned.append(
            Planned(
                action, section.path, source, target, section.move_to, update.pieces, diff, identity
            )
        )
    return planned


# --- the tool --------------------------------------------------------------------------------

APPLY_PATCH_DESCRIPTION = """\
Apply a multi-file patch, all-or-nothing (if any part fails, no file changes). Format:
*** Begin Patch
*** Add File: path/new.py
+line of the new file
*** Delete File: path/old.py
*** Update File: path/file.py
*** Move to: path/renamed.py   (optional)
@@ def some_function():        (optional anchor: a line above the change)
 context line (leading space)
-removed line
+added line
*** End of File                (optional: the chunk is at the end of the file)
*** End Patch
Give ~3 lines of context around each change; write a blank context line as a single space. No \
line numbers in @@ headers. dry_run previews the diff without writing."""


class ApplyPatchInput(BaseModel):
    patch: str = Field(
        min_length=1, description="The full patch text, *** Begin Patch to *** End Patch."
    )
    dry_run: bool = Field(False, description="Only validate and preview the diff (no write).")


_SUMMARY_LETTER = {"add": "A", "delete": "D", "update": "M"}


def _file_entry(item: Planned) -> dict[str, Any]:
    if item.action == "move":
        return {
            "action": "move",
            "file_path": item.path,
            "move_to": item.move_to,
            "summary": f"R {item.path} -> {item.move_to}",
        }
    shown = item.move_to if item.action == "update" and item.move_to else item.path
    return {
        "action": item.action,
        "file_path": shown,
        "summary": f"{_SUMMARY_LETTER[item.action]} {shown}",
    }


def make_apply_patch_tool(
    key: DependencyKey[Sandbox], store: ToolOutputStore | None = None
) -> FunctionTool:
    async def apply_patch(params: ApplyPatchInput, ctx: ToolContext) -> ToolReturn:
        sandbox = await ctx.resolve(key)
        sections = parse_patch(params.patch)

        def work() -> list[Planned]:
            recover_journals(sandbox)
            planned = plan_patch(sections, sandbox)
            if not params.dry_run:
                write_planned(planned, sandbox)
            return planned

        # File IO and diffing can take a while on big files: keep the event loop (the kernel's,
        # in a background run) responsive. The write itself is all-or-nothing either way.
        planned = await asyncio.to_thread(work)
        count = len(planned)
        diff = "\n\n".join(item.diff for item in planned if item.diff)
        summary = (
            f"Patch preview ready for {count} file(s)"
            if params.dry_run
            else f"Applied patch to {count} file(s)"
        )
        value = {
            "summary": summary,
            "file_count": count,
            "files": [_file_entry(item) for item in planned],
            **diff_payload(diff, tool_name="apply_patch", store=store),
        }
        return ToolReturn(JsonResult(value=value), diff_data(value))

    return define_file_change_tool(
        name="apply_patch",
        description=APPLY_PATCH_DESCRIPTION,
        input=ApplyPatchInput,
        execute=apply_patch,
        describe=_describe_patch,
    )


def _describe_patch(args: dict[str, Any]) -> str:
    count = len(split_lines(string_arg(args, "patch")))
    return f"apply_patch ({count} {'line' if count == 1 else 'lines'})"
