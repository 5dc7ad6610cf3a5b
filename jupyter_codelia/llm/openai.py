"""OpenAI-compatible providers: :class:`OpenAIChat`, a :class:`~.base.ChatModel` over the SDK.

Every call streams. Chat Completions (``client.chat.completions.create(stream=True)``) is
what OpenAI and every compatible server speak (Ollama, vLLM, LM Studio, llama.cpp's server,
OpenRouter): text and reasoning reach the UI as they arrive and tool-call arguments are joined
from their fragments. For OpenAI itself the Responses API (``api="responses"``, the default
when no other ``base_url`` is given) carries reasoning items, which are replayed so reasoning
models keep their thread across tool calls. The SDK never retries (``max_retries=0``):
failures become :class:`~.base.LlmError` and the agent decides. The SDK is imported on first
use.

What a model can do (call tools, read images) is known for OpenAI's own families (the table
below), asked of an Ollama server (``/api/show`` lists a model's capabilities) and can be
declared for any other model (``tools=``/``vision=``), so a run that needs what the model
lacks is refused up front with a clear message.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from . import pricing
from ._openai_errors import classify_error_body, classify_exception, malformed_stream_error
from ._openai_request import to_openai_messages, to_openai_tool_choice, to_openai_tools
from ._openai_responses import (
    StreamedResponse,
    to_responses_input,
    to_responses_tool_choice,
    to_responses_tools,
)
from ._request_parts import BlockCache
from ._sdk_calls import LoopBoundClient, run_cancellable
from .base import LlmError, StreamCallbacks, TextDeltaCallback
from .messages import (
    AssistantMessage,
    ChatInvokeCompletion,
    ChatInvokeUsage,
    FunctionCall,
    FunctionToolDefinition,
    Message,
    ReasoningMessage,
    ToolCall,
)

if TYPE_CHECKING:
    from openai import AsyncOpenAI

    from .._cancellation import CancelSignal

DEFAULT_MODEL = "gpt-5.1"
OPENAI_BASE_URL = "https://api.openai.com/v1"
# Where the common local servers listen by default, for the ``ollama:qwen3-coder`` shorthand.
KNOWN_ENDPOINTS: dict[str, tuple[str, str]] = {
    # name: (base_url, environment variable holding its key)
    "openai": (OPENAI_BASE_URL, "OPENAI_API_KEY"),
    "ollama": ("http://localhost:11434/v1", "OLLAMA_API_KEY"),
    "vllm": ("http://localhost:8000/v1", "VLLM_API_KEY"),
    "lmstudio": ("http://localhost:1234/v1", "LMSTUDIO_API_KEY"),
    "llamacpp": ("http://localhost:8080/v1", "LLAMACPP_API_KEY"),
    "openrouter": ("https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"),
}
# Local servers ignore the key but the SDK insists on one.
LOCAL_PLACEHOLDER_KEY = "not-needed"
# Fields some compatible servers (vLLM, DeepSeek, Ollama, OpenRouter) stream reasoning in.
_REASONING_DELTA_FIELDS = ("reasoning_content", "reasoning")


@dataclass(frozen=True)
class ModelCapabilities:
    """What a model can take: tool calls and image inputs (None: not known)."""

    tools: bool | None = None
    vision: bool | None = None


# OpenAI's own model families, by id prefix (longest match wins). Checked against OpenAI's
# model pages 2026-11: every current chat family calls tools and reads images except these.
OPENAI_MODEL_CAPABILITIES: dict[str, ModelCapabilities] = {
    "gpt-5": ModelCapabilities(tools=True, vision=True),
    "gpt-4.1": ModelCapabilities(tools=True, vision=True),
    "gpt-4o": ModelCapabilities(tools=True, vision=True),
    "gpt-4o-audio": ModelCapabilities(tools=True, vision=False),
    "gpt-4o-search": ModelCapabilities(tools=False, vision=False),
    "gpt-4-turbo": ModelCapabilities(tools=True, vision=True),
    "gpt-4": ModelCapabilities(tools=True, vision=False),
    "gpt-3.5-turbo": ModelCapabilities(tools=True, vision=False),
    "o1-mini": ModelCapabilities(tools=False, vision=False),
    "o1": ModelCapabilities(tools=True, vision=True),
    "o3-mini": ModelCapabilities(tools=True, vision=False),
    "o3": ModelCapabilities(tools=True, vision=True),
    "o4-mini": ModelCapabilities(tools=True, vision=True),
    "gpt-oss": ModelCapabilities(tools=True, vision=False),
}


def known_capabilities(model: str) -> ModelCapabilities:
    """The table entry of the longest prefix of ``model`` (``ollama``-style tags ignored)."""
    name = model.split("/")[-1].lower()
    best = ""
    for prefix in OPENAI_MODEL_CAPABILITIES:
        if name.startswith(prefix) and len(prefix) > len(best):
            best = prefix
    return OPENAI_MODEL_CAPABILITIES[best] if best else ModelCapabilities()


class OpenAIChat:
    """Any OpenAI-compatible chat model through the official ``openai`` SDK.

    >>> chat = OpenAIChat(model="gpt-5.1")                                   # doctest: +SKIP
    >>> local = OpenAIChat(model="qwen3-coder", base_url="http://localhost:11434/v1",
    ...                    provider="ollama")                                  # doctest: +SKIP

    ``client``: an ``openai.AsyncOpenAI`` to use (a copy with retries off is made); otherwise
    one is built from ``api_key`` / ``base_url``; without ``api_key`` the key is read from the
    environment variable ``api_key_env`` each time a client is built (a key set later with
    ``%env`` is picked up by the next call), without ``base_url`` from ``OPENAI_BASE_URL``.
    ``needs_key=False`` (local servers, which ignore it) sends a placeholder when there is no
    key. ``provider`` names the service for prices and messages. ``tools`` /
    ``vision`` declare what the model can do when the built-in table does not know it.
    ``api``: ``"chat"`` (Chat Completions) or ``"responses"``; by default Responses for OpenAI
    itself (provider ``openai`` and no ``base_url``), Chat Completions for everything else.
    """

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        client: AsyncOpenAI | None = None,
        api_key: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        needs_key: bool = True,
        base_url: str | None = None,
        provider: str = "openai",
        max_tokens: int | None = 4096,
        timeout_s: float = 600,
        tools: bool | None = None,
        vision: bool | None = None,
        api: Literal["chat", "responses"] | None = None,
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise ValueError("model must be a non-empty model id such as 'gpt-5.1'")
        if max_tokens is not None and max_tokens < 1:
            raise ValueError(f"max_tokens must be at least 1, got {max_tokens}")
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be positive, got {timeout_s}")
        if client is not None and (api_key is not None or base_url is not None):
            raise ValueError("pass either client=... or api_key/base_url, not both")
        self.model = model
        self.provider = provider
        self.max_tokens = max_tokens
        self.timeout_s = timeout_s
        self.base_url = base_url
        if api is None:
            api = "responses" if provider == "openai" and _is_openai_itself(base_url) else "chat"
        if api not in ("chat", "responses"):
            raise ValueError(f"api must be 'chat' or 'responses', got {api!r}")
        self.api: Literal["chat", "responses"] = api
        known = known_capabilities(model)
        self._declared = ModelCapabilities(tools=tools, vision=vision)
        self.capabilities = ModelCapabilities(
            tools=known.tools if tools is None else tools,
            vision=known.vision if vision is None else vision,
        )
        self._api_key = api_key  # the key in use: explicit, else read when a client is built
        self._api_key_env = api_key_env
        self._needs_key = needs_key
        self._block_cache = BlockCache()
        environment = (
            *(() if api_key is not None else (api_key_env,)),
            *(() if base_url is not None else ("OPENAI_BASE_URL",)),
        )
        self._clients = LoopBoundClient(
            lambda: self._build_client(client, api_key, base_url),
            owned=client is None,
            environment=environment,
        )

    def __repr__(self) -> str:
        where = f", base_url={self.base_url!r}" if self.base_url else ""
        return f"OpenAIChat(model={self.model!r}, provider={self.provider!r}{where})"

    @property
    def label(self) -> str:
        """How messages name the service: ``OpenAI API`` or ``ollama server``."""
        return "OpenAI API" if self.provider == "openai" else f"{self.provider} server"

    @property
    def client(self) -> AsyncOpenAI:
        """The SDK client (built on first use, retries off)."""
        return self._clients.get(None)

    def _build_client(
        self, given: AsyncOpenAI | None, api_key: str | None, base_url: str | None
    ) -> AsyncOpenAI:
        if given is not None:
            return given.with_options(max_retries=0)
        import openai

        if api_key is None:
            api_key = os.environ.get(self._api_key_env, "").strip() or None
            if api_key is None and not self._needs_key:
                api_key = LOCAL_PLACEHOLDER_KEY
            if api_key is None:
                raise LlmError(
                    "auth",
                    f"No API key for the {self.label}: pass api_key=... to OpenAIChat or set "
                    f"{self._api_key_env} (local servers accept any value).",
                )
            self._api_key = api_key  # masked in errors like an explicit one
        return openai.AsyncOpenAI(
            api_key=api_key, base_url=base_url, max_retries=0, timeout=self.timeout_s
        )

    # --- ChatModel ---------------------------------------------------------------------------

    def context_limit(self, model: str | None = None) -> int | None:
        return pricing.context_limit(model or self.model, self.provider)

    def cost_usd(self, usage: ChatInvokeUsage) -> float | None:
        return pricing.cost_usd(usage, self.provider)

    def discover_capabilities(self, timeout_s: float = 3.0) -> ModelCapabilities:
        """Ask an Ollama server what the model can do (``POST /api/show``); values the caller
        declared win. Other servers, and an Ollama that does not answer, leave them unknown."""
        if self.provider != "ollama" or self.base_url is None:
            return self.capabilities
        import httpx2

        root = self.base_url.rstrip("/").removesuffix("/v1")
        try:
            response = httpx2.post(
                f"{root}/api/show", json={"model": self.model}, timeout=timeout_s
            )
            listed = response.json().get("capabilities") if response.status_code == 200 else None
        except (httpx2.HTTPError, ValueError, AttributeError):
            listed = None
        if not isinstance(listed, list):
            return self.capabilities
        declared = self._declared
        self.capabilities = ModelCapabilities(
            tools="tools" in listed if declared.tools is None else declared.tools,
            vision="vision" in listed if declared.vision is None else declared.vision,
        )
        return self.capabilities

    def unsupported(self, *, needs_tools: bool, needs_vision: bool) -> str | None:
        """Why this model cannot run a turn that needs tools / image input; None if it can."""
        missing = []
        if needs_tools and self.capabilities.tools is False:
            missing.append("call tools")
        if needs_vision and self.capabilities.vision is False:
            missing.append("read images")
        if not missing:
            return None
        return (
            f"The model {self.model!r} ({self.provider}) cannot {' or '.join(missing)}, which "
            "this run needs. Choose another model (%config Codelia.model = ...), or if the "
            "model can after all, declare it: OpenAIChat(..., tools=True, vision=True)."
        )

    def build_request(
        self,
        messages: list[Message],
        *,
        tools: list[FunctionToolDefinition] | None = None,
        tool_choice: str | None = None,
    ) -> dict[str, Any]:
        """The keyword arguments of ``client.chat.completions.create`` (or, with
        ``api="responses"``, ``client.responses.create``) for this history."""
        if self.api == "responses":
            return self._responses_request(messages, tools, tool_choice)
        request: dict[str, Any] = {
            "model": self.model,
            "messages": to_openai_messages(
                messages, cache=self._block_cache, images=self.capabilities.vision is not False
            ),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        # OpenAI's reasoning models refuse ``max_tokens``; compatible servers know only it.
        limit_name = "max_completion_tokens" if self.provider == "openai" else "max_tokens"
        if self.max_tokens is not None:  # None: the server's own limit
            request[limit_name] = self.max_tokens
        api_tools = to_openai_tools(tools, tool_choice)
        if api_tools:
            request["tools"] = api_tools
            choice = to_openai_tool_choice(tool_choice)
            if choice is not None:
                request["tool_choice"] = choice
        return request

    def _responses_request(
        self,
        messages: list[Message],
        tools: list[FunctionToolDefinition] | None,
        tool_choice: str | None,
    ) -> dict[str, Any]:
        from ._request_parts import system_text

        request: dict[str, Any] = {
            "model": self.model,
            "input": to_responses_input(
                messages, cache=self._block_cache, images=self.capabilities.vision is not False
            ),
            "stream": True,
            "store": False,
            # Reasoning comes back encrypted (nothing is stored server-side) to be replayed.
            "include": ["reasoning.encrypted_content"],
        }
        if self.max_tokens is not None:
            request["max_output_tokens"] = self.max_tokens
        instructions = system_text(messages)
        if instructions:
            request["instructions"] = instructions
        api_tools = to_responses_tools(tools, tool_choice)
        if api_tools:
            request["tools"] = api_tools
            choice = to_responses_tool_choice(tool_choice)
            if choice is not None:
                request["tool_choice"] = choice
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
        reply = await run_cancellable(self._stream(request, callbacks), signal)
        return reply.completion(self.model)

    async def _stream(
        self, request: dict[str, Any], callbacks: StreamCallbacks
    ) -> StreamedReply | StreamedResponse:
        secrets = [self._api_key] if self._api_key else []
        reply: StreamedReply | StreamedResponse = (
            StreamedResponse() if self.api == "responses" else StreamedReply()
        )
        try:
            client = self._clients.get(asyncio.get_running_loop())
            # The request is plain JSON already: sent as ``extra_body`` it skips the SDK's
            # per-field TypedDict transform, which on a 1,000-message history costs ~0.4 s
            # per call (more than the rest of the turn). ``stream=True`` still selects the
            # streaming response type.
            stream: Any
            if self.api == "responses":
                stream = await client.responses.create(
                    model=self.model, stream=True, extra_body=request
                )
            else:
                stream = await client.chat.completions.create(
                    model=self.model, messages=[], stream=True, extra_body=request
                )
            chunks = stream.__aiter__()
            try:
                while True:
                    try:
                        chunk = await chunks.__anext__()
                    except StopAsyncIteration:
                        break
                    except (ValueError, RuntimeError) as exc:
                        # Undecodable SSE data (json.JSONDecodeError is a ValueError).
                        raise malformed_stream_error(
                            exc, provider_label=self.label, secrets=secrets
                        ) from exc
                    text, reasoning = reply.add(chunk)
                    # Callbacks run outside the try: their own errors are not stream errors.
                    callbacks.reasoning(reasoning)
                    callbacks.text(text)
            finally:
                await stream.close()
        except LlmError:
            raise
        except Exception as exc:
            error = classify_exception(exc, provider_label=self.label, secrets=secrets)
            if error is None:
                raise
            raise error from exc
        if isinstance(reply, StreamedResponse):
            if reply.failure is not None:
                raise classify_error_body(
                    None, {}, reply.failure, provider_label=self.label, secrets=secrets
                )
            if reply.response is None:
                raise LlmError(
                    "network",
                    f"The {self.label} response stream ended before response.completed "
                    "(the connection closed mid-reply)",
                )
            return reply
        if reply.finish_reason is None:
            raise LlmError(
                "network",
                f"The {self.label} response stream ended before a finish_reason "
                "(the connection closed mid-reply)",
            )
        return reply


def _is_openai_itself(base_url: str | None) -> bool:
    """Whether requests go to OpenAI's own API (not set, or ``OPENAI_BASE_URL`` says so)."""
    url = base_url or os.environ.get("OPENAI_BASE_URL", "").strip() or OPENAI_BASE_URL
    return url.rstrip("/").startswith(OPENAI_BASE_URL)


