"""An Anthropic ``Message`` (as a plain dict) → :class:`ChatInvokeCompletion` (spec/core.md §7).

One output message per content block, in order; a refusal replaces them all. Works on the dict
form (``message.to_dict()``) so raw blocks can be kept verbatim for replay and sessions.
"""

from __future__ import annotations

from typing import Any

from .._text import compact_json
from .messages import (
    AssistantMessage,
    ChatInvokeCompletion,
    ChatInvokeUsage,
    FunctionCall,
    OtherPart,
    ReasoningMessage,
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
    return ChatInvokeUsage(
        model=model,
        input_tokens=input_tokens,
        input_cached_tokens=cache_read,
        input_cache_creation_tokens=cache_creation,
        output_tokens=output,
        total_tokens=input_tokens + output,
    )


def _block_message(block: dict[str, Any]) -> Any:
    kind = block.get("type")
    if kind == "text":
        return AssistantMessage(content=block.get("text", ""))
    if kind == "tool_use":
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


def completion_from_anthropic(message: dict[str, Any], *, model: str) -> ChatInvokeCompletion:
    stop_reason = message.get("stop_reason")
    usage = usage_from_anthropic(message.get("model") or model, message.get("usage"))
    if stop_reason == "refusal":
        details = message.get("stop_details")
        explanation = details.get("explanation") if isinstance(details, dict) else None
        refused = AssistantMessage(content=None, refusal=explanation or DEFAULT_REFUSAL)
        messages: list[Any] = [refused]
    else:
        messages = [_block_message(block) for block in message.get("content") or []]
    return ChatInvokeCompletion(
        messages=messages,
        usage=usage,
        stop_reason=stop_reason,
        provider_meta={"id": message.get("id"), "model": message.get("model")},
    )


__all__ = ["DEFAULT_REFUSAL", "completion_from_anthropic", "usage_from_anthropic"]
