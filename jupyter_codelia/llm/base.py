"""The provider-neutral chat-model contract: the ``ChatModel`` protocol and its typed failure.

The agent talks to every provider through :class:`ChatModel` and handles failures through
:class:`LlmError` alone (it owns retries, so it needs to know the kind of failure, whether it is
worth retrying and how long the provider asked us to wait). Nothing here imports a provider SDK.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, get_args, runtime_checkable

from ..errors import CodeliaError
from .messages import ChatInvokeCompletion, ChatInvokeUsage, FunctionToolDefinition, Message

if TYPE_CHECKING:
    from .._cancellation import CancelSignal

LlmErrorKind = Literal[
    "rate_limit", "overloaded", "timeout", "network", "provider", "bad_request", "auth", "quota"
]
"""``quota``: the account is out of credit or over its spending limit (OpenAI's
``insufficient_quota``, a 429 that waiting does not cure)."""
RetrySource = Literal["retry-after", "reset-header", "provider-body", "backoff"]

RETRYABLE_KINDS: frozenset[str] = frozenset(
    {"rate_limit", "overloaded", "timeout", "network", "provider"}
)

TextDeltaCallback = Callable[[str], None]


class LlmError(CodeliaError):
    """A classified provider failure.

    ``message`` is safe to show and log: providers build it from status, error type and the
    provider's own explanation, never from request headers, so it cannot contain the API key.
    ``retry_after_s`` is the wait the provider asked for (``retry_source`` says where it came
    from), or None when it gave no hint and the caller should back off on its own.
    """

    def __init__(
        self,
        kind: LlmErrorKind,
        message: str,
        *,
        status: int | None = None,
        retry_after_s: float | None = None,
        retry_source: RetrySource | None = None,
    ) -> None:
        if kind not in get_args(LlmErrorKind):
            known = ", ".join(get_args(LlmErrorKind))
            raise ValueError(f"unknown LlmError kind {kind!r}; expected one of {known}")
        super().__init__(message)
        self.kind: LlmErrorKind = kind
        self.message = message
        self.status = status
        self.retry_after_s = retry_after_s
        self.retry_source: RetrySource | None = retry_source

    def __reduce__(self) -> tuple[Any, ...]:
        # Keyword-only fields: the default Exception pickling would lose them.
        return (
            _rebuild_llm_error,
            (self.kind, self.message, self.status, self.retry_after_s, self.retry_source),
        )

    @property
    def retryable(self) -> bool:
        """Whether trying the same request again may succeed (5xx, 429, 529, timeouts, drops)."""
        return self.kind in RETRYABLE_KINDS

    def __repr__(self) -> str:
        return (
            f"LlmError(kind={self.kind!r}, status={self.status!r}, "
            f"retry_after_s={self.retry_after_s!r}, message={self.message!r})"
        )


def _rebuild_llm_error(
    kind: LlmErrorKind,
    message: str,
    status: int | None,
    retry_after_s: float | None,
    retry_source: RetrySource | None,
) -> LlmError:
    return LlmError(
        kind, message, status=status, retry_after_s=retry_after_s, retry_source=retry_source
    )


@dataclass
class StreamCallbacks:
    """Where a provider delivers streamed text and reasoning as it arrives (both optional)."""

    on_text_delta: TextDeltaCallback | None = None
    on_reasoning_delta: TextDeltaCallback | None = None

    def text(self, delta: str) -> None:
        if self.on_text_delta is not None and delta:
            self.on_text_delta(delta)

    def reasoning(self, delta: str) -> None:
        if self.on_reasoning_delta is not None and delta:
            self.on_reasoning_delta(delta)


@runtime_checkable
class ChatModel(Protocol):
    """What the agent needs from a model provider."""

    provider: str
    model: str

    def context_limit(self, model: str | None = None) -> int | None:
        """Maximum input tokens of ``model`` (default: this chat's model); None if unknown."""
        ...

    def cost_usd(self, usage: ChatInvokeUsage) -> float | None:
        """Price of ``usage`` in US dollars; None when the model's price is unknown."""
        ...

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
        """One model call. Raises :class:`LlmError` on provider failure and
        ``jupyter_codelia.tools.RunCancelled`` when ``signal`` fires."""
        ...


@runtime_checkable
class CapabilityProbe(Protocol):
    """A chat model whose server says what the model can do (models of an open set, such as a
    local Ollama's): a host asks it before the first turn and refuses a model that cannot."""

    def discover_capabilities(self, timeout_s: float = ...) -> object:
        """Ask the server what the model can do (a value the caller declared wins)."""
        ...

    def unsupported(self, *, needs_tools: bool, needs_vision: bool) -> str | None:
        """Why the model cannot run a turn that needs tools / image input; None if it can."""
        ...


__all__ = [
    "RETRYABLE_KINDS",
    "CapabilityProbe",
    "ChatModel",
    "LlmError",
    "LlmErrorKind",
    "RetrySource",
    "StreamCallbacks",
    "TextDeltaCallback",
]
