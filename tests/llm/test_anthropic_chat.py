"""AnthropicChat with the real anthropic SDK against a ScriptedAnthropicServer on 127.0.0.1."""

from __future__ import annotations

import asyncio
import base64
import subprocess
import sys
import threading
from decimal import Decimal
from typing import Any

import pytest

from jupyter_codelia._text import compact_json
from jupyter_codelia.llm import (
    AssistantMessage,
    ChatInvokeUsage,
    ChatModel,
    FunctionToolDefinition,
    ImagePart,
    LlmError,
    ReasoningMessage,
    SystemMessage,
    TextPart,
    ToolMessage,
    UserMessage,
)
from jupyter_codelia.llm.anthropic import DEFAULT_MODEL, AnthropicChat
from jupyter_codelia.testing import (
    ScriptedAnthropicServer,
    fault,
    refusal,
    reply,
    text,
    thinking,
    tool_use,
    usage,
)
from jupyter_codelia.tools import CancelSignal, RunCancelled

API_KEY = "sk-ant-test-SECRET-0123456789"
PNG_1PX = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
    "+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)

READ_TOOL = FunctionToolDefinition(
    name="read",
    description="Read a file",
    parameters={
        "type": "object",
        "properties": {"file_path": {"type": "string"}},
        "required": ["file_path"],
    },
)
GREP_TOOL = FunctionToolDefinition(
    name="grep", description="Search", parameters={"type": "object", "properties": {}}
)


def make_chat(server: ScriptedAnthropicServer, **options: Any) -> AnthropicChat:
    return AnthropicChat(base_url=server.url, api_key=API_KEY, **options)


@pytest.mark.asyncio
async def test_text_streams_deltas_then_one_assistant_message() -> None:
    words = "Hello there, this answer arrives word by word."
    with ScriptedAnthropicServer([reply(text(words))]) as server:
        chat = make_chat(server)
        deltas: list[str] = []
        completion = await chat.ainvoke([UserMessage(content="hi")], on_text_delta=deltas.append)
    assert len(deltas) == len(words.split())
    assert "".join(deltas) == words
    assert completion.messages == [AssistantMessage(content=words)]
    assert completion.stop_reason == "end_turn"
    assert isinstance(chat, ChatModel)
    assert chat.provider == "anthropic"
    assert chat.model == DEFAULT_MODEL == "claude-sonnet-5-5"


@pytest.mark.asyncio
async def test_tool_use_input_is_assembled_from_json_deltas() -> None:
    arguments = {"file_path": "données/ä.txt", "ranges": [[1, 20], [40, 60]], "flag": True}
    with ScriptedAnthropicServer(
        [reply(text("Let me look."), tool_use("read", arguments, id="toolu_abc"))]
    ) as server:
        chat = make_chat(server)
        completion = await chat.ainvoke(
            [UserMessage(content="read it")], tools=[READ_TOOL], tool_choice="auto"
        )
    sent_events = server.requests[0].events
    json_deltas = [
        d for _, d in sent_events if d.get("delta", {}).get("type") == "input_json_delta"
    ]
    assert len(json_deltas) > 1  # the input really arrived in pieces
    text_message, call_message = completion.messages
    assert text_message == AssistantMessage(content="Let me look.")
    assert isinstance(call_message, AssistantMessage)
    assert call_message.content is None
    assert call_message.tool_calls is not None
    (call,) = call_message.tool_calls
    assert call.id == "toolu_abc"
    assert call.function.name == "read"
    assert call.function.arguments == compact_json(arguments)
    assert call.provider_meta == {
        "type": "tool_use",
        "id": "toolu_abc",
        "name": "read",
        "input": arguments,
    }
    assert completion.stop_reason == "tool_use"
    sent = server.requests[0].json
    assert sent["tool_choice"] == {"type": "auto"}
    assert sent["stream"] is True


