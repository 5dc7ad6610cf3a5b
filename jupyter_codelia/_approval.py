"""Approval modes: how much a run may do without asking the person.

Shared by the sandbox, the permission policy and the front ends (magics, config, side panel), and
so kept in a leaf module that imports nothing heavy (``%load_ext`` reads it before pydantic).
"""

from __future__ import annotations

from typing import Literal, get_args

ApprovalMode = Literal["minimal", "trusted", "full-access"]
APPROVAL_MODES: tuple[ApprovalMode, ...] = get_args(ApprovalMode)
