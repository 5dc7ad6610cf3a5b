"""OpenAIChat against recorded traffic of OpenAI and compatible servers, replayed verbatim.

The recordings in tests/llm/recordings (each names where its shape was learned) cover OpenAI's
Chat Completions and Responses API, Azure's content filter, DeepSeek's thinking mode, Gemini's
OpenAI-compatible endpoint, OpenRouter, Ollama, vLLM, llama.cpp and LM Studio. Where a server
insists on what comes back (DeepSeek's reasoning_content, Gemini's thought signature), the
scripted server answers the way the real one does when it is missing.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from jupyter_codelia.llm import (
    AssistantMessage,
    FunctionToolDefinition,
    LlmError,
    ReasoningMessage,
    ToolMessage,
    UserMessage,
)
from jupyter_codelia.llm.openai import OpenAIChat
from jupyter_codelia.testing import (
    ScriptedOpenAIServer,
    load_recording,
    parse_recording,
    recorded,
)

RECORDINGS = Path(__file__).parent / "recordings"
API_KEY = "sk-proj-test-SECRET-5566778899"
READ_TOOL = FunctionToolDefinition(
    name="read",
    description="Read a file",
    parameters={"type": "object", "properties": {"file_path": {"type": "string"}}},
)
OPENROUTER_SIGNATURE = (
    "ErUBCkYICBACGAIqQJk3ZtW8mQ0vX5cN2bR7yL1sT4hF9gP6dK3aE8uJ0oV2iM5nB7wC1xZ4qY6rS9tD3fG8hJ2kL5pQ=="
)
WRITE_TOOL = FunctionToolDefinition(
    name="write",
    description="Write a file",
    parameters={"type": "object", "properties": {"file_path": {}, "content": {}}},
)


def rec(name: str) -> Any:
    return recorded(RECORDINGS / name)


def chat_for(server: ScriptedOpenAIServer, model: str, **options: Any) -> OpenAIChat:
    return OpenAIChat(model, base_url=server.url, api_key=API_KEY, **options)


async def failure(recording: str, model: str, **options: Any) -> LlmError:
    with ScriptedOpenAIServer([rec(recording)]) as server, pytest.raises(LlmError) as caught:
        await ask(chat_for(server, model, **options))
    assert API_KEY not in caught.value.message
    return caught.value


async def ask(chat: OpenAIChat, **options: Any) -> Any:
    return await chat.ainvoke([UserMessage(content="go")], tools=[READ_TOOL, WRITE_TOOL], **options)


def answered(completion: Any, *results: str) -> list[Any]:
    """The history after ``completion``, each of its calls answered in order."""
    history: list[Any] = [UserMessage(content="go"), *completion.messages]
    calls = [
        c
        for m in completion.messages
        if isinstance(m, AssistantMessage)
        for c in m.tool_calls or []
    ]
    for call, result in zip(calls, results, strict=True):
        history.append(
            ToolMessage(tool_call_id=call.id, tool_name=call.function.name, content=result)
        )
    return history


# --- the recording kit on the OpenAI side ---------------------------------------------------------


@pytest.mark.asyncio
async def test_the_openai_server_replays_a_recording_byte_for_byte() -> None:
    import httpx2

    recording = load_recording(RECORDINGS / "openrouter_error_after_length.http")
    with ScriptedOpenAIServer([recording]) as server:
        async with httpx2.AsyncClient() as client:
            response = await client.post(
                f"{server.url}/chat/completions",
                headers={"authorization": "Bearer k"},
                json={"model": "m", "messages": [], "stream": True},
            )
    assert response.status_code == 200
    assert response.headers["cf-ray"] == "9a41d7f03c8b2e44-AMS"
    assert response.content == recording.body.encode("utf-8")
    assert response.content.startswith(b": OPENROUTER PROCESSING\n\n")


def test_notes_before_the_status_line_say_where_a_shape_came_from_and_are_not_sent() -> None:
    parsed = parse_recording("# learned from somewhere\n# and more\nHTTP/1.1 429 \nx-a: b\n\n{}")
    assert (parsed.status, parsed.headers, parsed.body) == (429, {"x-a": "b"}, "{}")
    for path in RECORDINGS.glob("*.http"):
        if path.name.startswith(("openai_", "azure_", "deepseek_", "gemini_", "openrouter_")):
            assert path.read_text(encoding="utf-8").startswith("# Shape: "), path.name


# --- 1. answers cut off by the output limit -------------------------------------------------------


@pytest.mark.asyncio
async def test_a_reply_cut_after_one_token_is_an_output_limit_stop() -> None:
    with ScriptedOpenAIServer([rec("openai_chat_cut_after_one_token.http")]) as server:
        completion = await ask(chat_for(server, "gpt-4.1", max_tokens=1))
    assert (completion.stop_reason, completion.stop_kind) == ("length", "output_limit")
    assert completion.messages == [AssistantMessage(content='{"')]


@pytest.mark.asyncio
async def test_an_empty_answer_of_a_model_that_reasoned_to_the_limit_is_an_output_limit_stop() -> (
    None
):
    with ScriptedOpenAIServer([rec("openai_chat_reasoning_spent_the_limit.http")]) as server:
        completion = await ask(chat_for(server, "gpt-5-mini", max_tokens=1926))
    assert completion.messages == []
    assert completion.stop_kind == "output_limit"
    assert completion.usage.output_tokens == 1926


@pytest.mark.asyncio
async def test_a_responses_reply_incomplete_at_max_output_tokens_is_an_output_limit_stop() -> None:
    with ScriptedOpenAIServer([rec("openai_responses_incomplete_reasoning_only.http")]) as server:
        completion = await ask(chat_for(server, "gpt-5", api="responses"))
    assert (completion.stop_reason, completion.stop_kind) == ("max_output_tokens", "output_limit")
    (reasoning,) = completion.messages
    assert isinstance(reasoning, ReasoningMessage)
    assert reasoning.raw_item["encrypted_content"].startswith("gAAAAAB")


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("model", "options", "field", "limit"),
    [
        # OpenAI's families: the model's maximum, capped at 32,000 (reasoning counts).
        ("gpt-5.1", {}, "max_completion_tokens", 32_000),
        ("gpt-4o", {}, "max_completion_tokens", 16_384),
        ("gpt-5.1", {"api": "responses"}, "max_output_tokens", 32_000),
        # Another service's model through provider "openai": its own parameter and limit.
        ("deepseek-v4-flash", {}, "max_tokens", 32_000),
        ("gemini-3-flash-preview", {}, "max_tokens", 32_000),
        ("openai/gpt-5.1", {"provider": "openrouter"}, "max_completion_tokens", 32_000),
        ("qwen/qwen3-coder", {"provider": "openrouter"}, None, None),  # not in the table
        ("gpt-oss:20b", {"provider": "ollama"}, None, None),  # a local server's own limit
        ("gpt-oss:20b", {"provider": "ollama", "max_tokens": 900}, "max_tokens", 900),
        ("gpt-5.1", {"max_tokens": 2048}, "max_completion_tokens", 2048),
    ],
)
async def test_the_output_limit_comes_from_the_model_table_under_the_name_each_api_wants(
    model: str, options: dict[str, Any], field: str | None, limit: int | None
) -> None:
    from jupyter_codelia.testing import reply, text

    with ScriptedOpenAIServer([reply(text("ok"))]) as server:
        await chat_for(server, model, **options).ainvoke([UserMessage(content="hi")])
    sent = server.requests[0].json
    limits = {
        k: v
        for k, v in sent.items()
        if k in ("max_tokens", "max_completion_tokens", "max_output_tokens")
    }
    assert limits == ({field: limit} if field else {})


def test_an_unknown_model_gets_safe_defaults_and_one_note(caplog: pytest.LogCaptureFixture) -> None:
    from jupyter_codelia.llm.openai import models as openai_models

    with caplog.at_level(logging.INFO, logger="jupyter_codelia.llm"):
        first = OpenAIChat("my-finetune-7b:q4", provider="vllm", api_key="x")
        OpenAIChat("my-finetune-7b:q4", provider="vllm", api_key="x")
    notes = [r.getMessage() for r in caplog.records if "my-finetune-7b:q4" in r.getMessage()]
    assert len(notes) == 1
    assert "no output limit is sent unless one is set" in notes[0]
    assert first.info is openai_models.UNKNOWN_OPENAI_MODEL
    assert first.max_tokens is None
    assert first.context_limit() is None
    assert first.unsupported(needs_tools=True, needs_vision=True) is None  # never refused


@pytest.mark.parametrize(
    ("base_url", "service", "label"),
    [
        ("https://api.deepseek.com", "deepseek", "DeepSeek API"),
        ("https://generativelanguage.googleapis.com/v1beta/openai/", "gemini", "Gemini API"),
        ("https://openrouter.ai/api/v1", "openrouter", "OpenRouter API"),
        ("https://api.openai.com/v1", "openai", "OpenAI API"),
        ("https://llm.internal.example/v1", "openai", "OpenAI API"),
    ],
)
def test_the_service_behind_a_base_url_names_it_and_picks_its_prices(
    base_url: str, service: str, label: str
) -> None:
    chat = OpenAIChat("deepseek-v4-flash", api_key="k", base_url=base_url)
    assert (chat.service, chat.label) == (service, label)
    assert OpenAIChat("qwen3", provider="vllm", api_key="k", base_url=base_url).label == (
        "vllm server"
    )


def test_a_known_service_prices_its_models_and_knows_their_window() -> None:
    from jupyter_codelia.llm import ChatInvokeUsage

    deepseek = OpenAIChat("deepseek-v4-flash", api_key="k", base_url="https://api.deepseek.com")
    usage = ChatInvokeUsage(model="deepseek-v4-flash", input_tokens=1000, output_tokens=100)
    cost = deepseek.cost_usd(usage)
    assert cost is not None and cost > 0
    assert deepseek.context_limit() == 1_000_000
    # Not in the price database: the model table's window.
    assert OpenAIChat("gpt-oss:20b", provider="ollama", api_key="k").context_limit() == 131_072


def test_the_model_tables_are_consistent_and_match_ids_as_servers_spell_them() -> None:
    from jupyter_codelia.llm.openai.models import MODEL_TABLES, model_family, model_info

    for table in MODEL_TABLES.values():
        for prefix, row in table.items():
            assert prefix == prefix.lower()
            if row.max_output_tokens is not None and row.context_window is not None:
                assert row.max_output_tokens <= row.context_window, prefix
            default = row.default_max_tokens
            assert default is None or 0 < default <= 32_000, prefix
    assert model_family("deepseek/deepseek-r1-0528") == "deepseek-r1"  # OpenRouter's vendor path
    assert model_family("gpt-oss:120b") == "gpt-oss"  # Ollama's tag
    assert model_family("models/gemini-3-pro-preview") == "gemini-3"
    assert model_family("o1-mini-2024-09-12") == "o1-mini"  # the longest prefix wins
    assert model_info("gpt-5.1").limit_parameter == "max_completion_tokens"
    assert model_info("deepseek-v4-pro").send_back == "reasoning_content"


# --- 2. a tool call cut off by the output limit ---------------------------------------------------


@pytest.mark.asyncio
async def test_a_tool_call_cut_by_length_is_marked_cut_off_and_goes_back_without_its_json() -> None:
    with ScriptedOpenAIServer([rec("openai_chat_write_cut_by_length.http")]) as server:
        chat = chat_for(server, "gpt-4.1", max_tokens=32)
        completion = await ask(chat)
    assert completion.stop_kind == "output_limit"
    (message,) = completion.messages
    (call,) = message.tool_calls
    assert call.cut_off is True
    assert call.function.arguments.startswith('{"file_path":"report.txt","content":"row 0')
    with pytest.raises(ValueError):
        json.loads(call.function.arguments)
    request = chat.build_request(answered(completion, "not run"), tools=[WRITE_TOOL])
    assert request["messages"][1]["tool_calls"][0]["function"] == {
        "name": "write",
        "arguments": "{}",
    }


@pytest.mark.asyncio
async def test_a_responses_function_call_left_incomplete_is_cut_off() -> None:
    with ScriptedOpenAIServer([rec("openai_responses_write_cut_off.http")]) as server:
        chat = chat_for(server, "gpt-5", api="responses", max_tokens=96)
        completion = await ask(chat)
    assert completion.stop_kind == "output_limit"
    _reasoning, message = completion.messages
    (call,) = message.tool_calls
    assert (call.id, call.cut_off) == ("call_Wn3Rb8Tq1LzK6yVp0sXd4mHe", True)
    sent = chat.build_request(answered(completion, "not run"), tools=[WRITE_TOOL])["input"]
    replayed = next(item for item in sent if item.get("type") == "function_call")
    assert replayed["arguments"] == "{}"


# --- 3. content filter ----------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_a_content_filter_stop_is_marked() -> None:
    with ScriptedOpenAIServer([rec("azure_chat_content_filter.http")]) as server:
        completion = await ask(chat_for(server, "gpt-4o"))
    assert (completion.stop_reason, completion.stop_kind) == ("content_filter", "content_filter")
    assert completion.messages == [
        AssistantMessage(content="The scene opens in the old quarry, where")
    ]


# --- 4. DeepSeek: reasoning_content goes back with tool-call turns --------------------------------


def deepseek_accepts(turns: list[dict[str, Any]]) -> bool:
    """DeepSeek's rule: every assistant tool-call turn carries its reasoning_content."""
    return all("reasoning_content" in m for m in turns if m.get("tool_calls"))