@pytest.mark.asyncio
async def test_thinking_is_streamed_and_replayed_with_its_signature() -> None:
    with ScriptedAnthropicServer(
        [
            reply(
                thinking("The file name is in the prompt.", signature="sig-XYZ"),
                text("Reading."),
                tool_use("read", {"file_path": "a.txt"}),
            ),
            reply(text("It says hello.")),
        ]
    ) as server:
        chat = make_chat(server, model="claude-haiku-4-5", max_tokens=8000, thinking=2048)
        reasoning: list[str] = []
        history: list[Any] = [UserMessage(content="What is in a.txt?")]
        first = await chat.ainvoke(history, tools=[READ_TOOL], on_reasoning_delta=reasoning.append)
        history += first.messages
        call = first.messages[2].tool_calls[0]  # type: ignore[union-attr, index]
        history.append(ToolMessage(tool_call_id=call.id, tool_name="read", content="hello"))
        second = await chat.ainvoke(history, tools=[READ_TOOL])
    assert "".join(reasoning) == "The file name is in the prompt."
    assert first.messages[0] == ReasoningMessage(
        content="The file name is in the prompt.",
        raw_item={
            "type": "thinking",
            "thinking": "The file name is in the prompt.",
            "signature": "sig-XYZ",
        },
    )
    assert second.messages == [AssistantMessage(content="It says hello.")]
    first_request, second_request = (r.json for r in server.requests)
    assert first_request["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assistant = second_request["messages"][1]
    assert assistant["role"] == "assistant"
    assert assistant["content"] == [
        {
            "type": "thinking",
            "thinking": "The file name is in the prompt.",
            "signature": "sig-XYZ",
        },
        {"type": "text", "text": "Reading."},
        {"type": "tool_use", "id": call.id, "name": "read", "input": {"file_path": "a.txt"}},
    ]
    tool_results = second_request["messages"][2]["content"]
    assert tool_results[0]["type"] == "tool_result"
    assert tool_results[0]["tool_use_id"] == call.id


@pytest.mark.asyncio
async def test_thinking_the_model_returned_unasked_is_replayed() -> None:
    # Adaptive models may think without being asked; the API wants those blocks back.
    history: list[Any] = [
        UserMessage(content="q"),
        ReasoningMessage(
            content="x", raw_item={"type": "thinking", "thinking": "x", "signature": "s"}
        ),
        AssistantMessage(content="a"),
        UserMessage(content="q2"),
    ]
    with ScriptedAnthropicServer([reply("ok")]) as server:
        await make_chat(server).ainvoke(history)
    sent = server.requests[0].json
    assert "thinking" not in sent
    assert sent["messages"][1] == {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "x", "signature": "s"},
            {"type": "text", "text": "a"},
        ],
    }


@pytest.mark.asyncio
async def test_images_are_sent_as_base64_blocks_in_user_turns_and_tool_results() -> None:
    image = ImagePart.from_bytes(base64.b64decode(PNG_1PX), "image/png")
    history: list[Any] = [
        UserMessage(content=[TextPart(text="What is this?"), image]),
        AssistantMessage(
            content=None,
            tool_calls=[
                {"id": "toolu_1", "function": {"name": "view_image", "arguments": "{}"}}  # type: ignore[list-item]
            ],
        ),
        ToolMessage(
            tool_call_id="toolu_1",
            tool_name="view_image",
            content=[TextPart(text="plot.png (1x1)"), image],
        ),
    ]
    with ScriptedAnthropicServer([reply("A single pixel.")]) as server:
        await make_chat(server, prompt_cache=False).ainvoke(history)
    messages = server.requests[0].json["messages"]
    image_block = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": PNG_1PX},
    }
    assert messages[0] == {
        "role": "user",
        "content": [{"type": "text", "text": "What is this?"}, image_block],
    }
    assert messages[2] == {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_1",
                "content": [{"type": "text", "text": "plot.png (1x1)"}, image_block],
            }
        ],
    }


