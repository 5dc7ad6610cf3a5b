"""The ``apply_patch`` tool: codex-style multi-file patches, applied all-or-nothing.

Spec/file-tools.md §7 with design §2.5/§2.6: every section is validated and its new content
computed before anything is written; then new contents go to temp files next to their targets,
are renamed into place in patch order with the replaced/deleted files kept as backups, and any
failure undoes every step, so no partial patch is ever left on disk. The diff is built from the
hunks that were applied (never by diffing whole files), which keeps big files cheap.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, overload

from pydantic import BaseModel, Field

from .._text import describe_exc
from ..cache.protocol import ToolOutputStore
from ..tools import DependencyKey, FunctionTool, JsonResult, ToolContext, define_tool
from ._fileio import is_crlf_text, read_text
from ._patch_fast import apply_exact
from ._patch_parse import Chunk, PatchParseError, Section, parse_patch
from ._sandbox import Sandbox
from .diff import Block, diff_payload, merge_blocks, render_hunks, unified_diff

__all__ = [
    "PatchApplyError",
    "PatchParseError",
    "apply_update",
    "make_apply_patch_tool",
    "parse_patch",
]


class PatchApplyError(ValueError):
    """A section cannot be applied to the files as they are (nothing was written)."""


# --- applying an Update section to text (spec §7.2) ---------------------------------------------

_PUNCTUATION = str.maketrans(
    {
        **dict.fromkeys("\u2018\u2019\u201a\u201b", "'"),
        **dict.fromkeys("\u201c\u201d\u201e\u201f", '"'),
        **dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015", "-"),
        "\u2026": "...",
        "\u00a0": " ",
    }
)


def _loose(line: str) -> str:
    return line.strip().translate(_PUNCTUATION)


_PASSES: tuple[Callable[[str], str] | None, ...] = (None, str.rstrip, str.strip, _loose)


class _Haystack:
    """The file's lines plus, computed on first use, their forms for each lenient pass."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self._forms: dict[int, list[str]] = {0: lines}

    def form(self, level: int) -> list[str]:
        if level not in self._forms:
            transform = _PASSES[level]
            assert transform is not None
            self._forms[level] = [transform(line) for line in self.lines]
        return self._forms[level]

    def seek(self, pattern: list[str], start: int, eof: bool) -> tuple[int, int]:
        """(first index >= ``start`` where ``pattern`` matches, pass number) or (-1, -1).

        The passes are tried in order: exact, rstrip, strip, strip + punctuation folding.
        """
        count = len(self.lines)
        size = len(pattern)
        for level, transform in enumerate(_PASSES):
            hay = self.form(level)
            wanted = pattern if transform is None else [transform(p) for p in pattern]
            if eof:
                at = count - size
                if at >= start and hay[at : at + size] == wanted:
                    return at, level
            found = _scan(hay, wanted, start)
            if found >= 0:
                return found, level
        return -1, -1


def _scan(hay: list[str], wanted: list[str], start: int) -> int:
    size = len(wanted)
    limit = len(hay) - size + 1
    head = wanted[0]
    position = start
    while position < limit:
        try:
            position = hay.index(head, position, limit)
        except ValueError:
            return -1
        if size == 1 or hay[position : position + size] == wanted:
            return position
        position += 1
    return -1


@dataclass
class _Replacement:
    start: int
    old_count: int
    new_lines: list[str]
    chunk: Chunk
    exact: bool  # matched by the exact pass: context lines equal the file's lines


@dataclass
class UpdateResult:
    """The new text of an updated file, the change blocks and line views for the diff."""

    text: str
    blocks: list[Block]
    old_view: Sequence[str]
    new_view: Sequence[str]


def apply_update(before: str, chunks: Sequence[Chunk], path: str) -> UpdateResult:
    """Apply ``chunks`` to ``before`` (spec §7.2); raises :class:`PatchApplyError`.

    Lines of a consistently CRLF file stay CRLF: the patch's lines (which never carry ``\\r``)
    get one when written into such a file. When every chunk matches exactly the work is done on
    the text itself (``_patch_fast``), with the same result.
    """
    fast = apply_exact(before, chunks)
    if fast is not None:
        return UpdateResult(fast.text, merge_blocks(fast.blocks), fast.old_view, fast.new_view)
    return _apply_update_lines(before, chunks, path)


