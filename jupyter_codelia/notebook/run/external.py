"""The kernel's tools for agents outside it: ``tools.list`` and ``tool.call``.

The Jupyter server extension relays calls of other agents (Claude Code, Cursor, Codex, Jupyter
AI's) to the kernel through ``bridge.control()``; here they run with the very tools the
notebook's own agent has in the kernel (the namespace, the notebook, jobs, the output cache),
next to the person's variables, and with the same approvals:

* a call the approval mode asks about is asked in the notebook's side panel, the calling agent
  named on the card; with no side panel open nobody can answer and the call is denied, saying
  so; an unanswered request is denied after :data:`APPROVAL_WAIT_SECONDS`;
* "always allow" remembers the rule for that calling agent only, for the kernel's life (an
  outside agent's approvals never widen what the notebook's own agent may do, or another's);
* every call shows in the side panel as a run of its own (``run.started`` with source
  ``external``, then the agent events a call makes: tool call, approval, result).

Calls run on a private event loop in a thread of their own, as a blocking ``%%codelia`` turn
does: ``control()`` is served on a subshell thread, or on the main thread when the kernel has
no subshells, and neither has a loop this module may run on.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..._redact import redact_secrets
from ...agent import ConfirmResponse
from ...agent import events as ev
from ...errors import CodeliaError
from ...wire import (
    ExternalTool,
    RunStarted,
    RunStatus,
    ToolCallRequest,
    ToolCallResult,
    ToolsListResult,
    event_message,
    status_message,
)

if TYPE_CHECKING:
    from ...agent.permissions import PermissionPolicy
    from ...cache import ToolOutputCache
    from ...standard_tools.jobs import JobRegistry
    from ...tools import Tool, ToolResultData
    from ..config import Settings
    from ..kernel_tools.undo import NamespaceUndo
    from ..notebook_tools.cell_tools import NotebookContext
    from .runner import NotebookAgent

APPROVAL_WAIT_SECONDS = 300.0
EXTERNAL_TOOLS = (
    "list_variables",
    "inspect_variable",
    "kernel_history",
    "python",
    "job_list",
    "job_output",
    "job_wait",
    "job_stop",
    "notebook_read",
    "notebook_edit",
    "notebook_run",
    "tool_output_cache",
    "tool_output_cache_line",
    "tool_output_cache_grep",
)
"""What outside agents get: the kernel's own tools. Files, shell and web they have themselves."""


class UnknownToolError(CodeliaError, LookupError):
    """``tool.call`` named a tool the kernel does not offer."""


def tool_hints(tool: Tool) -> tuple[bool, bool]:
    """(read-only, destructive) of ``tool``, from the risk the tool declares itself."""
    from ...tools import risk_of

    hints = risk_of(tool).annotations()
    return hints["readOnlyHint"], hints["destructiveHint"]


