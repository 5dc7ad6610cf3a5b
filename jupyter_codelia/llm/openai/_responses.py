"""OpenAI's Responses API: history → ``input`` items, and streamed events → a completion.

OpenAI's own reasoning models keep their reasoning in ``reasoning`` output items; with
``store=False`` those come back encrypted (``include=["reasoning.encrypted_content"]``) and
must be sent again, in place, before the function calls they led to, for the model to keep its
train of thought across tool calls. The items are kept verbatim in
``ReasoningMessage.raw_item`` and replayed from there. Pure functions over plain dicts.

A response the output limit stopped has ``status: "incomplete"`` and
``incomplete_details.reason: "max_output_tokens"`` (``"content_filter"`` when a filter did):
both become the completion's ``stop_kind``, and a function call left unfinished (its item
``incomplete``, or the last item of a response cut off by the limit) is marked ``cut_off``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .._request_parts import BlockCache
from ..messages import (
    AssistantMessage,
    ChatInvokeCompletion,
    ChatInvokeUsage,
    FunctionCall,
    ImagePart,
    ReasoningMessage,
    StopKind,
    ToolCall,
)
from ._chat_completions import _text_only
from ._stream import usage_of

Item = dict[str, Any]
_INCOMPLETE_KINDS: dict[str, StopKind] = {
    "max_output_tokens": "output_limit",
    "content_filter": "content_filter",
}


def _input_part(part: Any, images: bool) -> Item:
    if part.type == "image_url" and images:
        image: Item = {"type": "input_image", "image_url": part.image_url.url}
        image["detail"] = part.image_url.detail or "auto"
        return image
    return {"type": "input_text", "text": _text_only([part])}


def _items(message: Any, images: bool) -> list[Item]:
    role = message.role
    if role == "user":
        content = message.content
        if isinstance(content, str):
            return [{"role": "user", "content": content}]
        return [{"role": "user", "content": [_input_part(p, images) for p in content]}]
    if role == "assistant":
        items: list[Item] = []
        text = _text_only(message.content) or message.refusal or ""
        if text:
            items.append({"role": "assistant", "content": text})
        items.extend(
            {
                "type": "function_call",
                "call_id": call.id,
                "name": call.function.name,
                # Unfinished JSON of a cut-off call is not sent back.
                "arguments": "{}" if call.cut_off else call.function.arguments,
            }
            for call in message.tool_calls or ()
        )
        return items
    if role == "tool":
        output = {
            "type": "function_call_output",
            "call_id": message.tool_call_id,
            "output": _text_only(message.content),
        }
        returned = (
            [p for p in message.content if isinstance(p, ImagePart)]
            if images and not isinstance(message.content, str)
            else []
        )
        if not returned:
            return [output]
        shown = [
            {"type": "input_text", "text": f"Images returned by the {message.tool_name} tool:"}
        ]
        shown.extend(_input_part(p, images) for p in returned)
        return [output, {"role": "user", "content": shown}]
    if role == "reasoning":
        raw = message.raw_item
        return [dict(raw)] if isinstance(raw, dict) and raw.get("type") == "reasoning" else []
    return []  # system messages travel as ``instructions``


def to_responses_input(
    messages: Sequence[Any], *, cache: BlockCache | None = None, images: bool = True
) -> list[Item]:
    """History → the ``input`` list; calls and outputs without their other half are dropped."""
    called = {
        call.id
        for m in messages
        if getattr(m, "role", None) == "assistant"
        for call in m.tool_calls or ()
    }
    answered = {m.tool_call_id for m in messages if getattr(m, "role", None) == "tool"}
    paired = called & answered

    def convert(message: Any) -> list[Item]:
        return _items(message, images)

    result: list[Item] = []
    for message in messages:
        items = cache.blocks(message, convert) if cache is not None else convert(message)
        for item in items:
            kind = item.get("type")
            if kind in ("function_call", "function_call_output") and item["call_id"] not in paired:
                continue
            result.append(item)
    if cache is not None:
        cache.sweep()
    # A tool's images travel as a user turn, which may not split a run of outputs: move each
    # such turn after the last output of its run.
    return _images_after_outputs(result)


def _images_after_outputs(items: list[Item]) -> list[Item]:
    ordered: list[Item] = []
    held: list[Item] = []
    for item in items:
        if item.get("type") == "function_call_output":
            ordered.append(item)
            continue
        if (
            ordered
            and ordered[-1].get("type") == "function_call_output"
            and item.get("role") == "user"
            and _is_image_turn(item)
        ):
            held.append(item)
            continue
        ordered.extend(held)
        held = []
        ordered.append(item)
    ordered.extend(held)
    return ordered


def _is_image_turn(item: Item) -> bool:
    content = item.get("content")
    return isinstance(content, list) and any(p.get("type") == "input_image" for p in content)


def to_responses_tools(definitions: Sequence[Any] | None, tool_choice: str | None) -> list[Item]:
    if not definitions or tool_choice == "none":
        return []
    return [
        {
            "type": "function",
            "name": d.name,
            "description": d.description,
            "parameters": d.parameters,
            "strict": bool(d.strict),
        }
        for d in definitions
        if getattr(d, "type", "function") == "function"
    ]


def to_responses_tool_choice(tool_choice: str | None) -> str | Item | None:
    if tool_choice is None or tool_choice == "none":
        return None
    if tool_choice in ("auto", "required"):
        return tool_choice
    return {"type": "function", "name": tool_choice}


@dataclass
class StreamedResponse:
    """Responses API events folded into one reply."""

    items: dict[int, Item] = field(default_factory=dict)
    response: Item | None = None
    failure: Item | None = None

    def add(self, event: Any) -> tuple[str, str]:
        """Fold one event in; returns its (text, reasoning) deltas."""
        kind = event.type
        if kind == "response.output_text.delta":
            return event.delta or "", ""
        if kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            return "", event.delta or ""
        if kind == "response.output_item.done":
            self.items[event.output_index] = event.item.to_dict(mode="json")
        elif kind in ("response.completed", "response.incomplete"):
            self.response = event.response.to_dict(mode="json")
        elif kind == "response.failed":
            self.failure = (event.response.to_dict(mode="json").get("error")) or {}
        elif kind == "error":
            self.failure = {"code": event.code, "message": event.message}
        return "", ""

    def completion(self, requested_model: str) -> ChatInvokeCompletion:
        response = self.response or {}
        output = response.get("output") or [self.items[i] for i in sorted(self.items)]
        model = response.get("model") or requested_model
        messages: list[Any] = []
        texts: list[str] = []
        refusals: list[str] = []
        calls: list[ToolCall] = []
        incomplete = (response.get("incomplete_details") or {}).get("reason")
        stop_kind = _INCOMPLETE_KINDS.get(incomplete or "")
        for position, item in enumerate(output):
            kind = item.get("type")
            if kind == "reasoning":
                summary = "".join(s.get("text", "") for s in item.get("summary") or [])
                messages.append(ReasoningMessage(content=summary, raw_item=item))
            elif kind == "message":
                for part in item.get("content") or []:
                    if part.get("type") == "output_text":
                        texts.append(part.get("text", ""))
                    elif part.get("type") == "refusal":
                        refusals.append(part.get("refusal", ""))
            elif kind == "function_call":
                unfinished = item.get("status") == "incomplete" or (
                    stop_kind == "output_limit" and position == len(output) - 1
                )
                calls.append(
                    ToolCall(
                        id=item["call_id"],
                        function=FunctionCall(
                            name=item["name"], arguments=item.get("arguments", "")
                        ),
                        cut_off=True if unfinished else None,
                    )
                )
        text, refusal = "".join(texts), "".join(refusals)
        if text or calls or refusal:
            messages.append(
                AssistantMessage(
                    content=text or None, tool_calls=calls or None, refusal=refusal or None
                )
            )
        status = response.get("status")
        if stop_kind is None and status == "completed":
            stop_kind = "tool_calls" if calls else ("refusal" if refusal and not text else "end")
        return ChatInvokeCompletion(
            messages=messages,
            usage=usage_from_responses(model, response.get("usage")),
            stop_reason=incomplete or ("tool_calls" if calls else status),
            stop_kind=stop_kind,
            provider_meta={"id": response.get("id"), "model": response.get("model")},
        )


def usage_from_responses(model: str, usage: Item | None) -> ChatInvokeUsage:
    usage = usage or {}
    cached = (usage.get("input_tokens_details") or {}).get("cached_tokens")
    return usage_of(model, usage.get("input_tokens"), usage.get("output_tokens"), cached)


__all__ = [
    "StreamedResponse",
    "to_responses_input",
    "to_responses_tool_choice",
    "to_responses_tools",
    "usage_from_responses",
]
