"""OpenAI-compatible providers: :class:`OpenAIChat`, a ``ChatModel`` over the SDK.

Every call streams. Chat Completions (``client.chat.completions.create(stream=True)``) is
what OpenAI and every compatible server speak (Ollama, vLLM, LM Studio, llama.cpp's server,
OpenRouter): text and reasoning reach the UI as they arrive and tool-call arguments are joined
from their fragments. For OpenAI itself the Responses API (``api="responses"``, the default
when no other ``base_url`` is given) carries reasoning items, which are replayed so reasoning
models keep their thread across tool calls. The SDK never retries (``max_retries=0``):
failures become ``LlmError`` and the agent decides. The SDK is imported on first use.

Limits, the reasoning form and what a model can do (call tools, read images) come from the
model tables in :mod:`.models`; capabilities are also asked of an Ollama server
(``/api/show`` lists a model's capabilities) and can be declared for any other model
(``tools=``/``vision=``), so a run that needs what the model lacks is refused up front with a
clear message. Which service answers (OpenAI, DeepSeek, Gemini, OpenRouter, a local server) is
the ``provider``, or for ``provider="openai"`` with another ``base_url``, that URL's host: it
names the service in messages and picks its prices.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from .. import pricing
from .._request_parts import BlockCache
from .._sdk_calls import LoopBoundClient, run_cancellable
from ..base import LlmError, StreamCallbacks, TextDeltaCallback
from ..messages import (
    ChatInvokeCompletion,
    ChatInvokeUsage,
    FunctionToolDefinition,
    Message,
)
from ._chat_completions import to_openai_messages, to_openai_tool_choice, to_openai_tools
from ._errors import classify_error_body, classify_exception, malformed_stream_error
from ._responses import (
    StreamedResponse,
    to_responses_input,
    to_responses_tool_choice,
    to_responses_tools,
)
from ._stream import StreamedReply, usage_from_openai
from .models import LOCAL_PROVIDERS, OpenAIModelInfo, model_family, model_info

if TYPE_CHECKING:
    from openai import AsyncOpenAI

    from ..._cancellation import CancelSignal

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
# Services recognised by the host of a ``base_url`` given with provider "openai".
SERVICE_HOSTS = {
    "api.openai.com": "openai",
    "api.deepseek.com": "deepseek",
    "generativelanguage.googleapis.com": "gemini",
    "openrouter.ai": "openrouter",
}
_SERVICE_LABELS = {
    "openai": "OpenAI API",
    "deepseek": "DeepSeek API",
    "gemini": "Gemini API",
    "openrouter": "OpenRouter API",
}
# genai-prices' provider ids where they differ from ours.
_PRICE_PROVIDERS = {"gemini": "google"}


@dataclass(frozen=True)
class ModelCapabilities:
    """What a model can take: tool calls and image inputs (None: not known)."""

    tools: bool | None = None
    vision: bool | None = None


def known_capabilities(model: str) -> ModelCapabilities:
    """What the model tables say ``model`` can do (unknown models: nothing is known)."""
    if model_family(model) is None:
        return ModelCapabilities()
    info = model_info(model)
    return ModelCapabilities(tools=info.tools, vision=info.vision)


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
    key. ``provider`` names the service for prices and messages. ``max_tokens``: the output
    limit (reasoning tokens count against it); None takes the model table's default (the
    model's maximum, at most 32,000) for a hosted service, and sends none to a local server
    (Ollama, vLLM, LM Studio, llama.cpp) or for a model the tables do not know, so the
    server's own limit applies. ``tools`` / ``vision`` declare what the model can do when the
    built-in table does not know it.
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
        max_tokens: int | None = None,
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
        self.info: OpenAIModelInfo = model_info(model)
        if max_tokens is None and provider not in LOCAL_PROVIDERS:
            max_tokens = self.info.default_max_tokens
        self.max_tokens = max_tokens
        self.timeout_s = timeout_s
        self.base_url = base_url
        self.service = _service(provider, base_url)
        if api is None:
            api = "responses" if provider == "openai" and _is_openai_itself(base_url) else "chat"
        if api not in ("chat", "responses"):
            raise ValueError(f"api must be 'chat' or 'responses', got {api!r}")
        self.api: Literal["chat", "responses"] = api
        known = ModelCapabilities(tools=self.info.tools, vision=self.info.vision)
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
        """How messages name the service: ``OpenAI API``, ``DeepSeek API``, ``ollama server``."""
        return _SERVICE_LABELS.get(self.service, f"{self.service} server")

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
        name = model or self.model
        listed = pricing.listed_context_window(name, self._price_provider)
        return listed if listed is not None else model_info(name).context_window

    def cost_usd(self, usage: ChatInvokeUsage) -> float | None:
        return pricing.cost_usd(usage, self._price_provider)

    @property
    def _price_provider(self) -> str:
        return _PRICE_PROVIDERS.get(self.service, self.service)

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
                messages,
                cache=self._block_cache,
                images=self.capabilities.vision is not False,
                send_back=self.info.send_back,
            ),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if self.max_tokens is not None:  # None: the server's own limit
            request[self._limit_parameter] = self.max_tokens
        api_tools = to_openai_tools(tools, tool_choice)
        if api_tools:
            request["tools"] = api_tools
            choice = to_openai_tool_choice(tool_choice)
            if choice is not None:
                request["tool_choice"] = choice
        return request

    @property
    def _limit_parameter(self) -> str:
        """OpenAI's reasoning models refuse ``max_tokens`` (on OpenAI, Azure or OpenRouter);
        compatible servers know only it."""
        if self.service == "openai" and _is_openai_itself(self.base_url):
            return "max_completion_tokens"
        return self.info.limit_parameter

    def _responses_request(
        self,
        messages: list[Message],
        tools: list[FunctionToolDefinition] | None,
        tool_choice: str | None,
    ) -> dict[str, Any]:
        from .._request_parts import system_text

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
        import openai

        secrets = [self._api_key] if self._api_key else []
        reply: StreamedReply | StreamedResponse = (
            StreamedResponse()
            if self.api == "responses"
            else StreamedReply(think_opened=self.info.reasoning == "think_tags")
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
                    except openai.APIError as exc:
                        if type(exc) is not openai.APIError:  # a status, connection, timeout..
                            raise
                        # An error object inside a 200 stream (OpenRouter, when the upstream
                        # fails after the status line went out): after the reply finished it
                        # changes nothing, before that it is the call's outcome.
                        if isinstance(reply, StreamedReply) and reply.finish_reason is not None:
                            reply.stream_error = exc.body
                            break
                        raise classify_error_body(
                            None, {}, exc.body, provider_label=self.label, secrets=secrets
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
        text, reasoning = reply.finish()
        callbacks.reasoning(reasoning)
        callbacks.text(text)
        return reply


def _is_openai_itself(base_url: str | None) -> bool:
    """Whether requests go to OpenAI's own API (not set, or ``OPENAI_BASE_URL`` says so)."""
    url = base_url or os.environ.get("OPENAI_BASE_URL", "").strip() or OPENAI_BASE_URL
    return url.rstrip("/").startswith(OPENAI_BASE_URL)


def _service(provider: str, base_url: str | None) -> str:
    """The service a chat talks to: the provider, or for the generic ``openai`` provider with
    another ``base_url``, the service that URL's host is known as (else ``openai``)."""
    if provider != "openai" or not base_url:
        return provider
    host = (urlsplit(base_url).hostname or "").lower()
    return SERVICE_HOSTS.get(host, "openai")


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
