"""Messages, tools and tool choice → an OpenAI Chat Completions request.

Pure functions over plain dicts (no SDK import), shared by every OpenAI-compatible server.
Chat Completions differs from our history in three ways handled here: a tool message carries
text only, so images a tool returned follow the tool messages as one user message; reasoning
is not a message of its own but fields of the assistant turn it led to; and consecutive
assistant messages (text, then calls) are one assistant turn.

Reasoning goes back only with a turn that called tools (where DeepSeek, gpt-oss and Gemini
need it; for a turn that answered, every server drops it) and only in the form the server sent
it: the delta field's name (``reasoning_content`` or ``reasoning``), OpenRouter's
``reasoning_details`` verbatim, and a tool call's ``extra_content`` (Gemini's thought
signature) on that call. A call the output limit cut off goes back with ``{}`` arguments: its
unfinished JSON is refused by servers that parse it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..._text import compact_json
from .._request_parts import BlockCache
from ..messages import ImagePart, part_placeholder
from ._stream import CHAT_REASONING
from .models import SendBack

ApiMessage = dict[str, Any]
ApiPart = dict[str, Any]


def _part(part: Any) -> ApiPart:
    kind = getattr(part, "type", None)
    if kind == "text":
        return {"type": "text", "text": part.text}
    if kind == "image_url":
        image: dict[str, Any] = {"url": part.image_url.url}
        if part.image_url.detail is not None:
            image["detail"] = part.image_url.detail
        return {"type": "image_url", "image_url": image}
    if kind == "other":
        label = part_placeholder(part)
        if part.payload not in (None, "", {}, []):
            label += " " + compact_json(part.payload)
        return {"type": "text", "text": label}
    if kind == "document":
        return {"type": "text", "text": part_placeholder(part)}
    raise TypeError(f"not a content part: {type(part).__name__}")


def _content(content: str | Sequence[Any] | None, images: bool) -> str | list[ApiPart]:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not images:
        return _text_only(content)
    parts = [_part(p) for p in content]
    if all(p["type"] == "text" for p in parts):
        # Plain text, the form every server accepts.
        return _joined(content, [p["text"] for p in parts])
    return parts


def _text_only(content: str | Sequence[Any] | None) -> str:
    if content is None or isinstance(content, str):
        return content or ""
    parts: Sequence[Any] = content
    return _joined(
        parts, [part.text if part.type == "text" else part_placeholder(part) for part in parts]
    )


def _joined(content: Sequence[Any], texts: list[str]) -> str:
    """The parts' texts as one string; a context block the agent added (a notebook outline)
    starts a paragraph of its own instead of running on from the prompt's last word."""
    pieces: list[str] = []
    for part, text in zip(content, texts, strict=True):
        if pieces and getattr(part, "context", None) is not None:
            pieces.append("\n\n")
        pieces.append(text)
    return "".join(pieces)


def _images(content: str | Sequence[Any] | None) -> list[ImagePart]:
    if content is None or isinstance(content, str):
        return []
    return [part for part in content if isinstance(part, ImagePart)]


def _convert(message: Any, images: bool = True) -> ApiMessage:
    role = message.role
    if role == "system":
        return {"role": "system", "content": _text_only(message.content)}
    if role == "user":
        return {"role": "user", "content": _content(message.content, images)}
    if role == "assistant":
        turn: ApiMessage = {"role": "assistant", "content": _text_only(message.content) or None}
        if message.refusal and turn["content"] is None:
            turn["content"] = message.refusal
        if message.tool_calls:
            turn["tool_calls"] = [_call(call) for call in message.tool_calls]
        return turn
    if role == "tool":
        return {
            "role": "tool",
            "tool_call_id": message.tool_call_id,
            "content": _text_only(message.content),
        }
    raise TypeError(f"not a message: {type(message).__name__}")


def _call(call: Any) -> ApiMessage:
    arguments = "{}" if call.cut_off else call.function.arguments
    converted: ApiMessage = {
        "id": call.id,
        "type": "function",
        "function": {"name": call.function.name, "arguments": arguments},
    }
    meta = call.provider_meta
    if isinstance(meta, dict) and isinstance(meta.get("extra_content"), dict):
        converted["extra_content"] = meta["extra_content"]
    return converted


def _reasoning_fields(reasoning: Any, send_back: SendBack) -> ApiMessage:
    """The fields a tool-call turn carries for the reasoning that led to it."""
    fields: ApiMessage = {}
    raw = reasoning.raw_item if reasoning is not None else None
    if isinstance(raw, dict) and raw.get("type") == CHAT_REASONING:
        field = raw.get("field")
        if isinstance(field, str) and reasoning.content:
            fields[field] = reasoning.content
        if raw.get("reasoning_details"):
            fields["reasoning_details"] = raw["reasoning_details"]
    if send_back == "reasoning_content":
        fields.setdefault("reasoning_content", "")  # DeepSeek: every tool-call turn has one
    return fields


