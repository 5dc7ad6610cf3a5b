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
from jupyter_codelia.llm.messages import context_block
from jupyter_codelia.llm.anthropic import AnthropicChat
from jupyter_codelia.testing import (
    OFFLINE_API_KEY,
    OFFLINE_BANNER,
    RecordedRequest,
    ScriptedAnthropicServer,
    ScriptError,
    by_prompt,
    end_demo,
    last_result,
    offline_demo,
    play,
    reply,
    text,
    tool_use,
)
from jupyter_codelia.testing._offline import has_real_credentials, latest_prompt

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
    end_demo()  # stop a server the test left running
    for name in VARIABLES:
        os.environ.pop(name, None)
    os.environ.update(saved)


def request_with(messages: list[dict[str, Any]]) -> RecordedRequest:
    return RecordedRequest(
        index=0, method="POST", path="/v1/messages", headers={}, json={"messages": messages}
    )


def tool_round(
    tool_id: str,
    name: str = "python",
    *,
    result: str = "",
    is_error: bool = False,
    input: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    call = {"type": "tool_use", "id": tool_id, "name": name, "input": input or {}}
    answer = {"type": "tool_result", "tool_use_id": tool_id, "content": result}
    if is_error:
        answer["is_error"] = True
    return [
        {"role": "assistant", "content": [call]},
        {"role": "user", "content": [answer]},
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
    assert "OPENAI_API_KEY" in note and "OPENROUTER_API_KEY" in note and "ollama:" in note
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
                    tool_use("tool_output_cache_grep", {"ref_id": last_result(request).ref})
                ),
            ]
        }
    )
    # The store named the entry toolu_42-6 (toolu_42 was taken): the script reads what the
    # result says, not the call id.
    cut = "1\n2\n\n[tool output truncated; ref=toolu_42-6]"
    messages = [{"role": "user", "content": "read the log"}, *tool_round("toolu_42", result=cut)]
    turn = answer(request_with(messages))
    assert turn.content[0].input == {"ref_id": "toolu_42-6"}