DEEPSEEK_TURNS = (
    "deepseek_thinking_tool_call.http",
    "deepseek_answer_after_tool.http",
    "deepseek_reasoning_not_passed_back.http",
)


@pytest.mark.asyncio
async def test_deepseek_gets_its_reasoning_content_back_on_the_tool_call_turn(
    insisting_server: Any,
) -> None:
    with insisting_server(*DEEPSEEK_TURNS, deepseek_accepts) as server:
        chat = chat_for(server, "deepseek-v4-flash")
        reasoning_deltas: list[str] = []
        first = await ask(chat, on_reasoning_delta=reasoning_deltas.append)
        second = await chat.ainvoke(answered(first, "a,b\n1,2\n3,4\n5,6"), tools=[READ_TOOL])
    assert "".join(reasoning_deltas) == (
        "The user wants the size of data.csv. I should read the file first, then count rows."
    )
    assert second.messages[-1] == AssistantMessage(content="data.csv has 3 rows.")
    turn = server.requests[1].json["messages"][1]
    assert turn["reasoning_content"] == "".join(reasoning_deltas)
    assert turn["content"] == "Let me look at the file."
    assert turn["tool_calls"][0]["id"] == "call_00_Xr7bQ2mLk9TzN4vWp1cYd0eF"


def test_a_deepseek_tool_call_turn_without_reasoning_still_carries_an_empty_one() -> None:
    from jupyter_codelia.llm.messages import FunctionCall, ToolCall

    call = ToolCall(id="call_00_a", function=FunctionCall(name="read", arguments="{}"))
    history = [
        UserMessage(content="go"),
        AssistantMessage(content=None, tool_calls=[call]),
        ToolMessage(tool_call_id="call_00_a", tool_name="read", content="x"),
        AssistantMessage(content="done"),
    ]
    deepseek = OpenAIChat("deepseek-v4-pro", api_key="k", base_url="https://api.deepseek.com")
    sent = deepseek.build_request(history)["messages"]
    assert sent[1]["reasoning_content"] == ""
    assert "reasoning_content" not in sent[3]  # an answer's reasoning is never needed back
    plain = OpenAIChat("gpt-4o", api_key="k", api="chat").build_request(history)["messages"]
    assert "reasoning_content" not in plain[1]


