"""offline_demo / by_prompt: the key-less path every demo notebook takes, over real HTTP."""

from __future__ import annotations

import asyncio
import os
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from jupyter_codelia.llm import UserMessage
from jupyter_codelia.llm.anthropic import AnthropicChat
from jupyter_codelia.testing import (
    OFFLINE_API_KEY,
    OFFLINE_BANNER,
    RecordedRequest,
    ScriptedAnthropicServer,
    ScriptError,
    by_prompt,
    last_tool_use_id,
    offline_demo,
    reply,
    text,
    tool_use,
)
from jupyter_codelia.testing._offline import _end_demo, has_real_credentials, latest_prompt

VARIABLES = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
    "JUPYTER_CODELIA_APPROVAL_MODE",
)


@pytest.fixture
def clean_env() -> Iterator[None]:
    """No Anthropic variables during the test; the previous values come back afterwards."""
    saved = {name: os.environ.pop(name) for name in VARIABLES if name in os.environ}
    yield
    _end_demo()  # stop a server the test left running
    for name in VARIABLES:
        os.environ.pop(name, None)
    os.environ.update(saved)


def request_with(messages: list[dict[str, Any]]) -> RecordedRequest:
    return RecordedRequest(
        index=0, method="POST", path="/v1/messages", headers={}, json={"messages": messages}
    )


def tool_round(tool_id: str, name: str = "python") -> list[dict[str, Any]]:
    return [
        {"role": "assistant", "content": [{"type": "tool_use", "id": tool_id, "name": name}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_id}]},
    ]


def test_by_prompt_plays_the_turns_of_the_matching_cue_in_order() -> None:
    answer = by_prompt(
        {
            "Plot": [reply(text("plot 1")), reply(text("plot 2"))],
            "table": [reply(text("table 1"))],
        }
    )
    first = [{"role": "user", "content": "please PLOT revenue"}]
    assert answer(request_with(first)) == reply(text("plot 1"))
    second = first + tool_round("toolu_7")
    assert answer(request_with(second)) == reply(text("plot 2"))
    # A new prompt restarts its own cue at turn one, whatever came before (re-run cells).
    third = [*second, {"role": "assistant", "content": "ok"}]
    third.append({"role": "user", "content": [{"type": "text", "text": "a table now"}]})
    assert answer(request_with(third)) == reply(text("table 1"))


def test_by_prompt_answers_unknown_prompts_and_extra_calls_with_a_note() -> None:
    answer = by_prompt({"plot": [reply(text("only turn"))]})
    unknown = answer(request_with([{"role": "user", "content": "write a poem"}]))
    assert isinstance(unknown, type(reply()))
    note = unknown.content[0].text
    assert "offline demo" in note and "'plot'" in note and "ANTHROPIC_API_KEY" in note
    past_end = [{"role": "user", "content": "plot it"}, *tool_round("toolu_1")]
    assert answer(request_with(past_end)).content[0].text == note
    custom = by_prompt({"plot": []}, fallback="Nothing scripted.")
    assert custom(request_with([{"role": "user", "content": "plot"}])) == reply(
        text("Nothing scripted.")
    )


def test_by_prompt_turns_may_be_functions_of_the_request() -> None:
    answer = by_prompt(
        {
            "log": [
                reply(tool_use("python", {"code": "print(1)"})),
                lambda request: reply(
                    tool_use("tool_output_cache_grep", {"ref_id": last_tool_use_id(request)})
                ),
            ]
        }
    )
    messages = [{"role": "user", "content": "read the log"}, *tool_round("toolu_42")]
    turn = answer(request_with(messages))
    assert turn.content[0].input == {"ref_id": "toolu_42"}


@pytest.mark.parametrize(
    ("script", "message"),
    [
        ({}, "by_prompt needs at least one cue"),
        ({"  ": [reply(text("x"))]}, "every cue must be non-empty text, got '  '"),
        ({"plot": reply(text("x"))}, "the turns of cue 'plot' must be a list"),
        ({"plot": "hello"}, "the turns of cue 'plot' must be a list"),
        ({"plot": [{"content": 3}]}, "cue 'plot', turn 1"),
    ],
)
def test_by_prompt_rejects_bad_scripts_with_a_clear_error(script: Any, message: str) -> None:
    with pytest.raises(ScriptError) as caught:
        by_prompt(script)
    assert message in str(caught.value)


def test_latest_prompt_skips_tool_results() -> None:
    messages = [
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "a"},
        {"role": "user", "content": [{"type": "text", "text": "second"}]},
        *tool_round("toolu_1"),
        *tool_round("toolu_2"),
    ]
    assert latest_prompt(messages) == ("second", 2)
    assert latest_prompt([]) == ("", 0)


