"""Request serialization and response conversion, on plain data."""

from __future__ import annotations

from typing import Any

import pytest

from jupyter_codelia.llm import (
    AssistantMessage,
    DocumentPart,
    FunctionToolDefinition,
    ImagePart,
    OtherPart,
    ReasoningMessage,
    SystemMessage,
    TextPart,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from jupyter_codelia.llm.anthropic import AnthropicChat
from jupyter_codelia.llm.anthropic._request import (
    part_to_block,
    system_text,
    to_anthropic_messages,
    to_anthropic_tool_choice,
    to_anthropic_tools,
    tool_input,
)
from jupyter_codelia.llm.anthropic._response import completion_from_anthropic
from jupyter_codelia.llm.messages import DocumentSource, FunctionCall, ImageUrl


def call(call_id: str, name: str = "read", arguments: str = "{}") -> ToolCall:
    return ToolCall(id=call_id, function=FunctionCall(name=name, arguments=arguments))


def calls(*ids: str) -> AssistantMessage:
    return AssistantMessage(content=None, tool_calls=[call(i) for i in ids])


def result(call_id: str, content: Any = "ok", **kw: Any) -> ToolMessage:
    return ToolMessage(tool_call_id=call_id, tool_name="read", content=content, **kw)


def tool_use_block(call_id: str, name: str = "read", input: Any = None) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": input or {}}


def tool_result_block(call_id: str, content: Any = "ok") -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": call_id, "content": content}


def test_system_messages_are_joined_with_a_blank_line() -> None:
    messages = [
        SystemMessage(content="one"),
        UserMessage(content="hi"),
        SystemMessage(content=[TextPart(text="tw"), TextPart(text="o")]),
    ]
    assert system_text(messages) == "one\n\ntwo"
    assert system_text([UserMessage(content="hi")]) is None
    assert to_anthropic_messages(messages) == [
        {"role": "user", "content": [{"type": "text", "text": "hi"}]}
    ]


def test_consecutive_tool_results_become_one_user_message() -> None:
    messages = [
        UserMessage(content="go"),
        calls("a", "b"),
        result("a", "first"),
        result("b", [TextPart(text="second")], is_error=True),
    ]
    assert to_anthropic_messages(messages)[1:] == [
        {"role": "assistant", "content": [tool_use_block("a"), tool_use_block("b")]},
        {
            "role": "user",
            "content": [
                tool_result_block("a", "first"),
                {**tool_result_block("b", [{"type": "text", "text": "second"}]), "is_error": True},
            ],
        },
    ]


def test_empty_contents_are_never_empty_lists() -> None:
    messages = [UserMessage(content=[]), calls("a"), result("a", [])]
    assert to_anthropic_messages(messages) == [
        {"role": "user", "content": [{"type": "text", "text": ""}]},
        {"role": "assistant", "content": [tool_use_block("a")]},
        {"role": "user", "content": [tool_result_block("a", [{"type": "text", "text": ""}])]},
    ]


def test_assistant_text_and_following_tool_calls_merge_into_one_turn() -> None:
    messages = [
        UserMessage(content="q"),
        AssistantMessage(content="Let me check."),
        calls("a"),
        calls("b"),
        result("a"),
        result("b"),
    ]
    assert to_anthropic_messages(messages)[1] == {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Let me check."},
            tool_use_block("a"),
            tool_use_block("b"),
        ],
    }


def test_orphan_tool_calls_and_results_are_dropped() -> None:
    messages = [
        UserMessage(content="q"),
        AssistantMessage(content="Trying two things.", tool_calls=[call("a"), call("lost")]),
        result("a"),
        result("stray"),
        calls("dangling"),  # never answered: dropped entirely
        UserMessage(content="next"),
        result("nobody-called-me"),
    ]
    assert to_anthropic_messages(messages) == [
        {"role": "user", "content": [{"type": "text", "text": "q"}]},
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "Trying two things."}, tool_use_block("a")],
        },
        {"role": "user", "content": [tool_result_block("a")]},
        {"role": "user", "content": [{"type": "text", "text": "next"}]},
    ]


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ('{"a":1}', {"a": 1}),
        ("", {}),
        ("  ", {}),
        ("{not json", {"value": "{not json"}),
        ("[1,2]", {"value": [1, 2]}),
    ],
)
def test_tool_arguments_become_an_input_object(arguments: str, expected: Any) -> None:
    assert tool_input(arguments) == expected


