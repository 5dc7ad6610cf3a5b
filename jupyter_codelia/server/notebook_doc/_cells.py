"""The notebook front end's cell actions, in Python, over any list of cells.

A port of ``labextension/src/notebookactions.ts`` (``NotebookActions``): the same snapshot
shape, the same compare-and-swap on the source the agent read (``expected_source``), the same
``metadata.codelia`` provenance with its ``review`` part (the source before the agent's first
unaccepted edit, bounded, and an FNV-1a hash of the agent's version), so a cell edited with no
tab open shows its badge and can be reverted from it once a tab opens. What holds the cells is
a :class:`Cells`: a notebook dict read through the contents API, or the collaboration server's
shared document.
"""

from __future__ import annotations

import array
import copy
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ._errors import (
    CellChangedError,
    InvalidNotebookRequestError,
    NotebookNotFoundError,
    RevertRefusedError,
)

# Equal to REVIEW_SOURCE_LIMIT in notebookactions.ts: the longest earlier source kept.
REVIEW_SOURCE_LIMIT = 10_000

EditOp = Literal["insert", "replace", "delete", "move"]


def source_hash(source: str) -> str:
    """``sourceHash`` of notebookactions.ts: FNV-1a over the UTF-16 code units, 8 hex digits."""
    units = array.array("H", source.encode("utf-16-le", "surrogatepass"))
    if sys.byteorder == "big":
        units.byteswap()
    value = 0x811C9DC5
    for unit in units:
        value = ((value ^ unit) * 0x01000193) & 0xFFFFFFFF
    return f"{value:08x}"


def joined(value: Any) -> str:
    """nbformat's multi-line string (a string or a list of strings) as one string."""
    if isinstance(value, list):
        return "".join(str(part) for part in value)
    return value if isinstance(value, str) else ""


class Cells(Protocol):
    """The notebook's cells, in order, as the actions read and change them."""

    def __len__(self) -> int: ...

    def cell_id(self, index: int) -> str: ...

    def find(self, cell_id: str) -> int:
        """The index of the cell with this id; -1 when there is none."""
        ...

    def to_json(self, index: int) -> dict[str, Any]:
        """A copy of the nbformat cell (``source`` one string): kept, so never shared."""
        ...

    def peek(self, index: int) -> dict[str, Any]:
        """The nbformat cell to read now, maybe shared with the document: never change it."""
        ...

    def source(self, index: int) -> str: ...

    def codelia(self, index: int) -> dict[str, Any] | None:
        """``metadata.codelia`` when it is an object."""
        ...

    def running(self, index: int) -> bool: ...

    def insert(self, index: int, cell: dict[str, Any]) -> None: ...

    def delete(self, index: int) -> None: ...

    def move(self, index: int, target: int) -> None: ...

    def set_source(self, index: int, source: str) -> None: ...

    def set_codelia(self, index: int, value: dict[str, Any] | None) -> None:
        """Set ``metadata.codelia`` (``None``: remove it)."""
        ...

    def set_outputs(
        self, index: int, outputs: list[dict[str, Any]], execution_count: int | None
    ) -> None: ...

    def set_running(self, index: int, running: bool) -> None:
        """Show the code cell as running (or not) to whoever has the document open."""
        ...


def scan_for(cells: Cells, cell_id: str) -> int:
    return next((i for i in range(len(cells)) if cells.cell_id(i) == cell_id), -1)


# ---------------------------------------------------------------------- request parameters


class _Params(BaseModel):
    # The kernel sends a few fields the front end does not read (``from_index``, ``index`` of
    # a replace): ignored, as the front end ignores them.
    model_config = ConfigDict(extra="ignore")


_P = TypeVar("_P", bound=_Params)


class SnapshotParams(_Params):
    outputs_for: Literal["all"] | list[str] | None = None


class EditParams(_Params):
    op: EditOp
    cell_id: str | None = None
    index: int | None = Field(default=None, ge=0)
    cell_type: Literal["code", "markdown"] = "code"
    source: str = ""
    expected_source: str | None = None
    provenance: dict[str, Any] | None = None


