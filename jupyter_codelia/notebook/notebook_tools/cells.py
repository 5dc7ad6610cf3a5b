"""The notebook as the agent sees it: cell snapshots, the outline, cell text and stale detection.

A :class:`NotebookSnapshot` comes either from the live notebook model in the front end (over the
``codelia.notebook`` comm, see :mod:`.frontend`) or from the saved ``.ipynb`` file; everything
here works on it the same way, so the outline and cell rendering never depend on where the cells
came from. Pure functions only: no IPython, no comm.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..._text import clip_utf8
from ...errors import CodeliaError

OUTLINE_MAX_CHARS = 1800
OUTLINE_MAX_HEADINGS = 24
OUTLINE_HEADING_CHARS = 60
OUTLINE_MAX_RANGES = 12
SOURCE_MAX_LINES = 200
OUTPUT_MAX_CHARS = 4000
TRACEBACK_TAIL_LINES = 8
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
CellType = Literal["code", "markdown", "raw"]
ImageMime = Literal["image/png", "image/jpeg"]
_IMAGE_MIMES: tuple[ImageMime, ...] = ("image/png", "image/jpeg")


class CellView(BaseModel):
    """One cell as the front end (or the saved file) reports it."""

    model_config = ConfigDict(extra="ignore")
    id: str
    cell_type: CellType
    source: str
    execution_count: int | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    outputs: list[dict[str, Any]] | None = None
    output_types: list[str] = Field(default_factory=list)
    running: bool = False


class NotebookSnapshot(BaseModel):
    """The notebook's cells, in order, and where the person is.

    ``skipped`` says what could not be read (a malformed output, metadata nested too deeply):
    the cell is kept, so indices stay those the person sees, with that part left out.
    """

    model_config = ConfigDict(extra="ignore")
    path: str | None = None
    source: Literal["live", "saved"] = "live"
    cells: list[CellView]
    active_cell_id: str | None = None
    editing_cell_id: str | None = None
    dirty: bool = False
    skipped: list[str] = Field(default_factory=list)

    def index_of(self, cell_id: str) -> int:
        for index, cell in enumerate(self.cells):
            if cell.id == cell_id:
                return index
        raise KeyError(cell_id)


class NotebookFileError(CodeliaError, ValueError):
    """The saved notebook cannot be read at all (missing, not JSON, no cells)."""


def read_saved(path: Path) -> NotebookSnapshot:
    """The snapshot of the ``.ipynb`` on disk (its last saved state).

    Reads what a real-world file holds, as nbformat's reader does: nbformat 4 and 3
    (``worksheets``), sources and outputs as strings or lists. What cannot be read is left out
    and listed in ``skipped`` instead of failing the whole notebook: an output that is not an
    object, ``outputs`` that are not a list, metadata that is not an object or is nested deeper
    than :data:`MAX_JSON_DEPTH` levels, an unknown cell type (shown as raw).
    """
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise NotebookFileError(f"cannot read the saved notebook {path}: {exc}") from None
    skipped: list[str] = []
    try:
        data = load_json_bounded(text, skipped)
    except ValueError as exc:
        raise NotebookFileError(f"{path} is not a JSON notebook: {exc}") from None
    raw_cells = data.get("cells") if isinstance(data, dict) else None
    if raw_cells is None and isinstance(data, dict):
        raw_cells = _v3_cells(data)
    if not isinstance(raw_cells, list):
        raise NotebookFileError(
            f"{path} has no 'cells' list: is it a Jupyter notebook (nbformat 3 or 4)?"
        )
    return NotebookSnapshot(
        path=str(path), source="saved", cells=cells_from_json(raw_cells, skipped), skipped=skipped
    )


def snapshot_from_json(raw: Any, source: Literal["live", "saved"]) -> NotebookSnapshot:
    """A snapshot from the front end's JSON, read as leniently as a saved file."""
    if not isinstance(raw, dict) or not isinstance(raw.get("cells"), list):
        raise ValueError("the notebook snapshot has no 'cells' list")
    skipped: list[str] = []
    bounded = prune_depth(raw, skipped)
    fields = {k: v for k, v in bounded.items() if k not in ("cells", "source", "skipped")}
    snapshot = NotebookSnapshot.model_validate({**fields, "cells": [], "source": source})
    snapshot.cells = cells_from_json(bounded["cells"], skipped)
    snapshot.skipped = skipped
    return snapshot


# --- lenient JSON -------------------------------------------------------------------------

