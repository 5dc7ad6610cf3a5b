"""AnthropicChat against recorded Messages API responses replayed verbatim (tests/llm/recordings).

The recordings follow the shapes of real API traffic: SSE events with padding-free JSON, server
tool blocks with encrypted content, citations deltas, ``max_tokens`` inside a tool call,
``pause_turn``, an ``error`` event mid-stream, and a block type no SDK knows yet.
"""

from __future__ import annotations

import json
import typing
import warnings
from pathlib import Path
from typing import Any

import pytest

from jupyter_codelia.llm import (
    AssistantMessage,
    ChatInvokeUsage,
    DocumentPart,
    FunctionToolDefinition,
    ImagePart,
    LlmError,
    TextPart,
    ToolMessage,
    UserMessage,
)
from jupyter_codelia.llm.anthropic import AnthropicChat, models
from jupyter_codelia.llm.messages import DocumentSource, ImageUrl, OtherPart, answer_text
from jupyter_codelia.testing import (
    Recorded,
    ScriptedAnthropicServer,
    ScriptError,
    load_recording,
    parse_recording,
    recorded,
    reply,
)

RECORDINGS = Path(__file__).parent / "recordings"
API_KEY = "sk-ant-test-SECRET-0123456789"
WRITE_TOOL = FunctionToolDefinition(
    name="write",
    description="Write a file",
    parameters={"type": "object", "properties": {"file_path": {}, "content": {}}},
)


def chat_for(server: ScriptedAnthropicServer, **options: Any) -> AnthropicChat:
    return AnthropicChat(base_url=server.url, api_key=API_KEY, **options)


# --- the recording format ---------------------------------------------------------------------


def test_a_recording_file_keeps_status_headers_and_body_verbatim() -> None:
    recording = load_recording(RECORDINGS / "web_search_paused.http")
    assert recording.status == 200
    assert recording.headers["content-type"] == "text/event-stream; charset=utf-8"
    assert recording.headers["request-id"] == "req_011CWb2pauseK1sT7hXq3mWn"
    assert recording.body.startswith("event: message_start\ndata: {")
    crlf = parse_recording("HTTP/1.1 529 \r\nContent-Length: 9\r\nX-A: b\r\n\r\n{\r\n}")
    assert (crlf.status, crlf.headers, crlf.body) == (529, {"x-a": "b"}, "{\r\n}")


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("HTTP/1.1 200 OK\ncontent-type: x", "no blank line between the headers and the body"),
        ("200 OK\n\n{}", "the first line must be a status line like 'HTTP/1.1 200 OK'"),
        ("HTTP/1.1 200\nno colon here\n\n{}", "line 2 is not a 'name: value' header"),
        ("HTTP/1.1 999 Weird\n\n{}", "less than or equal to 599"),
    ],
)
def test_bad_recordings_are_refused_with_the_line_to_fix(raw: str, message: str) -> None:
    with pytest.raises(ScriptError, match=message):
        parse_recording(raw, "r.http")


def test_a_json_script_names_recordings_relative_to_itself(tmp_path: Path) -> None:
    (tmp_path / "r.http").write_text("HTTP/1.1 200 OK\ncontent-type: application/json\n\n{}")
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps([{"recorded": "r.http"}, {"recorded": {"status": 500, "body": "x"}}])
    )
    server = ScriptedAnthropicServer(script)
    assert server.remaining == 2
    with pytest.raises(ScriptError, match=r"cannot read recording .*missing\.http"):
        ScriptedAnthropicServer([{"recorded": "missing.http"}])
    with pytest.raises(ScriptError, match='a "recorded" turn has no other keys'):
        ScriptedAnthropicServer([{"recorded": "r.http", "delay_s": 1}])
    with pytest.raises(ScriptError, match=r"turn 1: recorded\.body: Field required"):
        ScriptedAnthropicServer([{"recorded": {"status": 200}}])
    with pytest.raises(
        ScriptError, match=r'turn 1: "recorded" is a file path or \{"status", "headers", "body"\}'
    ):
        ScriptedAnthropicServer([{"recorded": 200}])


@pytest.mark.asyncio
async def test_the_server_sends_the_recorded_body_byte_for_byte() -> None:
    import httpx2

    recording = load_recording(RECORDINGS / "web_search_answer_with_citations.http")
    with ScriptedAnthropicServer([recording]) as server:
        async with httpx2.AsyncClient() as client:
            response = await client.post(
                f"{server.url}/v1/messages",
                headers={"x-api-key": "k"},
                json={"model": "m", "max_tokens": 1, "messages": []},
            )
    assert response.status_code == 200
    assert response.headers["request-id"] == "req_011CWb3answerL0pQr8sTuVw"
    assert response.content == recording.body.encode("utf-8")


