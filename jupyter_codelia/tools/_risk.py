"""What a tool declares about its risk, read by everything that must treat tools differently.

A :class:`ToolRisk` says what a tool touches (its ``kind``), whether a person approves a call
(``approval``), which argument holds a shell command the policy checks word by word
(``command_arg``), whether the output cache may cut its output (``output_cut``), and how a call
describes and previews itself on the approval card (``describe``, ``preview``). The permission
policy, the permission hook and the output cache read this declaration instead of keeping lists
of tool names, so a new tool, ours, an MCP server's or a user's, is handled by what it declares.

It maps both ways onto the MCP tool annotations: :meth:`ToolRisk.annotations` gives the
``readOnlyHint`` / ``destructiveHint`` / ``idempotentHint`` / ``openWorldHint`` a tool served to
other agents carries, and :meth:`ToolRisk.from_annotations` reads a server's annotations back.

>>> ToolRisk(kind="edit_files").approval
'untrusted'
>>> ToolRisk(kind="read_only").annotations()["readOnlyHint"]
True
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

if TYPE_CHECKING:
    from ._context import ToolContext

ToolKind = Literal[
    "read_only", "agent_state", "edit_files", "edit_notebook", "run_code", "network", "unknown"
]
"""What a call may touch: nothing (reads only), the agent's own state (its todo list, its jobs),
files, the notebook, anything code can (python, a shell), the outside world, or unknown."""

Approval = Literal["never", "untrusted", "always"]
"""When the policy asks a person (deny rules and allow rules apply first; ``full-access`` asks
nobody): ``never``, in ``minimal`` mode only (``untrusted``), or in every mode (``always``)."""

_APPROVAL_BY_KIND: dict[ToolKind, Approval] = {
    "read_only": "never",
    "agent_state": "never",
    "edit_files": "untrusted",
    "edit_notebook": "untrusted",
    "run_code": "always",
    "network": "always",
    "unknown": "always",
}
# Our network tools read (search, fetch); a server's tool says for itself (from_annotations).
_READ_ONLY_KINDS = frozenset({"read_only", "network"})
_DESTRUCTIVE_KINDS = frozenset({"edit_files", "edit_notebook", "run_code", "unknown"})
_OPEN_WORLD_KINDS = frozenset({"run_code", "network", "unknown"})


@dataclass(frozen=True, slots=True)
class ToolPreview:
    """What a call would change, shown on its approval card: a unified diff or a summary."""

    diff: str | None = None
    summary: str | None = None


Previewer = Callable[[dict[str, Any], "ToolContext"], Awaitable[ToolPreview]]
"""``preview(args, ctx)``: the change a call with ``args`` would make, without making it."""

Describer = Callable[[dict[str, Any]], str]
"""``describe(args)``: one line naming what a call would do (``write a.py (12 bytes)``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolRisk:
    """A tool's declared risk (see the module docstring); unset hints follow from ``kind``."""

    kind: ToolKind = "unknown"
    approval: Approval | None = None
    command_arg: str | None = None
    """The argument holding a shell command: the policy decides such calls segment by segment."""
    output_cut: bool = True
    """False for a tool whose output is already a bounded view (the output cache's readers)."""
    read_only: bool | None = None
    """Whether a call leaves its environment as it was (a web search does)."""
    destructive: bool | None = None
    idempotent: bool | None = None
    open_world: bool | None = None
    note: str | None = None
    """Said on the approval card under the call (an MCP server's own account of the tool)."""
    describe: Describer | None = field(default=None, compare=False)
    preview: Previewer | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        # Frozen: the derived defaults are set once, here, so readers never re-derive them.
        if self.approval is None:
            object.__setattr__(self, "approval", _APPROVAL_BY_KIND[self.kind])
        if self.read_only is None:
            object.__setattr__(self, "read_only", self.kind in _READ_ONLY_KINDS)
        if self.destructive is None:
            object.__setattr__(self, "destructive", self.kind in _DESTRUCTIVE_KINDS)
        if self.idempotent is None:
            object.__setattr__(self, "idempotent", self.kind == "read_only")
        if self.open_world is None:
            object.__setattr__(self, "open_world", self.kind in _OPEN_WORLD_KINDS)

    def annotations(self) -> dict[str, bool]:
        """The MCP tool annotations this declaration stands for."""
        return {
            "readOnlyHint": bool(self.read_only),
            "destructiveHint": bool(self.destructive) and not self.read_only,
            "idempotentHint": bool(self.idempotent),
            "openWorldHint": bool(self.open_world),
        }

    @classmethod
    def from_annotations(
        cls,
        *,
        read_only: bool,
        destructive: bool,
        idempotent: bool,
        open_world: bool,
        approved: bool = False,
        note: str | None = None,
    ) -> ToolRisk:
        """An MCP server's annotations of a tool (``approved``: it may run without asking)."""
        kind: ToolKind = "read_only" if read_only else "network" if open_world else "unknown"
        return cls(
            kind=kind,
            approval="never" if approved or read_only else "always",
            read_only=read_only,
            destructive=destructive and not read_only,
            idempotent=idempotent,
            open_world=open_world,
            note=note,
        )


UNDECLARED = ToolRisk()
"""The risk of a tool that declares none: unknown, so every mode but ``full-access`` asks."""


@runtime_checkable
class DeclaresRisk(Protocol):
    """A tool that declares its risk (every tool of ours does; a bare ``Tool`` need not)."""

    @property
    def risk(self) -> ToolRisk: ...


def risk_of(tool: object) -> ToolRisk:
    """The risk ``tool`` declares, else :data:`UNDECLARED` (read once per tool and run)."""
    return tool.risk if isinstance(tool, DeclaresRisk) else UNDECLARED
