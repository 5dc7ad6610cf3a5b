"""Approval modes (how much a run may do without asking the person) and the answers to a request.

Shared by the sandbox, the permission policy and the front ends (magics, config, side panel), and
so kept in a leaf module that imports nothing heavy (``%load_ext`` reads it before pydantic).
"""

from __future__ import annotations

from typing import Literal, get_args

ApprovalMode = Literal["minimal", "trusted", "full-access"]
APPROVAL_MODES: tuple[ApprovalMode, ...] = get_args(ApprovalMode)

# A person's answer to one approval request: the one definition the agent, its events, the
# wire and the cell panel share (the side panel's type is generated from the wire).
Decision = Literal["allow", "allow_remember", "deny"]
DECISIONS: tuple[Decision, ...] = get_args(Decision)
