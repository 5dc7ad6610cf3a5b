"""OpenAI and every OpenAI-compatible server: :class:`OpenAIChat` (``chat.py``) over the
official SDK, the Chat Completions request (``_chat_completions``) and the Responses API
(``_responses``), the stream reader (``_stream``, with inline ``<think>`` splitting in
``_think_tags``), error classification (``_errors``) and the per-family model table
(``models``)."""

from .chat import (
    DEFAULT_MODEL,
    KNOWN_ENDPOINTS,
    LOCAL_PLACEHOLDER_KEY,
    SERVICE_HOSTS,
    ModelCapabilities,
    OpenAIChat,
    StreamedReply,
    known_capabilities,
    usage_from_openai,
)

__all__ = [
    "DEFAULT_MODEL",
    "KNOWN_ENDPOINTS",
    "LOCAL_PLACEHOLDER_KEY",
    "SERVICE_HOSTS",
    "ModelCapabilities",
    "OpenAIChat",
    "StreamedReply",
    "known_capabilities",
    "usage_from_openai",
]
