"""Who shows the running cell's output: a front end that renders widgets, or none at all.

Decided from the running cell's own execute request, never from kernel-wide state another
request may have changed since (ipykernel keeps ``_allow_stdin`` kernel-wide, and the side
panel's own subshell requests send ``allow_stdin: false`` while a cell runs). Interactive front
ends (JupyterLab, Notebook 7, VS Code, the classic Notebook) send their cells with
``allow_stdin: true``, since they answer ``input()``; headless runners (nbclient, papermill,
``jupyter execute``) send ``false`` and render no widget. A client that sends ``false`` but does
render widgets says so by opening the ipywidgets control comm (``jupyter.widget.control``,
which ipywidgets 8 front ends open to fetch widget state): it gets live widgets too.

Call these on the cell's own thread (the magic's), where ipykernel's request context is the
cell's: a worker thread has no request of its own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .._shell import KernelShell

WIDGET_CONTROL_TARGET = "jupyter.widget.control"


def cell_request(shell: KernelShell) -> dict[str, Any]:
    """The execute request of the cell running on this thread (empty outside a kernel)."""
    kernel = getattr(shell, "kernel", None)
    get_parent = getattr(kernel, "get_parent", None)
    if get_parent is None:
        return {}
    parent = get_parent("shell")
    return parent if isinstance(parent, dict) else {}


def cell_allows_stdin(shell: KernelShell) -> bool:
    """Whether the running cell's front end answers ``input()`` prompts."""
    content = cell_request(shell).get("content")
    return isinstance(content, dict) and content.get("allow_stdin") is True


def renders_widgets(shell: KernelShell) -> bool:
    """Whether the front end of the running cell draws ipywidgets (else: static output)."""
    if getattr(shell, "kernel", None) is None:
        return False  # a terminal IPython: no front end draws widgets
    return cell_allows_stdin(shell) or _widget_control_comm_open()


def _widget_control_comm_open() -> bool:
    from comm import get_comm_manager

    comms = list(get_comm_manager().comms.values())
    return any(getattr(c, "target_name", None) == WIDGET_CONTROL_TARGET for c in comms)