def _apply_update_lines(before: str, chunks: Sequence[Chunk], path: str) -> UpdateResult:
    """The line algorithm of spec §7.2 with the four matching passes."""
    had_newline = before.endswith("\n")
    lines = before.split("\n")
    if had_newline:
        lines.pop()
    hay = _Haystack(lines)
    crlf = "\r\n" in before and is_crlf_text(before)
    cursor = 0
    replacements: list[_Replacement] = []
    for chunk in chunks:
        if chunk.anchor is not None:
            found, _ = hay.seek([chunk.anchor], cursor, False)
            if found < 0:
                raise PatchApplyError(
                    f"Patch apply failed: context '{chunk.anchor}' not found in {path}"
                )
            cursor = found + 1
        old, new = chunk.old, chunk.new
        if crlf:
            new = [line + "\r" for line in new]
        if not old:
            at = len(lines) if chunk.eof else cursor
            replacements.append(_Replacement(at, 0, new, chunk, True))
            cursor = at
            continue
        found, level = hay.seek(old, cursor, chunk.eof)
        if found < 0:
            raise PatchApplyError(f"Patch apply failed: expected lines not found in {path}")
        replacements.append(_Replacement(found, len(old), new, chunk, level == 0))
        cursor = found + len(old)
    result: list[str] = []
    blocks: list[Block] = []
    position = 0
    for rep in replacements:
        result.extend(lines[position : rep.start])
        blocks.extend(_chunk_blocks(lines, rep, len(result)))
        result.extend(rep.new_lines)
        position = rep.start + rep.old_count
    result.extend(lines[position:])
    if (
        crlf
        and not had_newline
        and result
        and lines
        and result[-1].endswith("\r")
        and not lines[-1].endswith("\r")
    ):
        result[-1] = result[-1][:-1]
    text = "\n".join(result)
    if had_newline and text:
        text += "\n"
    elif not result:
        text = ""
    if "\r" in before or "\r" in text:
        old_view: Sequence[str] = _DiffLines(lines, had_newline)
        new_view: Sequence[str] = _DiffLines(result, had_newline)
    else:
        tail = [""] if had_newline else []
        old_view, new_view = lines + tail, result + tail
    return UpdateResult(text, merge_blocks(blocks), old_view, new_view)


def _chunk_blocks(lines: list[str], rep: _Replacement, new_start: int) -> list[Block]:
    """Change blocks of one replacement, read off the chunk body (no diffing needed)."""
    if rep.old_count == 0:
        return [(rep.start, rep.start, new_start, new_start + len(rep.new_lines))]
    if rep.exact:
        start = rep.start
        return [
            (start + o, start + o + oc, new_start + n, new_start + n + nc)
            for o, oc, n, nc in rep.chunk.changes
        ]
    # A lenient match: a context line may differ from the file line it matched (it is written
    # as the patch has it), which is a change too.
    blocks: list[Block] = []
    old_at, new_at = rep.start, new_start
    for marker, text in rep.chunk.body:
        if marker == " ":
            actual = lines[old_at]
            if actual.endswith("\r"):
                actual = actual[:-1]
            if actual == text:
                old_at += 1
                new_at += 1
                continue
            blocks.append((old_at, old_at + 1, new_at, new_at + 1))
            old_at += 1
            new_at += 1
        elif marker == "-":
            blocks.append((old_at, old_at + 1, new_at, new_at))
            old_at += 1
        else:
            blocks.append((old_at, old_at, new_at, new_at + 1))
            new_at += 1
    return blocks


class _DiffLines(Sequence[str]):
    """A file's lines as the diff sees them: ``\\r`` dropped, the final empty line kept."""

    def __init__(self, lines: list[str], had_newline: bool) -> None:
        self._lines = lines
        self._len = len(lines) + (1 if had_newline else 0)

    def __len__(self) -> int:
        return self._len

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> list[str]: ...
    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            return [self._line(i) for i in range(*index.indices(self._len))]
        if index < 0:
            index += self._len
        if not 0 <= index < self._len:
            raise IndexError(index)
        return self._line(index)

    def _line(self, index: int) -> str:
        if index >= len(self._lines):
            return ""
        line = self._lines[index]
        return line[:-1] if line.endswith("\r") else line


def update_diff(old_path: str, new_path: str, before: str, update: UpdateResult) -> str:
    if before == "" or update.text == "":
        return unified_diff(old_path, before, update.text, new_path=new_path)
    return render_hunks(old_path, new_path, update.old_view, update.new_view, update.blocks)


# --- validation (spec §7.3) ------------------------------------------------------------------


Action = Literal["add", "delete", "update", "move"]


@dataclass
class _Planned:
    action: Action
    path: str
    source: Path
    target: Path | None = None
    move_to: str | None = None
    content: str | None = None
    diff: str = ""


def _existing_file(path: Path, shown: str) -> None:
    if path.is_dir():
        raise PatchApplyError(f"Path is a directory: {shown}")
    if not path.exists():
        raise PatchApplyError(f"File not found: {shown}")


