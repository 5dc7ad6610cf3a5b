"""Chat Completions chunks → one reply: text, reasoning in every form servers send it, tool calls.

What compatible servers add to OpenAI's chunks is read from the SDK objects' extra fields and
kept for the request that sends the turn back (:mod:`._chat_completions`):

- reasoning as a delta field, ``reasoning_content`` (DeepSeek, older vLLM) or ``reasoning``
  (Ollama, vLLM, OpenRouter); the field's name is kept, since that is how it must go back;
- OpenRouter's ``reasoning_details``: text, summaries, encrypted and signed items, streamed in
  pieces merged by their ``index`` (a signature arrives after the text it signs);
- reasoning inline as ``<think>...</think>`` at the start of the text (:mod:`._think_tags`);
- a tool call's own extra fields, such as Gemini's ``extra_content.google.thought_signature``;
- Gemini's tool calls without an ``index`` (each arrives whole, in one delta).

``finish_reason`` becomes the provider-neutral ``stop_kind``; when it is ``length`` the last tool
call was still being written, so it is marked ``cut_off`` (never run, never replayed as sent).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..messages import (
    AssistantMessage,
    ChatInvokeCompletion,
    ChatInvokeUsage,
    FunctionCall,
    ReasoningMessage,
    StopKind,
    ToolCall,
)
from ._think_tags import ThinkTagSplitter

CHAT_REASONING = "openai.chat.reasoning"
"""``ReasoningMessage.raw_item["type"]`` of reasoning from Chat Completions: the item also names
the delta ``field`` it came in (None for ``<think>`` tags) and any ``reasoning_details``."""

# Fields compatible servers stream reasoning in, in the order they are looked for.
REASONING_DELTA_FIELDS = ("reasoning_content", "reasoning")
_FINISH_KINDS: dict[str, StopKind] = {
    "stop": "end",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "length": "output_limit",
    "content_filter": "content_filter",
}
# reasoning_details pieces: these fields are streamed in parts and joined, the others kept.
_JOINED_DETAIL_FIELDS = ("text", "summary", "data", "signature")


@dataclass
class _PendingCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class StreamedReply:
    """Chat Completions chunks folded into one reply (choice 0; tool calls by index).

    ``think_opened``: the model's template opens ``<think>`` itself, so the reply is reasoning
    until ``</think>`` (see :class:`~._think_tags.ThinkTagSplitter`)."""

    think_opened: bool = False
    text: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    reasoning_field: str | None = None
    reasoning_details: dict[int, dict[str, Any]] = field(default_factory=dict)
    refusal: list[str] = field(default_factory=list)
    calls: dict[int, _PendingCall] = field(default_factory=dict)
    finish_reason: str | None = None
    usage: Any = None
    model: str | None = None
    id: str | None = None
    stream_error: Any = None
    """An error object the server sent after the reply had finished (kept, not raised)."""

    def __post_init__(self) -> None:
        self._think = ThinkTagSplitter(opened=self.think_opened)

    def add(self, chunk: Any) -> tuple[str, str]:
        """Fold one chunk in; returns its (text, reasoning) deltas."""
        self.id = self.id or chunk.id
        self.model = self.model or chunk.model
        if chunk.usage is not None:
            self.usage = chunk.usage
        text = reasoning = ""
        for choice in chunk.choices:
            if choice.index not in (0, None):
                continue
            delta = choice.delta
            if delta is not None:
                text, reasoning = self._add_delta(delta)
            if choice.finish_reason is not None:
                self.finish_reason = choice.finish_reason
        return text, reasoning

    def _add_delta(self, delta: Any) -> tuple[str, str]:
        extra = delta.model_extra or {}
        reasoning = ""
        for name in REASONING_DELTA_FIELDS:
            value = extra.get(name)
            if isinstance(value, str) and value:
                reasoning = value
                self.reasoning_field = self.reasoning_field or name
                break
        text = delta.content or ""
        if text and self._think.splitting:
            text, inline = self._think.feed(text)
            reasoning += inline
        self.text.append(text)
        self.reasoning.append(reasoning)
        if delta.refusal:
            self.refusal.append(delta.refusal)
        details = extra.get("reasoning_details")
        if isinstance(details, list):
            self._merge_details(details)
        for fragment in delta.tool_calls or ():
            self._add_call_fragment(fragment)
        return text, reasoning

    def _merge_details(self, pieces: list[Any]) -> None:
        for position, piece in enumerate(pieces):
            if not isinstance(piece, dict):
                continue
            index = piece.get("index")
            key = index if isinstance(index, int) else len(self.reasoning_details) + position
            merged = self.reasoning_details.setdefault(key, {})
            for name, value in piece.items():
                if name in _JOINED_DETAIL_FIELDS and isinstance(value, str):
                    merged[name] = merged.get(name, "") + value
                elif merged.get(name) is None:
                    merged[name] = value

    def _add_call_fragment(self, fragment: Any) -> None:
        index = fragment.index
        if index is None:
            # Gemini: no index, each call whole in one delta (a repeated id is the same call).
            known = [i for i, c in self.calls.items() if fragment.id and c.id == fragment.id]
            index = known[0] if known else len(self.calls)
        call = self.calls.setdefault(index, _PendingCall())
        call.id = call.id or fragment.id or ""
        function = fragment.function
        if function is not None:
            call.name = call.name or function.name or ""
            if function.arguments:
                call.arguments.append(function.arguments)
        extra = fragment.model_extra
        if extra:
            call.extra.update(extra)

    def finish(self) -> tuple[str, str]:
        """The end of the stream: the (text, reasoning) still held back by tag splitting."""
        text, reasoning = self._think.flush()
        self.text.append(text)
        self.reasoning.append(reasoning)
        return text, reasoning

    @property
    def stop_kind(self) -> StopKind | None:
        kind = _FINISH_KINDS.get(self.finish_reason or "")
        return "refusal" if self.refusal and kind in (None, "end") else kind

    def completion(self, requested_model: str) -> ChatInvokeCompletion:
        model = self.model or requested_model
        messages: list[Any] = []
        reasoning = "".join(self.reasoning)
        details = [self.reasoning_details[key] for key in sorted(self.reasoning_details)]
        if reasoning or details:
            raw: dict[str, Any] = {"type": CHAT_REASONING, "field": self.reasoning_field}
            if details:
                raw["reasoning_details"] = details
            messages.append(ReasoningMessage(content=reasoning, raw_item=raw))
        stop_kind = self.stop_kind
        last = max(self.calls) if self.calls else None
        calls = [
            ToolCall(
                id=call.id or f"call_{index}",
                function=FunctionCall(name=call.name, arguments="".join(call.arguments)),
                provider_meta=dict(call.extra) if call.extra else None,
                # The output limit struck while this call was being written.
                cut_off=True if stop_kind == "output_limit" and index == last else None,
            )
            for index, call in sorted(self.calls.items())
        ]
        text = "".join(self.text)
        refusal = "".join(self.refusal)
        if text or calls or refusal:
            messages.append(
                AssistantMessage(
                    content=text or None, tool_calls=calls or None, refusal=refusal or None
                )
            )
        meta: dict[str, Any] = {"id": self.id, "model": self.model}
        if self.stream_error is not None:
            meta["stream_error"] = self.stream_error
        return ChatInvokeCompletion(
            messages=messages,
            usage=usage_from_openai(model, self.usage),
            stop_reason=self.finish_reason,
            stop_kind=stop_kind,
            provider_meta=meta,
        )


def usage_from_openai(model: str, usage: Any) -> ChatInvokeUsage:
    """Chat Completions usage → ours: ``prompt_tokens`` already counts cached tokens."""
    if usage is None:
        return ChatInvokeUsage(model=model)
    details = usage.prompt_tokens_details
    cached = getattr(details, "cached_tokens", None) if details is not None else None
    return usage_of(model, usage.prompt_tokens, usage.completion_tokens, cached)


def usage_of(model: str, input_tokens: Any, output_tokens: Any, cached: Any) -> ChatInvokeUsage:
    """Usage from an OpenAI API's counts (either API; missing counts are 0): the input
    already includes the cached tokens."""
    given_input, given_output = int(input_tokens or 0), int(output_tokens or 0)
    return ChatInvokeUsage(
        model=model,
        input_tokens=given_input,
        input_cached_tokens=int(cached) if cached else None,
        output_tokens=given_output,
        total_tokens=given_input + given_output,
    )


__all__ = [
    "CHAT_REASONING",
    "REASONING_DELTA_FIELDS",
    "StreamedReply",
    "usage_from_openai",
    "usage_of",
]
