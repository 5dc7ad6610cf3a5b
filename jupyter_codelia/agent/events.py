"""Agent events: what a run reports to front ends.

Every event is a pydantic model with a ``type`` discriminator and serialises to plain JSON with
:func:`event_to_json`; the widget panel consumes the models in-process and the side panel receives
the same JSON over the ``codelia`` comm.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from .._approval import Decision
from ..tools._results import COMPLETED, ToolResultData
from ..tools.events import Event as _Event
from ..tools.events import TodoItemView, TodosUpdatedEvent, ToolProgressEvent, now_ms


class Citation(BaseModel):
    """A source the model cited for its text: a web page (``url``) or a passage of a document."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    title: str | None = None
    url: str | None = None
    cited_text: str | None = None


class TextEvent(_Event):
    """A whole assistant text block that precedes tool calls (the terminal answer is ``final``)."""

    type: Literal["text"] = "text"
    content: str
    citations: list[Citation] | None = None
    timestamp: int = Field(default_factory=now_ms)


class TextDeltaEvent(_Event):
    """Streamed tokens of the assistant text being generated."""

    type: Literal["text_delta"] = "text_delta"
    delta: str
    timestamp: int = Field(default_factory=now_ms)


class TextDiscardedEvent(_Event):
    """The text streamed since the last complete block is void: the model call failed mid-reply
    and will be retried, so front ends remove what they showed of it."""

    type: Literal["text_discarded"] = "text_discarded"
    timestamp: int = Field(default_factory=now_ms)


class ReasoningEvent(_Event):
    type: Literal["reasoning"] = "reasoning"
    content: str
    timestamp: int = Field(default_factory=now_ms)


class ReasoningDeltaEvent(_Event):
    type: Literal["reasoning_delta"] = "reasoning_delta"
    delta: str
    timestamp: int = Field(default_factory=now_ms)


FailureKind = Literal["rate_limit", "overloaded", "timeout", "network", "provider", "bad_request"]


class LlmRetryEvent(_Event):
    type: Literal["llm.retry"] = "llm.retry"
    provider: str
    failure_kind: FailureKind
    next_attempt: int
    max_attempts: int
    delay_ms: int
    delay_source: Literal["retry-after", "reset-header", "provider-body", "backoff"]
    status: int | None = None
    message: str | None = None


class StepStartEvent(_Event):
    type: Literal["step_start"] = "step_start"
    step_id: str
    title: str
    step_number: int


class ToolCallEvent(_Event):
    type: Literal["tool_call"] = "tool_call"
    tool: str
    args: dict[str, Any]
    raw_args: str | None = None
    tool_call_id: str
    display_name: str | None = None


class PermissionPreviewEvent(_Event):
    type: Literal["permission.preview"] = "permission.preview"
    tool: str
    tool_call_id: str | None = None
    file_path: str | None = None
    language: str | None = None
    diff: str | None = None
    summary: str | None = None
    truncated: bool | None = None


class PermissionReadyEvent(_Event):
    type: Literal["permission.ready"] = "permission.ready"
    tool: str
    tool_call_id: str | None = None


class PermissionRequestEvent(_Event):
    """A confirm request for the front end (``permission.request``)."""

    type: Literal["permission.request"] = "permission.request"
    request_id: str
    tool: str
    tool_call_id: str | None = None
    title: str
    message: str
    args: dict[str, Any] = Field(default_factory=dict)
    remember_rules: list[str] = Field(default_factory=list)
    kind: Literal["tool", "elicitation", "sampling", "authorization"] = "tool"
    """What is asked: a tool call's approval, or a question a tool relays (an MCP server's
    form or link, its sampling request, an OAuth sign-in) answered on the same channel."""
    url: str | None = None
    """A link the person opens (URL elicitation, OAuth sign-in)."""
    fields: dict[str, Any] | None = None
    """The flat JSON schema of a form to fill (form elicitation); answered as ``content``."""


class PermissionResolvedEvent(_Event):
    type: Literal["permission.resolved"] = "permission.resolved"
    request_id: str
    tool_call_id: str | None = None
    decision: Decision
    reason: str | None = None