@pytest.mark.asyncio
async def test_deepseek_refusing_a_turn_is_a_final_bad_request_with_its_reason() -> None:
    error = await failure("deepseek_reasoning_not_passed_back.http", "deepseek-v4-flash")
    assert (error.kind, error.retryable, error.status) == (
        "bad_request",
        False,
        400,
    )
    assert "must be passed back to the API" in error.message


# --- 5. Gemini: thought signatures and JSON-array errors ------------------------------------------


def gemini_accepts(turns: list[dict[str, Any]]) -> bool:
    """Gemini's rule: a replayed call that had a thought_signature brings it back."""
    signature = (turns[0]["tool_calls"][0].get("extra_content") or {}).get("google", {})
    return bool(signature.get("thought_signature"))


@pytest.mark.asyncio
async def test_gemini_parallel_calls_without_an_index_and_their_signature_round_trip(
    insisting_server: Any,
) -> None:
    turns = (
        "gemini_parallel_calls_with_signature.http",
        "gemini_answer.http",
        "gemini_missing_thought_signature.http",
    )
    with insisting_server(*turns, gemini_accepts) as server:
        chat = chat_for(server, "gemini-3-flash-preview", provider="gemini")
        first = await ask(chat)
        (message,) = first.messages
        assert [c.function.arguments for c in message.tool_calls] == [
            '{"file_path":"a.csv"}',
            '{"file_path":"b.csv"}',
        ]
        second = await chat.ainvoke(answered(first, "h\n1\n2", "h\n3\n4"), tools=[READ_TOOL])
    assert second.messages == [AssistantMessage(content="Both files have a header and 2 rows.")]
    replayed = server.requests[1].json["messages"][1]["tool_calls"]
    assert replayed[0]["extra_content"]["google"]["thought_signature"].startswith("EuYBCuMB")
    assert "extra_content" not in replayed[1]
    assert chat.label == "Gemini API"


