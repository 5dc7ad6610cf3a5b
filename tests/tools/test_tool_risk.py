"""A tool's declared risk: defaults that follow from its kind, and the MCP annotations both ways."""

from __future__ import annotations

import pytest

from jupyter_codelia.tools import UNDECLARED, ToolRisk, define_tool, risk_of, tool
from jupyter_codelia.tools._risk import ToolKind


@pytest.mark.parametrize(
    ("kind", "approval"),
    [
        ("read_only", "never"),
        ("agent_state", "never"),
        ("edit_files", "untrusted"),
        ("edit_notebook", "untrusted"),
        ("run_code", "always"),
        ("network", "always"),
        ("unknown", "always"),
    ],
)
def test_approval_follows_from_the_kind_unless_declared(kind: ToolKind, approval: str) -> None:
    assert ToolRisk(kind=kind).approval == approval
    assert ToolRisk(kind=kind, approval="never").approval == "never"


def test_annotations_of_our_kinds() -> None:
    assert ToolRisk(kind="read_only").annotations() == {
        "readOnlyHint": True,
        "destructiveHint": False,
        "idempotentHint": True,
        "openWorldHint": False,
    }
    assert ToolRisk(kind="network").annotations()["readOnlyHint"] is True
    assert ToolRisk(kind="network").annotations()["openWorldHint"] is True
    assert ToolRisk(kind="edit_files").annotations() == {
        "readOnlyHint": False,
        "destructiveHint": True,
        "idempotentHint": False,
        "openWorldHint": False,
    }
    assert ToolRisk(kind="run_code").annotations()["openWorldHint"] is True


@pytest.mark.parametrize(
    "hints",
    [
        {"read_only": True, "destructive": False, "idempotent": True, "open_world": True},
        {"read_only": False, "destructive": True, "idempotent": False, "open_world": False},
        {"read_only": False, "destructive": False, "idempotent": True, "open_world": True},
    ],
)
def test_mcp_annotations_round_trip(hints: dict[str, bool]) -> None:
    risk = ToolRisk.from_annotations(**hints)
    assert risk.annotations() == {
        "readOnlyHint": hints["read_only"],
        "destructiveHint": hints["destructive"],
        "idempotentHint": hints["idempotent"],
        "openWorldHint": hints["open_world"],
    }
    assert risk.approval == ("never" if hints["read_only"] else "always")
    assert ToolRisk.from_annotations(**hints, approved=True).approval == "never"


def test_tools_carry_their_declaration_and_undeclared_ones_ask() -> None:
    from pydantic import BaseModel

    class NoInput(BaseModel):
        pass

    declared = define_tool(
        name="peek",
        description="Peek.",
        input=NoInput,
        execute=lambda p, ctx: "x",
        risk=ToolRisk(kind="read_only"),
    )
    assert risk_of(declared).kind == "read_only"

    @tool(risk=ToolRisk(kind="network"))
    def fetch(url: str) -> str:
        """Fetch a URL."""
        return url

    assert risk_of(fetch).kind == "network"
    bare = define_tool(name="bare", description="Bare.", input=NoInput, execute=lambda p, c: 1)
    assert risk_of(bare) is UNDECLARED and UNDECLARED.approval == "always"
    assert risk_of(object()) is UNDECLARED