@pytest.mark.parametrize(
    ("script", "message"),
    [
        ({}, "by_prompt needs at least one cue"),
        ({"  ": [reply(text("x"))]}, "every cue must be non-empty text, got '  '"),
        ({"plot": reply(text("x"))}, "cue 'plot': the turns must be a list"),
        ({"plot": "hello"}, "cue 'plot': the turns must be a list"),
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


def test_last_result_by_name_its_ref_and_its_error() -> None:
    request = request_with(
        [
            {"role": "user", "content": "x"},
            *tool_round("toolu_1", result="big\n\n[tool output truncated; ref=toolu_1-3]"),
            *tool_round("toolu_2", "read", result="small"),
        ]
    )
    assert last_result(request).text == "small" and last_result(request).ref is None
    python = last_result(request, "python")
    assert (python.tool_use_id, python.name, python.ref) == ("toolu_1", "python", "toolu_1-3")
    with pytest.raises(ScriptError, match="the request has no earlier tool result of shell"):
        last_result(request, "shell")


def test_cues_match_what_the_person_typed_not_the_context_blocks() -> None:
    """The notebook outline of tools-tour holds "Todos: plan first", and its tag "outline":
    neither may pick the script of a prompt that does not say so."""
    answer = by_prompt({"plan": [reply(text("PLAN"))], "outline": [reply(text("OUTLINE"))]})
    outline = context_block("notebook_outline", "## 1. Todos: plan first\n## 2. read, edit")
    jobs = context_block("background_jobs", "still running: job-1 (make a plan)")
    prompt = {
        "role": "user",
        "content": [
            {"type": "text", "text": "Fix the typo in notes.md"},
            {"type": "text", "text": outline.text},
            {"type": "text", "text": jobs.text},
        ],
    }
    assert latest_prompt([prompt]) == ("Fix the typo in notes.md", 0)
    turn = answer(request_with([prompt]))
    assert "only have scripted answers" in turn.content[0].text
    # A tag the person typed inside their prompt is theirs: only whole blocks are context.
    typed = {"role": "user", "content": [{"type": "text", "text": "make a <plan> please"}]}
    assert answer(request_with([typed])) == reply(text("PLAN"))


def test_a_failed_or_unexpected_tool_result_stops_the_script_with_what_came_back() -> None:
    answer = by_prompt(
        {
            "build": [
                reply(tool_use("tool_output_cache_grep", {"pattern": "FAILED"}, expect="FAILED")),
                reply(tool_use("quote", {"item": "mango"}, may_fail=True)),
                reply(tool_use("read", {"file_path": "a.txt"})),
                reply(text("All good: the failure is test_big_csv.")),
            ]
        }
    )
    prompt = {"role": "user", "content": "why did the build fail"}
    first = answer(request_with([prompt]))
    assert isinstance(first, type(reply()))
    grep = {"pattern": "FAILED"}
    wrong = [prompt, *tool_round("t1", "tool_output_cache_grep", result="No matches", input=grep)]
    stopped = answer(request_with(wrong)).content[0].text
    assert "expected `tool_output_cache_grep` to return 'FAILED'" in stopped
    assert "No matches" in stopped and "stops here" in stopped

    found = [prompt, *tool_round("t1", "tool_output_cache_grep", result="x FAILED", input=grep)]
    assert answer(request_with(found)).content[0].name == "quote"
    mango = {"item": "mango"}
    expected_failure = [*found, *tool_round("t2", "quote", result="unknown", is_error=True,
                                            input=mango)]  # fmt: skip
    assert answer(request_with(expected_failure)).content[0].name == "read"
    failed = [*expected_failure, *tool_round("t3", "read", result="Permission denied: no",
                                             is_error=True, input={"file_path": "a.txt"})]  # fmt: skip
    note = answer(request_with(failed)).content[0].text
    assert "expected `read` to succeed" in note and "Permission denied: no" in note
    assert "All good" not in note


def test_play_plays_turns_in_order_for_any_prompt_and_checks_them_too() -> None:
    answer = play([reply(tool_use("python", {"code": "1/0"})), reply(text("It worked."))])
    prompt = {"role": "user", "content": "anything at all"}
    assert answer(request_with([prompt])).content[0].name == "python"
    failed = [prompt, *tool_round("t1", result="ZeroDivisionError", is_error=True,
                                  input={"code": "1/0"})]  # fmt: skip
    assert "expected `python` to succeed" in answer(request_with(failed)).content[0].text
    fine = [prompt, *tool_round("t1", result="1", input={"code": "1/0"})]
    assert answer(request_with(fine)) == reply(text("It worked."))
    past = [*fine, {"role": "assistant", "content": "It worked."}]
    past += tool_round("t2")
    assert "scripted turn is over" in answer(request_with(past)).content[0].text


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
    assert "set ANTHROPIC_API_KEY for Claude" in banner
    assert "OPENAI_API_KEY" in banner and "OPENROUTER_API_KEY" in banner and "Ollama" in banner
    assert OFFLINE_API_KEY not in banner
    # Said in every demo notebook, one with no %%codelia cell too (custom-tools).
    assert "%%codelia" not in banner

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


@pytest.mark.parametrize(
    ("provider", "real_key", "ends"),
    [
        ("anthropic", False, False),  # the demo is still the only model there is
        ("anthropic", True, True),  # a real key was set in a later cell
        ("openai", False, True),  # another provider was configured
        ("ollama", False, True),
    ],
)
def test_the_demo_hands_over_once_a_real_model_is_configured(
    clean_env: None, provider: str, real_key: bool, ends: bool
) -> None:
    """Without this the kernel stayed in the demo's full-access mode with a real model."""
    from jupyter_codelia.testing import end_demo_if_superseded

    os.environ["JUPYTER_CODELIA_APPROVAL_MODE"] = "minimal"
    server = offline_demo({"x": [reply(text("x"))]}, banner=False)
    assert server is not None
    if real_key:
        os.environ["ANTHROPIC_API_KEY"] = "sk-ant-the-real-one"
    assert end_demo_if_superseded(provider) is ends
    mode = os.environ["JUPYTER_CODELIA_APPROVAL_MODE"]
    assert mode == ("minimal" if ends else "full-access")
    assert ("ANTHROPIC_BASE_URL" in os.environ) is not ends
    assert end_demo_if_superseded(provider) is False  # nothing left to end
