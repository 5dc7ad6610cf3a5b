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
    kind = "invalid"


class NotebookNotFoundError(NotebookDocError, LookupError):
    kind = "not_found"


class CellChangedError(NotebookDocError, RuntimeError):
    kind = "cell_changed"


class NotebookFileChangedError(NotebookDocError, RuntimeError):
    kind = "file_changed"


class NotebookUnreadableError(NotebookDocError, ValueError):
    kind = "unreadable"


class NotebookTooLargeError(NotebookDocError, ValueError):
    kind = "too_large"


class NeedsTabError(NotebookDocError, RuntimeError):
    kind = "needs_tab"


class RevertRefusedError(NotebookDocError, RuntimeError):
    kind = "refused"
