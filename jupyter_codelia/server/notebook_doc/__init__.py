"""The kernel's notebook requests answered by the server for a notebook no tab has open.

``NotebookDoc.for_server(serverapp, path)`` then ``await doc.answer(request)``: the
``notebook.reply`` a JupyterLab tab would send, edited through jupyter-collaboration's shared
document when it is installed, through the file with compare-and-swap otherwise.
"""

from __future__ import annotations

from ._cells import REVIEW_SOURCE_LIMIT, source_hash
from ._doc import (
    DEFAULT_MAX_BYTES,
    CellRunResult,
    CellToRun,
    NotebookDoc,
    RunCells,
)
from ._errors import (
    CellChangedError,
    InvalidNotebookRequestError,
    NeedsTabError,
    NotebookDocError,
    NotebookFileChangedError,
    NotebookNotFoundError,
    NotebookTooLargeError,
    NotebookUnreadableError,
    RevertRefusedError,
)

__all__ = [
    "DEFAULT_MAX_BYTES",
    "REVIEW_SOURCE_LIMIT",
    "CellChangedError",
    "CellRunResult",
    "CellToRun",
    "InvalidNotebookRequestError",
    "NeedsTabError",
    "NotebookDoc",
    "NotebookDocError",
    "NotebookFileChangedError",
    "NotebookNotFoundError",
    "NotebookTooLargeError",
    "NotebookUnreadableError",
    "RevertRefusedError",
    "RunCells",
    "source_hash",
]
