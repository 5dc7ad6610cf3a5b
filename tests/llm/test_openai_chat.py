"""OpenAIChat with the real openai SDK against a ScriptedOpenAIServer on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest

from jupyter_codelia.llm import (
    AssistantMessage,
    ChatModel,
    FunctionToolDefinition,
    ImagePart,
    LlmError,
    ReasoningMessage,
    SystemMessage,
    TextPart,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from jupyter_codelia.llm.messages import FunctionCall
from jupyter_codelia.llm.openai import OpenAIChat, known_capabilities
from jupyter_codelia.testing import (
    ScriptedOpenAIServer,
    fault,
    refusal,
    reply,
    text,
    thinking,
    tool_use,
    usage,
)
from jupyter_codelia.tools import CancelSignal, RunCancelled

API_KEY = "sk-openai-test-SECRET-0123456789"
PNG_1PX = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c63f80f0000010101005f0a2ab90000000049454e44ae426082"
)
READ_TOOL = FunctionToolDefinition(
    name="read",
    description="Read a file",
    parameters={"type": "object", "properties": {"file_path": {"type": "string"}}},
)


def make_chat(server: ScriptedOpenAIServer, **options: Any) -> OpenAIChat:
    options.setdefault("model", "gpt-4o")
    return OpenAIChat(base_url=server.url, api_key=API_KEY, **options)


async def failure_of(turn: Any, **options: Any) -> tuple[LlmError, ScriptedOpenAIServer]:
    with ScriptedOpenAIServer([turn]) as server, pytest.raises(LlmError) as caught:
        await make_chat(server, **options).ainvoke([UserMessage(content="hello")])
    assert API_KEY not in caught.value.message
    return caught.value, server


def test_openai_chat_is_a_chat_model() -> None:
    chat = OpenAIChat("gpt-4o", api_key=API_KEY)
    assert isinstance(chat, ChatModel)
    assert chat.provider == "openai"
    assert chat.context_limit() == 128_000
    assert API_KEY not in repr(chat)


@pytest.mark.asyncio
async def test_streams_text_deltas_and_reports_usage_and_cost() -> None:
    script = [reply(text("Hello there, friend."), usage=usage(100, 20, cache_read=50))]
    with ScriptedOpenAIServer(script) as server:
        chat = make_chat(server)
        deltas: list[str] = []
        completion = await chat.ainvoke(
            [SystemMessage(content="Be brief."), UserMessage(content="hi")],
            on_text_delta=deltas.append,
        )
    assert deltas == ["Hello ", "there, ", "friend."]
    (message,) = completion.messages
    assert isinstance(message, AssistantMessage)
    assert message.content == "Hello there, friend."
    assert completion.stop_reason == "stop"
    assert completion.usage is not None
    assert completion.usage.input_tokens == 150  # prompt_tokens counts the cached ones
    assert completion.usage.input_cached_tokens == 50
    assert completion.usage.output_tokens == 20
    assert completion.usage.total_tokens == 170
    cost = chat.cost_usd(completion.usage)
    assert cost is not None and cost > 0
    sent = server.requests[0].json
    assert sent["stream"] is True
    assert sent["stream_options"] == {"include_usage": True}
    assert sent["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "hi"},
    ]
    # The model table's limit for gpt-4o, named as OpenAI's families want it.
    assert sent["max_completion_tokens"] == 16_384
    assert "max_tokens" not in sent
    assert server.requests[0].headers["authorization"] == "[redacted]"


@pytest.mark.asyncio
async def test_compatible_servers_get_max_tokens_and_unknown_prices_are_none() -> None:
    with ScriptedOpenAIServer([reply("ok"), reply("ok")]) as server:
        chat = make_chat(server, model="qwen3-coder:30b", provider="ollama", max_tokens=2048)
        completion = await chat.ainvoke([UserMessage(content="hi")])
        # Not configured: a local server's own limit applies (it knows its context length).
        await make_chat(server, model="gpt-oss:20b", provider="ollama").ainvoke(
            [UserMessage(content="hi")]
        )
    assert server.requests[0].json["max_tokens"] == 2048
    assert "max_completion_tokens" not in server.requests[0].json
    assert "max_tokens" not in server.requests[1].json
    assert completion.usage is not None
    assert chat.cost_usd(completion.usage) is None


@pytest.mark.asyncio
async def test_streamed_tool_call_fragments_become_whole_calls_and_the_loop_continues() -> None:
    script = [
        reply(
            text("Let me look."),
            tool_use("read", {"file_path": "a.txt"}),
            tool_use("read", {"file_path": "b.txt", "note": "ünïcode " * 5}),
        ),
        reply("Both files are empty."),
    ]
    with ScriptedOpenAIServer(script) as server:
        chat = make_chat(server)
        history: list[Any] = [UserMessage(content="read a and b")]
        first = await chat.ainvoke(history, tools=[READ_TOOL], tool_choice="auto")
        (message,) = first.messages
        assert isinstance(message, AssistantMessage)
        assert message.content == "Let me look."
        assert first.stop_reason == "tool_calls"
        calls = message.tool_calls or []
        assert [c.function.name for c in calls] == ["read", "read"]
        assert json.loads(calls[1].function.arguments) == {
            "file_path": "b.txt",
            "note": "ünïcode " * 5,
        }
        history.append(message)
        for call in calls:
            history.append(
                ToolMessage(tool_call_id=call.id, tool_name="read", content="(empty file)")
            )
        second = await chat.ainvoke(history, tools=[READ_TOOL])
    assert second.messages[0].content == "Both files are empty."
    fragments = [
        d["choices"][0]["delta"]["tool_calls"][0]
        for _, d in server.requests[0].events
        if d.get("choices") and "tool_calls" in d["choices"][0]["delta"]
    ]
    assert len(fragments) > 3  # the arguments really arrived in pieces
    first_sent = server.requests[0].json
    assert first_sent["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "read",
                "description": "Read a file",
                "parameters": READ_TOOL.parameters,
            },
        }
    ]
    assert first_sent["tool_choice"] == "auto"
    replayed = server.requests[1].json["messages"]
    assert [m["role"] for m in replayed] == ["user", "assistant", "tool", "tool"]
    assert replayed[1]["content"] == "Let me look."
    assert [c["id"] for c in replayed[1]["tool_calls"]] == [c.id for c in calls]
    assert replayed[2] == {
        "role": "tool",
        "tool_call_id": calls[0].id,
        "content": "(empty file)",
    }


@pytest.mark.asyncio
async def test_images_in_user_turns_and_tool_results_reach_the_model() -> None:
    image = ImagePart.from_bytes(PNG_1PX, "image/png", detail="low")
    call = ToolCall(id="call_9", function=FunctionCall(name="plot", arguments="{}"))
    history: list[Any] = [
        UserMessage(content=[TextPart(text="What is this?"), image]),
        AssistantMessage(content=None, tool_calls=[call]),
        ToolMessage(
            tool_call_id="call_9",
            tool_name="plot",
            content=[TextPart(text="Figure 1"), image],
        ),
    ]
    with ScriptedOpenAIServer([reply("A red pixel.")]) as server:
        await make_chat(server).ainvoke(history)
    sent = server.requests[0].json["messages"]
    assert sent[0]["content"] == [
        {"type": "text", "text": "What is this?"},
        {"type": "image_url", "image_url": {"url": image.image_url.url, "detail": "low"}},
    ]
    # A tool message carries text only; its images follow as a user turn.
    assert sent[2] == {"role": "tool", "tool_call_id": "call_9", "content": "Figure 1[image]"}
    assert sent[3]["role"] == "user"
    assert sent[3]["content"][0] == {"type": "text", "text": "Images returned by the plot tool:"}
    assert sent[3]["content"][1]["image_url"]["url"].startswith("data:image/png;base64,")


@pytest.mark.asyncio
async def test_unanswered_calls_and_reasoning_are_not_sent() -> None:
    lost = ToolCall(id="call_lost", function=FunctionCall(name="read", arguments="{}"))
    history: list[Any] = [
        UserMessage(content="q"),
        ReasoningMessage(content="thinking..."),
        AssistantMessage(content="Checking.", tool_calls=[lost]),
        UserMessage(content="never mind"),
        ToolMessage(tool_call_id="call_stray", tool_name="read", content="x"),
    ]
    with ScriptedOpenAIServer([reply("ok")]) as server:
        await make_chat(server).ainvoke(history)
    assert server.requests[0].json["messages"] == [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "Checking."},
        {"role": "user", "content": "never mind"},
    ]


@pytest.mark.asyncio
async def test_reasoning_content_streams_as_reasoning() -> None:
    with ScriptedOpenAIServer([reply(thinking("Weigh the options."), text("B."))]) as server:
        reasoning: list[str] = []
        completion = await make_chat(server, provider="vllm").ainvoke(
            [UserMessage(content="A or B?")], on_reasoning_delta=reasoning.append
        )
    assert "".join(reasoning) == "Weigh the options."
    assert isinstance(completion.messages[0], ReasoningMessage)
    assert completion.messages[0].content == "Weigh the options."
    assert completion.messages[1].content == "B."


@pytest.mark.asyncio
async def test_a_refusal_is_an_assistant_refusal() -> None:
    with ScriptedOpenAIServer([refusal("Not allowed.")]) as server:
        completion = await make_chat(server).ainvoke([UserMessage(content="bad")])
    (message,) = completion.messages
    assert isinstance(message, AssistantMessage)
    assert message.refusal == "Not allowed."
    assert (completion.stop_reason, completion.stop_kind) == ("stop", "refusal")


@pytest.mark.asyncio
async def test_429_with_retry_after_is_a_rate_limit_and_the_sdk_does_not_retry() -> None:
    error, server = await failure_of(fault.rate_limit(retry_after=7))
    assert (error.kind, error.status, error.retry_after_s) == ("rate_limit", 429, 7.0)
    assert error.retry_source == "retry-after"
    assert error.retryable
    assert "rate_limit_exceeded" in error.message
    assert "exceeded your rate limit" in error.message
    assert len(server.requests) == 1


@pytest.mark.asyncio
async def test_429_uses_the_exhausted_x_ratelimit_reset_duration() -> None:
    headers = {
        "x-ratelimit-remaining-tokens": "0",
        "x-ratelimit-reset-tokens": "1m30s",
        "x-ratelimit-remaining-requests": "10",
        "x-ratelimit-reset-requests": "120ms",
    }
    error, _ = await failure_of(fault.rate_limit(headers=headers))
    assert error.retry_after_s == 90.0
    assert error.retry_source == "reset-header"


@pytest.mark.asyncio
async def test_500_is_a_retryable_provider_error() -> None:
    error, _ = await failure_of(fault.server_error(500, "The server had an error."))
    assert (error.kind, error.status) == ("provider", 500)
    assert error.retryable
    assert "The server had an error." in error.message


@pytest.mark.asyncio
async def test_503_overloaded() -> None:
    error, _ = await failure_of(fault.overloaded(retry_after=2))
    assert (error.kind, error.status, error.retry_after_s) == ("overloaded", 503, 2.0)


@pytest.mark.asyncio
async def test_401_is_auth_and_400_is_a_bad_request() -> None:
    error, _ = await failure_of(fault.status(401, "authentication_error", "Incorrect API key"))
    assert (error.kind, error.retryable) == ("auth", False)
    assert "Incorrect API key" in error.message
    error, _ = await failure_of(fault.status(400, message="messages: too long"))
    assert (error.kind, error.retryable) == ("bad_request", False)
    assert "messages: too long" in error.message


@pytest.mark.asyncio
async def test_a_dropped_stream_is_a_retryable_network_error() -> None:
    error, server = await failure_of(fault.drop(after_events=3))
    assert error.kind == "network"
    assert error.retryable
    assert "OpenAI API" in error.message
    assert len(server.requests[0].events) == 3


@pytest.mark.asyncio
async def test_a_stream_that_ends_without_finish_reason_is_a_network_error() -> None:
    error, _ = await failure_of(fault.truncate(after_events=2))
    assert error.kind == "network"
    assert "ended before a finish_reason" in error.message


@pytest.mark.asyncio
async def test_malformed_sse_data_is_a_network_error() -> None:
    error, _ = await failure_of(fault.malformed_sse(after_events=2))
    assert error.kind == "network"
    assert "malformed" in error.message


@pytest.mark.asyncio
async def test_an_error_object_mid_stream_is_classified_by_its_code() -> None:
    error, _ = await failure_of(fault.error_event("overloaded_error", after_events=2))
    assert error.kind == "overloaded"
    assert "error in the response stream" in error.message


@pytest.mark.asyncio
async def test_a_connection_refused_is_a_network_error() -> None:
    with ScriptedOpenAIServer() as server:
        url = server.url
    chat = OpenAIChat("gpt-4o", base_url=url, api_key=API_KEY)
    with pytest.raises(LlmError) as caught:
        await chat.ainvoke([UserMessage(content="hi")])
    assert caught.value.kind == "network"
    assert "connection to OpenAI API failed" in caught.value.message


@pytest.mark.asyncio
async def test_no_api_key_is_an_auth_error_that_names_the_variable() -> None:
    chat = OpenAIChat("gpt-4o", base_url="http://127.0.0.1:9/v1")
    with pytest.raises(LlmError) as caught:
        await chat.ainvoke([UserMessage(content="hi")])
    assert caught.value.kind == "auth"
    assert "OPENAI_API_KEY" in caught.value.message


@pytest.mark.asyncio
async def test_cancel_signal_aborts_the_stream() -> None:
    slow = reply(text(" ".join(f"word{i}" for i in range(200))), delay_s=0.05)
    with ScriptedOpenAIServer([slow]) as server:
        signal = CancelSignal()
        deltas: list[str] = []

        def on_delta(delta: str) -> None:
            deltas.append(delta)
            if len(deltas) == 2:
                threading.Thread(target=signal.cancel, args=("user pressed stop",)).start()

        with pytest.raises(RunCancelled, match="user pressed stop"):
            await make_chat(server).ainvoke(
                [UserMessage(content="q")], on_text_delta=on_delta, signal=signal
            )
        assert server.requests[0].wait_aborted(timeout=30)
    assert len(deltas) < 200


def test_one_chat_serves_two_event_loops() -> None:
    with ScriptedOpenAIServer([reply("one"), reply("two")]) as server:
        chat = make_chat(server)
        first = asyncio.run(chat.ainvoke([UserMessage(content="a")]))
        second = asyncio.run(chat.ainvoke([UserMessage(content="b")]))
    assert (first.messages[0].content, second.messages[0].content) == ("one", "two")


def test_capabilities_come_from_the_table_or_the_caller() -> None:
    assert known_capabilities("gpt-4o-mini").vision is True
    assert known_capabilities("o1-mini").tools is False
    assert known_capabilities("qwen3-coder").tools is None
    blind = OpenAIChat("llama3", provider="ollama", api_key="x", vision=False)
    message = blind.unsupported(needs_tools=True, needs_vision=True)
    assert message is not None
    assert "'llama3' (ollama) cannot read images" in message
    assert blind.unsupported(needs_tools=True, needs_vision=False) is None
    toolless = OpenAIChat("o1-mini", api_key="x")
    assert "cannot call tools" in (toolless.unsupported(needs_tools=True, needs_vision=False) or "")


@pytest.mark.parametrize(
    "bad",
    [{"model": ""}, {"max_tokens": 0}, {"timeout_s": 0}, {"client": object(), "api_key": "k"}],
)
def test_bad_options_are_refused(bad: dict[str, Any]) -> None:
    options: dict[str, Any] = {"model": "gpt-4o", **bad}
    with pytest.raises(ValueError):
        OpenAIChat(**options)


@pytest.mark.asyncio
async def test_a_model_without_vision_gets_image_placeholders_not_a_failure() -> None:
    image = ImagePart.from_bytes(PNG_1PX, "image/png")
    call = ToolCall(id="call_1", function=FunctionCall(name="plot", arguments="{}"))
    history: list[Any] = [
        UserMessage(content=[TextPart(text="Look: "), image]),
        AssistantMessage(content=None, tool_calls=[call]),
        ToolMessage(tool_call_id="call_1", tool_name="plot", content=[image]),
    ]
    with ScriptedOpenAIServer([reply("I cannot see it.")]) as server:
        await make_chat(server, model="llama3", provider="ollama", vision=False).ainvoke(history)
    sent = server.requests[0].json["messages"]
    assert sent[0] == {"role": "user", "content": "Look: [image]"}
    assert sent[2]["content"] == "[image]"
    assert len(sent) == 3  # no image turn after the tool result


def test_an_ollama_server_says_what_its_model_can_do() -> None:
    with ScriptedOpenAIServer() as server:
        server.model_capabilities = {"llama3": ["completion"], "qwen3-vl": ["tools", "vision"]}
        plain = make_chat(server, model="llama3", provider="ollama")
        assert plain.discover_capabilities().tools is False
        message = plain.unsupported(needs_tools=True, needs_vision=False)
        assert message is not None and "'llama3' (ollama) cannot call tools" in message
        seeing = make_chat(server, model="qwen3-vl", provider="ollama")
        assert seeing.discover_capabilities() == seeing.capabilities
        assert (seeing.capabilities.tools, seeing.capabilities.vision) == (True, True)
        # What the caller declared wins; a model the server does not know stays unknown.
        declared = make_chat(server, model="llama3", provider="ollama", tools=True)
        assert declared.discover_capabilities().tools is True
        unknown = make_chat(server, model="mystery", provider="ollama")
        assert unknown.discover_capabilities().tools is None
        url = server.url
    gone = OpenAIChat("llama3", provider="ollama", base_url=url, api_key="x")
    assert gone.discover_capabilities().tools is None  # server down: no guess


def test_a_context_block_starts_its_own_paragraph_in_plain_text_content() -> None:
    """Chat Completions content that is all text goes as one string: the notebook outline must
    not run on from the prompt's last word ("explain the dip.<notebook_outline>")."""
    from jupyter_codelia.llm.messages import TextPart, context_block
    from jupyter_codelia.llm.openai._chat_completions import _content

    parts = [TextPart(text="explain the dip."), context_block("notebook_outline", "2 cells")]
    assert _content(parts, images=True) == (
        "explain the dip.\n\n<notebook_outline>\n2 cells\n</notebook_outline>"
    )
    assert _content([TextPart(text="a"), TextPart(text="b")], images=False) == "ab"