def test_last_tool_use_id_by_name_and_its_error() -> None:
    request = request_with(
        [{"role": "user", "content": "x"}, *tool_round("toolu_1"), *tool_round("toolu_2", "read")]
    )
    assert last_tool_use_id(request) == "toolu_2"
    assert last_tool_use_id(request, "python") == "toolu_1"
    with pytest.raises(ScriptError, match="the request has no earlier tool call of shell"):
        last_tool_use_id(request, "shell")


def test_real_credentials_are_told_apart_from_the_demo_key() -> None:
    assert not has_real_credentials({})
    assert not has_real_credentials({"ANTHROPIC_API_KEY": OFFLINE_API_KEY})
    assert not has_real_credentials({"ANTHROPIC_API_KEY": "   "})
    assert has_real_credentials({"ANTHROPIC_API_KEY": "sk-ant-real-looking"})
    assert has_real_credentials({"ANTHROPIC_AUTH_TOKEN": "bearer-token"})


def test_with_a_real_key_offline_demo_changes_nothing(
    clean_env: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-a-real-key-here")
    assert offline_demo({"plot": [reply(text("x"))]}) is None
    assert os.environ["ANTHROPIC_API_KEY"] == "sk-ant-a-real-key-here"
    assert "ANTHROPIC_BASE_URL" not in os.environ
    assert "JUPYTER_CODELIA_APPROVAL_MODE" not in os.environ
    assert capsys.readouterr().out == ""


def test_without_a_key_the_sdk_reaches_the_scripted_server(
    clean_env: None, capsys: pytest.CaptureFixture[str]
) -> None:
    server = offline_demo({"hello": [reply(text("Hi from the script."))]})
    assert isinstance(server, ScriptedAnthropicServer)
    assert os.environ["ANTHROPIC_BASE_URL"] == server.url
    assert os.environ["ANTHROPIC_API_KEY"] == OFFLINE_API_KEY
    assert os.environ["JUPYTER_CODELIA_APPROVAL_MODE"] == "full-access"
    banner = capsys.readouterr().out  # no IPython display here: the banner is printed
    assert OFFLINE_BANNER in banner and server.url in banner and "full-access" in banner
    assert "set ANTHROPIC_API_KEY and run this cell again" in banner
    assert OFFLINE_API_KEY not in banner

    chat = AnthropicChat(model="claude-sonnet-5-5")  # key and URL from the environment
    completion = asyncio.run(chat.ainvoke([UserMessage(content="hello there")]))
    assert completion.messages[0].content == "Hi from the script."
    assert server.requests[0].headers["authorization"] == "[redacted]"
    unknown = asyncio.run(chat.ainvoke([UserMessage(content="something else")]))
    assert "only have scripted answers" in unknown.messages[0].content


def test_a_second_call_replaces_the_first_server(clean_env: None) -> None:
    first = offline_demo([reply(text("one"))], approval_mode=None, banner=False)
    assert first is not None
    old_url = first.url
    assert "JUPYTER_CODELIA_APPROVAL_MODE" not in os.environ
    second = offline_demo([reply(text("two"))], approval_mode="trusted", banner=False)
    assert second is not None and second is not first
    assert os.environ["ANTHROPIC_BASE_URL"] == second.url
    assert os.environ["JUPYTER_CODELIA_APPROVAL_MODE"] == "trusted"
    with pytest.raises(urllib.error.URLError):  # the old server is gone, not leaking a thread
        urllib.request.urlopen(f"{old_url}/v1/messages", timeout=5)


def test_a_real_key_set_later_ends_the_demo_and_restores_the_environment(
    clean_env: None,
) -> None:
    os.environ["JUPYTER_CODELIA_APPROVAL_MODE"] = "trusted"  # the person's own setting
    server = offline_demo({"x": [reply(text("x"))]}, banner=False)
    assert server is not None
    url = server.url
    assert os.environ["JUPYTER_CODELIA_APPROVAL_MODE"] == "full-access"
    os.environ["ANTHROPIC_API_KEY"] = "sk-ant-the-real-one"  # e.g. set with getpass in a cell
    assert offline_demo({"x": [reply(text("x"))]}, banner=False) is None
    assert os.environ["ANTHROPIC_API_KEY"] == "sk-ant-the-real-one"
    assert "ANTHROPIC_BASE_URL" not in os.environ  # back to the real endpoint
    assert os.environ["JUPYTER_CODELIA_APPROVAL_MODE"] == "trusted"
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(f"{url}/v1/messages", timeout=5)