class ExternalCalls:
    """Serves ``tools.list`` / ``tool.call`` for one kernel (the bridge owns one).

    ``watched`` says whether someone can answer an approval now (a side panel is attached).
    """

    def __init__(self, nb: NotebookAgent, watched: Callable[[], bool]) -> None:
        self.nb = nb
        self.watched = watched
        self._kits: dict[tuple[str, Path, float], _Kit] = {}
        self._policies: dict[str, PermissionPolicy] = {}
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None

    def listing(self) -> ToolsListResult:
        return listing_of(self._kit("", self.nb.settings()).tools)

    def call(self, request: ToolCallRequest) -> ToolCallResult:
        """Run one call to its end on this kernel's outside-call loop (blocking the caller).

        One loop thread serves every caller: tools await (python runs its code on a thread of
        its own), so concurrent calls from several subshells interleave there."""
        return asyncio.run_coroutine_threadsafe(self._call(request), self._running_loop()).result()

    def _running_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(
                    target=loop.run_forever, name="codelia-external-calls", daemon=True
                )
                thread.start()
                self._loop = loop
            return self._loop

    # ------------------------------------------------------------------ the call

    async def _call(self, request: ToolCallRequest) -> ToolCallResult:
        from ...agent import PermissionHookBuilder
        from ...llm.messages import FunctionCall, ToolCall
        from ...tools import ToolContext, execute_tool_call, find_tool

        settings = self.nb.settings()
        kit = self._kit(request.caller, settings)
        tools = kit.tools
        if find_tool(tools, request.tool) is None:
            offered = ", ".join(tool.name for tool in tools)
            raise UnknownToolError(f"no tool {request.tool!r} in this kernel; it offers {offered}")
        run = _ExternalRun(self.nb, request)
        run.begin()
        call = ToolCall(
            id=f"external_{uuid.uuid4().hex[:12]}",
            function=FunctionCall(name=request.tool, arguments=json.dumps(request.arguments)),
        )
        watched = self.watched()
        hook = PermissionHookBuilder(
            policy=self._policy(request.caller, settings),
            confirm=_wait_then_deny if watched else _nobody_to_ask,
            approvals=self.nb.approvals,
            host_answers=True,
            run_id=run.run_id,
            tools=tools,
            emit=run.emit,
        ).hook
        run.emit(ev.StepStartEvent(step_id=call.id, title=request.tool, step_number=1))
        run.emit(
            ev.ToolCallEvent(
                tool=request.tool,
                args=request.arguments,
                raw_args=call.function.arguments,
                tool_call_id=call.id,
            )
        )
        try:
            execution = await execute_tool_call(
                call, tools, ToolContext(emit=run.emit), can_execute_tool=hook
            )
        finally:
            self.nb.approvals.deny_open("the call ended", run_id=run.run_id)
        message = redact_secrets(execution.message)
        data = redact_secrets(execution.result_data)
        processed = kit.output_cache.process(message)
        run.result(processed, data)
        content = processed.content
        parts = (
            [{"type": "text", "text": content}]
            if isinstance(content, str)
            else [part.dump() for part in content]
        )
        return ToolCallResult(
            is_error=bool(message.is_error),
            content=parts,
            output_ref=processed.output_ref.id if processed.output_ref else None,
            run_id=run.run_id,
            data=data,
        )

    def _policy(self, caller: str, settings: Settings) -> PermissionPolicy:
        """The caller's own policy: the notebook's mode, the caller's remembered rules."""
        with self._lock:
            policy = self._policies.get(caller)
            if policy is None:
                policy = self._policies[caller] = _caller_policy(caller, settings)
        policy.mode = settings.approval_mode
        return policy

    def _kit(self, caller: str, settings: Settings) -> _Kit:
        """The offered tools and the output cache, made once per caller and configuration
        (provenance names the caller)."""
        from ...cache import ToolOutputCache
        from ..notebook_tools.cell_tools import NotebookContext

        key = (caller, settings.home, settings.python_timeout)
        with self._lock:
            cached = self._kits.get(key)
        if cached is not None:
            return cached
        nb = self.nb
        store = nb.output_store()
        kit = _Kit(
            tools=external_tools(
                {"shell": nb.shell},
                NotebookContext(nb.shell, nb.frontend, lambda: {"model": caller or "outside"}),
                jobs=nb.jobs,
                undo=nb.undo,
                store=store,
                python_timeout=settings.python_timeout,
            ),
            output_cache=ToolOutputCache(store),
        )
        with self._lock:
            self._kits[key] = kit
        return kit


def external_tools(
    bound_to: dict[str, Any],
    notebook: NotebookContext,
    *,
    jobs: JobRegistry,
    undo: NamespaceUndo | None,
    store: Any,
    python_timeout: float,
) -> list[Tool]:
    """The tools outside agents get, in :data:`EXTERNAL_TOOLS` order; ``bound_to`` is
    ``kernel_tools``' ``shell=`` or ``namespace=``."""
    from ...standard_tools.jobs import job_tools
    from ...standard_tools.output_cache import output_cache_tools
    from ..kernel_tools.namespace import kernel_tools
    from ..notebook_tools.cell_tools import notebook_tools

    made: list[Tool] = [
        *kernel_tools(
            **bound_to,
            default_timeout=python_timeout,
            jobs=jobs,
            timeout_to_job=True,  # an outside agent's client gives up; a job waits for it
            undo=undo,
        ),
        *notebook_tools(notebook),
        *job_tools(jobs),
        *output_cache_tools(store),
    ]
    by_name = {tool.name: tool for tool in made}
    return [by_name[name] for name in EXTERNAL_TOOLS if name in by_name]


def listing_of(tools: list[Tool]) -> ToolsListResult:
    """``tools.list``'s answer: each tool's name, description, input schema and hints."""
    described = []
    for tool in tools:
        read_only, destructive = tool_hints(tool)
        described.append(
            ExternalTool(
                name=tool.name,
                description=tool.description,
                input_schema=tool.definition.parameters,
                read_only=read_only,
                destructive=destructive,
            )
        )
    return ToolsListResult(tools=described)


