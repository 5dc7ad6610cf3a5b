"""jupyter-codelia: a coding and data agent that runs inside the Jupyter kernel.

``%load_ext jupyter_codelia`` registers the ``%codelia`` magics. This module imports nothing
heavy: the agent, the Anthropic SDK and the widgets load on first use.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"


def load_ipython_extension(ipython: Any) -> None:
    from .notebook import load_extension

    load_extension(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    from .notebook import unload_extension

    unload_extension(ipython)


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    return [{"src": "labextension", "dest": "jupyter-codelia"}]


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "jupyter_codelia.server"}]
