"""ScriptedOpenAIServer at the HTTP level: JSON replies, errors, the CLI, the real SDK."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from typing import Any

import pytest

from jupyter_codelia.testing import (
    ScriptedOpenAIServer,
    ScriptError,
    fault,
    refusal,
    reply,
    text,
    thinking,
    tool_use,
    usage,
)

API_KEY = "sk-openai-test-SECRET-55555"
CHAT = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}


def post(url: str, body: Any, path: str, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(
        url + path,
        data=data,
        method="POST",
        headers={
            "content-type": "application/json",
            "authorization": f"Bearer {API_KEY}",
            **(headers or {}),
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read().decode())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read().decode())


def test_a_non_streamed_chat_completion_through_the_sdk() -> None:
    import openai

    script = [
        reply(thinking("hmm"), text("Reading."), tool_use("read", {"file_path": "a"})),
        reply("Done.", usage=usage(10, 2, cache_read=4)),
        refusal("No."),
    ]
    with ScriptedOpenAIServer(script) as server:
        client = openai.OpenAI(api_key=API_KEY, base_url=server.url, max_retries=0)
        first = client.chat.completions.create(**CHAT)  # type: ignore[call-overload]
        second = client.chat.completions.create(**CHAT)  # type: ignore[call-overload]
        third = client.chat.completions.create(**CHAT)  # type: ignore[call-overload]
        client.close()
    message = first.choices[0].message
    assert message.content == "Reading."
    assert message.tool_calls[0].function.arguments == '{"file_path":"a"}'
    assert message.model_extra["reasoning_content"] == "hmm"
    assert first.choices[0].finish_reason == "tool_calls"
    assert second.usage.prompt_tokens == 14
    assert second.usage.prompt_tokens_details.cached_tokens == 4
    assert third.choices[0].message.refusal == "No."
    assert third.choices[0].finish_reason == "stop"  # OpenAI ends a refusal normally


def test_a_non_streamed_response_through_the_sdk() -> None:
    import openai

    with ScriptedOpenAIServer([reply(text("Hi."), tool_use("ls"))]) as server:
        client = openai.OpenAI(api_key=API_KEY, base_url=server.url, max_retries=0)
        response = client.responses.create(model="gpt-5.1", input="hi")
        client.close()
    kinds = [item.type for item in response.output]
    assert kinds == ["message", "function_call"]
    assert response.output_text == "Hi."
    assert response.status == "completed"


@pytest.mark.parametrize(
    ("path", "body", "headers", "status", "message"),
    [
        ("/v1/other", CHAT, {}, 404, "Not found: POST /v1/other"),
        ("/v1/chat/completions", b"{nope", {}, 400, "request body is not valid JSON"),
        ("/v1/chat/completions", {"model": "m"}, {}, 400, "messages: Field required"),
        ("/v1/responses", {"model": "m"}, {}, 400, "input: Field required"),
        ("/v1/chat/completions", CHAT, {"authorization": ""}, 401, "Authorization header"),
    ],
)
def test_bad_requests_get_openai_style_errors(
    path: str, body: Any, headers: dict[str, str], status: int, message: str
) -> None:
    with ScriptedOpenAIServer([reply("unused")]) as server:
        got_status, got = post(server.root_url, body, path, headers)
        assert server.remaining == 1
    assert got_status == status
    assert set(got["error"]) == {"message", "type", "param", "code"}
    assert message in got["error"]["message"]


def test_faults_use_openai_statuses_and_codes() -> None:
    turns = [fault.rate_limit(retry_after=3), fault.overloaded(), fault.server_error()]
    with ScriptedOpenAIServer(turns) as server:
        answers = [post(server.root_url, CHAT, "/v1/chat/completions") for _ in turns]
    assert [status for status, _ in answers] == [429, 503, 500]
    assert answers[0][1]["error"]["code"] == "rate_limit_exceeded"
    assert answers[1][1]["error"]["code"] == "engine_overloaded"
    assert answers[2][1]["error"]["type"] == "server_error"


def test_a_script_that_runs_out_answers_500_saying_so() -> None:
    with ScriptedOpenAIServer([]) as server:
        status, body = post(server.root_url, CHAT, "/v1/chat/completions")
    assert status == 500
    assert "no scripted turn left for model request #1" in body["error"]["message"]
    assert server.errors


def test_a_single_turn_instead_of_a_list_is_refused_clearly() -> None:
    with pytest.raises(ScriptError, match=r"write ScriptedOpenAIServer\(\[reply\(...\)\]\)"):
        ScriptedOpenAIServer(reply("x"))  # type: ignore[arg-type]


def test_the_cli_serves_the_openai_api(tmp_path: Any) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"content": [{"type": "text", "text": "from the cli"}]}]))
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyter_codelia.testing",
            "--api",
            "openai",
            "--script",
            str(script),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        assert url.endswith("/v1")
        status, body = post(url.removesuffix("/v1"), CHAT, "/v1/chat/completions")
    finally:
        process.terminate()
        process.wait(timeout=30)
    assert status == 200
    assert body["choices"][0]["message"]["content"] == "from the cli"