@pytest.mark.asyncio
async def test_prompt_cache_breakpoints_on_system_last_tool_and_latest_user_block() -> None:
    history: list[Any] = [
        SystemMessage(content="You are helpful."),
        SystemMessage(content="Be brief."),
        UserMessage(content="first"),
        AssistantMessage(content="answer"),
        UserMessage(content=[TextPart(text="second"), TextPart(text="more")]),
    ]
    ephemeral = {"type": "ephemeral"}
    with ScriptedAnthropicServer([reply("ok"), reply("ok")]) as server:
        await make_chat(server).ainvoke(history, tools=[READ_TOOL, GREP_TOOL])
        await make_chat(server, prompt_cache=False).ainvoke(history, tools=[READ_TOOL, GREP_TOOL])
    cached, plain = (r.json for r in server.requests)
    assert cached["system"] == [
        {"type": "text", "text": "You are helpful.\n\nBe brief.", "cache_control": ephemeral}
    ]
    assert "cache_control" not in cached["tools"][0]
    assert cached["tools"][1]["cache_control"] == ephemeral
    # A turn that is one plain text block without a breakpoint goes out as a string.
    assert cached["messages"][0]["content"] == "first"
    assert cached["messages"][2]["content"] == [
        {"type": "text", "text": "second"},
        {"type": "text", "text": "more", "cache_control": ephemeral},
    ]
    assert plain["system"] == "You are helpful.\n\nBe brief."
    assert "cache_control" not in str(plain)


@pytest.mark.asyncio
async def test_usage_counts_cache_reads_and_writes_and_is_priced() -> None:
    from genai_prices import Usage, calc_price

    scripted = usage(100, 20, cache_read=5000, cache_creation=300)
    with ScriptedAnthropicServer([reply("ok", usage=scripted)]) as server:
        chat = make_chat(server)
        completion = await chat.ainvoke([UserMessage(content="hi")])
    assert completion.usage == ChatInvokeUsage(
        model="claude-sonnet-5-5",
        input_tokens=5400,
        input_cached_tokens=5000,
        input_cache_creation_tokens=300,
        output_tokens=20,
        total_tokens=5420,
    )
    prices = calc_price(
        Usage(input_tokens=1, output_tokens=1),
        model_ref="claude-sonnet-5-5",
        provider_id="anthropic",
    ).model_price
    mtok = Decimal(1_000_000)
    expected = (
        100 * prices.input_mtok
        + 5000 * prices.cache_read_mtok
        + 300 * prices.cache_write_mtok
        + 20 * prices.output_mtok
    ) / mtok
    cost = chat.cost_usd(completion.usage)  # type: ignore[arg-type]
    assert cost == pytest.approx(float(expected))
    assert chat.cost_usd(ChatInvokeUsage(model="claude-unknown-9", input_tokens=10)) is None


def test_context_limits_come_from_model_metadata() -> None:
    chat = AnthropicChat(api_key=API_KEY)
    assert chat.context_limit() == 1_000_000
    assert chat.context_limit("claude-haiku-4-5-20251001") == 200_000
    assert chat.context_limit("claude-unknown-9") is None


@pytest.mark.asyncio
async def test_refusal_becomes_one_assistant_message_with_the_explanation() -> None:
    with ScriptedAnthropicServer([refusal("Not this one."), refusal()]) as server:
        chat = make_chat(server)
        explained = await chat.ainvoke([UserMessage(content="q")])
        default = await chat.ainvoke([UserMessage(content="q")])
    assert explained.messages == [AssistantMessage(content=None, refusal="Not this one.")]
    assert explained.stop_reason == "refusal"
    assert default.messages == [
        AssistantMessage(
            content=None,
            refusal="This request was declined by Anthropic's safety classifier.",
        )
    ]


@pytest.mark.asyncio
async def test_a_given_client_gets_retries_turned_off() -> None:
    import anthropic

    with ScriptedAnthropicServer([fault.server_error(500)]) as server:
        client = anthropic.AsyncAnthropic(api_key=API_KEY, base_url=server.url, max_retries=5)
        chat = AnthropicChat(client=client)
        with pytest.raises(LlmError, match="Internal server error"):
            await chat.ainvoke([UserMessage(content="q")])
    assert chat.client.max_retries == 0
    assert len(server.requests) == 1  # the SDK did not retry; the agent owns retries