@pytest.mark.asyncio
async def test_a_gemini_error_in_a_json_array_is_read() -> None:
    error = await failure(
        "gemini_missing_thought_signature.http", "gemini-3-flash-preview", provider="gemini"
    )
    assert (error.kind, error.status) == ("bad_request", 400)
    assert error.message.startswith("Gemini API INVALID_ARGUMENT (HTTP 400): Unable to submit")
    assert "is missing a `thought_signature`" in error.message


# --- 6. OpenRouter --------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_openrouter_reasoning_details_are_merged_and_sent_back_unchanged() -> None:
    with ScriptedOpenAIServer([rec("openrouter_reasoning_details_tool_call.http")]) as server:
        chat = chat_for(server, "anthropic/claude-sonnet-4.5", provider="openrouter")
        completion = await ask(chat)
    reasoning, _message = completion.messages
    assert reasoning.content == "I should list the directory first."
    (detail,) = reasoning.raw_item["reasoning_details"]
    assert detail == {
        "type": "reasoning.text",
        "text": "I should list the directory first.",
        "signature": OPENROUTER_SIGNATURE,
        "format": "anthropic-claude-v1",
        "index": 0,
    }
    turn = chat.build_request(answered(completion, "a.py"))["messages"][1]
    assert turn["reasoning_details"] == [detail]
    assert turn["reasoning"] == "I should list the directory first."
    assert turn["tool_calls"][0]["function"] == {"name": "glob", "arguments": '{"pattern": "*.py"}'}


