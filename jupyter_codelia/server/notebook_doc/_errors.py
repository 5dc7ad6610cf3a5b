"""Why the server refused a notebook request with no tab open: one class per reason.

Each carries its :data:`~jupyter_codelia.wire.NotebookErrorKind` as ``kind``, which the reply
sends as ``error_kind`` so a caller tells cases apart without reading the message.
"""

from __future__ import annotations

from typing import ClassVar

from ...errors import CodeliaError
from ...wire import NotebookErrorKind


class NotebookDocError(CodeliaError):
    """Base of the refusals; ``str(error)`` says what to do next."""

    kind: ClassVar[NotebookErrorKind]


class InvalidNotebookRequestError(NotebookDocError, ValueError):
    """The request itself is malformed: not a notebook request, a path that is not a plain
    path under the root, an edit without the source it expects."""

    kind = "invalid"


class NotebookNotFoundError(NotebookDocError, LookupError):
    """No notebook the request can reach: none at the path, or no notebook (or running
    kernel) behind the kernel or name it gives."""

    kind = "not_found"


class CellChangedError(NotebookDocError, RuntimeError):
    """The cell is no longer the one that was read (the user edited it): nothing changed."""

    kind = "cell_changed"


class NotebookFileChangedError(NotebookDocError, RuntimeError):
    """The file kept changing on disk while an edit was written; nothing was written."""

    kind = "file_changed"


class NotebookUnreadableError(NotebookDocError, ValueError):
    """The contents manager gave nothing readable as a notebook for the path."""

    kind = "unreadable"


class NotebookTooLargeError(NotebookDocError, ValueError):
    """The file is larger than is read with no tab open; opening it in JupyterLab lets the
    agent work on it."""

    kind = "too_large"


class NeedsTabError(NotebookDocError, RuntimeError):
    """What was asked needs the notebook open in a tab (or the server's kernel relay)."""

    kind = "needs_tab"


class RevertRefusedError(NotebookDocError, RuntimeError):
    """The edit to revert is unknown, already reverted, or its cell is gone."""

    kind = "refused"
