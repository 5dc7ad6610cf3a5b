"""An Anthropic ``Message`` (as a plain dict) → :class:`ChatInvokeCompletion`.

One output message per content block, in order; a refusal replaces them all. Works on the raw
JSON the API sent, so blocks this code does not interpret (server-tool calls and results, block
types newer than the SDK) are kept verbatim, key order included, for replay and sessions.
"""

from __future__ import annotations

from typing import Any

from ..._text import compact_json
from ..messages import (
    AssistantMessage,
    ChatInvokeCompletion,
    ChatInvokeUsage,
    FunctionCall,
    OtherPart,
    ReasoningMessage,
    StopKind,
    TextPart,
    ToolCall,
)

DEFAULT_REFUSAL = "This request was declined by Anthropic's safety classifier."


def usage_from_anthropic(model: str, usage: dict[str, Any] | None) -> ChatInvokeUsage:
    """Anthropic usage → ours: input counts cache reads and writes, total = input + output."""
    usage = usage or {}
    uncached = int(usage.get("input_tokens") or 0)
    cache_read = int(usage.get("cache_read_input_tokens") or 0)
    cache_creation = int(usage.get("cache_creation_input_tokens") or 0)
    output = int(usage.get("output_tokens") or 0)
    input_tokens = uncached + cache_read + cache_creation
    server = usage.get("server_tool_use")
    server = server if isinstance(server, dict) else {}
    return ChatInvokeUsage(
        model=model,
        input_tokens=input_tokens,
        input_cached_tokens=cache_read,
        input_cache_creation_tokens=cache_creation,
        output_tokens=output,
        total_tokens=input_tokens + output,
        web_search_requests=_count(server.get("web_search_requests")),
        web_fetch_requests=_count(server.get("web_fetch_requests")),
    )


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _block_message(block: dict[str, Any], unfinished_input: str | None) -> Any:
    kind = block.get("type")
    if kind == "text":
        citations = block.get("citations")
        if citations:
            return AssistantMessage(
                content=[TextPart(text=block.get("text", ""), citations=list(citations))]
            )
        return AssistantMessage(content=block.get("text", ""))
    if kind == "tool_use":
        if unfinished_input is not None:
            call = ToolCall(
                id=block["id"],
                function=FunctionCall(name=block["name"], arguments=unfinished_input),
                cut_off=True,
            )
            return AssistantMessage(content=None, tool_calls=[call])
        raw_input = block.get("input")
        arguments = raw_input if isinstance(raw_input, dict) else {"value": raw_input}
        call = ToolCall(
            id=block["id"],
            function=FunctionCall(name=block["name"], arguments=compact_json(arguments)),
            provider_meta=block,
        )
        return AssistantMessage(content=None, tool_calls=[call])
    if kind == "thinking":
        return ReasoningMessage(content=block.get("thinking", ""), raw_item=block)
    if kind == "redacted_thinking":
        return ReasoningMessage(content="[redacted]", raw_item=block)
    return AssistantMessage(
        content=[OtherPart(provider="anthropic", kind=str(kind), payload=block)]
    )


# The Messages API's stop reasons in the provider-neutral words the agent branches on.
_STOP_KINDS: dict[str, StopKind] = {
    "end_turn": "end",
    "stop_sequence": "end",
    "tool_use": "tool_calls",
    "max_tokens": "output_limit",
    "model_context_window_exceeded": "context_window",
    "refusal": "refusal",
    "pause_turn": "pause",
}


def completion_from_anthropic(
    message: dict[str, Any], *, model: str, unfinished_inputs: dict[int, str] | None = None
) -> ChatInvokeCompletion:
    """``unfinished_inputs``: block index → the partial JSON of a tool call the reply's output
    limit cut off (see :class:`~.messages.ToolCall` ``cut_off``)."""
    unfinished = unfinished_inputs or {}
    stop_reason = message.get("stop_reason")
    usage = usage_from_anthropic(message.get("model") or model, message.get("usage"))
    if stop_reason == "refusal":
        details = message.get("stop_details")
        explanation = details.get("explanation") if isinstance(details, dict) else None
        refused = AssistantMessage(content=None, refusal=explanation or DEFAULT_REFUSAL)
        messages: list[Any] = [refused]
    else:
        messages = [
            _block_message(block, unfinished.get(index))
            for index, block in enumerate(message.get("content") or [])
        ]
    return ChatInvokeCompletion(
        messages=messages,
        usage=usage,
        stop_reason=stop_reason,
        stop_kind=_STOP_KINDS.get(stop_reason or ""),
        provider_meta={"id": message.get("id"), "model": message.get("model")},
    )


__all__ = ["DEFAULT_REFUSAL", "completion_from_anthropic", "usage_from_anthropic"]
