"""Unified line diffs, the bounded diff payload of write/edit/apply_patch, and their preview.

``unified_diff`` produces a real multi-hunk diff with 3 lines of context. It stays cheap on big
files: the common prefix and suffix are trimmed first, small changed regions go through
``difflib.SequenceMatcher``, and large ones are split at lines unique to both sides (patience
anchors) before that, so the quadratic matcher only ever sees small pieces.
``render_hunks`` formats already-known change blocks, which is how apply_patch builds its diff
from the hunks it applied without diffing whole files.

Line conventions: ``to_lines("") == []``; a trailing newline yields a final empty line
(rendered as a bare ``" "``/``"+"``/``"-"`` line, no "no newline" marker), except in the diff
of a new or a deleted file, which lists the file's lines as diff(1) does (no bare last ``+``,
``\\ No newline at end of file`` after a last line without one); a line's trailing ``\\r``
is ignored, so CRLF and LF files diff alike.
"""

from __future__ import annotations

import difflib
import json
import re
import uuid
from collections.abc import Callable, Sequence
from typing import Any, TypeVar, overload

from pydantic import BaseModel

from .._redact import redact_secrets
from .._text import clip_utf8, clip_utf8_tail, describe_exc, utf8_len
from ..cache.protocol import ToolOutputStore
from ..tools import (
    FunctionTool,
    JsonResult,
    Previewer,
    ToolContext,
    ToolPreview,
    ToolResultData,
    ToolReturn,
    ToolRisk,
    define_tool,
)

InputT = TypeVar("InputT", bound=BaseModel)

CONTEXT_LINES = 3
PREVIEW_MAX_LINES = 120
PREVIEW_EDGE_LINES = 60
PREVIEW_MAX_BYTES = 16384
_SIZE_MARKER = "\n...[truncated by size]...\n"
_PREVIEW_SPLIT = re.compile(r"\r?\n")

# Regions whose line-count product is below this go straight to SequenceMatcher (worst case
# quadratic); bigger ones are first split at patience anchors.
_MATCHER_BUDGET = 250_000


Block = tuple[int, int, int, int]
"""A changed region ``(i1, i2, j1, j2)``: old lines ``[i1, i2)`` became new lines ``[j1, j2)``.

A plain tuple rather than a NamedTuple: big patches make thousands of them, and a NamedTuple's
constructor is a Python-level call.
"""


def to_lines(text: str) -> list[str]:
    """Diff lines of ``text``: ``[]`` for ``""``, else split on ``\\n`` with ``\\r`` dropped."""
    if text == "":
        return []
    return [line[:-1] if line.endswith("\r") else line for line in text.split("\n")]


def _matcher_blocks(a: Sequence[str], b: Sequence[str], a0: int, b0: int) -> list[Block]:
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    return [
        (a0 + i1, a0 + i2, b0 + j1, b0 + j2)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        if tag != "equal"
    ]


def _patience_anchors(
    a: Sequence[str], b: Sequence[str], a_lo: int, a_hi: int, b_lo: int, b_hi: int
) -> list[tuple[int, int]]:
    """Pairs (i, j) of lines unique on both sides, longest increasing in both indexes."""
    count_a: dict[str, int] = {}
    for i in range(a_lo, a_hi):
        line = a[i]
        count_a[line] = -1 if line in count_a else i
    pos_b: dict[str, int] = {}
    for j in range(b_lo, b_hi):
        line = b[j]
        if line in count_a and count_a[line] >= 0:
            pos_b[line] = -1 if line in pos_b else j
    pairs = [(count_a[line], j) for line, j in pos_b.items() if j >= 0]
    if not pairs:
        return []
    pairs.sort()
    # Longest increasing subsequence on j (patience sorting with back-pointers).
    import bisect

    tails: list[int] = []
    tail_index: list[int] = []
    back: list[int] = [-1] * len(pairs)
    for k, (_, j) in enumerate(pairs):
        pos = bisect.bisect_left(tails, j)
        if pos == len(tails):
            tails.append(j)
            tail_index.append(k)
        else:
            tails[pos] = j
            tail_index[pos] = k
        back[k] = tail_index[pos - 1] if pos > 0 else -1
    chain: list[tuple[int, int]] = []
    k = tail_index[-1]
    while k >= 0:
        chain.append(pairs[k])
        k = back[k]
    chain.reverse()
    return chain