MAX_JSON_DEPTH = 64
_TOO_DEEP = f"[left out: nested deeper than {MAX_JSON_DEPTH} levels]"
# A JSON string (the unrolled form: fast over long base64 payloads) or a bracket.
_JSON_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')


def load_json_bounded(text: str, skipped: list[str]) -> Any:
    """``json.loads(text)`` with every container deeper than :data:`MAX_JSON_DEPTH` replaced
    by a note (said in ``skipped``); the stdlib parser stops with RecursionError near 1,000
    levels, and deep values break serializers and renderers after it."""
    try:
        data = json.loads(text)
    except RecursionError:
        data = json.loads(_cut_deep_containers(text))
        skipped.append(f"values nested deeper than {MAX_JSON_DEPTH} levels were left out")
        return data
    return prune_depth(data, skipped)


def _cut_deep_containers(text: str) -> str:
    """``text`` with each array or object that opens below depth MAX_JSON_DEPTH replaced by
    the note string (a scan of strings and brackets only: no recursion)."""
    pieces: list[str] = []
    depth = 0
    kept_until = 0
    cut_at = -1
    for match in _JSON_TOKEN.finditer(text):
        token = match.group()
        if token[0] == '"':
            continue
        if token in "[{":
            depth += 1
            if depth == MAX_JSON_DEPTH + 1 and cut_at < 0:
                cut_at = match.start()
        else:
            depth -= 1
            if depth == MAX_JSON_DEPTH and cut_at >= 0:
                pieces += [text[kept_until:cut_at], json.dumps(_TOO_DEEP)]
                kept_until, cut_at = match.end(), -1
    pieces.append(text[kept_until:])
    return "".join(pieces)


def prune_depth(data: Any, skipped: list[str]) -> Any:
    """``data`` with containers deeper than MAX_JSON_DEPTH replaced by the note (iterative)."""
    pruned = 0
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        node, depth = stack.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for key, value in list(items):
            if isinstance(value, (dict, list)):
                if depth >= MAX_JSON_DEPTH:
                    node[key] = _TOO_DEEP
                    pruned += 1
                else:
                    stack.append((value, depth + 1))
    if pruned:
        skipped.append(f"values nested deeper than {MAX_JSON_DEPTH} levels were left out")
    return data


# --- lenient cells ------------------------------------------------------------------------

_CELL_TYPES: frozenset[str] = frozenset({"code", "markdown", "raw"})
_OUTPUT_TEXT_FIELDS = ("text", "ename", "evalue", "name", "output_type")


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _text_of(value: Any) -> str:
    """nbformat's multi-line string: a string or a list of strings."""
    if isinstance(value, list):
        return "".join(item if isinstance(item, str) else str(item) for item in value)
    return value if isinstance(value, str) else ("" if value is None else str(value))


def cells_from_json(raw_cells: list[Any], skipped: list[str]) -> list[CellView]:
    return [_cell_from_json(raw, number, skipped) for number, raw in enumerate(raw_cells)]


def _cell_from_json(raw: Any, number: int, skipped: list[str]) -> CellView:
    if not isinstance(raw, dict):
        skipped.append(f"cell {number} is not an object ({_kind(raw)}): shown empty")
        return CellView(id=f"index-{number}", cell_type="raw", source="")
    cell_type = raw.get("cell_type", "code")
    if cell_type not in _CELL_TYPES:
        skipped.append(f"cell {number} has an unknown cell_type {str(cell_type)[:40]!r}: shown raw")
        cell_type = "raw"
    count = raw.get("execution_count")
    if count is not None and (isinstance(count, bool) or not isinstance(count, int)):
        skipped.append(f"cell {number}: execution_count {str(count)[:20]!r} is not a number")
        count = None
    metadata = raw.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        skipped.append(f"cell {number}: metadata is not an object ({_kind(metadata)})")
    outputs: list[dict[str, Any]] | None = None
    if cell_type == "code":
        outputs = _outputs_from_json(raw.get("outputs"), number, skipped)
    types = raw.get("output_types")
    return CellView(
        id=_text_of(raw.get("id")) or f"index-{number}",
        cell_type=cell_type,
        source=_text_of(raw.get("source")),
        execution_count=count,
        metadata=metadata if isinstance(metadata, dict) else {},
        outputs=outputs,
        output_types=(
            [str(t) for t in types]
            if isinstance(types, list)
            else [str(o.get("output_type")) for o in outputs or []]
        ),
        running=raw.get("running") is True,
    )