class ToolResultEvent(_Event):
    """The processed result of a call: ``result`` is the model's content as text (shown, never
    parsed), ``parts`` its typed parts, ``data`` what the application reads of it (how the call
    ended, its diff, edit, namespace changes, job)."""

    type: Literal["tool_result"] = "tool_result"
    tool: str
    result: str
    tool_call_id: str
    is_error: bool | None = None
    parts: list[dict[str, Any]] | None = None
    output_ref: str | None = None
    data: ToolResultData = COMPLETED


class StepCompleteEvent(_Event):
    type: Literal["step_complete"] = "step_complete"
    step_id: str
    status: Literal["completed", "error"]
    duration_ms: int
    """The tool's own time: waiting for an approval is not part of it (see below)."""
    approval_wait_ms: int | None = None
    """How long the call waited for the person's answer; None when it asked nobody."""


class CompactionStartEvent(_Event):
    type: Literal["compaction_start"] = "compaction_start"
    timestamp: int = Field(default_factory=now_ms)


class CompactionCompleteEvent(_Event):
    type: Literal["compaction_complete"] = "compaction_complete"
    timestamp: int = Field(default_factory=now_ms)
    compacted: bool


class UsageEvent(_Event):
    """Token usage of the latest model call and the run's running totals; cost in USD or None."""

    type: Literal["usage"] = "usage"
    model: str
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    total_input_tokens: int
    total_output_tokens: int
    cost_usd: float | None = None
    total_cost_usd: float | None = None
    context_limit: int | None = None
    context_left_percent: int | None = None
    web_search_requests: int | None = None
    """Searches the API's server-side web search tool ran in this call (priced in ``cost_usd``)."""
    web_fetch_requests: int | None = None


class BudgetEvent(_Event):
    """Spend against the run's and the session's budget; ``reached`` says which limit ended it.

    Sent when a run with limits starts, after each model call and tool call, and once a limit
    is reached (then ``reached`` is set and the run ends with a summary).
    """

    type: Literal["budget"] = "budget"
    run_spent: dict[str, float | None]
    run_limits: dict[str, float]
    session_spent: dict[str, float | None]
    session_limits: dict[str, float]
    reached: str | None = None


class SessionForkedEvent(_Event):
    """Another kernel saved this session meanwhile: this agent's turns continue in a new one,
    so neither kernel's turns are lost."""

    type: Literal["session.forked"] = "session.forked"
    session_id: str
    forked_from: str


class FinalEvent(_Event):
    type: Literal["final"] = "final"
    content: str
    citations: list[Citation] | None = None


AgentEvent = Annotated[
    TextEvent
    | TextDeltaEvent
    | TextDiscardedEvent
    | ReasoningEvent
    | ReasoningDeltaEvent
    | LlmRetryEvent
    | StepStartEvent
    | ToolCallEvent
    | PermissionPreviewEvent
    | PermissionReadyEvent
    | PermissionRequestEvent
    | PermissionResolvedEvent
    | ToolResultEvent
    | StepCompleteEvent
    | CompactionStartEvent
    | CompactionCompleteEvent
    | UsageEvent
    | TodosUpdatedEvent
    | ToolProgressEvent
    | BudgetEvent
    | SessionForkedEvent
    | FinalEvent,
    Field(discriminator="type"),
]
event_adapter: TypeAdapter[AgentEvent] = TypeAdapter(AgentEvent)


def event_to_json(event: BaseModel) -> dict[str, Any]:
    """The JSON form of an event, as logged and sent over the comm (aliases, no None keys)."""
    return event.model_dump(mode="json", by_alias=True, exclude_none=True)


def event_from_json(data: dict[str, Any]) -> AgentEvent:
    return event_adapter.validate_python(data)


__all__ = [
    "AgentEvent",
    "CompactionCompleteEvent",
    "CompactionStartEvent",
    "FailureKind",
    "FinalEvent",
    "LlmRetryEvent",
    "PermissionPreviewEvent",
    "PermissionReadyEvent",
    "PermissionRequestEvent",
    "PermissionResolvedEvent",
    "ReasoningDeltaEvent",
    "ReasoningEvent",
    "SessionForkedEvent",
    "StepCompleteEvent",
    "StepStartEvent",
    "TextDeltaEvent",
    "TextEvent",
    "TodoItemView",
    "TodosUpdatedEvent",
    "ToolCallEvent",
    "ToolProgressEvent",
    "ToolResultEvent",
    "UsageEvent",
    "event_adapter",
    "event_from_json",
    "event_to_json",
    "now_ms",
]