def diff_blocks(a: Sequence[str], b: Sequence[str]) -> list[Block]:
    """The changed regions between line lists ``a`` and ``b``, in order, non-adjacent."""
    blocks: list[Block] = []
    stack = [(0, len(a), 0, len(b))]
    while stack:
        a_lo, a_hi, b_lo, b_hi = stack.pop()
        while a_lo < a_hi and b_lo < b_hi and a[a_lo] == b[b_lo]:
            a_lo += 1
            b_lo += 1
        while a_hi > a_lo and b_hi > b_lo and a[a_hi - 1] == b[b_hi - 1]:
            a_hi -= 1
            b_hi -= 1
        if a_lo == a_hi and b_lo == b_hi:
            continue
        if a_lo == a_hi or b_lo == b_hi:
            blocks.append((a_lo, a_hi, b_lo, b_hi))
            continue
        if (a_hi - a_lo) * (b_hi - b_lo) <= _MATCHER_BUDGET:
            blocks.extend(_matcher_blocks(a[a_lo:a_hi], b[b_lo:b_hi], a_lo, b_lo))
            continue
        anchors = _patience_anchors(a, b, a_lo, a_hi, b_lo, b_hi)
        if not anchors:
            # No unique common line in a large region: report it as one replacement rather
            # than spending quadratic time on a prettier diff.
            blocks.append((a_lo, a_hi, b_lo, b_hi))
            continue
        prev_i, prev_j = a_lo, b_lo
        for i, j in anchors:
            stack.append((prev_i, i, prev_j, j))
            prev_i, prev_j = i + 1, j + 1
        stack.append((prev_i, a_hi, prev_j, b_hi))
    blocks.sort()
    return merge_blocks(blocks)


def merge_blocks(blocks: Sequence[Block]) -> list[Block]:
    """Join blocks that touch (no equal line between them)."""
    merged: list[Block] = []
    for block in blocks:
        i1, i2, j1, j2 = block
        if i1 == i2 and j1 == j2:
            continue
        if merged and merged[-1][1] == i1 and merged[-1][3] == j1:
            last = merged[-1]
            merged[-1] = (last[0], i2, last[2], j2)
        else:
            merged.append(block)
    return merged


def _range(start: int, length: int) -> str:
    return f"{start + 1 if length else start},{length}"


def render_hunks(
    old_path: str,
    new_path: str,
    a: Sequence[str],
    b: Sequence[str],
    blocks: Sequence[Block],
    context: int = CONTEXT_LINES,
) -> str:
    """Unified diff text for known change ``blocks`` (sorted, equal stretches between them)."""
    if not blocks:
        return ""
    out = [f"--- {old_path}", f"+++ {new_path}"]
    len_a = len(a)
    index = 0
    while index < len(blocks):
        group_end = index
        while group_end + 1 < len(blocks) and (
            blocks[group_end + 1][0] - blocks[group_end][1] <= 2 * context
        ):
            group_end += 1
        first_i1, _, first_j1, _ = blocks[index]
        _, last_i2, _, last_j2 = blocks[group_end]
        lead = min(context, first_i1)
        trail = min(context, len_a - last_i2)
        old_start, old_end = first_i1 - lead, last_i2 + trail
        new_start, new_end = first_j1 - lead, last_j2 + trail
        out.append(
            f"@@ -{_range(old_start, old_end - old_start)} "
            f"+{_range(new_start, new_end - new_start)} @@"
        )
        # One fetch per side and hunk: the sequences may be lazy views of a big text.
        old_hunk = a[old_start:old_end]
        new_hunk = b[new_start:new_end]
        _add_run(out, " ", old_hunk[: first_i1 - old_start])
        for k in range(index, group_end + 1):
            i1, i2, j1, j2 = blocks[k]
            _add_run(out, "-", old_hunk[i1 - old_start : i2 - old_start])
            _add_run(out, "+", new_hunk[j1 - new_start : j2 - new_start])
            stop = blocks[k + 1][0] if k < group_end else old_end
            _add_run(out, " ", old_hunk[i2 - old_start : stop - old_start])
        index = group_end + 1
    return "\n".join(out)