def _outputs_from_json(raw: Any, number: int, skipped: list[str]) -> list[dict[str, Any]]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        skipped.append(f"cell {number}: outputs are not a list ({_kind(raw)}): left out")
        return []
    outputs: list[dict[str, Any]] = []
    for position, output in enumerate(raw):
        if not isinstance(output, dict):
            skipped.append(
                f"cell {number}: output {position} is not an object ({_kind(output)}): left out"
            )
            continue
        outputs.append(_joined_output(output, number, skipped))
    return outputs


def _joined_output(output: dict[str, Any], number: int, skipped: list[str]) -> dict[str, Any]:
    """nbformat stores multi-line strings as lists; the live model sends them joined."""
    joined = dict(output)
    for name in _OUTPUT_TEXT_FIELDS:
        if name in joined and not isinstance(joined[name], str):
            joined[name] = _text_of(joined[name])
    traceback = joined.get("traceback")
    if traceback is not None and not isinstance(traceback, list):
        joined["traceback"] = _text_of(traceback).splitlines()
    data = joined.get("data")
    if isinstance(data, dict):
        joined["data"] = {k: _text_of(v) if isinstance(v, list) else v for k, v in data.items()}
    elif data is not None:
        skipped.append(f"cell {number}: an output's data is not an object ({_kind(data)})")
        joined["data"] = {}
    return joined


_V3_OUTPUT_TYPES = {"pyout": "execute_result", "pyerr": "error"}
_V3_MIMES = {"text": "text/plain", "png": "image/png", "jpeg": "image/jpeg", "html": "text/html"}


def _v3_cells(data: dict[str, Any]) -> list[Any] | None:
    """The cells of an nbformat 3 notebook in nbformat 4's shape (as nbformat converts them)."""
    worksheets = data.get("worksheets")
    if not isinstance(worksheets, list):
        return None
    cells: list[Any] = []
    for sheet in worksheets:
        sheet_cells = sheet.get("cells") if isinstance(sheet, dict) else None
        for cell in sheet_cells if isinstance(sheet_cells, list) else []:
            if not isinstance(cell, dict):
                cells.append(cell)
                continue
            converted = dict(cell)
            if cell.get("cell_type") == "heading":
                level = cell.get("level")
                level = min(max(level, 1), 6) if isinstance(level, int) else 1
                converted["cell_type"] = "markdown"
                converted["source"] = "#" * level + " " + _text_of(cell.get("source"))
            if "input" in cell:
                converted["source"] = cell["input"]
            if "prompt_number" in cell:
                converted["execution_count"] = cell["prompt_number"]
            outputs = cell.get("outputs")
            if isinstance(outputs, list):
                converted["outputs"] = [_v3_output(o) for o in outputs]
            cells.append(converted)
    return cells


def _v3_output(output: Any) -> Any:
    if not isinstance(output, dict):
        return output
    kind = str(output.get("output_type"))
    converted: dict[str, Any] = {"output_type": _V3_OUTPUT_TYPES.get(kind, kind)}
    if kind == "stream":
        converted |= {"name": output.get("stream", "stdout"), "text": output.get("text", "")}
    elif kind == "pyerr":
        converted |= {k: output.get(k) for k in ("ename", "evalue", "traceback")}
    else:
        converted["data"] = {_V3_MIMES[k]: v for k, v in output.items() if k in _V3_MIMES}
    return converted


# ---------------------------------------------------------------------- history and staleness


@dataclass(frozen=True)
class KernelHistory:
    """What the kernel ran: ``inputs[n]`` is the raw source of execution count ``n``."""

    inputs: Sequence[str]
    outputs: dict[int, Any]

    def ran(self, count: int | None) -> str | None:
        if count is None or count <= 0 or count >= len(self.inputs):
            return None
        return self.inputs[count]


def _is_agent_prompt(cell: CellView) -> bool:
    # ipykernel reports a cell's count as of its end, so a %%codelia cell that ran other cells
    # (on a subshell) shows the last of their numbers: comparing it with In would be noise.
    return cell.source.lstrip().startswith(("%%codelia", "%codelia"))


def is_stale(cell: CellView, history: KernelHistory | None) -> bool:
    """Whether the cell's source changed after the kernel ran it (unknown history → False)."""
    if history is None or cell.cell_type != "code" or cell.execution_count is None:
        return False
    if _is_agent_prompt(cell):
        return False
    ran = history.ran(cell.execution_count)
    return ran is not None and ran.rstrip() != cell.source.rstrip()


def ran_in_other_kernel(cell: CellView, history: KernelHistory | None) -> bool:
    """A count this kernel never reached: the output came from an earlier kernel."""
    return (
        history is not None
        and cell.cell_type == "code"
        and cell.execution_count is not None
        and not _is_agent_prompt(cell)
        and history.ran(cell.execution_count) is None
    )