@pytest.mark.asyncio
async def test_cancel_signal_aborts_the_stream_and_raises_run_cancelled() -> None:
    slow = reply(text(" ".join(f"word{i}" for i in range(200))), delay_s=0.05)
    with ScriptedAnthropicServer([slow]) as server:
        chat = make_chat(server)
        signal = CancelSignal()
        deltas: list[str] = []

        def on_delta(delta: str) -> None:
            deltas.append(delta)
            if len(deltas) == 2:
                # From another thread, as a kernel interrupt or a widget callback would.
                threading.Thread(target=signal.cancel, args=("user pressed stop",)).start()

        with pytest.raises(RunCancelled, match="user pressed stop"):
            await chat.ainvoke([UserMessage(content="q")], on_text_delta=on_delta, signal=signal)
        assert server.requests[0].wait_aborted(timeout=30)
    assert len(deltas) < 200


@pytest.mark.asyncio
async def test_an_already_cancelled_signal_sends_nothing() -> None:
    signal = CancelSignal()
    signal.cancel("early")
    with (
        ScriptedAnthropicServer([reply("never")]) as server,
        pytest.raises(RunCancelled, match="early"),
    ):
        await make_chat(server).ainvoke([UserMessage(content="q")], signal=signal)
    assert server.requests == []


@pytest.mark.asyncio
async def test_task_cancellation_closes_the_http_stream() -> None:
    slow = reply(text(" ".join(f"word{i}" for i in range(200))), delay_s=0.05)
    with ScriptedAnthropicServer([slow]) as server:
        chat = make_chat(server)
        started = asyncio.Event()
        task = asyncio.create_task(
            chat.ainvoke([UserMessage(content="q")], on_text_delta=lambda _d: started.set())
        )
        await asyncio.wait_for(started.wait(), timeout=30)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert server.requests[0].wait_aborted(timeout=30)


def test_importing_the_llm_package_does_not_import_the_sdk() -> None:
    code = (
        "import sys, jupyter_codelia.llm, jupyter_codelia.llm.anthropic, jupyter_codelia.testing;"
        "print('anthropic' in sys.modules, 'genai_prices' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.split() == ["False", "False"]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"model": ""}, "model must be a non-empty model id"),
        ({"max_tokens": 0}, "max_tokens must be at least 1, got 0"),
        ({"thinking": 100}, "a thinking budget must be at least 1024 tokens"),
        (
            {"model": "claude-haiku-4-5", "thinking": 4096, "max_tokens": 4096},
            r"the thinking budget \(4096\) must be less than max_tokens \(4096\)",
        ),
        (
            {"model": "claude-haiku-4-5", "thinking": "adaptive", "max_tokens": 4096},
            r"the thinking budget \(8192\) must be less than max_tokens \(4096\)",
        ),
        ({"thinking": "on"}, "thinking must be 'off', 'adaptive' or a budget in tokens, got 'on'"),
        ({"thinking": True}, "thinking must be 'off', 'adaptive' or a budget in tokens, got True"),
        (
            {"model": "claude-haiku-4-5", "effort": "high"},
            "claude-haiku-4-5 does not take effort='high'; accepted efforts: none",
        ),
        ({"timeout_s": 0}, "timeout_s must be positive"),
        ({"client": object(), "api_key": "k"}, "pass either client=... or api_key/base_url"),
    ],
)
def test_bad_options_are_rejected_with_a_clear_message(
    options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        AnthropicChat(**options)


def test_one_chat_works_across_successive_event_loops() -> None:
    # Scripts call asyncio.run(...) once per question: pooled connections of the first loop
    # must not be reused on the second.
    with ScriptedAnthropicServer(lambda _request: reply("again")) as server:
        chat = make_chat(server)
        answers = [asyncio.run(chat.ainvoke([UserMessage(content="q")])).messages for _ in range(3)]
    assert answers == [[AssistantMessage(content="again")]] * 3
    assert len(server.requests) == 3