def _add_run(out: list[str], marker: str, lines: Sequence[str]) -> None:
    """Append ``lines`` each prefixed with ``marker`` as one string (one join, not one per line)."""
    if lines:
        out.append(marker + ("\n" + marker).join(lines))


def unified_diff(
    path: str,
    before: str,
    after: str,
    context: int = CONTEXT_LINES,
    *,
    new_path: str | None = None,
) -> str:
    """A multi-hunk unified diff of ``before`` → ``after``; ``""`` when the lines are equal.

    Headers are ``--- path`` / ``+++ new_path`` (default: ``path``); hunk headers always carry
    both start and length.
    """
    new_path = path if new_path is None else new_path
    if before and after and len(before) + len(after) > WINDOWED_DIFF_CHARS:
        return _windowed_diff(path, new_path, before, after, context)
    a, b = to_lines(before), to_lines(after)
    if a == b:
        return ""
    if not a or not b:
        # A new or a deleted file: every line is added (removed) and the diff reads as diff(1)
        # prints it, ending with the last line rather than a bare "+" for the final newline.
        a, b = _file_lines(a), _file_lines(b)
        diff = render_hunks(path, new_path, a, b, diff_blocks(a, b), context)
        return diff.replace(_NO_EOL, _NO_EOL_MARKER)
    return render_hunks(path, new_path, a, b, diff_blocks(a, b), context)


# A file's last line when the file has no final newline, marked so that it is rendered as
# diff(1) does, with a "\ No newline at end of file" line after it.
_NO_EOL = "\uffff\x00no-newline"
_NO_EOL_MARKER = "\n\\ No newline at end of file"


def _file_lines(lines: list[str]) -> list[str]:
    """``to_lines`` as a file's lines: the empty piece after a final newline is no line, and a
    last line without one is marked."""
    if not lines:
        return lines
    if lines[-1] == "":
        return lines[:-1]
    return [*lines[:-1], lines[-1] + _NO_EOL]


# Texts longer than this together are diffed around the changed region only: the common head
# and tail are found by comparing slices (C speed) instead of splitting both texts into lines
# (an edit of a 57 MB file spent 1.7 s there).
WINDOWED_DIFF_CHARS = 1 << 20
_COMPARE_STEP = 1 << 16
_MAX_WINDOW_MARGIN = 10_000  # lines; past it the whole texts are diffed


def _windowed_diff(path: str, new_path: str, before: str, after: str, context: int) -> str:
    """``unified_diff`` of two non-empty texts through the lines around what differs.

    The window holds the differing characters' lines and ``margin`` more lines on each side.
    Lines that differ only in a ``\r`` are equal to the diff, so its alignment can reach past
    the characters that differ: unless every block ends up more than ``context`` lines from a
    window edge that is not the file's own, the window grows (the whole-text diff would have
    aligned differently there).
    """
    shortest = min(len(before), len(after))
    head = _common_prefix(before, after, shortest)
    tail = _common_suffix(before, after, shortest - head)
    margin = context + 1
    while margin < _MAX_WINDOW_MARGIN:
        start = before.rfind("\n", 0, head) + 1
        for _ in range(margin):
            if start == 0:
                break
            start = before.rfind("\n", 0, start - 1) + 1
        end_a = _line_end(before, len(before) - tail, margin)
        end_b = end_a - len(before) + len(after)
        a_lines = _window_lines(before[start:end_a])
        b_lines = _window_lines(after[start:end_b])
        if a_lines == b_lines:
            return ""
        blocks = diff_blocks(a_lines, b_lines)
        room_above = blocks[0][0] if start > 0 else len(a_lines)
        room_below = len(a_lines) - blocks[-1][1] if end_a < len(before) else len(a_lines)
        if room_above > context and room_below > context:
            offset = before.count("\n", 0, start)
            below = before.count("\n", end_a)  # lines under the window, as many on both sides
            a = _LineWindow(a_lines, offset, offset + len(a_lines) + below)
            b = _LineWindow(b_lines, offset, offset + len(b_lines) + below)
            shifted = [
                (i1 + offset, i2 + offset, j1 + offset, j2 + offset) for i1, i2, j1, j2 in blocks
            ]
            return render_hunks(path, new_path, a, b, shifted, context)
        margin *= 8
    a_all, b_all = to_lines(before), to_lines(after)
    return render_hunks(path, new_path, a_all, b_all, diff_blocks(a_all, b_all), context)


