"""The cells of the collaboration server's shared notebook (jupyter-collaboration installed).

:class:`YCells` reads and changes a ``jupyter_ydoc.YNotebook`` the way JupyterLab's own model
does: a cell is a map with ``source`` as shared text, ``metadata`` as a map and ``outputs`` as
an array of maps (stream text shared too). Every change runs inside the transaction the caller
opened with the agent's origin, so it reaches every connected client as one update, and the
room writes it to the file on its own schedule. ``pycrdt`` is imported only here and only when
jupyter-collaboration is installed.
"""

from __future__ import annotations

from typing import Any

from ._cells import joined, scan_for

# The transaction origin of every change the agent makes without a tab (Yjs observers and undo
# managers see who changed the document).
ORIGIN = "jupyter-codelia"


def _plain(value: Any) -> Any:
    """Yjs keeps numbers as floats: whole ones back to int, as nbformat wants them."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


class YCells:
    """:class:`~._cells.Cells` over a ``YNotebook`` (call inside a transaction)."""

    def __init__(self, notebook: Any) -> None:
        self._notebook = notebook
        self._cells: Any = notebook.ycells

    def __len__(self) -> int:
        return len(self._cells)

    def cell_id(self, index: int) -> str:
        value = self._cells[index].get("id")
        return value if isinstance(value, str) and value else f"index-{index}"

    def find(self, cell_id: str) -> int:
        return scan_for(self, cell_id)

    def to_json(self, index: int) -> dict[str, Any]:
        cell: dict[str, Any] = _plain(self._cells[index].to_py())
        cell.pop("execution_state", None)
        cell["source"] = joined(cell.get("source"))
        return cell

    def peek(self, index: int) -> dict[str, Any]:
        return self.to_json(index)  # already a fresh dict

    def source(self, index: int) -> str:
        return str(self._cells[index]["source"])

    def codelia(self, index: int) -> dict[str, Any] | None:
        metadata = self._cells[index].get("metadata")
        value: Any = metadata.get("codelia") if metadata is not None else None
        if hasattr(value, "to_py"):
            value = value.to_py()
        return _plain(value) if isinstance(value, dict) else None

    def running(self, index: int) -> bool:
        return bool(self._cells[index].get("execution_state") == "running")

    def insert(self, index: int, cell: dict[str, Any]) -> None:
        self._cells.insert(index, self._notebook.create_ycell(cell))

    def delete(self, index: int) -> None:
        del self._cells[index]

    def move(self, index: int, target: int) -> None:
        # Delete and recreate (same id), as jupyter_ydoc itself does: pycrdt's move operation is
        # not understood by the Yjs 13 of today's JupyterLab.
        cell = self.to_json(index)
        del self._cells[index]
        self._cells.insert(target, self._notebook.create_ycell(cell))

    def set_source(self, index: int, source: str) -> None:
        text = self._cells[index]["source"]
        text.clear()
        text += source

    def set_codelia(self, index: int, value: dict[str, Any] | None) -> None:
        from pycrdt import Map

        ycell = self._cells[index]
        metadata = ycell.get("metadata")
        if not isinstance(metadata, Map):
            ycell["metadata"] = metadata = Map()
        if value is None:
            if "codelia" in metadata:
                del metadata["codelia"]
        else:
            metadata["codelia"] = value

    def set_outputs(
        self, index: int, outputs: list[dict[str, Any]], execution_count: int | None
    ) -> None:
        from pycrdt import Array, Map, Text

        ycell = self._cells[index]
        youtputs: list[Any] = []
        for output in outputs:
            if output.get("output_type") == "stream":
                output = {**output, "text": Text(joined(output.get("text")))}
            youtputs.append(Map(output))
        ycell["outputs"] = Array(youtputs)
        ycell["execution_count"] = execution_count

    def set_running(self, index: int, running: bool) -> None:
        ycell = self._cells[index]
        if ycell.get("cell_type") == "code":
            ycell["execution_state"] = "running" if running else "idle"
