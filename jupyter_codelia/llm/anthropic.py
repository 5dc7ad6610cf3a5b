"""The Anthropic provider: :class:`AnthropicChat`, a :class:`~.base.ChatModel` over the SDK 2.x.

Every call streams (``client.messages.stream``) so text and thinking reach the UI as they are
generated; the accumulated message is converted per spec/core.md §7. The SDK never retries
(``max_retries=0``): failures become :class:`~.base.LlmError` and the agent decides. The SDK is
imported on first use, so importing this module stays cheap.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from . import pricing
from ._anthropic_errors import classify_exception, malformed_stream_error
from ._anthropic_request import (
    BlockCache,
    add_cache_breakpoints,
    collapse_plain_text,
    system_cache_allowed,
    system_text,
    to_anthropic_messages,
    to_anthropic_tool_choice,
    to_anthropic_tools,
)
from ._anthropic_response import completion_from_anthropic
from ._sdk_calls import LoopBoundClient, run_cancellable
from .base import LlmError, StreamCallbacks, TextDeltaCallback
from .messages import ChatInvokeCompletion, ChatInvokeUsage, FunctionToolDefinition, Message

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic

    from .._cancellation import CancelSignal

DEFAULT_MODEL = "claude-sonnet-5-5"
MIN_THINKING_BUDGET = 1024


class AnthropicChat:
    """Claude through the official SDK.

    >>> chat = AnthropicChat(model="claude-sonnet-5-5", api_key="sk-...")     # doctest: +SKIP
    >>> completion = await chat.ainvoke([UserMessage(content="hi")])         # doctest: +SKIP

    ``client``: an ``anthropic.AsyncAnthropic`` to use (a copy with retries off is made);
    otherwise one is built from ``api_key`` / ``base_url`` (or the SDK's ``ANTHROPIC_*``
    environment variables). ``thinking_budget`` turns extended thinking on with that many
    tokens (thinking blocks are then replayed with their signatures). ``prompt_cache`` marks
    the system prompt, the last tool and the latest user turn as cache breakpoints.
    """

    provider = "anthropic"

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        client: AsyncAnthropic | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        max_tokens: int = 4096,
        thinking_budget: int | None = None,
        prompt_cache: bool = True,
        timeout_s: float = 600,
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise ValueError("model must be a non-empty model id such as 'claude-sonnet-5-5'")
        if max_tokens < 1:
            raise ValueError(f"max_tokens must be at least 1, got {max_tokens}")
        if thinking_budget is not None:
            if thinking_budget < MIN_THINKING_BUDGET:
                raise ValueError(
                    f"thinking_budget must be at least {MIN_THINKING_BUDGET} tokens "
                    f"(Anthropic's minimum), got {thinking_budget}"
                )
            if thinking_budget >= max_tokens:
                raise ValueError(
                    f"thinking_budget ({thinking_budget}) must be less than max_tokens "
                    f"({max_tokens}): raise max_tokens or lower the budget"
                )
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be positive, got {timeout_s}")
        if client is not None and (api_key is not None or base_url is not None):
            raise ValueError("pass either client=... or api_key/base_url, not both")
        self.model = model
        self.max_tokens = max_tokens
        self.thinking_budget = thinking_budget
        self.prompt_cache = prompt_cache
        self._block_cache = BlockCache()
        self.timeout_s = timeout_s
        self._api_key = api_key
        self._clients = LoopBoundClient(
            lambda: self._build_client(client, api_key, base_url), owned=client is None
        )

    def __repr__(self) -> str:
        return f"AnthropicChat(model={self.model!r}, max_tokens={self.max_tokens})"

    @property
    def client(self) -> AsyncAnthropic:
        """The SDK client (built on first use, retries off)."""
        return self._clients.get(None)

    def _build_client(
        self, given: AsyncAnthropic | None, api_key: str | None, base_url: str | None
    ) -> AsyncAnthropic:
        if given is not None:
            return given.with_options(max_retries=0)
        import anthropic

        return anthropic.AsyncAnthropic(
            api_key=api_key, base_url=base_url, max_retries=0, timeout=self.timeout_s
        )

    # --- ChatModel ---------------------------------------------------------------------------

    def context_limit(self, model: str | None = None) -> int | None:
        return pricing.context_limit(model or self.model, self.provider)

    def cost_usd(self, usage: ChatInvokeUsage) -> float | None:
        return pricing.cost_usd(usage, self.provider)

    def build_request(
        self,
        messages: list[Message],
        *,
        tools: list[FunctionToolDefinition] | None = None,
        tool_choice: str | None = None,
    ) -> dict[str, Any]:
        """The keyword arguments of ``client.messages.stream`` for this history."""
        thinking = self.thinking_budget is not None
        api_messages = to_anthropic_messages(
            messages, replay_thinking=thinking, cache=self._block_cache
        )
        api_tools = to_anthropic_tools(tools, tool_choice)
        system = system_text(messages)
        request: dict[str, Any] = {"model": self.model, "max_tokens": self.max_tokens}
        if self.prompt_cache:
            system_blocks = add_cache_breakpoints(
                system, api_tools, api_messages, cache_system=system_cache_allowed(messages)
            )
            if system_blocks is not None:
                request["system"] = system_blocks
        elif system:
            request["system"] = system
        request["messages"] = collapse_plain_text(api_messages)
        if api_tools:
            request["tools"] = api_tools
            choice = to_anthropic_tool_choice(tool_choice)
            if choice is not None:
                request["tool_choice"] = choice
        if thinking:
            request["thinking"] = {"type": "enabled", "budget_tokens": self.thinking_budget}
        return request

    async def ainvoke(
        self,
        messages: list[Message],
        *,
        tools: list[FunctionToolDefinition] | None = None,
        tool_choice: str | None = None,
        on_text_delta: TextDeltaCallback | None = None,
        on_reasoning_delta: TextDeltaCallback | None = None,
        signal: CancelSignal | None = None,
    ) -> ChatInvokeCompletion:
        if signal is not None:
            signal.raise_if_cancelled()
        request = self.build_request(messages, tools=tools, tool_choice=tool_choice)
        callbacks = StreamCallbacks(on_text_delta, on_reasoning_delta)
        message = await run_cancellable(self._stream(request, callbacks), signal)
        return completion_from_anthropic(message, model=self.model)

    async def _stream(self, request: dict[str, Any], callbacks: StreamCallbacks) -> dict[str, Any]:
        secrets = [self._api_key] if self._api_key else []
        completed = False
        try:
            client = self._clients.get(asyncio.get_running_loop())
            async with client.messages.stream(**request) as stream:
                events = stream.__aiter__()
                while True:
                    try:
                        event = await events.__anext__()
                    except StopAsyncIteration:
                        break
                    except (ValueError, RuntimeError) as exc:
                        # The SDK raises these for undecodable SSE data or events out of order
                        # (json.JSONDecodeError and pydantic's ValidationError are ValueErrors).
                        raise malformed_stream_error(exc, secrets=secrets) from exc
                    # Callbacks run outside the try: their own errors are not stream errors.
                    if event.type == "text":
                        callbacks.text(event.text)
                    elif event.type == "thinking":
                        callbacks.reasoning(event.thinking)
                    elif event.type == "message_stop":
                        completed = True
                if not completed:
                    raise LlmError(
                        "network",
                        "The Anthropic response stream ended before message_stop "
                        "(the connection closed mid-reply)",
                    )
                final = await stream.get_final_message()
                return dict(final.to_dict(mode="json"))
        except LlmError:
            raise
        except Exception as exc:
            error = classify_exception(exc, secrets=secrets)
            if error is None:
                raise
            raise error from exc


__all__ = ["DEFAULT_MODEL", "AnthropicChat"]