def _common_prefix(a: str, b: str, limit: int) -> int:
    at = 0
    while at < limit:
        stop = min(at + _COMPARE_STEP, limit)
        if a[at:stop] != b[at:stop]:
            while stop - at > 1:  # halve down to the first differing character
                middle = (at + stop) // 2
                if a[at:middle] == b[at:middle]:
                    at = middle
                else:
                    stop = middle
            return at
        at = stop
    return limit


def _common_suffix(a: str, b: str, limit: int) -> int:
    """Length of the common tail of ``a`` and ``b``, at most ``limit``."""
    done = 0
    while done < limit:
        step = min(_COMPARE_STEP, limit - done)
        if a[len(a) - done - step : len(a) - done] != b[len(b) - done - step : len(b) - done]:
            low, high = done, done + step  # the common tail is at least low, less than high
            while high - low > 1:
                middle = (low + high) // 2
                if a[len(a) - middle : len(a) - low] == b[len(b) - middle : len(b) - low]:
                    low = middle
                else:
                    high = middle
            return low
        done += step
    return limit


def _line_end(text: str, at: int, context: int) -> int:
    """The end (a ``\n`` or the end of ``text``) of the line holding ``at``, ``context`` lines
    further down."""
    end = text.find("\n", at)
    for _ in range(context):
        if end < 0:
            break
        end = text.find("\n", end + 1)
    return len(text) if end < 0 else end


def _window_lines(text: str) -> list[str]:
    """The lines of a window cut at line boundaries (``to_lines`` without its empty case)."""
    return [line[:-1] if line.endswith("\r") else line for line in text.split("\n")]


class _LineWindow(Sequence[str]):
    """A file's diff lines of which only a window is held: ``render_hunks`` reads its length
    and the slices around the blocks, all inside the window."""

    def __init__(self, lines: list[str], offset: int, total: int) -> None:
        self._lines, self._offset, self._total = lines, offset, total

    def __len__(self) -> int:
        return self._total

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> list[str]: ...
    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            start, stop, _ = index.indices(self._total)
            return self._lines[start - self._offset : stop - self._offset]
        return self._lines[index - self._offset]


def preview_diff(diff: str) -> tuple[str, bool]:
    """The bounded preview of ``diff`` and whether anything was cut."""
    if "\r" not in diff:
        return _preview_lf(diff)
    return _preview_lines(_PREVIEW_SPLIT.split(diff))


def _preview_lf(diff: str) -> tuple[str, bool]:
    """``preview_diff`` for text without ``\r``: only the edges are split out (big diffs)."""
    total = diff.count("\n") + 1
    if total <= PREVIEW_MAX_LINES:
        return _preview_lines(diff.split("\n"))
    head_end = -1
    for _ in range(PREVIEW_EDGE_LINES):
        head_end = diff.index("\n", head_end + 1)
    tail_start = len(diff)
    for _ in range(PREVIEW_EDGE_LINES):
        tail_start = diff.rindex("\n", 0, tail_start)
    edges = diff[:head_end].split("\n") + diff[tail_start + 1 :].split("\n")
    return _preview_lines(edges, total)


def _preview_lines(lines: list[str], total: int | None = None) -> tuple[str, bool]:
    """Cap ``lines`` (all lines, or the first and last 60 of ``total``) by lines, then bytes."""
    if total is not None:
        lines = [
            *lines[:PREVIEW_EDGE_LINES],
            f"...[{total - 2 * PREVIEW_EDGE_LINES} lines omitted]...",
            *lines[PREVIEW_EDGE_LINES:],
        ]
        return _cap_bytes("\n".join(lines), True)
    truncated = False
    if len(lines) > PREVIEW_MAX_LINES:
        omitted = len(lines) - 2 * PREVIEW_EDGE_LINES
        lines = [
            *lines[:PREVIEW_EDGE_LINES],
            f"...[{omitted} lines omitted]...",
            *lines[-PREVIEW_EDGE_LINES:],
        ]
        truncated = True
    return _cap_bytes("\n".join(lines), truncated)


