"""Secrets never reach the disk: every file the store writes is checked."""

from __future__ import annotations

from pathlib import Path

import pytest

from jupyter_codelia._redact import REDACTED, register_secret
from jupyter_codelia.agent.events import TextEvent, ToolCallEvent
from jupyter_codelia.session import SessionState, SessionStore, read_jsonl

FAKE_KEY = "sk-ant-api03-TESTONLY-q1w2e3r4t5y6u7i8o9p0"
FAKE_TOKEN = "plain-looking-token-value-77"
REGISTERED = "registered-in-code-secret-55"


@pytest.fixture
def secrets(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    monkeypatch.setenv("HF_TOKEN", FAKE_TOKEN)
    register_secret(REGISTERED)
    return [FAKE_KEY, FAKE_TOKEN, REGISTERED]


def all_bytes_under(home: Path) -> list[tuple[Path, bytes]]:
    return [(p, p.read_bytes()) for p in home.rglob("*") if p.is_file()]


def test_no_secret_appears_in_any_file_the_store_writes(tmp_path: Path, secrets: list[str]) -> None:
    store = SessionStore(tmp_path / "home")
    sid = store.new_session_id()
    every = " / ".join(secrets)
    with store.open_run_log(
        run_id="run-1",
        session_id=sid,
        header={"runtime": {"env": {"ANTHROPIC_API_KEY": FAKE_KEY}}, "meta": {"note": every}},
    ) as log:
        log.append("run.start", input={"type": "text", "text": f"my key is {FAKE_KEY}"})
        log.append("agent.event", seq=0, event=TextEvent(content=every))
        log.append(
            "agent.event",
            seq=1,
            event=ToolCallEvent(
                tool="python", args={"code": f"k = '{FAKE_TOKEN}'"}, tool_call_id="t"
            ),
        )
        log.append("tool.output", tool="python", tool_call_id="t", result_raw=every * 1000)
        log.append(
            "llm.request",
            seq=1,
            input={"messages": [{"role": "user", "content": [{"type": "text", "text": every}]}]},
        )
    store.save_state(
        SessionState(
            session_id=sid,
            title=f"about {REGISTERED}",
            messages=[
                {"role": "user", "content": f"use {FAKE_KEY}"},
                {"role": "tool", "tool_call_id": "t", "tool_name": "x", "content": [every]},
            ],
            meta={"nested": {"deep": [(FAKE_TOKEN,)], FAKE_KEY: "as a key"}},
        )
    )
    store.close()

    files = all_bytes_under(store.home)
    assert {p.name for p, _ in files} >= {"run-1.jsonl", f"{sid}.json", "index.db"}
    for path, data in files:
        for secret in secrets:
            assert secret.encode() not in data, f"{secret} leaked into {path}"

    # What was written is still useful: the secrets are replaced, the rest kept.
    state = store.load_state(sid)
    assert state.messages[0]["content"] == f"use {REDACTED}"
    assert state.meta == {"nested": {"deep": [[REDACTED]], REDACTED: "as a key"}}
    assert state.title == f"about {REDACTED}"
    assert store.list_sessions()[0].last_user_message == f"use {REDACTED}"
    records = list(read_jsonl(log.path))
    assert records[0]["runtime"] == {"env": {"ANTHROPIC_API_KEY": REDACTED}}
    assert records[1]["input"]["text"] == f"my key is {REDACTED}"
    assert records[3]["event"]["args"] == {"code": f"k = '{REDACTED}'"}


def test_the_callers_objects_are_not_modified(tmp_path: Path, secrets: list[str]) -> None:
    store = SessionStore(tmp_path)
    messages = [{"role": "user", "content": FAKE_KEY}]
    state = SessionState(session_id="s", messages=messages)
    store.save_state(state)
    assert state.messages[0]["content"] == FAKE_KEY
    fields = {"text": FAKE_KEY}
    with store.open_run_log(run_id="r", session_id="s", header={}) as log:
        log.append("run.start", input=fields)
    assert fields == {"text": FAKE_KEY}


def test_a_secret_at_the_summary_clip_boundary_leaves_no_prefix(
    tmp_path: Path, secrets: list[str]
) -> None:
    # The list summary clips the last user message at 500 characters; clipping before
    # redacting would leave the first characters of the key in the index.
    store = SessionStore(tmp_path)
    text = "x" * 490 + FAKE_TOKEN + " tail"
    store.save_state(SessionState(session_id="s", messages=[{"role": "user", "content": text}]))
    summary = store.list_sessions()[0].last_user_message
    assert summary is not None
    assert summary.startswith("x" * 490 + REDACTED[:9])
    store.close()
    for path, data in all_bytes_under(tmp_path):
        assert FAKE_TOKEN[:8].encode() not in data, f"a secret's prefix leaked into {path}"