class RevertParams(_Params):
    edit_id: str = Field(min_length=1)


def parse_params(model: type[_P], params: dict[str, Any], action: str) -> _P:
    """``params`` as ``model``, or :class:`InvalidNotebookRequestError` naming each bad field."""
    try:
        return model.model_validate(params)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in error['loc']) or 'params'}: {error['msg']}"
            for error in exc.errors()[:5]
        )
        raise InvalidNotebookRequestError(f"bad {action} request: {problems}") from None


# ---------------------------------------------------------------------- views


def _rejoined(output: dict[str, Any]) -> dict[str, Any]:
    """An output with its multi-line strings joined, as nbformat's reader and the live model
    give them (a file stores them as lists of lines); JSON data stays as it is."""
    text = output.get("text")
    data = output.get("data")
    if not isinstance(text, list) and not isinstance(data, dict):
        return output
    rejoined = dict(output)
    if isinstance(text, list):
        rejoined["text"] = joined(text)
    if isinstance(data, dict):
        rejoined["data"] = {
            mime: value if _is_json(mime) or not isinstance(value, list) else joined(value)
            for mime, value in data.items()
        }
    return rejoined


def _is_json(mime: str) -> bool:
    return mime == "application/json" or mime.endswith("+json")


def cell_view(
    cells: Cells, index: int, with_outputs: bool, *, with_index: bool = False
) -> dict[str, Any]:
    """One cell as the kernel reads it (``cellView`` of notebookactions.ts)."""
    cell = cells.peek(index)
    view: dict[str, Any] = {
        "id": cells.cell_id(index),
        "cell_type": cell.get("cell_type", "code"),
        "source": joined(cell.get("source")),
    }
    if with_index:
        view["index"] = index
    provenance = cells.codelia(index)
    # The review part is the card's business: snapshots stay small.
    view["metadata"] = (
        {"codelia": {k: v for k, v in provenance.items() if k != "review"}} if provenance else {}
    )
    if view["cell_type"] == "code":
        raw = cell.get("outputs")
        outputs = (
            [_rejoined(o) for o in raw if isinstance(o, dict)] if isinstance(raw, list) else []
        )
        count = cell.get("execution_count")
        view["execution_count"] = count if isinstance(count, int) else None
        view["running"] = cells.running(index)
        view["output_types"] = [str(o.get("output_type")) for o in outputs]
        if with_outputs:
            view["outputs"] = outputs
    return view


def snapshot(cells: Cells, params: SnapshotParams, path: str, dirty: bool) -> dict[str, Any]:
    wanted = params.outputs_for
    chosen = set(wanted) if isinstance(wanted, list) else set()
    return {
        "path": path,
        "cells": [
            cell_view(cells, i, wanted == "all" or cells.cell_id(i) in chosen)
            for i in range(len(cells))
        ],
        # Nobody's page: no active cell, nobody typing, nothing unsaved in a tab.
        "active_cell_id": None,
        "editing_cell_id": None,
        "dirty": dirty,
    }


# ---------------------------------------------------------------------- edits


@dataclass
class EditRecord:
    """One applied agent edit, kept so ``revert`` can undo it (``EditRecord`` in TS)."""

    edit_id: str
    op: EditOp
    cell_id: str
    index: int
    before: dict[str, Any] | None
    after_source: str | None
    from_index: int | None
    provenance: dict[str, Any] | None
    reverted: bool = False


def _awaits_review(provenance: dict[str, Any] | None) -> bool:
    review = provenance.get("review") if provenance else None
    return provenance is not None and not (isinstance(review, dict) and review.get("accepted_at"))


def with_review(
    provenance: dict[str, Any], before: str | None, after: str, omitted: bool = False
) -> dict[str, Any]:
    """The provenance with its review part: the earlier source (bounded) and the agent's hash."""
    review: dict[str, Any] = {"after_hash": source_hash(after)}
    if omitted or (before is not None and len(before) > REVIEW_SOURCE_LIMIT):
        review["before_omitted"] = True
    else:
        review["before"] = before
    return {**provenance, "review": review}