def _cap_bytes(text: str, truncated: bool) -> tuple[str, bool]:
    if utf8_len(text) > PREVIEW_MAX_BYTES:
        budget = PREVIEW_MAX_BYTES - utf8_len(_SIZE_MARKER)
        head = clip_utf8(text, budget // 2)
        tail = clip_utf8_tail(text, budget - budget // 2)
        text = head + _SIZE_MARKER + tail
        truncated = True
    return text, truncated


def diff_payload(
    diff: str,
    *,
    tool_name: str,
    store: ToolOutputStore | None = None,
    placeholder: str = "",
) -> dict[str, Any]:
    """The ``diff`` fields of a write/edit/apply_patch result.

    A truncated preview comes with ``diff_truncated: true`` and, when a store is given, the full
    diff saved under ``diff_cache_id`` (or ``diff_cache_error`` if saving failed; the tool still
    succeeds).
    """
    if diff == "":
        return {"diff": placeholder}
    preview, truncated = preview_diff(diff)
    if not truncated:
        return {"diff": preview}
    payload: dict[str, Any] = {"diff": preview, "diff_truncated": True}
    if store is None:
        return payload
    try:
        # The cache is written here, not by the agent, so mask secrets (a .env edit) here.
        ref = store.save(
            tool_call_id=f"{tool_name}_diff_{uuid.uuid4()}",
            tool_name=tool_name,
            content=redact_secrets(diff),
        )
        payload["diff_cache_id"] = ref.id
    except Exception as exc:
        payload["diff_cache_error"] = f"Failed to persist full diff: {describe_exc(exc)}"
    return payload


def diff_data(
    report: dict[str, Any], *, file_path: str | None = None, edit_id: str | None = None
) -> ToolResultData:
    """What the application reads of a change (the diff to draw, its summary, the full diff's
    cache entry), beside the report the model reads (a ``diff_payload`` and its summary)."""
    diff, summary = report.get("diff"), report.get("summary")
    return ToolResultData(
        summary=summary if isinstance(summary, str) else None,
        diff=diff if isinstance(diff, str) and diff.strip() else None,
        file_path=file_path,
        edit_id=edit_id,
        cache_ref=report.get("diff_cache_id"),
    )


def dry_run_preview(
    tool: Callable[[], FunctionTool], edit_args: Callable[[dict[str, Any]], dict[str, Any]]
) -> Previewer:
    """A file tool's declared preview: ``tool()``'s own dry run of the call's change.

    ``edit_args`` turns the call's arguments into the dry run's (``write`` previews as a
    whole-file edit); ``tool`` is called late, so a tool can preview with itself.
    """

    async def preview(args: dict[str, Any], ctx: ToolContext) -> ToolPreview:
        result = await tool().execute_raw(json.dumps(edit_args(args)), ctx)
        if isinstance(result, ToolReturn):
            result = result.value
        value = result.value if isinstance(result, JsonResult) else None
        if not isinstance(value, dict):
            return ToolPreview(summary="Preview unavailable: unexpected dry-run output")
        diff, summary = value.get("diff"), value.get("summary")
        return ToolPreview(
            diff=diff if isinstance(diff, str) and diff else None,
            summary=summary if isinstance(summary, str) and summary else None,
        )

    return preview


def _as_dry_run(args: dict[str, Any]) -> dict[str, Any]:
    return {**args, "dry_run": True}


def define_file_change_tool(
    *,
    name: str,
    description: str,
    input: type[InputT],
    execute: Callable[[InputT, ToolContext], Any],
    describe: Callable[[dict[str, Any]], str],
    preview_with: Callable[[], FunctionTool] | None = None,
    edit_args: Callable[[dict[str, Any]], dict[str, Any]] = _as_dry_run,
) -> FunctionTool:
    """A tool that changes files (``edit_files``), previewed by a dry run before approval.

    The dry run is ``preview_with()``'s (default: the tool's own) with ``edit_args`` of the
    call's arguments (default: the same arguments with ``dry_run`` set).
    """
    tool = define_tool(
        name=name,
        description=description,
        input=input,
        execute=execute,
        risk=ToolRisk(
            kind="edit_files",
            describe=describe,
            preview=dry_run_preview(preview_with or (lambda: tool), edit_args),
        ),
    )
    return tool