# --- item 1: a tool call cut off by max_tokens ---------------------------------------------------


@pytest.mark.asyncio
async def test_a_tool_call_cut_off_by_max_tokens_is_marked_and_never_completed() -> None:
    with ScriptedAnthropicServer([recorded(RECORDINGS / "write_cut_off_by_max_tokens.http")]) as s:
        completion = await chat_for(s).ainvoke(
            [UserMessage(content="write it")], tools=[WRITE_TOOL]
        )
    assert completion.stop_reason == "max_tokens"
    text, call_message = completion.messages
    assert text == AssistantMessage(content="I'll write the whole report to report.txt.")
    call = call_message.tool_calls[0]  # type: ignore[union-attr,index]
    assert call.cut_off is True
    assert call.id == "toolu_01Ge7kS3bXq9WmZr4TfJvNh2"
    # The unfinished JSON is kept as sent, not "repaired" into a complete-looking input.
    assert call.function.arguments.startswith('{"file_path": "report.txt", "content": "row 0')
    with pytest.raises(ValueError):
        json.loads(call.function.arguments)
    # Replayed, the call carries no half-written input.
    history = [UserMessage(content="write it"), *completion.messages]
    history.append(ToolMessage(tool_call_id=call.id, tool_name="write", content="cut off"))
    request = chat_for_offline().build_request(history, tools=[WRITE_TOOL])
    assert request["messages"][1]["content"][1] == {
        "type": "tool_use",
        "id": "toolu_01Ge7kS3bXq9WmZr4TfJvNh2",
        "name": "write",
        "input": {},
    }


def chat_for_offline(**options: Any) -> AnthropicChat:
    return AnthropicChat(api_key=API_KEY, **options)


# --- item 3: server-tool and unknown blocks round-trip as themselves -----------------------------


@pytest.mark.asyncio
async def test_server_tool_and_unknown_blocks_replay_byte_equal_without_warnings(
    streamed_blocks: Any,
) -> None:
    name = "code_execution_and_future_block.http"
    with ScriptedAnthropicServer([recorded(RECORDINGS / name), reply("ok")]) as server:
        chat = chat_for(server, model="claude-opus-5")
        history: list[Any] = [UserMessage(content="sum 0..9")]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            first = await chat.ainvoke(history)
            history += [*first.messages, UserMessage(content="thanks")]
            await chat.ainvoke(history)
    # (ResourceWarnings are other tests' sockets being collected meanwhile.)
    assert [str(w.message) for w in caught if w.category is not ResourceWarning] == []
    expected = streamed_blocks(name)
    sent = server.requests[1].json["messages"][1]
    assert sent["role"] == "assistant"
    assert json.dumps(sent["content"]) == json.dumps(expected)
    future = first.messages[2]
    assert future == AssistantMessage(
        content=[OtherPart(provider="anthropic", kind="ledger_entry_20270315", payload=expected[2])]
    )
    assert [answer_text(m.content) for m in first.messages] == ["", "", "", "The sum is 45."]


# --- item 4: citations ---------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_citations_are_kept_and_replayed_unchanged(streamed_blocks: Any) -> None:
    name = "web_search_answer_with_citations.http"
    with ScriptedAnthropicServer([recorded(RECORDINGS / name), reply("ok")]) as server:
        chat = chat_for(server)
        history: list[Any] = [UserMessage(content="latest pandas?")]
        first = await chat.ainvoke(history)
        history += [*first.messages, UserMessage(content="and numpy?")]
        await chat.ainvoke(history)
    blocks = streamed_blocks(name)
    cited = first.messages[1].content[0]  # type: ignore[index]
    assert isinstance(cited, TextPart)
    assert cited.text == "pandas 3.1.0, released on 12 November 2026"
    assert cited.citations == blocks[1]["citations"]
    assert len(cited.citations or []) == 2
    sent = server.requests[1].json["messages"][1]["content"]
    assert sent[1] == {
        "type": "text",
        "text": "pandas 3.1.0, released on 12 November 2026",
        "citations": blocks[1]["citations"],
    }


# --- item 5: image URLs and PDFs ---------------------------------------------------------------


