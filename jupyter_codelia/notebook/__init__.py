"""In-kernel front ends: the ``%codelia`` magics, the widget panel, kernel tools, comm bridge.

Importing this package is cheap; widgets, the agent and the Anthropic SDK load on first use.
"""

from __future__ import annotations

from typing import Any


def load_extension(ipython: Any) -> None:
    """Register the magics and the ``codelia`` comm target (``%load_ext jupyter_codelia``)."""
    from .magics import register

    register(ipython)


def unload_extension(ipython: Any) -> None:
    from .magics import unregister

    unregister(ipython)
