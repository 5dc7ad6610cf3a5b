"""The agent: run loop, events, permissions and history repair (no IPython imports).

>>> agent = Agent(AnthropicChat(), standard_tools(root="."))     # doctest: +SKIP
>>> await agent.run("Summarise README.md")                         # doctest: +SKIP
"""

from typing import Any

from ..llm.base import ChatModel
from ..tools import SessionStateHook
from ._agent import Agent, AgentRunError, RunAlreadyActiveError, UsageTotals
from ._approvals import ApprovalRequest, Approvals, ConfirmResponse
from ._budget import BudgetLimits, BudgetMeter
from ._compaction import CompactionConfig
from ._history import repair_history
from ._permission_hook import ConfirmCallback, PermissionHookBuilder
from ._retry import RetryConfig

__all__ = [
    "Agent",
    "AgentRunError",
    "ApprovalRequest",
    "Approvals",
    "BudgetLimits",
    "BudgetMeter",
    "ChatModel",
    "CompactionConfig",
    "ConfirmCallback",
    "ConfirmResponse",
    "PermissionHookBuilder",
    "PermissionPolicy",
    "PermissionRule",
    "RetryConfig",
    "RunAlreadyActiveError",
    "SessionStateHook",
    "UsageTotals",
    "repair_history",
]


def __getattr__(name: str) -> Any:
    # The policy module is imported on first use so `import jupyter_codelia.agent` stays light.
    if name in ("PermissionPolicy", "PermissionRule"):
        from . import permissions

        return getattr(permissions, name)
    raise AttributeError(name)