def test_parts_become_blocks() -> None:
    png = ImagePart(image_url=ImageUrl(url="data:image/png;base64,AAAA"))
    typed = ImagePart(
        image_url=ImageUrl(url="data:application/octet-stream;base64,BBBB", media_type="image/webp")
    )
    odd = ImagePart(image_url=ImageUrl(url="data:image/tiff;base64,CCCC"))
    remote = ImagePart(image_url=ImageUrl(url="https://example.invalid/cat.png"))
    assert part_to_block(png) == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"},
    }
    assert part_to_block(typed)["source"]["media_type"] == "image/webp"
    assert part_to_block(odd) == {"type": "text", "text": "data:image/tiff;base64,CCCC"}
    assert part_to_block(remote) == {
        "type": "image",
        "source": {"type": "url", "url": "https://example.invalid/cat.png"},
    }
    assert part_to_block(DocumentPart(source=DocumentSource(data="JVBE"))) == {
        "type": "document",
        "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBE"},
    }
    assert part_to_block(DocumentPart(source=DocumentSource(url="https://x.invalid/a.pdf"))) == {
        "type": "document",
        "source": {"type": "url", "url": "https://x.invalid/a.pdf"},
    }
    with pytest.raises(ValueError, match="exactly one of data \\(base64\\) or url"):
        DocumentSource(data="JVBE", url="https://x.invalid/a.pdf")
    search = {"type": "search_result", "source": "s", "title": "t", "content": []}
    assert (
        part_to_block(OtherPart(provider="anthropic", kind="search_result", payload=search))
        == search
    )
    assert part_to_block(OtherPart(provider="openai", kind="audio", payload={"id": "x"})) == {
        "type": "text",
        "text": '[other:openai/audio] {"id":"x"}',
    }
    assert part_to_block(OtherPart(provider="x", kind="y")) == {
        "type": "text",
        "text": "[other:x/y]",
    }
    with pytest.raises(TypeError, match="not a content part: dict"):
        part_to_block({"type": "text", "text": "raw"})


def test_reasoning_is_replayed_at_the_start_of_its_assistant_turn_only_when_asked() -> None:
    thinking = {"type": "thinking", "thinking": "hmm", "signature": "sig"}
    redacted = {"type": "redacted_thinking", "data": "opaque"}
    messages = [
        UserMessage(content="q"),
        ReasoningMessage(content="hmm", raw_item=thinking),
        ReasoningMessage(content="[redacted]", raw_item=redacted),
        AssistantMessage(content="answer"),
        ReasoningMessage(content="no raw item"),
        UserMessage(content="q2"),
    ]
    replayed = to_anthropic_messages(messages, replay_thinking=True)
    assert replayed[1] == {
        "role": "assistant",
        "content": [thinking, redacted, {"type": "text", "text": "answer"}],
    }
    assert replayed[2] == {"role": "user", "content": [{"type": "text", "text": "q2"}]}
    assert to_anthropic_messages(messages)[1] == {
        "role": "assistant",
        "content": [{"type": "text", "text": "answer"}],
    }


