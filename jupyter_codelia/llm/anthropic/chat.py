"""The Anthropic provider: :class:`AnthropicChat`, a ``ChatModel`` over the SDK 2.x.

Every call streams, so text and thinking reach the UI as they are generated. The SDK sends the
request and raises for HTTP errors; the event stream itself is read by :mod:`._stream`, which
keeps the blocks exactly as the API sent them. The SDK never retries (``max_retries=0``):
failures become ``LlmError`` and the agent decides. The SDK is imported on first use, so
importing this module stays cheap.

``max_tokens`` and the thinking request come from the model table in :mod:`.models`.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Literal

from .. import pricing
from .._sdk_calls import LoopBoundClient, run_cancellable
from ..base import LlmError, StreamCallbacks, TextDeltaCallback
from ..messages import ChatInvokeCompletion, ChatInvokeUsage, FunctionToolDefinition, Message
from . import models
from ._errors import classify_exception, classify_status, malformed_stream_error
from ._request import (
    MessagesCache,
    add_cache_breakpoints,
    system_cache_allowed,
    system_text,
    to_anthropic_messages,
    to_anthropic_tool_choice,
    to_anthropic_tools,
)
from ._response import completion_from_anthropic
from ._stream import (
    InStreamApiError,
    ReplyAccumulator,
    StreamProtocolError,
    server_sent_events,
)

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic

    from ..._cancellation import CancelSignal

DEFAULT_MODEL = "claude-sonnet-5-5"
MIN_THINKING_BUDGET = 1024
DEFAULT_THINKING_BUDGET = 8192
"""The budget ``thinking="adaptive"`` asks of a model that only takes budget thinking."""

Thinking = Literal["off", "adaptive"] | int | None


class AnthropicChat:
    """Claude through the official SDK.

    >>> chat = AnthropicChat(model="claude-sonnet-5-5", api_key="sk-...")     # doctest: +SKIP
    >>> completion = await chat.ainvoke([UserMessage(content="hi")])         # doctest: +SKIP

    ``client``: an ``anthropic.AsyncAnthropic`` to use (a copy with retries off is made);
    otherwise one is built from ``api_key`` / ``base_url`` (or the SDK's ``ANTHROPIC_*``
    environment variables). ``max_tokens``: None sizes it from the model table (the model's
    output limit, at most 32,000). ``thinking``: None leaves it to the model's default;
    ``"off"`` sends ``{"type": "disabled"}``; ``"adaptive"`` lets the model decide (budget-only
    models get 8,192 tokens); a number is a budget in tokens, sent as is to budget models and as
    an ``output_config.effort`` to adaptive ones (see :func:`.models.effort_for_budget`).
    ``effort`` sets ``output_config.effort`` explicitly where the model accepts it. Thinking
    blocks are always replayed with their signatures. ``prompt_cache`` marks the system prompt,
    the last tool and the latest user turn as cache breakpoints.
    """

    provider = "anthropic"

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        client: AsyncAnthropic | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        max_tokens: int | None = None,
        thinking: Thinking = None,
        effort: models.Effort | None = None,
        prompt_cache: bool = True,
        timeout_s: float = 600,
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise ValueError("model must be a non-empty model id such as 'claude-sonnet-5-5'")
        self.capabilities = models.capabilities(model)
        if max_tokens is None:
            max_tokens = self.capabilities.default_max_tokens
        if max_tokens < 1:
            raise ValueError(f"max_tokens must be at least 1, got {max_tokens}")
        _check_thinking(thinking, max_tokens, self.capabilities)
        if effort is not None and effort not in self.capabilities.efforts:
            accepted = ", ".join(self.capabilities.efforts) or "none"
            raise ValueError(
                f"{model} does not take effort={effort!r}; accepted efforts: {accepted}"
            )
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be positive, got {timeout_s}")
        if client is not None and (api_key is not None or base_url is not None):
            raise ValueError("pass either client=... or api_key/base_url, not both")
        self.model = model
        self.max_tokens = max_tokens
        self.thinking = thinking
        self.effort = effort
        self.prompt_cache = prompt_cache
        self._messages_cache = MessagesCache()
        self.timeout_s = timeout_s
        self._api_key = api_key
        # What the SDK reads from the environment for what was not given here.
        environment = (
            *(() if api_key is not None else ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")),
            *(() if base_url is not None else ("ANTHROPIC_BASE_URL",)),
        )
        self._clients = LoopBoundClient(
            lambda: self._build_client(client, api_key, base_url),
            owned=client is None,
            environment=environment,
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
        """The JSON body of the Messages API request for this history (without ``stream``)."""
        api_messages = to_anthropic_messages(
            messages, replay_thinking=True, collapse=True, cache=self._messages_cache
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
        request["messages"] = api_messages
        if api_tools:
            request["tools"] = api_tools
            choice = to_anthropic_tool_choice(tool_choice)
            if choice is not None:
                request["tool_choice"] = choice
        thinking, effort = thinking_request(self.thinking, self.capabilities)
        if thinking is not None:
            request["thinking"] = thinking
        effort = self.effort or effort
        if effort is not None:
            request["output_config"] = {"effort": effort}
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
        accumulated = await run_cancellable(self._stream(request, callbacks), signal)
        message = accumulated.message or {}
        return completion_from_anthropic(
            message, model=self.model, unfinished_inputs=accumulated.unfinished_inputs
        )

    async def _stream(
        self, request: dict[str, Any], callbacks: StreamCallbacks
    ) -> ReplyAccumulator:
        secrets = [self._api_key] if self._api_key else []
        try:
            client = self._clients.get(asyncio.get_running_loop())
            reply = ReplyAccumulator(callbacks)
            async with client.messages.with_streaming_response.create(
                **request, stream=True
            ) as response:
                # Read to the end even after message_stop: a body left unread would close the
                # connection instead of returning it to the pool for the next call.
                async for sse in server_sent_events(response.iter_lines()):
                    try:
                        reply.feed(sse)
                    except InStreamApiError as event:
                        raise classify_status(
                            200, dict(response.headers), event.body, secrets=secrets
                        ) from None
                    except StreamProtocolError as exc:
                        raise malformed_stream_error(exc, secrets=secrets) from exc
            if not reply.completed:
                raise LlmError(
                    "network",
                    "The Anthropic response stream ended before message_stop "
                    "(the connection closed mid-reply)",
                )
            return reply
        except LlmError:
            raise
        except Exception as exc:
            error = classify_exception(exc, secrets=secrets)
            if error is None:
                raise
            raise error from exc


def _check_thinking(
    thinking: Thinking, max_tokens: int, capabilities: models.ModelCapabilities
) -> None:
    if thinking is None or thinking == "off":
        return
    if thinking == "adaptive":
        budget = DEFAULT_THINKING_BUDGET
    elif isinstance(thinking, int) and not isinstance(thinking, bool):
        budget = thinking
        if budget < MIN_THINKING_BUDGET:
            raise ValueError(
                f"a thinking budget must be at least {MIN_THINKING_BUDGET} tokens "
                f"(Anthropic's minimum), got {budget}"
            )
    else:
        raise ValueError(
            f"thinking must be 'off', 'adaptive' or a budget in tokens, got {thinking!r}"
        )
    # Adaptive models get an effort instead of a budget: only budget models spend it from
    # max_tokens.
    if capabilities.thinking == "budget" and budget >= max_tokens:
        raise ValueError(
            f"the thinking budget ({budget}) must be less than max_tokens ({max_tokens}): "
            "raise max_tokens or lower the budget"
        )


def thinking_request(
    thinking: Thinking, capabilities: models.ModelCapabilities
) -> tuple[dict[str, Any] | None, models.Effort | None]:
    """The ``thinking`` object and ``output_config.effort`` for a setting on a model."""
    if thinking is None:
        return None, None
    if thinking == "off":
        return {"type": "disabled"}, None
    if capabilities.thinking == "adaptive":
        if thinking == "adaptive":
            return {"type": "adaptive"}, None
        effort = models.effort_for_budget(int(thinking))
        return {"type": "adaptive"}, effort if effort in capabilities.efforts else None
    budget = DEFAULT_THINKING_BUDGET if thinking == "adaptive" else int(thinking)
    return {"type": "enabled", "budget_tokens": budget}, None


__all__ = [
    "DEFAULT_MODEL",
    "DEFAULT_THINKING_BUDGET",
    "AnthropicChat",
    "Thinking",
    "thinking_request",
]