@pytest.mark.asyncio
async def test_an_openrouter_error_after_the_reply_finished_keeps_the_reply() -> None:
    with ScriptedOpenAIServer([rec("openrouter_error_after_length.http")]) as server:
        chat = chat_for(server, "minimax/minimax-m2", provider="openrouter", max_tokens=16)
        deltas: list[str] = []
        completion = await ask(chat, on_reasoning_delta=deltas.append)
    assert completion.stop_kind == "output_limit"
    (reasoning,) = completion.messages
    assert reasoning.content == "The user greets me; I should answer briefly and"
    assert "".join(deltas) == reasoning.content
    assert completion.provider_meta["stream_error"] == {
        "code": 400,
        "message": "Token limit reached",
    }


@pytest.mark.asyncio
async def test_an_openrouter_error_before_the_reply_finished_is_classified_by_its_code() -> None:
    from jupyter_codelia.testing import Recorded

    body = (
        ': OPENROUTER PROCESSING\n\ndata: {"id":"gen-1","provider":"Minimax","model":"m",'
        '"object":"chat.completion.chunk","created":1,"choices":[{"index":0,"delta":'
        '{"role":"assistant","content":"Hel"},"finish_reason":null}]}\n\ndata: {"id":"gen-1",'
        '"error":{"code":400,"message":"Token limit reached"},"object":"chat.completion.chunk",'
        '"created":1,"choices":[]}\n\ndata: [DONE]\n\n'
    )
    with (
        ScriptedOpenAIServer(
            [Recorded(status=200, headers={"content-type": "text/event-stream"}, body=body)]
        ) as server,
        pytest.raises(LlmError) as caught,
    ):
        await ask(chat_for(server, "minimax/minimax-m2", provider="openrouter"))
    error = caught.value
    assert (error.kind, error.retryable, error.status) == ("bad_request", False, 400)
    assert error.message == "OpenRouter API (error in the response stream): Token limit reached"


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("recording", "kind", "says"),
    [
        (
            "openrouter_429_upstream.http",
            "rate_limit",
            "Provider returned error: Google AI Studio says: google/gemini-2.5-flash is "
            "temporarily rate-limited upstream.",
        ),
        (
            "openrouter_400_upstream_json.http",
            "bad_request",
            "Provider returned error: DeepSeek says: The `reasoning_content` in the thinking "
            "mode must be passed back to the API.",
        ),
    ],
)
async def test_openrouter_upstream_errors_say_what_the_provider_said(
    recording: str, kind: str, says: str
) -> None:
    error = await failure(recording, "google/gemini-2.5-flash", provider="openrouter")
    assert error.kind == kind
    assert says in error.message