@dataclass
class _PendingCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass
class StreamedReply:
    """Chat Completions chunks folded into one reply (choice 0; tool calls by index)."""

    text: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    refusal: list[str] = field(default_factory=list)
    calls: dict[int, _PendingCall] = field(default_factory=dict)
    finish_reason: str | None = None
    usage: Any = None
    model: str | None = None
    id: str | None = None

    def add(self, chunk: Any) -> tuple[str, str]:
        """Fold one chunk in; returns its (text, reasoning) deltas."""
        self.id = self.id or chunk.id
        self.model = self.model or chunk.model
        if chunk.usage is not None:
            self.usage = chunk.usage
        text = reasoning = ""
        for choice in chunk.choices:
            if choice.index != 0:
                continue
            delta = choice.delta
            if delta is not None:
                text = delta.content or ""
                reasoning = _reasoning_delta(delta)
                self.text.append(text)
                self.reasoning.append(reasoning)
                if delta.refusal:
                    self.refusal.append(delta.refusal)
                for fragment in delta.tool_calls or ():
                    call = self.calls.setdefault(fragment.index, _PendingCall())
                    call.id = call.id or fragment.id or ""
                    function = fragment.function
                    if function is not None:
                        call.name = call.name or function.name or ""
                        if function.arguments:
                            call.arguments.append(function.arguments)
            if choice.finish_reason is not None:
                self.finish_reason = choice.finish_reason
        return text, reasoning

    def completion(self, requested_model: str) -> ChatInvokeCompletion:
        model = self.model or requested_model
        messages: list[Any] = []
        reasoning = "".join(self.reasoning)
        if reasoning:
            messages.append(ReasoningMessage(content=reasoning))
        calls = [
            ToolCall(
                id=call.id or f"call_{index}",
                function=FunctionCall(name=call.name, arguments="".join(call.arguments)),
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
        return ChatInvokeCompletion(
            messages=messages,
            usage=usage_from_openai(model, self.usage),
            stop_reason=self.finish_reason,
            provider_meta={"id": self.id, "model": self.model},
        )


def _reasoning_delta(delta: Any) -> str:
    extra = getattr(delta, "model_extra", None) or {}
    for name in _REASONING_DELTA_FIELDS:
        value = extra.get(name)
        if isinstance(value, str) and value:
            return value
    return ""


def usage_from_openai(model: str, usage: Any) -> ChatInvokeUsage:
    """Chat Completions usage → ours: ``prompt_tokens`` already counts cached tokens."""
    if usage is None:
        return ChatInvokeUsage(model=model)
    input_tokens = int(usage.prompt_tokens or 0)
    output_tokens = int(usage.completion_tokens or 0)
    details = usage.prompt_tokens_details
    cached = getattr(details, "cached_tokens", None) if details is not None else None
    return ChatInvokeUsage(
        model=model,
        input_tokens=input_tokens,
        input_cached_tokens=int(cached) if cached else None,
        output_tokens=output_tokens,
        total_tokens=input_tokens + output_tokens,
    )


__all__ = [
    "DEFAULT_MODEL",
    "KNOWN_ENDPOINTS",
    "LOCAL_PLACEHOLDER_KEY",
    "OPENAI_MODEL_CAPABILITIES",
    "ModelCapabilities",
    "OpenAIChat",
    "StreamedReply",
    "known_capabilities",
    "usage_from_openai",
]