# ---------------------------------------------------------------------- outline


def _ranges(indices: Sequence[int], limit: int = OUTLINE_MAX_RANGES) -> str:
    spans: list[tuple[int, int]] = []
    for index in indices:
        if spans and spans[-1][1] == index - 1:
            spans[-1] = (spans[-1][0], index)
        else:
            spans.append((index, index))
    shown = [f"#{a}" if a == b else f"#{a}-{b}" for a, b in spans[:limit]]
    more = len(spans) - limit
    return ", ".join(shown) + (f", … (+{more} more ranges)" if more > 0 else "")


def headings(cell: CellView) -> list[tuple[int, str]]:
    if cell.cell_type != "markdown":
        return []
    found: list[tuple[int, str]] = []
    for line in cell.source.splitlines():
        match = _HEADING.match(line)
        if match:
            found.append((len(match.group(1)), match.group(2)))
    return found


def _label(snapshot: NotebookSnapshot) -> str:
    name = Path(snapshot.path).name if snapshot.path else "the notebook"
    if snapshot.source == "saved":
        return (
            f"{name} (last SAVED state read from disk: no live notebook answered, so unsaved "
            "edits and outputs are missing)"
        )
    return f"{name} (live{', unsaved changes' if snapshot.dirty else ''})"


def outline(snapshot: NotebookSnapshot, history: KernelHistory | None = None) -> str:
    """A bounded overview (at most ``OUTLINE_MAX_CHARS``): counts, headings, active, stale."""
    cells = snapshot.cells
    kinds = {kind: sum(1 for c in cells if c.cell_type == kind) for kind in ("code", "markdown")}
    lines = [
        f"Notebook {_label(snapshot)}: {len(cells)} cells "
        f"({kinds['code']} code, {kinds['markdown']} markdown)."
    ]
    if snapshot.active_cell_id is not None:
        try:
            lines.append(
                f"Active cell: #{snapshot.index_of(snapshot.active_cell_id)} "
                f"(id {snapshot.active_cell_id})."
            )
        except KeyError:
            pass
    marks: list[tuple[str, list[int]]] = [
        ("Stale (source changed after it ran)", []),
        ("Outputs from an earlier kernel", []),
        ("Never ran", []),
        ("Errors", []),
        ("Running", []),
        ("Agent-edited", []),
    ]
    found: list[str] = []
    for index, cell in enumerate(cells):
        for level, title in headings(cell):
            if len(found) < OUTLINE_MAX_HEADINGS:
                found.append(f"{'  ' * (level - 1)}#{index} {title[:OUTLINE_HEADING_CHARS]}")
            else:
                found.append("")
        if cell.cell_type == "code":
            if is_stale(cell, history):
                marks[0][1].append(index)
            elif ran_in_other_kernel(cell, history):
                marks[1][1].append(index)
            if cell.execution_count is None and cell.source.strip() and not cell.running:
                marks[2][1].append(index)
            if "error" in cell.output_types:
                marks[3][1].append(index)
            if cell.running:
                marks[4][1].append(index)
        if "codelia" in cell.metadata:
            marks[5][1].append(index)
    shown = [h for h in found if h]
    if shown:
        lines.append("Headings:")
        lines.extend("  " + h for h in shown)
        if len(found) > len(shown):
            lines.append(f"  … {len(found) - len(shown)} more headings")
    for title, indices in marks:
        if indices:
            lines.append(f"{title}: {_ranges(indices)}")
    lines.append("Read cells with notebook_read(start=, end=) / (cell_ids=) / (search=).")
    if snapshot.skipped:
        lines.append(skipped_note(snapshot))
    return clip_utf8("\n".join(lines), OUTLINE_MAX_CHARS)


SKIPPED_SHOWN = 5


def skipped_note(snapshot: NotebookSnapshot) -> str:
    """What reading left out (the first few), so the model does not take it as complete."""
    shown = snapshot.skipped[:SKIPPED_SHOWN]
    more = len(snapshot.skipped) - len(shown)
    tail = f"; … {more} more" if more > 0 else ""
    return f"Not readable, left out: {'; '.join(shown)}{tail}."


# ---------------------------------------------------------------------- selection


