"""jupyter-codelia: a coding and data agent that runs inside the Jupyter kernel.

``%load_ext jupyter_codelia`` registers the ``%codelia`` magics. The public API outside a
notebook is importable from here::

    from jupyter_codelia import Agent, Sandbox, define_tool, tool
    from jupyter_codelia.standard_tools import standard_tools

This module imports nothing heavy: the names below (the agent, the tool decorators, the sandbox
and the errors callers catch) load on first use, and the Anthropic SDK and the widgets only
when a model or a panel needs them. ``standard_tools`` names the sub-package that holds
``standard_tools(...)``: a package attribute cannot be both.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from .agent import Agent, AgentRunError, RunAlreadyActiveError
    from .cache import ToolOutputCacheError
    from .errors import CodeliaError
    from .llm import LlmError
    from .session import SessionLoadError, SessionNotFound
    from .standard_tools import Sandbox, SecurityError
    from .tools import ToolError, define_tool, tool

# Public name → the module that defines it.
_EXPORTS = {
    "Agent": ".agent",
    "AgentRunError": ".agent",
    "RunAlreadyActiveError": ".agent",
    "CodeliaError": ".errors",
    "LlmError": ".llm",
    "Sandbox": ".standard_tools",
    "SecurityError": ".standard_tools",
    "SessionLoadError": ".session",
    "SessionNotFound": ".session",
    "ToolError": ".tools",
    "ToolOutputCacheError": ".cache",
    "define_tool": ".tools",
    "tool": ".tools",
}

__all__ = [
    "Agent",
    "AgentRunError",
    "CodeliaError",
    "LlmError",
    "RunAlreadyActiveError",
    "Sandbox",
    "SecurityError",
    "SessionLoadError",
    "SessionNotFound",
    "ToolError",
    "ToolOutputCacheError",
    "define_tool",
    "tool",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'jupyter_codelia' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


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