def new_cell(cell_id: str, cell_type: str, source: str, metadata: dict[str, Any]) -> dict[str, Any]:
    if cell_type == "markdown":
        return {"id": cell_id, "cell_type": "markdown", "source": source, "metadata": metadata}
    return {
        "id": cell_id,
        "cell_type": "code",
        "source": source,
        "metadata": metadata,
        "outputs": [],
        "execution_count": None,
    }


def apply_edit(
    cells: Cells, params: EditParams, edit_id: str, new_cell_id: str
) -> tuple[dict[str, Any], EditRecord]:
    """Apply one ``edit`` (``NotebookActions.edit``); its result and the record to keep once
    the change is committed."""
    provenance = params.provenance
    cell_id = params.cell_id or ""
    index = cells.find(cell_id) if cell_id else -1
    if params.op != "insert":
        if not cell_id:
            raise InvalidNotebookRequestError(f"edit {params.op} needs cell_id (from a snapshot)")
        if index < 0:
            raise NotebookNotFoundError(
                f"no cell with id {cell_id} (it was deleted meanwhile); read the notebook again"
            )
        cell_id = cells.cell_id(index)  # the cell's own id, not the alias it was named by
    record = EditRecord(edit_id, params.op, cell_id, index, None, None, None, provenance)
    if params.op == "insert":
        index = min(len(cells) if params.index is None else params.index, len(cells))
        metadata = {"codelia": with_review(provenance, None, params.source)} if provenance else {}
        cells.insert(index, new_cell(new_cell_id, params.cell_type, params.source, metadata))
        record.cell_id, record.index, record.after_source = new_cell_id, index, params.source
        return {"edit_id": edit_id, "cell_id": new_cell_id, "index": index}, record
    current = cells.source(index)
    if params.op != "move":
        if params.expected_source is None:
            raise InvalidNotebookRequestError(
                f"edit {params.op} needs expected_source: the cell's source as it was read"
            )
        if params.expected_source != current:
            raise CellChangedError(
                f"cell #{index} changed since it was read (the user edited it); nothing was "
                "changed: read it again"
            )
    record.before = cells.to_json(index)
    if params.op == "replace":
        cells.set_source(index, params.source)
        if provenance:
            # Edits the person has not accepted yet add up: the card shows them all.
            old = cells.codelia(index)
            pending = old.get("review") if _awaits_review(old) and old else None
            pending = pending if isinstance(pending, dict) else None
            known = pending is not None and "before" in pending
            before = pending.get("before") if pending and known else current
            omitted = bool(pending and pending.get("before_omitted"))
            cells.set_codelia(
                index,
                with_review(
                    provenance, before if isinstance(before, str) else None, params.source, omitted
                ),
            )
        record.after_source = params.source
    elif params.op == "delete":
        cells.delete(index)
    else:
        target = min(index if params.index is None else params.index, len(cells) - 1)
        record.from_index = index
        cells.move(index, target)
        index = record.index = target
    return {"edit_id": edit_id, "cell_id": record.cell_id, "index": index}, record


def apply_revert(cells: Cells, record: EditRecord | None) -> None:
    """Undo one agent edit (``NotebookActions.revert``); refused when the person changed the
    cell since. The caller marks the record reverted once the change is committed."""
    if record is None or record.reverted:
        raise RevertRefusedError("this edit is unknown or already reverted")
    index = cells.find(record.cell_id)
    if record.op == "insert":
        if index < 0:
            raise RevertRefusedError("the inserted cell no longer exists")
        cells.delete(index)
    elif record.op == "replace" and record.before is not None:
        if index < 0:
            raise RevertRefusedError("the edited cell no longer exists")
        if cells.source(index) != record.after_source:
            raise RevertRefusedError("the cell changed after the agent edited it; undo by hand")
        cells.set_source(index, joined(record.before.get("source")))
        metadata = record.before.get("metadata")
        old = metadata.get("codelia") if isinstance(metadata, dict) else None
        cells.set_codelia(index, old if isinstance(old, dict) and old else None)
    elif record.op == "delete" and record.before is not None:
        cells.insert(min(record.index, len(cells)), record.before)
    elif record.op == "move" and record.from_index is not None and index >= 0:
        cells.move(index, record.from_index)