def test_tools_and_tool_choice() -> None:
    read = FunctionToolDefinition(
        name="read", description="Read", parameters={"type": "object"}, strict=True
    )
    assert to_anthropic_tools([read], "auto") == [
        {"name": "read", "description": "Read", "input_schema": {"type": "object"}}
    ]
    assert to_anthropic_tools([read], "none") == []
    assert to_anthropic_tools([], "auto") == []
    assert to_anthropic_tools(None, None) == []
    assert to_anthropic_tool_choice("auto") == {"type": "auto"}
    assert to_anthropic_tool_choice("required") == {"type": "any"}
    assert to_anthropic_tool_choice("read") == {"type": "tool", "name": "read"}
    assert to_anthropic_tool_choice("none") is None
    assert to_anthropic_tool_choice(None) is None


def test_request_omits_tools_for_tool_choice_none_and_marks_cache_breakpoints() -> None:
    chat = AnthropicChat(api_key="k")
    read = FunctionToolDefinition(name="read", description="Read", parameters={"type": "object"})
    request = chat.build_request([UserMessage(content="q")], tools=[read], tool_choice="none")
    assert "tools" not in request
    assert "tool_choice" not in request
    assert "system" not in request
    assert request["messages"][0]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    # The API refuses cache_control on an empty text block.
    empty = chat.build_request([UserMessage(content="")])
    assert empty["messages"] == [{"role": "user", "content": [{"type": "text", "text": ""}]}]


def test_response_blocks_become_one_message_each() -> None:
    message = {
        "id": "msg_1",
        "model": "claude-sonnet-5-5",
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 3, "output_tokens": 4},
        "content": [
            {"type": "redacted_thinking", "data": "opaque"},
            {"type": "text", "text": "hi"},
            {"type": "tool_use", "id": "t1", "name": "calc", "input": "2+2"},
            {"type": "server_tool_use", "id": "s1", "name": "web_search", "input": {"q": "x"}},
        ],
    }
    completion = completion_from_anthropic(message, model="claude-sonnet-5-5")
    redacted, text, tool, other = completion.messages
    assert redacted == ReasoningMessage(content="[redacted]", raw_item=message["content"][0])
    assert text == AssistantMessage(content="hi")
    assert tool.tool_calls[0].function.arguments == '{"value":"2+2"}'  # type: ignore[union-attr]
    assert other == AssistantMessage(
        content=[
            OtherPart(provider="anthropic", kind="server_tool_use", payload=message["content"][3])
        ]
    )
    assert completion.usage is not None
    assert completion.usage.total_tokens == 7
    assert completion.provider_meta == {"id": "msg_1", "model": "claude-sonnet-5-5"}


def test_hosted_search_definitions_become_the_web_search_tool() -> None:
    from types import SimpleNamespace

    hosted = SimpleNamespace(
        type="hosted_search",
        name="web_search",
        provider=None,
        allowed_domains=["docs.python.org"],
        blocked_domains=None,
        max_uses=3,
        user_location={"city": "Paris", "country": "FR"},
    )
    elsewhere = SimpleNamespace(type="hosted_search", name="web_search", provider="openai")
    assert to_anthropic_tools([hosted, elsewhere], "auto") == [
        {
            "type": "web_search_20250305",
            "name": "web_search",
            "allowed_domains": ["docs.python.org"],
            "max_uses": 3,
            "user_location": {"type": "approximate", "city": "Paris", "country": "FR"},
        }
    ]


def test_a_system_message_can_opt_out_of_the_cache_breakpoint() -> None:
    chat = AnthropicChat(api_key="k")
    request = chat.build_request(
        [SystemMessage(content="s", cache=False), UserMessage(content="q")]
    )
    assert request["system"] == [{"type": "text", "text": "s"}]
    assert request["messages"][0]["content"][0]["cache_control"] == {"type": "ephemeral"}


def test_llm_errors_survive_pickling() -> None:
    import pickle

    from jupyter_codelia.llm import LlmError

    error = LlmError(
        "rate_limit", "slow down", status=429, retry_after_s=2.0, retry_source="retry-after"
    )
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.kind, copy.message, copy.status, copy.retry_after_s, copy.retry_source) == (
        "rate_limit",
        "slow down",
        429,
        2.0,
        "retry-after",
    )
    assert copy.retryable
