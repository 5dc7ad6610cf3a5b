"""In-kernel front ends: the ``%codelia`` magics, the widget panel, kernel tools, comm bridge.

Importing this package is cheap; widgets, the agent and the Anthropic SDK load on first use.
The rooms: ``run/`` drives a run, ``ui/`` draws it, ``kernel_tools/`` and ``notebook_tools/``
are the tools that need the kernel; the magics, the configuration, the warm-up and the one
:class:`~.extension.KernelExtension` per kernel sit at the top.

>>> from jupyter_codelia.notebook import notebook_agent, run_with_panel
>>> notebook_agent(get_ipython()).last_result     # the latest run's RunResult
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .run.in_cell import run_with_panel

if TYPE_CHECKING:
    from ._shell import KernelShell
    from .run.runner import NotebookAgent

__all__ = ["load_extension", "notebook_agent", "run_with_panel", "unload_extension"]


def load_extension(ipython: KernelShell) -> None:
    """Register the magics and the ``codelia`` comm target (``%load_ext jupyter_codelia``)."""
    from .extension import kernel_extension

    kernel_extension(ipython).load()


def unload_extension(ipython: KernelShell) -> None:
    from .extension import kernel_extension

    kernel_extension(ipython).unload()


def notebook_agent(shell: KernelShell) -> NotebookAgent:
    """The kernel's notebook agent (its settings, sessions, jobs, last result)."""
    from .extension import kernel_extension

    return kernel_extension(shell).agent