def packaged_listing() -> ToolsListResult:
    """What ``tools.list`` answers in a kernel with the default settings, made without one.

    The server extension ships it (``server/kernel_tools.json``, written by
    ``python -m jupyter_codelia.notebook.run.external``) to list the tools while no notebook
    kernel runs; the server never imports this package, and listing must not start a kernel.
    """
    from ...standard_tools.jobs import JobRegistry
    from ..config import Settings
    from ..frontend import FrontendClient
    from ..notebook_tools.cell_tools import NotebookContext

    tools = external_tools(
        {"namespace": {}},
        NotebookContext(None, FrontendClient()),
        jobs=JobRegistry(),
        undo=None,
        store=None,
        python_timeout=Settings().python_timeout,
    )
    return listing_of(tools)


@dataclass(frozen=True)
class _Kit:
    tools: list[Tool]
    output_cache: ToolOutputCache


def _caller_policy(caller: str, settings: Settings) -> PermissionPolicy:
    from ...agent.permissions import PermissionPolicy
    from ...tools import ToolRisk

    class CallerPolicy(PermissionPolicy):
        """Names the calling agent on every approval card."""

        def confirm_text(
            self, tool_name: str, args: dict[str, Any] | None, risk: ToolRisk
        ) -> tuple[str, str]:
            title, message = super().confirm_text(tool_name, args, risk)
            return (
                f"{caller} (an agent outside this notebook): {title}",
                f"{caller} asks to run {tool_name} in this kernel.\n{message}",
            )

    root = Path(settings.root).expanduser() if settings.root else Path.cwd()
    # No config file: what "always allow" remembers holds for this caller, in this kernel.
    return CallerPolicy(settings.approval_mode, sandbox_root=root)


async def _nobody_to_ask(event: ev.PermissionRequestEvent) -> ConfirmResponse:
    return ConfirmResponse(
        decision="deny",
        reason=(
            f"{event.tool} needs the person's approval, and nobody can give it: no codelia side "
            "panel is open on this notebook. Ask them to open it (or to allow the call in its "
            "approval mode) and call again."
        ),
    )


async def _wait_then_deny(event: ev.PermissionRequestEvent) -> ConfirmResponse:
    await asyncio.sleep(APPROVAL_WAIT_SECONDS)
    return ConfirmResponse(
        decision="deny",
        reason=f"nobody answered the approval in the side panel within {APPROVAL_WAIT_SECONDS:g} s",
    )


class _ExternalRun:
    """The side panel's view of one outside call: a run with its own events."""

    def __init__(self, nb: NotebookAgent, request: ToolCallRequest) -> None:
        self.nb = nb
        self.request = request
        self.run_id = str(uuid.uuid4())
        self._seq = itertools.count()
        self._lock = threading.Lock()
        self._started = time.monotonic()

    def begin(self) -> None:
        started = RunStarted(
            run_id=self.run_id,
            session_id=None,
            prompt=redact_secrets(f"{self.request.caller} calls {self.request.tool}"),
            source="external",
        )
        self.nb.broadcast(started.dump())
        self.nb.broadcast(status_message(self.run_id, "running"))

    def emit(self, event: Any) -> None:
        """Number and send one event (thread-safe: tools emit from their own threads)."""
        with self._lock:
            seq = next(self._seq)
        event = redact_secrets(event).model_copy(update={"seq": seq})
        self.nb.broadcast(event_message(self.run_id, seq, ev.event_to_json(event)))

    def result(self, message: Any, data: ToolResultData) -> None:
        from ...llm.messages import has_non_text_part, text_projection

        content = message.content
        parts = (
            [part.dump() for part in content]
            if isinstance(content, list) and has_non_text_part(content)
            else None
        )
        self.emit(
            ev.ToolResultEvent(
                tool=self.request.tool,
                result=text_projection(content),
                tool_call_id=message.tool_call_id,
                is_error=message.is_error,
                parts=parts,
                output_ref=message.output_ref.id if message.output_ref else None,
                data=data,
            )
        )
        self.emit(
            ev.StepCompleteEvent(
                step_id=message.tool_call_id,
                status="error" if message.is_error else "completed",
                duration_ms=round((time.monotonic() - self._started) * 1000),
            )
        )
        status: RunStatus = "error" if message.is_error else "completed"
        self.nb.broadcast(status_message(self.run_id, status))


if __name__ == "__main__":
    print(json.dumps(packaged_listing().dump(), indent=1, sort_keys=True))
