"""ScriptedAnthropicServer on its own: raw HTTP, the SDK's JSON path, scripts, the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from jupyter_codelia.testing import (
    Reply,
    ScriptedAnthropicServer,
    ScriptError,
    fault,
    load_script,
    parse_script,
    parse_turn,
    redacted_thinking,
    reply,
    text,
    thinking,
    tool_use,
    usage,
)

API_KEY = "sk-ant-test-SECRET-0123456789"
MINIMAL = {
    "model": "claude-sonnet-5-5",
    "max_tokens": 64,
    "messages": [{"role": "user", "content": "hi"}],
}


def post(
    url: str, body: Any, *, path: str = "/v1/messages", headers: dict[str, str] | None = None
) -> tuple[int, Any]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(
        url + path,
        data=data,
        method="POST",
        headers={"content-type": "application/json", "x-api-key": API_KEY, **(headers or {})},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            raw = response.read().decode()
            status = response.status
            kind = response.headers.get("content-type")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read().decode())
    return status, (json.loads(raw) if kind == "application/json" else raw)


def test_non_streaming_reply_is_a_whole_message() -> None:
    import anthropic

    script = [
        reply(text("Looking."), tool_use("read", {"file_path": "a.txt"})),
        reply("Done.", usage=usage(10, 2, cache_read=7, cache_creation=3)),
    ]
    with ScriptedAnthropicServer(script) as server:
        client = anthropic.Anthropic(api_key=API_KEY, base_url=server.url, max_retries=0)
        first = client.messages.create(**MINIMAL)  # type: ignore[call-overload]
        second = client.messages.create(**MINIMAL)  # type: ignore[call-overload]
        client.close()
    assert first.stop_reason == "tool_use"
    assert [b.type for b in first.content] == ["text", "tool_use"]
    assert first.content[1].id == "toolu_1"  # type: ignore[union-attr]
    assert first.content[1].input == {"file_path": "a.txt"}  # type: ignore[union-attr]
    assert first.usage.input_tokens > 0  # estimated from the request
    assert first.model == "claude-sonnet-5-5"
    assert second.stop_reason == "end_turn"
    assert (second.usage.input_tokens, second.usage.output_tokens) == (10, 2)
    assert second.usage.cache_read_input_tokens == 7
    assert second.usage.cache_creation_input_tokens == 3
    assert [r.path for r in server.requests] == ["/v1/messages", "/v1/messages"]
    assert server.requests[0].json == MINIMAL
    assert server.requests[0].headers["authorization"] == "[redacted]"
    assert server.remaining == 0


def test_streamed_events_follow_the_messages_api_order() -> None:
    turn = reply(
        thinking("a b"), redacted_thinking("zz"), text("hi there"), tool_use("t", {"k": 1})
    )
    with ScriptedAnthropicServer([turn]) as server:
        status, body = post(server.url, {**MINIMAL, "stream": True})
    assert status == 200
    names = [line[len("event: ") :] for line in body.splitlines() if line.startswith("event: ")]
    assert names == [
        "message_start",
        "ping",
        *["content_block_start", "content_block_delta", "content_block_delta"],  # thinking
        "content_block_delta",  # signature_delta
        "content_block_stop",
        *["content_block_start", "content_block_stop"],  # redacted thinking
        *["content_block_start", "content_block_delta", "content_block_delta"],  # text
        "content_block_stop",
        *["content_block_start", "content_block_delta", "content_block_stop"],  # tool use
        "message_delta",
        "message_stop",
    ]
    assert [name for name, _ in server.requests[0].events] == names
    deltas = [d["delta"] for n, d in server.requests[0].events if n == "content_block_delta"]
    assert {"type": "signature_delta", "signature": "sig-scripted"} in deltas


@pytest.mark.parametrize(
    ("path", "body", "headers", "status", "message"),
    [
        ("/v1/other", MINIMAL, {}, 404, "Not found: POST /v1/other"),
        ("/v1/messages", b"{nope", {}, 400, "request body is not valid JSON"),
        ("/v1/messages", [1], {}, 400, "request body must be a JSON object"),
        ("/v1/messages", {"model": "m", "messages": []}, {}, 400, "max_tokens: Field required"),
        ("/v1/messages", MINIMAL, {"x-api-key": ""}, 401, "x-api-key or Authorization header"),
    ],
)
def test_bad_requests_get_api_style_errors(
    path: str, body: Any, headers: dict[str, str], status: int, message: str
) -> None:
    with ScriptedAnthropicServer([reply("unused")]) as server:
        got_status, got = post(server.url, body, path=path, headers=headers)
        assert server.remaining == 1  # a refused request plays no turn
    assert got_status == status
    assert got["type"] == "error"
    assert message in got["error"]["message"]


def test_count_tokens_answers_without_playing_a_turn() -> None:
    with ScriptedAnthropicServer([reply("unused")]) as server:
        status, body = post(
            server.url,
            {"model": "m", "messages": MINIMAL["messages"]},
            path="/v1/messages/count_tokens",
        )
        assert server.remaining == 1
    assert status == 200
    assert body["input_tokens"] > 0


def test_a_script_function_answers_from_the_request() -> None:
    def echo(request: Any) -> Any:
        last = request.messages[-1]["content"]
        if last == "fail":
            raise KeyError("no such case")
        if last == "nothing":
            return None
        return {"content": [{"type": "text", "text": f"you said {last}"}]}

    with ScriptedAnthropicServer(echo) as server:
        ok_status, ok = post(server.url, MINIMAL)
        fail_status, failed = post(
            server.url, {**MINIMAL, "messages": [{"role": "user", "content": "fail"}]}
        )
        none_status, nothing = post(
            server.url, {**MINIMAL, "messages": [{"role": "user", "content": "nothing"}]}
        )
        with pytest.raises(ScriptError, match="answers from a function; add"):
            server.add(reply("x"))
    assert ok_status == 200
    assert ok["content"] == [{"type": "text", "text": "you said hi"}]
    assert fail_status == 500
    assert failed["error"]["message"] == (
        "ScriptedAnthropicServer: the script function raised KeyError: 'no such case'"
    )
    assert none_status == 500
    assert "returned None; return reply(...) or fault.<kind>(...)" in nothing["error"]["message"]


def test_turns_can_be_added_while_running() -> None:
    with ScriptedAnthropicServer() as server:
        status, body = post(server.url, MINIMAL)
        assert status == 500
        assert "the script has 0 turn(s)" in body["error"]["message"]
        server.add(reply("late"), {"fault": "overloaded"})
        assert server.remaining == 2
        assert post(server.url, MINIMAL)[1]["content"][0]["text"] == "late"
        status, body = post(server.url, MINIMAL)
    assert status == 529
    assert body["error"]["type"] == "overloaded_error"


def test_faults_answer_non_streaming_requests_too() -> None:
    with ScriptedAnthropicServer(
        [fault.rate_limit(retry_after=2), fault.status(413, message="too big")]
    ) as server:
        limited = post(server.url, MINIMAL)
        too_big = post(server.url, MINIMAL)
    assert limited[0] == 429
    assert limited[1]["error"]["type"] == "rate_limit_error"
    assert too_big == (
        413,
        {"type": "error", "error": {"type": "request_too_large", "message": "too big"}},
    )


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ([{"content": [{"type": "text"}]}], "turn 1: content[0].text: Field required"),
        ([{"content": [], "colour": "red"}], "turn 1: colour: Extra inputs are not permitted"),
        ([{"fault": "status"}], "turn 1: (turn): Value error, a 'status' fault needs status="),
        ([{"fault": "server_error", "status": 200}], "fault status must be an HTTP error code"),
        ([{"fault": "explode"}], "turn 1: fault: Input should be 'rate_limit'"),
        ([reply("ok"), 3], "turn 2: expected an object like"),
        ({"content": []}, "a script is a JSON list of turns"),
    ],
)
def test_bad_scripts_say_what_to_fix(raw: Any, message: str) -> None:
    with pytest.raises(ScriptError) as caught:
        parse_script(raw)
    assert message in str(caught.value)


def test_json_scripts_round_trip(tmp_path: Path) -> None:
    turns = [
        reply(text("a"), tool_use("read", {"x": 1}), stop_reason="tool_use", delay_s=0.5),
        fault.drop(after_events=2, reply=reply("partial")),
    ]
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"turns": [t.model_dump(mode="json") for t in turns]}))
    assert load_script(path) == turns
    assert parse_turn(turns[0]) is turns[0]
    with pytest.raises(ScriptError, match="cannot read script file"):
        load_script(tmp_path / "missing.json")
    (tmp_path / "broken.json").write_text("[{")
    with pytest.raises(ScriptError, match="is not valid JSON"):
        load_script(tmp_path / "broken.json")


def test_url_before_start_is_an_error() -> None:
    server = ScriptedAnthropicServer([])
    with pytest.raises(RuntimeError, match=r"not running: call start\(\) or use `with`"):
        _ = server.url
    server.start()
    try:
        assert server.url.startswith("http://127.0.0.1:")
        assert server.start() is server  # idempotent
    finally:
        server.stop()
    server.stop()  # idempotent


def test_stop_interrupts_a_slow_stream() -> None:
    import threading

    slow = reply(" ".join(["word"] * 100), delay_s=5.0)
    server = ScriptedAnthropicServer([slow]).start()
    url = server.url
    outcome: list[Any] = []
    client = threading.Thread(
        target=lambda: outcome.append(_safe_post(url, {**MINIMAL, "stream": True}))
    )
    client.start()
    from jupyter_codelia.testing import wait_for

    assert wait_for(lambda: len(server.requests) == 1, timeout=30)
    server.stop()
    client.join(timeout=30)
    assert not client.is_alive()
    assert outcome  # the client saw the connection end instead of hanging


def _safe_post(url: str, body: Any) -> str:
    try:
        return str(post(url, body)[0])
    except Exception as exc:  # the connection is cut mid-body
        return type(exc).__name__


def test_the_cli_serves_a_json_script_and_records_requests(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"content": [{"type": "text", "text": "from a process"}]}]))
    record = tmp_path / "requests.jsonl"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyter_codelia.testing",
            "--script",
            str(script),
            "--record",
            str(record),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        status, body = post(url, MINIMAL)
    finally:
        process.terminate()
        process.wait(timeout=30)
    assert process.returncode == 0
    assert status == 200
    assert body["content"] == [{"type": "text", "text": "from a process"}]
    (recorded,) = [json.loads(line) for line in record.read_text().splitlines()]
    assert recorded["json"] == MINIMAL
    assert recorded["headers"]["x-api-key"] == "[redacted]"
    assert API_KEY not in record.read_text()


def test_the_cli_rejects_a_bad_script(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"content": "not a list"}]))
    done = subprocess.run(
        [sys.executable, "-m", "jupyter_codelia.testing", "--script", str(script)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("error: turn 1: content: Input should be a valid list")
    assert done.stdout == ""


def test_reply_defaults() -> None:
    turn = reply("plain", tool_use("x"))
    assert isinstance(turn, Reply)
    assert turn.effective_stop_reason() == "tool_use"
    assert reply("only text").effective_stop_reason() == "end_turn"


def test_a_single_turn_instead_of_a_list_is_refused_clearly() -> None:
    with pytest.raises(ScriptError, match=r"write ScriptedAnthropicServer\(\[reply\(...\)\]\)"):
        ScriptedAnthropicServer(reply("x"))  # type: ignore[arg-type]


def test_a_script_file_path_is_loaded(tmp_path: Path) -> None:
    path = tmp_path / "turns.json"
    path.write_text(json.dumps([{"content": [{"type": "text", "text": "from file"}]}]))
    with ScriptedAnthropicServer(str(path)) as server:
        status, body = post(server.url, MINIMAL)
    assert (status, body["content"]) == (200, [{"type": "text", "text": "from file"}])


def test_a_failing_request_hook_is_reported_not_fatal() -> None:
    with ScriptedAnthropicServer([reply("fine")]) as server:
        server.on_request = lambda _request: 1 / 0  # type: ignore[func-returns-value]
        status, _ = post(server.url, MINIMAL)
    assert status == 200
    assert server.errors == ["on_request hook raised ZeroDivisionError: division by zero"]


def test_repr_shows_where_and_how_far() -> None:
    server = ScriptedAnthropicServer([reply("a"), reply("b")])
    assert repr(server) == "ScriptedAnthropicServer(stopped, requests=0, remaining=2)"
    with server:
        post(server.url, MINIMAL)
        assert repr(server) == f"ScriptedAnthropicServer({server.url}, requests=1, remaining=1)"
    assert "function" in repr(ScriptedAnthropicServer(lambda _r: reply("x")))