@pytest.mark.asyncio
async def test_url_images_and_pdfs_go_out_as_image_and_document_blocks() -> None:
    pdf = DocumentPart.from_bytes(b"%PDF-1.4\n%%EOF\n")
    remote_pdf = DocumentPart(source=DocumentSource(url="https://example.invalid/paper.pdf"))
    image = ImagePart(image_url=ImageUrl(url="https://example.invalid/plot.png"))
    history: list[Any] = [
        UserMessage(content=[TextPart(text="Compare these."), image, remote_pdf]),
        AssistantMessage(
            content=None,
            tool_calls=[
                {
                    "id": "toolu_1",
                    "function": {"name": "read", "arguments": '{"file_path":"a.pdf"}'},
                }  # type: ignore[list-item]
            ],
        ),
        ToolMessage(tool_call_id="toolu_1", tool_name="read", content=[pdf]),
    ]
    with ScriptedAnthropicServer([reply("done")]) as server:
        await chat_for(server).ainvoke(history)
    first, _, results = server.requests[0].json["messages"]
    assert first["content"][1] == {
        "type": "image",
        "source": {"type": "url", "url": "https://example.invalid/plot.png"},
    }
    assert first["content"][2]["source"] == {
        "type": "url",
        "url": "https://example.invalid/paper.pdf",
    }
    assert results["content"][0]["content"] == [
        {
            "type": "document",
            "source": {"type": "base64", "media_type": "application/pdf", "data": pdf.source.data},
        }
    ]


# --- item 6: thinking for current models -------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "setting", "thinking", "effort"),
    [
        ("claude-opus-5", 2048, {"type": "adaptive"}, "low"),
        ("claude-opus-5", 20_000, {"type": "adaptive"}, "high"),
        ("claude-opus-4-7", "adaptive", {"type": "adaptive"}, None),
        ("claude-sonnet-4-6", 60_000, {"type": "adaptive"}, "max"),
        ("claude-haiku-4-5", 2048, {"type": "enabled", "budget_tokens": 2048}, None),
        ("claude-haiku-4-5", "adaptive", {"type": "enabled", "budget_tokens": 8192}, None),
        ("claude-sonnet-5-5", "off", {"type": "disabled"}, None),
        ("claude-sonnet-5-5", None, None, None),
    ],
)
@pytest.mark.asyncio
async def test_thinking_request_fits_the_model(
    model: str, setting: Any, thinking: Any, effort: str | None
) -> None:
    with ScriptedAnthropicServer([reply("ok")]) as server:
        await chat_for(server, model=model, thinking=setting).ainvoke([UserMessage(content="q")])
    sent = server.requests[0].json
    assert sent.get("thinking") == thinking
    assert sent.get("output_config") == ({"effort": effort} if effort else None)


@pytest.mark.parametrize(
    ("model", "max_tokens"),
    [
        ("claude-sonnet-5-5", 32_000),
        ("claude-opus-4-5-20251101", 32_000),
        ("some-proxy-model", 8_192),
    ],
)
def test_default_max_tokens_comes_from_the_model_table(model: str, max_tokens: int) -> None:
    assert (
        chat_for_offline(model=model).build_request([UserMessage(content="q")])["max_tokens"]
        == max_tokens
    )


def test_every_sdk_model_has_a_window_and_an_output_limit() -> None:
    from anthropic.types import Model

    listed = [a for m in typing.get_args(Model) for a in typing.get_args(m) if isinstance(a, str)]
    assert listed
    for model in listed:
        row = models.capabilities(model)
        assert row is not models.UNKNOWN_MODEL, model
        assert row.context_window and row.max_output_tokens >= 8_192, model
        assert chat_for_offline(model=model).context_limit() is not None, model


