"""Secrets never reach the caller through events: deltas, texts, tool calls, permission asks."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel

from jupyter_codelia.agent import ConfirmResponse
from jupyter_codelia.agent import events as ev
from jupyter_codelia.agent.permissions import PermissionPolicy
from jupyter_codelia.llm.anthropic import AnthropicChat
from jupyter_codelia.testing import ScriptedAnthropicServer, reply, text, tool_use
from jupyter_codelia.tools import define_tool

from .conftest import FAKE_KEY

# Streamed word by word by the scripted server, so it always straddles several deltas.
PASSWORD = "correct horse battery staple"


class EchoInput(BaseModel):
    value: str


echo = define_tool(
    name="echo", description="Echo a value", input=EchoInput, execute=lambda p, ctx: "ok"
)


@pytest.mark.asyncio
async def test_events_carry_no_secret_and_deltas_add_up_to_the_redacted_text(
    server: ScriptedAnthropicServer,
    chat: AnthropicChat,
    make_agent: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DB_PASSWORD", PASSWORD)
    server.add(
        reply(
            text(f"The password is {PASSWORD} and the key is {FAKE_KEY}."),
            tool_use("echo", {"value": f"{PASSWORD} / {FAKE_KEY}"}),
        ),
        reply(text(f"Done: {PASSWORD}, {FAKE_KEY}")),
    )
    asked: list[ev.PermissionRequestEvent] = []

    async def confirm(request: ev.PermissionRequestEvent) -> ConfirmResponse:
        asked.append(request)
        return ConfirmResponse(decision="allow")

    agent = make_agent(chat, [echo], permissions=PermissionPolicy(mode="minimal"), confirm=confirm)
    events = [e async for e in agent.run_stream("go")]
    dumped = json.dumps([ev.event_to_json(e) for e in events])
    for fragment in (PASSWORD, "horse battery", FAKE_KEY, FAKE_KEY[:16]):
        assert fragment not in dumped
    assert PASSWORD not in asked[0].model_dump_json() and asked[0].args == {
        "value": "[REDACTED] / [REDACTED]"
    }
    call = next(e for e in events if isinstance(e, ev.ToolCallEvent))
    assert call.args == {"value": "[REDACTED] / [REDACTED]"}
    assert call.raw_args is not None and "[REDACTED]" in call.raw_args
    texts = [e.content for e in events if isinstance(e, ev.TextEvent)]
    assert texts == ["The password is [REDACTED] and the key is [REDACTED]."]
    assert isinstance(events[-1], ev.FinalEvent)
    assert events[-1].content == "Done: [REDACTED], [REDACTED]"
    deltas = "".join(e.delta for e in events if isinstance(e, ev.TextDeltaEvent))
    assert deltas == texts[0] + events[-1].content
    # The model itself still saw what it wrote: only what leaves the agent is masked.
    assert PASSWORD in json.dumps(server.requests[1].messages)
