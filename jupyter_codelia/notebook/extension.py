"""The one object codelia keeps per kernel: :class:`KernelExtension`.

``%load_ext jupyter_codelia`` makes it (:func:`kernel_extension`) and calls :meth:`load`. It
owns what lives as long as the kernel: the ``Codelia`` settings (what ``%config
Codelia.<name>`` sets), the job registry (jobs outlive agents and turns), the client of the
notebook tabs, the comm bridge to the side panel and the notebook's agent, the last two made on
first use. Everything else reaches them through this object, never through attributes of the
IPython shell; the front end's entry points (``bridge.control``, ``frontend.tab_opened``) find
it with :func:`kernel_extension`.
"""

from __future__ import annotations

import atexit
import threading
import weakref
from typing import TYPE_CHECKING, Any

from traitlets.config import Configurable

from ..standard_tools.jobs import JobRecords, JobRegistry
from .config import Codelia, resolve_settings
from .frontend import FrontendClient

if TYPE_CHECKING:
    from pathlib import Path

    from ._shell import KernelShell
    from .bridge import Bridge
    from .run.runner import NotebookAgent


class KernelExtension:
    """codelia in one kernel: settings, jobs, the tabs' client, the bridge and the agent."""

    def __init__(self, shell: KernelShell) -> None:
        self.shell = shell
        self.traits = _codelia_traits(shell)
        # Each shell job's guard ends it when the kernel is gone, however it ended; ending them
        # at exit only saves the wait, and keeps their records for the next kernel.
        self.jobs = JobRegistry(
            records=JobRecords(self._job_records_directory),
            output_store=lambda: self.agent.output_store(),
        )
        atexit.register(self.jobs.end_with_the_kernel)
        self.frontend = FrontendClient()
        self._agent: NotebookAgent | None = None
        self._bridge: Bridge | None = None
        self._lock = threading.Lock()

    def _job_records_directory(self) -> Path:
        """Where this kernel's job records go: a restart keeps the kernel id, and so the place
        where the next kernel finds what this one was running."""
        from .run.runner import kernel_id

        return self.agent.home() / "jobs" / (kernel_id() or "no-kernel-id")

    @property
    def agent(self) -> NotebookAgent:
        """The notebook's agent session (made on first use: it imports the agent package)."""
        with self._lock:
            if self._agent is None:
                from .run.runner import NotebookAgent

                traits = self.traits
                self._agent = NotebookAgent(
                    self.shell,
                    lambda: resolve_settings(traits),
                    jobs=self.jobs,
                    frontend=self.frontend,
                )
            return self._agent

    @property
    def bridge(self) -> Bridge:
        """The side panel's end of the ``codelia`` comm."""
        agent = self.agent
        with self._lock:
            if self._bridge is None:
                from .bridge import Bridge

                bridge = Bridge(agent, self.frontend)
                # %config Codelia.home moves the store: open panels chose where to read
                # history by the store their hello named.
                self.traits.observe(lambda _change: bridge.store_changed(), names="home")
                self._bridge = bridge
            return self._bridge

    def load(self) -> None:
        """Define the magics and the comm target, and start warming up the first run."""
        from . import _warmup
        from .bridge import register_comm_target
        from .magics import CodeliaMagics
        from .ui import _finals

        self.shell.register_magics(CodeliaMagics(self.shell, self))
        register_comm_target(self.shell, lambda: self.bridge)
        # A live output that finished after its cell: the tabs swap in its static form.
        _finals.FINALS.announce = self._output_finished
        _warmup.start(lambda: self.agent)

    def _output_finished(self, model_id: str, bundle: dict[str, Any]) -> None:
        from ..wire import OutputFinished

        self.frontend.tell_tabs(OutputFinished(model_id=model_id, data=bundle).dump())

    def unload(self) -> None:
        """Undo :meth:`load`; MCP server processes do not outlive the extension."""
        from .bridge import unregister_comm_target

        unregister_comm_target(self.shell)
        if self._agent is not None:
            self._agent.close_mcp()
        magics = self.shell.magics_manager.magics
        magics["line"].pop("codelia", None)
        magics["cell"].pop("codelia", None)


_extensions: weakref.WeakKeyDictionary[KernelShell, KernelExtension] = weakref.WeakKeyDictionary()
_extensions_lock = threading.Lock()


def kernel_extension(shell: KernelShell) -> KernelExtension:
    """The kernel's :class:`KernelExtension` (made on first use, one per shell)."""
    with _extensions_lock:
        existing = _extensions.get(shell)
        if existing is None:
            existing = _extensions[shell] = KernelExtension(shell)
        return existing


def _codelia_traits(shell: KernelShell) -> Configurable:
    """The shell's ``Codelia`` configurable, so ``%config Codelia.<name>`` reaches it."""
    for configurable in getattr(shell, "configurables", []):
        if isinstance(configurable, Codelia):
            return configurable
    traits = Codelia(parent=shell)
    shell.configurables.append(traits)
    return traits
