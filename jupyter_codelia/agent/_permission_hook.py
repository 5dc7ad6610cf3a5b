"""The permission hook the agent passes to the tool executor.

It asks the :class:`PermissionPolicy`; when the answer is *confirm* it builds a diff preview for
file-changing tools, opens an :class:`~._approvals.ApprovalRequest`, announces it with a
``permission.request`` event and waits for its answer: from the confirm callback, or from a host
answering through :class:`~._approvals.Approvals` (whichever comes first). With neither, the call
is denied: a headless run never waits for a person who is not there.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._redact import redact_secrets
from ..tools import PermissionDecision, Tool, ToolContext, find_tool
from ..tools._executor import PermissionHook
from ..tools._host import DeclaresApproval
from . import events as ev
from ._approvals import Approvals, ConfirmResponse, first_answer

if TYPE_CHECKING:
    from ..llm.messages import ToolCall
    from .permissions import PermissionPolicy

PREVIEW_MAX_LINES = 120
_PREVIEW_TOOLS = ("write", "edit", "apply_patch")
_LANGUAGES = {
    ".py": "python",
    ".ts": "ts",
    ".tsx": "tsx",
    ".js": "js",
    ".json": "json",
    ".md": "markdown",
    ".toml": "toml",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".sh": "bash",
    ".ipynb": "json",
    ".css": "css",
    ".html": "html",
}


ConfirmCallback = Callable[[ev.PermissionRequestEvent], Awaitable[ConfirmResponse]]


@dataclass
class PermissionHookBuilder:
    policy: PermissionPolicy
    confirm: ConfirmCallback | None
    approvals: Approvals
    host_answers: bool
    """True when a host answers requests through ``approvals`` (a notebook's UIs)."""
    run_id: str
    tools: Sequence[Tool]
    emit: Callable[[Any], None]
    approval_waits: dict[str, float] = field(default_factory=dict)
    """Seconds each tool call (by id) spent waiting for the person's answer."""

    @property
    def hook(self) -> PermissionHook:
        return self._decide

    async def _decide(self, call: ToolCall, raw_args: str, ctx: ToolContext) -> PermissionDecision:
        name = call.function.name
        # Parsing the arguments costs more than deciding; most decisions do not read them.
        parsed = self.policy.reads_args(name)
        args = parse_tool_args(raw_args) if parsed else None
        evaluation = self.policy.evaluate(name, args)
        if evaluation.kind == "allow":
            return PermissionDecision.allow()
        if evaluation.kind == "deny":
            return PermissionDecision.deny(evaluation.reason or "blocked by policy")
        declared = find_tool(self.tools, name)
        if not isinstance(declared, DeclaresApproval):
            declared = None
        elif declared.runs_without_asking:
            return PermissionDecision.allow()
        if self.confirm is None and not self.host_answers:
            return PermissionDecision.deny("UI confirm not supported")
        if not parsed:
            args = parse_tool_args(raw_args)  # the preview and the request show them
        if name in _PREVIEW_TOOLS:
            preview = await self._preview(name, call, args, ctx)
            if preview.diff or preview.summary:
                self.emit(preview)
        self.emit(ev.PermissionReadyEvent(tool=name, tool_call_id=call.id))
        title, message = self.policy.confirm_text(name, args)
        if declared is not None:
            message = f"{message}\n{declared.approval_note()}"
        rules = self.policy.remember_rules(name, args)
        # Masked here, not only when emitted: the confirm callback shows the request itself.
        request = redact_secrets(
            ev.PermissionRequestEvent(
                request_id=uuid.uuid4().hex,
                tool=name,
                tool_call_id=call.id,
                title=title,
                message=message,
                args=args or {},
                remember_rules=[_rule_text(r) for r in rules],
            )
        )
        pending = self.approvals.open(request, self.run_id)
        self.emit(request)
        asked = time.monotonic()
        try:
            response = await first_answer(pending, self.confirm)
        finally:
            self.approval_waits[call.id] = time.monotonic() - asked
            self.approvals.close(pending)
        reason = (response.reason or "").strip() or None
        self.emit(
            ev.PermissionResolvedEvent(
                request_id=request.request_id,
                tool_call_id=call.id,
                decision=response.decision,
                reason=reason,
            )
        )
        if response.decision == "deny":
            # A reason lets the model adapt and go on; a bare "no" stops the turn.
            return PermissionDecision.deny(reason or "permission denied", stop_turn=reason is None)
        if response.decision == "allow_remember" and rules:
            self.policy.remember(rules)
        return PermissionDecision.allow()

    async def _preview(
        self, name: str, call: ToolCall, args: dict[str, Any] | None, ctx: ToolContext
    ) -> ev.PermissionPreviewEvent:
        file_path = (args or {}).get("file_path") if name != "apply_patch" else None
        language = _language(file_path) if isinstance(file_path, str) else None
        if name == "write":
            tool = find_tool(self.tools, "edit")
            preview_args = {
                "file_path": (args or {}).get("file_path", ""),
                "old_string": "",
                "new_string": (args or {}).get("content", ""),
                "dry_run": True,
            }
        else:
            tool = find_tool(self.tools, name)
            preview_args = {**(args or {}), "dry_run": True}
        base = ev.PermissionPreviewEvent(
            tool=name,
            tool_call_id=call.id,
            file_path=file_path if isinstance(file_path, str) else None,
            language=language,
        )
        if tool is None:
            return base.model_copy(update={"summary": "Preview unavailable: dry-run failed"})
        try:
            result = await tool.execute_raw(json.dumps(preview_args), ctx.fork())
        except Exception:
            return base.model_copy(update={"summary": "Preview unavailable: dry-run failed"})
        value = getattr(result, "value", None)
        if not isinstance(value, dict):
            return base.model_copy(
                update={"summary": "Preview unavailable: unexpected dry-run output"}
            )
        diff = value.get("diff")
        if not isinstance(diff, str) or not diff:
            summary = value.get("summary")
            text = summary if isinstance(summary, str) and summary else "Preview: no diff content"
            return base.model_copy(update={"summary": text})
        lines = diff.split("\n")
        truncated = len(lines) > PREVIEW_MAX_LINES
        return base.model_copy(
            update={
                "diff": "\n".join(lines[:PREVIEW_MAX_LINES]),
                "truncated": truncated or None,
                "language": language or _language_from_diff(diff),
            }
        )


def parse_tool_args(raw: str) -> dict[str, Any] | None:
    """A call's raw JSON arguments as an object (``""`` → ``{}``), or None when they are not one."""
    try:
        value = json.loads(raw) if raw.strip() else {}
    except (ValueError, RecursionError):  # RecursionError: nesting past Python's limit
        return None
    return value if isinstance(value, dict) else None


def _rule_text(rule: Any) -> str:
    command = getattr(rule, "command", None)
    if command:
        return f"{rule.tool}: {command}"
    return str(rule.tool)


def _language(path: str) -> str | None:
    dot = path.rfind(".")
    return _LANGUAGES.get(path[dot:].lower()) if dot >= 0 else None


def _language_from_diff(diff: str) -> str | None:
    for line in diff.splitlines():
        if line.startswith("+++ ") or line.startswith("--- "):
            language = _language(line[4:].strip())
            if language:
                return language
    return None
