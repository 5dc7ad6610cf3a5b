"""The Anthropic provider: :class:`AnthropicChat` (``chat.py``) over the official SDK, its
request building (``_request``), the SSE stream reader (``_stream``), the reply's conversion
(``_response``), error classification (``_errors``) and the Claude model table (``models``)."""

from .chat import DEFAULT_MODEL, DEFAULT_THINKING_BUDGET, AnthropicChat, Thinking, thinking_request

__all__ = [
    "DEFAULT_MODEL",
    "DEFAULT_THINKING_BUDGET",
    "AnthropicChat",
    "Thinking",
    "thinking_request",
]
