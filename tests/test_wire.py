"""The wire protocol: typed kernel messages, and the side panel's generated TypeScript mirror."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import TypeAdapter, ValidationError

from jupyter_codelia import wire
from jupyter_codelia.agent import events as ev

WIRE_TS = Path(__file__).resolve().parents[1] / "labextension" / "src" / "wire.ts"


def test_the_committed_typescript_mirror_is_the_generators_output() -> None:
    assert WIRE_TS.read_text() == wire.typescript(), (
        "labextension/src/wire.ts is out of date with jupyter_codelia/wire.py: run "
        "`python -m jupyter_codelia.wire --typescript > labextension/src/wire.ts`"
    )


def test_the_mirror_declares_every_agent_event_and_kernel_message() -> None:
    text = wire.typescript()
    for name in ("Hello", "Response", "RunStarted", "AgentEventMessage", "RunStatusMessage"):
        assert f"export type {name} = " in text
    for event_type in ("text_delta", "tool_call", "permission.request", "todos.updated", "final"):
        assert f"type: '{event_type}';" in text
    # Optional fields are left out when None, so TypeScript sees them as absent-or-null.
    assert "  cost_usd?: number | null;" in text
    assert "  seq: number;" in text


def test_messages_sent_by_the_kernel_validate_against_the_protocol() -> None:
    adapter: TypeAdapter[wire.KernelMessage] = TypeAdapter(wire.KernelMessage)
    event = ev.ToolCallEvent(tool="python", args={"code": "1"}, tool_call_id="t1", seq=4)
    sent = [
        wire.Hello(session_id=None, active_run=None, api_key_configured=False).dump(),
        wire.response("r1", result={"sessions": []}),
        wire.response("r2", error="session not found: x"),
        wire.RunStarted(run_id="run", session_id="s", prompt="hi", source="panel").dump(),
        wire.event_message("run", 4, ev.event_to_json(event)),
        wire.status_message("run", "awaiting_ui", "waiting for confirmation"),
    ]
    for message in sent:
        adapter.validate_python(message)
    assert sent[0]["session_id"] is None, "required fields are sent even when null"
    assert "error" not in sent[1] and sent[2]["ok"] is False
    with pytest.raises(ValidationError):
        adapter.validate_python({"type": "run.status", "run_id": "run", "status": "paused"})


def test_a_transcript_replays_run_log_records_as_live_messages() -> None:
    final = {"type": "final", "content": "x"}
    records = [
        {"type": "header", "session_id": "s"},
        {"type": "run.start", "run_id": "r", "input": {"type": "text", "text": "plot it"}},
        {
            "type": "agent.event",
            "run_id": "r",
            "seq": 3,
            "event": {"type": "final", "content": "x"},
        },
        {"type": "run.status", "run_id": "r", "status": "completed"},
        {"type": "run.status", "run_id": "r", "status": "not-a-status"},
        {"type": "agent.event", "run_id": None, "seq": 1, "event": {}},
    ]
    assert wire.transcript_messages(records, "s") == [
        {"type": "run.started", "run_id": "r", "session_id": "s", "prompt": "plot it",
         "source": "magic", "demo": False},
        {"type": "agent.event", "run_id": "r", "seq": 3, "event": final},
        {"type": "run.status", "run_id": "r", "status": "completed"},
    ]  # fmt: skip


DOC = Path(__file__).resolve().parents[1] / "docs" / "comm-protocol.md"


def test_the_protocol_doc_lists_every_request_with_its_fields() -> None:
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index("## Requests") : text.index("Response: ")]
    rows = {
        match.group(1): match.group(2)
        for match in re.finditer(r"^\| `([a-z.]+)` \| ([^|]*(?:\\\|[^|]*)*) \|", section, re.M)
    }
    models = wire.request_models()
    assert sorted(rows) == sorted(models), "docs/comm-protocol.md's request table is out of date"
    for kind, model in models.items():
        named = set(re.findall(r"`(\w+)`", rows[kind]))
        fields = set(model.model_fields) - {"type", "request_id"}
        assert fields <= named, f"{kind}: the doc does not name {sorted(fields - named)}"
    assert set(wire.RESULTS) == set(models)


def test_every_request_parses_and_each_type_has_a_result_model() -> None:
    adapter: TypeAdapter[wire.Request] = TypeAdapter(wire.Request)
    parsed = adapter.validate_python(
        {"type": "cache.grep", "request_id": "r", "ref_id": "x", "pattern": "a", "extra": 1}
    )
    assert isinstance(parsed, wire.CacheGrepRequest) and parsed.regex is False
    with pytest.raises(ValidationError):  # strict: JSON gives numbers as numbers
        adapter.validate_python({"type": "cache.line", "request_id": "r", "ref_id": "x",
                                 "line_number": "3"})  # fmt: skip
    assert "run.start" not in wire.CONTROL_SAFE and "run.cancel" in wire.CONTROL_SAFE
    text = wire.typescript()
    assert "export type Request = RunStartRequest | " in text
    assert "  'session.transcript': TranscriptResult;" in text
    assert "  events: Array<KernelMessage>;" in text