def select(
    snapshot: NotebookSnapshot,
    *,
    start: int | None = None,
    end: int | None = None,
    cell_ids: Sequence[str] | None = None,
    search: str | None = None,
) -> list[int]:
    """Indices of the chosen cells; raises ``LookupError`` naming what did not match."""
    count = len(snapshot.cells)
    if cell_ids:
        indices: list[int] = []
        missing: list[str] = []
        for cell_id in cell_ids:
            try:
                indices.append(snapshot.index_of(cell_id))
            except KeyError:
                missing.append(cell_id)
        if missing:
            raise LookupError(
                f"no cell with id {', '.join(map(repr, missing))} in the notebook "
                f"({count} cells); call notebook_read() for the outline and ids"
            )
        return indices
    lo = 0 if start is None else start
    hi = count if end is None else min(end, count)
    if lo < 0 or lo > count:
        raise LookupError(f"start={lo} is outside the notebook (cells 0..{count - 1})")
    indices = list(range(lo, hi))
    if search:
        needle = search.lower()
        indices = [i for i in indices if needle in snapshot.cells[i].source.lower()]
        if not indices:
            raise LookupError(f"no cell contains {search!r}")
    return indices


# ---------------------------------------------------------------------- one cell as text


@dataclass
class RenderedCells:
    text: str
    images: list[tuple[bytes, ImageMime]]


def _clip_lines(text: str, offset: int, limit: int) -> tuple[str, str | None]:
    lines = text.splitlines()
    window = lines[offset : offset + limit]
    rest = len(lines) - offset - len(window)
    note = f"… {rest} more lines (page with source_line_offset={offset + limit})" if rest else None
    return "\n".join(window), note


def output_text(output: dict[str, Any], images: list[tuple[bytes, ImageMime]] | None) -> str:
    """One nbformat output as text; images are appended to ``images`` when it is given."""
    kind = output.get("output_type")
    if kind == "stream":
        return f"[{output.get('name', 'stdout')}]\n" + _clip(str(output.get("text", "")))
    if kind == "error":
        traceback = [_ANSI.sub("", str(line)) for line in output.get("traceback") or []]
        tail = "\n".join("\n".join(traceback).splitlines()[-TRACEBACK_TAIL_LINES:])
        return f"[error] {output.get('ename')}: {output.get('evalue')}\n{tail}"
    data = output.get("data") or {}
    label = "[result]" if kind == "execute_result" else "[display]"
    for mime in _IMAGE_MIMES:
        if mime in data:
            if images is None:
                return f"{label} {mime} image (pass images=true to see it)"
            try:
                images.append((base64.b64decode(str(data[mime])), mime))
            except (binascii.Error, ValueError):
                return f"{label} {mime} image (undecodable base64)"
            return f"{label} {mime} image (attached)"
    if "text/plain" in data:
        return f"{label}\n" + _clip(_ANSI.sub("", str(data["text/plain"])))
    if data:
        return f"{label} {', '.join(sorted(data))}"
    return f"[{kind}]"


def _clip(text: str) -> str:
    if len(text) <= OUTPUT_MAX_CHARS:
        return text.rstrip("\n")
    return text[:OUTPUT_MAX_CHARS] + f"\n… ({len(text) - OUTPUT_MAX_CHARS} more characters)"


def cell_header(index: int, cell: CellView, history: KernelHistory | None) -> str:
    parts = [f"cell #{index}", f"id {cell.id}", cell.cell_type]
    if cell.cell_type == "code":
        parts.append(
            "never ran" if cell.execution_count is None else f"ran as [{cell.execution_count}]"
        )
    if cell.running:
        parts.append("RUNNING")
    if is_stale(cell, history):
        parts.append("STALE: source changed after it ran")
    elif ran_in_other_kernel(cell, history):
        parts.append("output from an earlier kernel")
    if "codelia" in cell.metadata:
        parts.append("agent-edited")
    return "--- " + " · ".join(parts)


def render_cells(
    snapshot: NotebookSnapshot,
    indices: Iterable[int],
    history: KernelHistory | None,
    *,
    include_outputs: bool = True,
    images: bool = False,
    source_line_offset: int = 0,
    source_max_lines: int = SOURCE_MAX_LINES,
) -> RenderedCells:
    found: list[tuple[bytes, ImageMime]] = []
    blocks: list[str] = [f"Notebook {_label(snapshot)}"]
    if snapshot.skipped:
        blocks.append(skipped_note(snapshot))
    for index in indices:
        cell = snapshot.cells[index]
        source, note = _clip_lines(cell.source, source_line_offset, source_max_lines)
        block = [cell_header(index, cell, history), source]
        if note:
            block.append(note)
        if include_outputs and cell.outputs:
            block.append("output:")
            block.extend(output_text(o, found if images else None) for o in cell.outputs)
        blocks.append("\n".join(block))
    return RenderedCells("\n\n".join(blocks), found)