def plan_patch(sections: Sequence[Section], sandbox: Sandbox) -> list[_Planned]:
    """Validate every section and compute its result; nothing is written."""
    sources: set[Path] = set()
    targets: set[Path] = set()
    vacated: set[Path] = set()
    planned: list[_Planned] = []
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
            planned.append(_Planned("add", section.path, source, source, None, content, diff))
            continue
        _existing_file(source, section.path)
        before = read_text(source)
        if section.kind == "delete":
            vacated.add(source)
            diff = unified_diff(section.path, before, "")
            planned.append(_Planned("delete", section.path, source, None, None, None, diff))
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
            _Planned(action, section.path, source, target, section.move_to, update.text, diff)
        )
    return planned


# --- all-or-nothing writing (design §2.5) ----------------------------------------------------


@dataclass
class _Transaction:
    """Steps done so far, each with its undo; ``rollback`` runs them backwards."""

    undo: list[Callable[[], None]] = field(default_factory=list)
    backups: list[Path] = field(default_factory=list)
    token: str = field(default_factory=lambda: secrets.token_hex(4))

    def sibling(self, path: Path, suffix: str) -> Path:
        return path.parent / f".{path.name}.codelia-{self.token}.{suffix}"

    def make_parents(self, path: Path) -> None:
        missing: list[Path] = []
        parent = path.parent
        while not parent.exists() and not parent.is_symlink():
            missing.append(parent)
            parent = parent.parent
        for directory in reversed(missing):
            directory.mkdir()
            self.undo.append(directory.rmdir)

    def stage(self, target: Path, content: str, mode_from: Path | None) -> Path:
        """Write ``content`` to a temp file beside ``target`` (same filesystem: atomic rename)."""
        self.make_parents(target)
        temp = self.sibling(target, "tmp")
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        self.undo.append(lambda: temp.unlink(missing_ok=True))
        with os.fdopen(fd, "wb") as handle:
            handle.write(content.encode("utf-8", errors="surrogatepass"))
        if mode_from is not None:
            os.chmod(temp, stat.S_IMODE(os.stat(mode_from).st_mode))
        return temp

    def set_aside(self, path: Path) -> None:
        """Rename ``path`` to a backup that rollback restores and success deletes."""
        backup = self.sibling(path, "bak")
        os.rename(path, backup)
        self.undo.append(lambda: os.replace(backup, path))
        self.backups.append(backup)

    def place(self, temp: Path, target: Path) -> None:
        if target.exists() or target.is_symlink():
            raise FileExistsError(f"[Errno 17] File exists: '{target}'")
        os.replace(temp, target)
        self.undo.append(lambda: target.unlink(missing_ok=True))

    def rollback(self) -> list[str]:
        problems: list[str] = []
        for step in reversed(self.undo):
            try:
                step()
            except Exception as exc:
                problems.append(describe_exc(exc))
        return problems

    def finish(self) -> None:
        for backup in self.backups:
            try:
                os.unlink(backup)
            except OSError:
                pass


def write_planned(planned: Sequence[_Planned]) -> None:
    """Apply the planned changes all-or-nothing; raises ``OSError("Error applying patch: ...")``."""
    txn = _Transaction()
    try:
        staged: list[Path | None] = []
        for item in planned:
            if item.content is None or item.target is None:
                staged.append(None)
                continue
            real_target = (
                Path(os.path.realpath(item.target)) if item.action == "update" else item.target
            )
            mode_from = item.source if item.action in ("update", "move") else None
            staged.append(txn.stage(real_target, item.content, mode_from))
        for item, temp in zip(planned, staged, strict=True):
            if item.action == "delete":
                txn.set_aside(item.source)
            elif item.action == "add":
                assert temp is not None
                assert item.target is not None
                txn.place(temp, item.target)
            elif item.action == "update":
                assert temp is not None
                real = Path(os.path.realpath(item.source))
                txn.set_aside(real)
                os.replace(temp, real)
            else:
                assert temp is not None
                assert item.target is not None
                txn.place(temp, item.target)
                txn.set_aside(item.source)
    except Exception as exc:
        problems = txn.rollback()
        if problems:
            raise OSError(
                f"Error applying patch: {describe_exc(exc)}; rollback was incomplete: "
                + "; ".join(problems)
            ) from None
        raise OSError(f"Error applying patch: {describe_exc(exc)} (no file was changed)") from None
    txn.finish()


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


def _file_entry(item: _Planned) -> dict[str, Any]:
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

        def work() -> list[_Planned]:
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
