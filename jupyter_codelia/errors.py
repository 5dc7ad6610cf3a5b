"""The one base of every error jupyter-codelia raises on purpose.

``except CodeliaError`` catches them all. Each subclass keeps the builtin base callers already
expect (a missing session is still a ``KeyError``, a bad argument a ``ValueError``), and code that
needs to tell cases apart catches the subclass, never a message: messages are for people and
models, and may change.

Control flow is not an error and stays outside this tree: ``RunCancelled`` (a
``CancelledError``) and ``TaskComplete`` (the ``done`` tool's signal).
"""

from __future__ import annotations


class CodeliaError(Exception):
    """Base of the errors jupyter-codelia raises."""