def _convert_one(message: Any) -> list[ApiMessage]:
    return [_convert(message)]


def _convert_one_without_images(message: Any) -> list[ApiMessage]:
    return [_convert(message, images=False)]


def _uncached(message: Any, convert: Callable[[Any], list[ApiMessage]]) -> list[ApiMessage]:
    return convert(message)


def to_openai_messages(
    messages: Sequence[Any],
    *,
    cache: BlockCache | None = None,
    images: bool = True,
    send_back: SendBack = "as_received",
) -> list[ApiMessage]:
    """History → the ``messages`` array of a Chat Completions request.

    Tool calls without an answer right after their turn (and answers without a call) are
    dropped: the API refuses both. ``cache`` reuses conversions of messages seen before.
    ``images=False`` (a model without vision) sends images as ``[image]`` placeholders.
    ``send_back``: what a tool-call turn carries of its reasoning (see
    :data:`~.models.SendBack`).
    """
    convert = cache.blocks if cache is not None else _uncached
    convert_one = _convert_one if images else _convert_one_without_images
    result: list[ApiMessage] = []
    tool_images: list[tuple[str, list[ImagePart]]] = []
    pending_calls: set[str] = set()
    reasoning: Any = None  # the reasoning message right before the next assistant turn

    def flush_tool_images() -> None:
        if not tool_images:
            return
        parts: list[ApiPart] = []
        for name, images in tool_images:
            parts.append({"type": "text", "text": f"Images returned by the {name} tool:"})
            parts.extend(_part(image) for image in images)
        result.append({"role": "user", "content": parts})
        tool_images.clear()

    for message in messages:
        role = getattr(message, "role", None)
        if role == "reasoning":
            reasoning = message
            continue
        if role == "tool":
            if message.tool_call_id not in pending_calls:
                continue
            pending_calls.discard(message.tool_call_id)
            result.extend(convert(message, _convert_one))
            returned = _images(message.content) if images else []
            if returned:
                tool_images.append((message.tool_name, returned))
            continue
        _close_calls(result, pending_calls)
        flush_tool_images()
        (turn,) = convert(message, convert_one)
        previous = result[-1] if result else None
        if (
            role == "assistant"
            and previous is not None
            and previous["role"] == "assistant"
            and "tool_calls" not in previous
        ):
            turn = _merge_assistant(result.pop(), turn)
        if "tool_calls" in turn:
            fields = _reasoning_fields(reasoning, send_back) if send_back != "nothing" else {}
            if fields:
                turn = {**turn, **fields}  # a copy: the converted turn is cached
            reasoning = None
        elif role != "assistant":
            reasoning = None
        result.append(turn)
        if role == "assistant":
            pending_calls = {call["id"] for call in turn.get("tool_calls") or ()}
    _close_calls(result, pending_calls)
    flush_tool_images()
    if cache is not None:
        cache.sweep()
    return result


def _merge_assistant(first: ApiMessage, second: ApiMessage) -> ApiMessage:
    texts = [t for t in (first["content"], second["content"]) if t]
    merged: ApiMessage = {"role": "assistant", "content": "\n".join(texts) or None}
    if "tool_calls" in second:
        merged["tool_calls"] = second["tool_calls"]
    return merged


def _close_calls(result: list[ApiMessage], unanswered: set[str]) -> None:
    """Remove calls nobody answered from the latest assistant turn (in place)."""
    if not unanswered:
        return
    for index in range(len(result) - 1, -1, -1):
        turn = result[index]
        if turn["role"] == "assistant" and "tool_calls" in turn:
            kept = [c for c in turn["tool_calls"] if c["id"] not in unanswered]
            turn = {k: v for k, v in turn.items() if k != "tool_calls"}
            if kept:
                turn["tool_calls"] = kept
            if turn["content"] is None and not kept:
                del result[index]
            else:
                result[index] = turn
            break
    unanswered.clear()


def to_openai_tools(
    definitions: Sequence[Any] | None, tool_choice: str | None
) -> list[dict[str, Any]]:
    """Function definitions → Chat Completions ``tools``; [] means omit (hosted tools skipped)."""
    if not definitions or tool_choice == "none":
        return []
    tools: list[dict[str, Any]] = []
    for definition in definitions:
        if getattr(definition, "type", "function") != "function":
            continue
        function: dict[str, Any] = {
            "name": definition.name,
            "description": definition.description,
            "parameters": definition.parameters,
        }
        if definition.strict:
            function["strict"] = True
        tools.append({"type": "function", "function": function})
    return tools


def to_openai_tool_choice(tool_choice: str | None) -> str | dict[str, Any] | None:
    if tool_choice is None or tool_choice == "none":
        return None
    if tool_choice in ("auto", "required"):
        return tool_choice
    return {"type": "function", "function": {"name": tool_choice}}


__all__ = ["to_openai_messages", "to_openai_tool_choice", "to_openai_tools"]