# ---------------------------------------------------------------------- the plain list


class ListCells:
    """:class:`Cells` over the ``cells`` list of a notebook dict (read through the contents
    API). Cells without an id (nbformat before 4.5) read as ``index-N``, the id the kernel's
    own reader gives them; :meth:`ensure_ids` gives them real ones before the file is written
    and keeps answering to ``index-N`` for the request that named them so."""

    def __init__(self, notebook: dict[str, Any], new_id: Callable[[], str]) -> None:
        self._aliases: dict[str, str] = {}
        cells = notebook.get("cells")
        if not isinstance(cells, list) or not all(isinstance(c, dict) for c in cells):
            raise InvalidNotebookRequestError("the notebook has no list of cells")
        self.notebook = notebook
        self._cells: list[dict[str, Any]] = cells
        self._new_id = new_id

    def __len__(self) -> int:
        return len(self._cells)

    def cell_id(self, index: int) -> str:
        value = self._cells[index].get("id")
        return value if isinstance(value, str) and value else f"index-{index}"

    def find(self, cell_id: str) -> int:
        return scan_for(self, self._aliases.get(cell_id, cell_id))

    def peek(self, index: int) -> dict[str, Any]:
        return self._cells[index]

    def to_json(self, index: int) -> dict[str, Any]:
        # A copy: a record's ``before`` must not follow later changes to the cell.
        cell = copy.deepcopy(self._cells[index])
        cell["source"] = joined(cell.get("source"))
        return cell

    def source(self, index: int) -> str:
        return joined(self._cells[index].get("source"))

    def codelia(self, index: int) -> dict[str, Any] | None:
        metadata = self._cells[index].get("metadata")
        value = metadata.get("codelia") if isinstance(metadata, dict) else None
        return value if isinstance(value, dict) else None

    def running(self, index: int) -> bool:
        return False  # a file holds no running cells

    def insert(self, index: int, cell: dict[str, Any]) -> None:
        self._cells.insert(index, dict(cell))

    def delete(self, index: int) -> None:
        del self._cells[index]

    def move(self, index: int, target: int) -> None:
        self._cells.insert(target, self._cells.pop(index))

    def set_source(self, index: int, source: str) -> None:
        self._cells[index]["source"] = source

    def set_codelia(self, index: int, value: dict[str, Any] | None) -> None:
        cell = self._cells[index]
        metadata = cell.get("metadata")
        if not isinstance(metadata, dict):
            metadata = cell["metadata"] = {}
        if value is None:
            metadata.pop("codelia", None)
        else:
            metadata["codelia"] = value

    def set_outputs(
        self, index: int, outputs: list[dict[str, Any]], execution_count: int | None
    ) -> None:
        self._cells[index]["outputs"] = outputs
        self._cells[index]["execution_count"] = execution_count

    def set_running(self, index: int, running: bool) -> None:
        pass  # a file holds no running state

    def ensure_ids(self) -> None:
        """Give every cell an id and mark the notebook nbformat 4.5, where ids are valid."""
        if all(isinstance(c.get("id"), str) and c.get("id") for c in self._cells):
            return
        for index, cell in enumerate(self._cells):
            if not (isinstance(cell.get("id"), str) and cell.get("id")):
                cell["id"] = self._aliases[f"index-{index}"] = self._new_id()
        minor = self.notebook.get("nbformat_minor")
        if not isinstance(minor, int) or minor < 5:
            self.notebook["nbformat_minor"] = 5