def test_unknown_models_get_the_documented_default_with_one_note(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level("INFO", logger="jupyter_codelia.llm"):
        models.capabilities("claude-from-the-future-9")
        models.capabilities("claude-from-the-future-9")
    notes = [r.getMessage() for r in caplog.records if "claude-from-the-future-9" in r.getMessage()]
    assert notes == [
        "model 'claude-from-the-future-9' is not in jupyter_codelia's model table; using "
        "max_tokens=8192, budget thinking and an unknown context window"
    ]
    assert models.is_known_model("claude-opus-4-5-20251101")
    assert models.is_known_model("claude-mythos-preview")
    assert not models.is_known_model("nonsense")


# --- item 7: usage ---------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_server_tool_usage_is_counted_and_priced() -> None:
    with ScriptedAnthropicServer([recorded(RECORDINGS / "web_search_paused.http")]) as server:
        chat = chat_for(server)
        completion = await chat.ainvoke([UserMessage(content="latest pandas?")])
    usage = completion.usage
    assert usage is not None
    assert (usage.input_tokens, usage.output_tokens) == (2068, 93)
    assert (usage.web_search_requests, usage.web_fetch_requests) == (1, None)
    tokens_only = chat.cost_usd(usage.model_copy(update={"web_search_requests": None}))
    assert tokens_only is not None
    # $10 per thousand searches on top of the tokens.
    assert chat.cost_usd(usage) == pytest.approx(tokens_only + 0.01)
    assert chat.cost_usd(ChatInvokeUsage(model="claude-mythos-5-1", input_tokens=1)) is None


# --- item 8: an error event mid-stream -----------------------------------------------------------


@pytest.mark.asyncio
async def test_an_error_event_mid_stream_is_a_retryable_overload() -> None:
    deltas: list[str] = []
    recording = recorded(RECORDINGS / "overloaded_mid_stream.http")
    with ScriptedAnthropicServer([recording]) as s, pytest.raises(LlmError) as caught:
        await chat_for(s).ainvoke([UserMessage(content="q")], on_text_delta=deltas.append)
    assert "".join(deltas) == "Half of an answer that will be thrown away"
    assert caught.value.kind == "overloaded"
    assert caught.value.retryable
    assert caught.value.message == (
        "Anthropic API overloaded_error (error event in the response stream): Overloaded"
    )


START = (
    'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","type":"message",'
    '"role":"assistant","model":"m","content":[],"stop_reason":null,"usage":{"input_tokens":1,'
    '"output_tokens":1}}}\n\n'
)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
            '"content_block":{"type":"text","text":""}}\n\n',
            "content_block_start event before message_start",
        ),
        (START + "event: content_block_delta\ndata: {not json\n\n", "undecodable"),
        (START + "event: ping\ndata: [1, 2]\n\n", "'ping' event data is not a JSON object"),
        (START + 'event: ping\ndata: {"type": 7}\n\n', "'ping' event with a non-text type 7"),
        (
            START + 'event: content_block_delta\ndata: {"type":"content_block_delta","index":3,'
            '"delta":{"type":"text_delta","text":"x"}}\n\n',
            "content_block_delta for block 3 before its content_block_start",
        ),
        (
            START + 'event: content_block_start\ndata: {"type":"content_block_start","index":2,'
            '"content_block":{"type":"text","text":""}}\n\n',
            "content_block_start out of order at index 2",
        ),
    ],
)
@pytest.mark.asyncio
async def test_a_stream_that_breaks_the_grammar_is_a_clear_network_error(
    body: str, message: str
) -> None:
    turn = Recorded(status=200, headers={"content-type": "text/event-stream"}, body=body)
    with ScriptedAnthropicServer([turn]) as server, pytest.raises(LlmError) as caught:
        await chat_for(server).ainvoke([UserMessage(content="q")])
    assert caught.value.kind == "network"
    assert caught.value.message.startswith("The Anthropic response stream was malformed: ")
    assert message in caught.value.message


@pytest.mark.asyncio
async def test_a_json_body_where_a_stream_was_asked_for_ends_before_message_stop() -> None:
    turn = Recorded(status=200, headers={"content-type": "application/json"}, body='{"id": 1}')
    with ScriptedAnthropicServer([turn]) as server, pytest.raises(LlmError) as caught:
        await chat_for(server).ainvoke([UserMessage(content="q")])
    assert caught.value.message == (
        "The Anthropic response stream ended before message_stop (the connection closed mid-reply)"
    )


@pytest.mark.asyncio
async def test_unknown_events_and_deltas_are_skipped() -> None:
    body = (
        START + 'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
        '"content_block":{"type":"text","text":""}}\n\n'
        + 'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
        '"delta":{"type":"future_delta","x":1}}\n\n'
        + 'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
        '"delta":{"type":"text_delta","text":"ok"}}\n\n'
        + 'event: future_event\ndata: {"type":"future_event"}\n\n'
        + ": a comment line\n\n"
        + 'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},'
        '"usage":{"output_tokens":2}}\n\n'
        + 'event: message_stop\ndata: {"type":"message_stop"}\n\n'
    )
    turn = Recorded(status=200, headers={"content-type": "text/event-stream"}, body=body)
    with ScriptedAnthropicServer([turn]) as server:
        completion = await chat_for(server).ainvoke([UserMessage(content="q")])
    assert completion.messages == [AssistantMessage(content="ok")]
    assert completion.usage is not None and completion.usage.output_tokens == 2
