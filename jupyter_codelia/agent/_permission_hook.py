"""The permission hook the agent passes to the tool executor.

It asks the :class:`PermissionPolicy`, handing it the tool's declared
:class:`~jupyter_codelia.tools.ToolRisk`; when the answer is *confirm* it shows the preview the
tool declares (a file tool's diff), opens an :class:`~._approvals.ApprovalRequest`, announces it
with a ``permission.request`` event and waits for its answer: from the confirm callback, or from
a host answering through :class:`~._approvals.Approvals` (whichever comes first). With neither,
the call is denied: a headless run never waits for a person who is not there.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._redact import redact_secrets
from ..tools import UNDECLARED, PermissionDecision, Tool, ToolContext, ToolRisk, risk_of
from ..tools._executor import PermissionHook
from . import events as ev
from ._approvals import Approvals, ConfirmResponse, first_answer

if TYPE_CHECKING:
    from ..llm.messages import ToolCall
    from .permissions import PermissionPolicy

PREVIEW_MAX_LINES = 120
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
    _risks: dict[str, ToolRisk] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        # Every call is decided by its tool's declaration: read once per run, the first tool of
        # a name winning as in the executor.
        self._risks = {}
        for tool in self.tools:
            self._risks.setdefault(tool.name, risk_of(tool))

    @property
    def hook(self) -> PermissionHook:
        return self._decide

    async def _decide(self, call: ToolCall, raw_args: str, ctx: ToolContext) -> PermissionDecision:
        name = call.function.name
        risk = self._risks.get(name, UNDECLARED)
        # Parsing the arguments costs more than deciding; most decisions do not read them.
        parsed = self.policy.reads_args(risk)
        args = parse_tool_args(raw_args) if parsed else None
        evaluation = self.policy.evaluate(name, args, risk)
        if evaluation.kind == "allow":
            return PermissionDecision.allow()
        if evaluation.kind == "deny":
            return PermissionDecision.deny(evaluation.reason or "blocked by policy")
        if self.confirm is None and not self.host_answers:
            return PermissionDecision.deny("UI confirm not supported")
        if not parsed:
            args = parse_tool_args(raw_args)  # the preview and the request show them
        if risk.preview is not None:
            preview = await self._preview(name, risk, call, args, ctx)
            if preview.diff or preview.summary:
                self.emit(preview)
        self.emit(ev.PermissionReadyEvent(tool=name, tool_call_id=call.id))
        title, message = self.policy.confirm_text(name, args, risk)
        if risk.note:
            message = f"{message}\n{risk.note}"
        rules = self.policy.remember_rules(name, args, risk)
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
        self,
        name: str,
        risk: ToolRisk,
        call: ToolCall,
        args: dict[str, Any] | None,
        ctx: ToolContext,
    ) -> ev.PermissionPreviewEvent:
        assert risk.preview is not None
        file_path = (args or {}).get("file_path")
        language = _language(file_path) if isinstance(file_path, str) else None
        base = ev.PermissionPreviewEvent(
            tool=name,
            tool_call_id=call.id,
            file_path=file_path if isinstance(file_path, str) else None,
            language=language,
        )
        try:
            preview = await risk.preview(dict(args or {}), ctx.fork())
        except Exception:
            return base.model_copy(update={"summary": "Preview unavailable: dry-run failed"})
        diff = preview.diff
        if not diff:
            summary = preview.summary or "Preview: no diff content"
            return base.model_copy(update={"summary": summary})
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
