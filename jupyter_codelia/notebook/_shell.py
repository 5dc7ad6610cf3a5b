"""What the notebook layer reads of the kernel's IPython shell: :class:`KernelShell`.

IPython's ``InteractiveShell`` (and ipykernel's ``ZMQInteractiveShell``) has far more; this
names only what codelia's code reads unconditionally. What only some shells have (``kernel``,
which a terminal IPython lacks, ``user_ns_hidden``, ``history_manager``) is probed with
``getattr`` where it is read, and is not part of the Protocol.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from IPython.core.formatters import DisplayFormatter
    from IPython.core.magic import MagicsManager


class KernelShell(Protocol):
    """The kernel's IPython shell, as far as codelia reads it."""

    display_pub: Any
    """IPython's display publisher; python tool calls swap in a wrapper that routes their
    ``display()`` calls, so it is read and set."""

    @property
    def user_ns(self) -> dict[str, Any]:
        """The namespace the notebook's cells run in."""
        ...

    @property
    def configurables(self) -> list[Any]:
        """The shell's configurables (what ``%config`` reaches); codelia adds its own."""
        ...

    @property
    def display_formatter(self) -> DisplayFormatter: ...

    @property
    def magics_manager(self) -> MagicsManager: ...

    def register_magics(self, *magic_objects: Any) -> None: ...
