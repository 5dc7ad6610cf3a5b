"""Context blocks for one turn: the model reads them after the prompt, the logs keep them apart."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from jupyter_codelia.llm.messages import context_block
from jupyter_codelia.session import SessionStore, read_jsonl
from jupyter_codelia.testing import ScriptedServer, reply, text


@pytest.mark.asyncio
async def test_context_follows_the_prompt_for_the_model_and_the_log_keeps_the_prompt_alone(
    server: ScriptedServer, chat: Any, make_agent: Any, tmp_path: Path
) -> None:
    server.add(reply(text("Seen.")), reply(text("Again.")))
    store = SessionStore(tmp_path / "home")
    agent = make_agent(chat, session_store=store)
    outline = context_block("notebook_outline", "3 cells")
    await agent.run("tidy the notebook", context=[outline, "Job job-1 finished."])
    await agent.run("once more", context=[context_block("background_jobs", "job-1 running")])
    await agent.flush()

    sent = json.dumps(server.requests[0].conversation[-1]["content"])
    assert sent.index("tidy the notebook") < sent.index("3 cells") < sent.index("job-1 finished")
    later = json.dumps(server.requests[1].conversation[-1]["content"])
    assert "once more" in later and "3 cells" not in later
    starts = [
        record
        for path in store.run_log_paths(agent.session_id)
        for record in read_jsonl(path)
        if record["type"] == "run.start"
    ]
    assert starts[0]["input"] == {"type": "text", "text": "tidy the notebook"}
    assert starts[0]["context"] == [
        {"type": "text", "text": "<notebook_outline>\n3 cells\n</notebook_outline>",
         "context": "notebook_outline"},
        {"type": "text", "text": "<context>\nJob job-1 finished.\n</context>",
         "context": "context"},
    ]  # fmt: skip
    assert [block["context"] for block in starts[1]["context"]] == ["background_jobs"]
    # The title and the list's last message are what the person typed, never a context block.
    summary = store.list_sessions()[0]
    assert summary.title == "tidy the notebook"
    assert summary.last_user_message == "once more"


@pytest.mark.asyncio
async def test_a_stand_in_model_is_never_priced_anywhere(
    server: ScriptedServer, chat: Any, make_agent: Any, tmp_path: Path
) -> None:
    """An offline demo's turn (priced=False): no cost in its events, the session total or a
    replay, while a priced turn of the same session is still priced."""
    from jupyter_codelia.agent import events as ev
    from jupyter_codelia.wire import transcript_messages

    server.add(reply(text("demo")), reply(text("real")))
    store = SessionStore(tmp_path / "home")
    agent = make_agent(chat, session_store=store)
    demo_usage = [
        e async for e in agent.run_stream("show me", priced=False) if isinstance(e, ev.UsageEvent)
    ]
    assert [e.cost_usd for e in demo_usage] == [None]
    assert agent.usage.cost_usd == 0.0
    real_usage = [e async for e in agent.run_stream("now for real") if isinstance(e, ev.UsageEvent)]
    assert real_usage[0].cost_usd is not None and real_usage[0].cost_usd > 0
    assert agent.usage.cost_usd == real_usage[0].cost_usd
    await agent.flush()

    records = [
        record for path in store.run_log_paths(agent.session_id) for record in read_jsonl(path)
    ]
    starts = [r for r in records if r["type"] == "run.start"]
    assert starts[0]["priced"] is False and "priced" not in starts[1]
    replayed = transcript_messages(records, agent.session_id)
    assert [m["demo"] for m in replayed if m["type"] == "run.started"] == [True, False]
