"""The ``apply_patch`` tool: codex-style multi-file patches, applied all-or-nothing.

Every section is validated and its new content
computed before anything is written; then new contents go to temp files next to their targets,
are renamed into place in patch order with the replaced/deleted files kept as backups, and any
failure undoes every step, so no partial patch is ever left on disk. The diff is built from the
hunks that were applied (never by diffing whole files), which keeps big files cheap.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from ..cache.protocol import ToolOutputStore
from ..tools import DependencyKey, FunctionTool, JsonResult, ToolContext, define_tool
from ._fileio import read_text
from ._patch_fast import apply_exact
from ._patch_lines import PatchApplyError, UpdateResult, apply_update_lines
from ._patch_parse import Chunk, PatchParseError, Section, parse_patch
from ._patch_write import Action, Planned, write_planned
from ._sandbox import Sandbox
from .diff import diff_payload, merge_blocks, render_hunks, unified_diff

__all__ = [
    "PatchApplyError",
    "PatchParseError",
    "apply_update",
    "make_apply_patch_tool",
    "parse_patch",
]


# --- applying an Update section ---------------------------------------------------


def apply_update(before: str, chunks: Sequence[Chunk], path: str) -> UpdateResult:
    """Apply ``chunks`` to ``before``; raises :class:`PatchApplyError`.

    Lines of a consistently CRLF file stay CRLF: the patch's lines (which never carry ``\\r``)
    get one when written into such a file. When every chunk matches exactly the work is done on
    the text itself (``_patch_fast``), with the same result.
    """
    fast = apply_exact(before, chunks)
    if fast is not None:
        return UpdateResult(
            fast.text, merge_blocks(fast.blocks), fast.old_view, fast.new_view, fast.hunks
        )
    return apply_update_lines(before, chunks, path)


def update_diff(old_path: str, new_path: str, before: str, update: UpdateResult) -> str:
    if before == "" or update.text == "":
        return unified_diff(old_path, before, update.text, new_path=new_path)
    if update.hunks is not None:
        return f"--- {old_path}\n+++ {new_path}\n{update.hunks}"
    return render_hunks(old_path, new_path, update.old_view, update.new_view, update.blocks)


# --- validation ------------------------------------------------------------------


def _existing_file(path: Path, shown: str) -> None:
    if path.is_dir():
        raise PatchApplyError(f"Path is a directory: {shown}")
    if not path.exists():
        raise PatchApplyError(f"File not found: {shown}")


def plan_patch(sections: Sequence[Section], sandbox: Sandbox) -> list[Planned]:
    """Validate every section and compute its result; nothing is written."""
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
            if source.exists() or source.is_symlink():
                raise PatchApplyError(f"File already exists: {section.path}")
            if source in targets:
                raise PatchApplyError(f"Patch apply failed: duplicate target path {section.path}")
            targets.add(source)
            content = section.add_text
            diff = unified_diff(section.path, "", content)
            planned.append(Planned("add", section.path, source, source, None, content, diff))
            continue
        _existing_file(source, section.path)
        before = read_text(source)
        if section.kind == "delete":
            vacated.add(source)
            diff = unified_diff(section.path, before, "")
            planned.append(Planned("delete", section.path, source, None, None, None, diff))
            continue
        update = apply_update(before, section.chunks, section.path)
        target = source
        action: Action = "update"
        shown = section.path
        if section.move_to is not None:
            target = sandbox.resolve(section.move_to)
            if target != source:
                if (target.exists() or target.is_symlink()) and target not in vacated:
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
            Planned(action, section.path, source, target, section.move_to, update.text, diff)
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
    async def apply_patch(params: ApplyPatchInput, ctx: ToolContext) -> JsonResult:
        sandbox = await ctx.resolve(key)
        sections = parse_patch(params.patch)

        def work() -> list[Planned]:
            planned = plan_patch(sections, sandbox)
            if not params.dry_run:
                write_planned(planned)
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
        return JsonResult(
            value={
                "summary": summary,
                "file_count": count,
                "files": [_file_entry(item) for item in planned],
                **diff_payload(diff, tool_name="apply_patch", store=store),
            }
        )

    return define_tool(
        name="apply_patch",
        description=APPLY_PATCH_DESCRIPTION,
        input=ApplyPatchInput,
        execute=apply_patch,
    )