# --- 7. and 8. out of credit; a wait in minutes ---------------------------------------------------


@pytest.mark.asyncio
async def test_insufficient_quota_is_final_and_says_so() -> None:
    error = await failure("openai_429_insufficient_quota.http", "gpt-4o")
    assert (error.kind, error.retryable, error.status, error.retry_after_s) == (
        "quota",
        False,
        429,
        None,
    )
    assert "You exceeded your current quota" in error.message
    assert error.message.endswith(
        "Not retried: the account is out of credit or over its spending limit; add credit or "
        "raise the limit in the provider's billing settings, then run again."
    )


@pytest.mark.asyncio
async def test_a_wait_in_minutes_and_seconds_is_a_retry_hint() -> None:
    error = await failure("openai_429_try_again_in_minutes.http", "gpt-4o-mini")
    assert (error.kind, error.retry_source) == ("rate_limit", "provider-body")
    assert error.retry_after_s == pytest.approx(578.016)


# --- 9. inline <think> reasoning ------------------------------------------------------------------


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("recording", "model", "provider", "reasoning", "answer"),
    [
        (
            "llamacpp_r1_inline_think.http",
            "DeepSeek-R1-Distill-Qwen-7B-Q4_K_M.gguf",
            "llamacpp",
            "\nThe user asks for 17*3. 17*3 = 51.\n",
            "17 × 3 = **51**.",
        ),
        (
            # R1's template opened the tag itself: only </think> is in the reply.
            "vllm_r1_template_opened_think.http",
            "deepseek-ai/DeepSeek-R1-0528",
            "vllm",
            "Okay, 2+2 is 4.\n",
            "The answer is 4.",
        ),
    ],
)
async def test_inline_think_tags_become_reasoning_even_split_across_deltas(
    recording: str, model: str, provider: str, reasoning: str, answer: str
) -> None:
    with ScriptedOpenAIServer([rec(recording)]) as server:
        chat = OpenAIChat(model, base_url=server.url, provider=provider, needs_key=False)
        texts: list[str] = []
        thoughts: list[str] = []
        completion = await ask(chat, on_text_delta=texts.append, on_reasoning_delta=thoughts.append)
    assert "".join(texts) == answer
    assert not any("think" in t for t in texts)
    assert "".join(thoughts) == reasoning
    thought, message = completion.messages
    assert (thought.content, message.content) == (reasoning, answer)
    # Replayed, the turn is the answer alone.
    history = [*answered(completion), UserMessage(content="and 17*4?")]
    assert chat.build_request(history)["messages"][1] == {"role": "assistant", "content": answer}


# --- 10. gpt-oss (Ollama, vLLM) and LM Studio: the reasoning field goes back as it came -----------


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("recording", "model", "provider", "field", "reasoning"),
    [
        (
            "ollama_gpt_oss_tool_call.http",
            "gpt-oss:20b",
            "ollama",
            "reasoning",
            "We need to read a.txt first.",
        ),
        (
            "vllm_gpt_oss_tool_call.http",
            "openai/gpt-oss-20b",
            "vllm",
            "reasoning",
            "Need to list python files.",
        ),
        (
            "lmstudio_qwen3_tool_call.http",
            "qwen/qwen3-4b-2507",
            "lmstudio",
            "reasoning_content",
            "Count the lines of a.txt.",
        ),
    ],
)
async def test_a_tool_turn_carries_its_reasoning_back_in_the_field_it_came_in(
    recording: str, model: str, provider: str, field: str, reasoning: str
) -> None:
    with ScriptedOpenAIServer([rec(recording)]) as server:
        chat = OpenAIChat(model, base_url=server.url, provider=provider, needs_key=False)
        completion = await ask(chat)
    assert completion.stop_kind == "tool_calls"
    turn = chat.build_request(answered(completion, "result"))["messages"][1]
    assert turn[field] == reasoning
    other = {"reasoning", "reasoning_content"} - {field}
    assert not other & set(turn)
    assert len(turn["tool_calls"]) == 1
