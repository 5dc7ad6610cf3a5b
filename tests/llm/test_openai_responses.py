"""OpenAIChat over the Responses API (OpenAI itself) against a ScriptedOpenAIServer."""

from __future__ import annotations

from typing import Any

import pytest

from jupyter_codelia.llm import (
    AssistantMessage,
    FunctionToolDefinition,
    ImagePart,
    LlmError,
    ReasoningMessage,
    SystemMessage,
    TextPart,
    ToolMessage,
    UserMessage,
)
from jupyter_codelia.llm.openai import OpenAIChat
from jupyter_codelia.testing import (
    ScriptedOpenAIServer,
    fault,
    reply,
    text,
    thinking,
    tool_use,
    usage,
)

API_KEY = "sk-openai-test-SECRET-9876543210"
PNG_1PX = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c63f80f0000010101005f0a2ab90000000049454e44ae426082"
)
READ_TOOL = FunctionToolDefinition(
    name="read",
    description="Read a file",
    parameters={"type": "object", "properties": {"file_path": {"type": "string"}}},
)


def make_chat(server: ScriptedOpenAIServer) -> OpenAIChat:
    return OpenAIChat("gpt-5.1", base_url=server.url, api_key=API_KEY, api="responses")


def test_the_responses_api_is_the_default_for_openai_itself_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert OpenAIChat("gpt-5.1", api_key=API_KEY).api == "responses"
    assert OpenAIChat("gpt-5.1", api_key=API_KEY, base_url="https://api.openai.com/v1").api == (
        "responses"
    )
    assert OpenAIChat("gpt-5.1", api_key=API_KEY, base_url="http://127.0.0.1:1/v1").api == "chat"
    assert OpenAIChat("qwen3", api_key="x", provider="vllm").api == "chat"
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8000/v1")
    assert OpenAIChat("gpt-5.1", api_key=API_KEY).api == "chat"
    with pytest.raises(ValueError, match="api must be 'chat' or 'responses'"):
        OpenAIChat("gpt-5.1", api_key=API_KEY, api="completions")  # type: ignore[arg-type]


@pytest.mark.asyncio
async def test_reasoning_items_stream_and_are_replayed_before_their_calls() -> None:
    script = [
        reply(
            thinking("The file is small; read it."),
            text("Reading."),
            tool_use("read", {"file_path": "a.txt"}),
            usage=usage(40, 12, cache_read=10),
        ),
        reply(text("It says hi.")),
    ]
    with ScriptedOpenAIServer(script) as server:
        chat = make_chat(server)
        texts: list[str] = []
        reasoning: list[str] = []
        history: list[Any] = [SystemMessage(content="Be terse."), UserMessage(content="read a")]
        first = await chat.ainvoke(
            history,
            tools=[READ_TOOL],
            tool_choice="auto",
            on_text_delta=texts.append,
            on_reasoning_delta=reasoning.append,
        )
        assert "".join(texts) == "Reading."
        assert "".join(reasoning) == "The file is small; read it."
        thought, said = first.messages
        assert isinstance(thought, ReasoningMessage)
        assert thought.content == "The file is small; read it."
        assert thought.raw_item["encrypted_content"] == "enc:sig-scripted"
        assert isinstance(said, AssistantMessage)
        assert said.content == "Reading."
        (call,) = said.tool_calls or []
        assert call.function.arguments == '{"file_path":"a.txt"}'
        assert first.stop_reason == "tool_calls"
        assert first.usage is not None
        assert (first.usage.input_tokens, first.usage.input_cached_tokens) == (50, 10)
        history += [
            *first.messages,
            ToolMessage(tool_call_id=call.id, tool_name="read", content="hi"),
        ]
        second = await chat.ainvoke(history, tools=[READ_TOOL])
    assert second.messages[-1].content == "It says hi."
    sent = server.requests[0].json
    assert sent["instructions"] == "Be terse."
    assert sent["store"] is False
    assert sent["include"] == ["reasoning.encrypted_content"]
    assert sent["tools"][0] == {
        "type": "function",
        "name": "read",
        "description": "Read a file",
        "parameters": READ_TOOL.parameters,
        "strict": False,
    }
    replay = server.requests[1].json["input"]
    assert [i.get("type") or i["role"] for i in replay] == [
        "user",
        "reasoning",
        "assistant",
        "function_call",
        "function_call_output",
    ]
    assert replay[1]["encrypted_content"] == "enc:sig-scripted"
    assert replay[4] == {"type": "function_call_output", "call_id": call.id, "output": "hi"}


@pytest.mark.asyncio
async def test_images_go_as_input_images() -> None:
    image = ImagePart.from_bytes(PNG_1PX, "image/png")
    history: list[Any] = [UserMessage(content=[TextPart(text="What is it?"), image])]
    with ScriptedOpenAIServer([reply("A dot.")]) as server:
        await make_chat(server).ainvoke(history)
    (turn,) = server.requests[0].json["input"]
    assert turn["content"][0] == {"type": "input_text", "text": "What is it?"}
    assert turn["content"][1]["type"] == "input_image"
    assert turn["content"][1]["image_url"].startswith("data:image/png;base64,")


@pytest.mark.asyncio
async def test_a_stream_without_response_completed_is_a_network_error() -> None:
    with (
        ScriptedOpenAIServer([fault.truncate(after_events=3)]) as server,
        pytest.raises(LlmError) as caught,
    ):
        await make_chat(server).ainvoke([UserMessage(content="hi")])
    assert caught.value.kind == "network"
    assert "ended before response.completed" in caught.value.message


@pytest.mark.asyncio
async def test_an_error_event_and_http_errors_are_classified() -> None:
    turns = [fault.error_event("overloaded_error", after_events=2), fault.rate_limit(retry_after=4)]
    with ScriptedOpenAIServer(turns) as server:
        chat = make_chat(server)
        with pytest.raises(LlmError) as caught:
            await chat.ainvoke([UserMessage(content="hi")])
        assert caught.value.kind == "overloaded"
        assert "Overloaded (scripted, mid-stream)" in caught.value.message
        with pytest.raises(LlmError) as caught:
            await chat.ainvoke([UserMessage(content="hi")])
        assert (caught.value.kind, caught.value.retry_after_s) == ("rate_limit", 4.0)
    assert API_KEY not in caught.value.message
    assert len(server.requests) == 2
