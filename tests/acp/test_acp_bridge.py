"""``codelia-acp`` end to end: the ACP SDK's client, a real Jupyter server and kernel, a
scripted model. One module-wide server; each test drives its own ACP process."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from acp import text_block
from acp.schema import EnvVariable, McpServerStdio, ResourceContentBlock

from jupyter_codelia.testing import reply, text, tool_use

from .conftest import Jupyter, ScriptedClient, TurnQueue, acp_agent

PLOT = (
    "import matplotlib.pyplot as plt\n"
    "plt.plot([1, 2, 3], [1, 4, 9])\n"
    "plt.show()\n"
    "answer = 6 * 7\n"
    "print('answer', answer)"
)


def test_a_prompt_runs_python_in_a_new_scratch_notebook_and_shows_the_plot(
    jupyter: Jupyter, model: TurnQueue
) -> None:
    async def scenario() -> None:
        client = ScriptedClient(answers=["allow_once"])
        async with acp_agent(client, jupyter) as conn:
            session = await conn.new_session(cwd=str(jupyter.root), mcp_servers=[])
            model.queue(
                reply(text("Let me plot it."), tool_use("python", {"code": PLOT})),
                reply(text("The plot is above; the answer is 42.")),
            )
            done = await conn.prompt(
                session_id=session.session_id, prompt=[text_block("plot squares")]
            )
            await client.settle()
            assert done.stop_reason == "end_turn"
            assert "the answer is 42" in client.text()
            assert "codelia works in a new notebook" in client.text()
            scratch = list(jupyter.root.glob("codelia-acp-*.ipynb"))
            assert len(scratch) == 1
            (start,) = client.of("tool_call")
            assert start.kind == "execute" and start.raw_input == {"code": PLOT}
            assert client.asked and client.asked[0].kind == "execute"
            (finished,) = [u for u in client.of("tool_call_update") if u.status == "completed"]
            kinds = [c.content.type for c in finished.content]
            assert "image" in kinds, kinds
            image = next(c.content for c in finished.content if c.content.type == "image")
            assert image.mime_type == "image/png" and len(image.data) > 100
            assert done.usage is not None and done.usage.output_tokens > 0
            # The kernel ran it in the person's namespace: the side panel's run, same kernel.
            sessions = jupyter.get("api/sessions")
            assert [s["path"] for s in sessions] == [scratch[0].name]

    asyncio.run(asyncio.wait_for(scenario(), 240))


def test_an_edit_shows_its_diff_and_a_rejected_call_does_not_run(
    jupyter: Jupyter, model: TurnQueue
) -> None:
    notes = jupyter.root / "notes.txt"
    notes.write_text("colour: red\n")

    async def scenario() -> None:
        client = ScriptedClient(answers=["allow_always", "reject_once"])
        async with acp_agent(client, jupyter) as conn:
            session = await conn.new_session(cwd=str(jupyter.root), mcp_servers=[])
            edit = {"file_path": "notes.txt", "old_string": "red", "new_string": "blue"}
            model.queue(reply(tool_use("edit", edit)), reply(text("Changed it.")))
            done = await conn.prompt(
                session_id=session.session_id, prompt=[text_block("make it blue")]
            )
            await client.settle()
            assert done.stop_reason == "end_turn"
            assert notes.read_text() == "colour: blue\n"
            (start,) = client.of("tool_call")
            assert start.kind == "edit"
            (diff,) = [c for c in start.content if c.type == "diff"]
            assert (diff.path, diff.old_text, diff.new_text) == ("notes.txt", "red", "blue")
            (asked,) = client.asked
            assert asked.kind == "edit" and any(c.type == "diff" for c in asked.content)

            client.clear()
            marker = jupyter.root / "rejected.txt"
            code = f"open({str(marker)!r}, 'w').write('x')"
            model.queue(reply(tool_use("python", {"code": code})), reply(text("Left it.")))
            done = await conn.prompt(
                session_id=session.session_id, prompt=[text_block("write the marker")]
            )
            await client.settle()
            assert done.stop_reason == "end_turn"
            assert not marker.exists()
            (failed,) = [u for u in client.of("tool_call_update") if u.status == "failed"]
            assert failed.tool_call_id == client.of("tool_call")[0].tool_call_id
            denied = model.requests[-1].tool_results()[-1]
            assert "rejected in the ACP client" in str(denied)

    asyncio.run(asyncio.wait_for(scenario(), 240))


def test_cancel_stops_the_run_and_the_session_loads_again(
    jupyter: Jupyter, model: TurnQueue
) -> None:
    async def scenario() -> None:
        client = ScriptedClient()
        async with acp_agent(client, jupyter) as conn:
            session = await conn.new_session(cwd=str(jupyter.root), mcp_servers=[])
            model.queue(reply(text("Remember the word tangerine.")))
            await conn.prompt(session_id=session.session_id, prompt=[text_block("a word")])
            client.clear()
            model.queue(reply(text("counting " * 400), delay_s=0.02))
            prompt = asyncio.ensure_future(
                conn.prompt(session_id=session.session_id, prompt=[text_block("count")])
            )
            await client.wait_for("agent_message_chunk")
            await conn.cancel(session_id=session.session_id)
            done = await asyncio.wait_for(prompt, 60)
            await client.settle()
            assert done.stop_reason == "cancelled"
            acp_id = session.session_id

        listed = ScriptedClient()
        async with acp_agent(listed, jupyter) as conn:
            found = await conn.list_sessions(cwd=str(jupyter.root))
            assert found.sessions
            await conn.load_session(cwd=str(jupyter.root), session_id=acp_id, mcp_servers=[])
            await listed.settle()
            assert "a word" in listed.text("user_message_chunk")
            assert "tangerine" in listed.text()
            listed.clear()
            # The loaded session goes on: the model sees the earlier turns.
            model.queue(reply(text("It was tangerine.")))
            done = await conn.prompt(session_id=acp_id, prompt=[text_block("which word?")])
            await listed.settle()
            assert done.stop_reason == "end_turn"
            assert "tangerine" in str(model.requests[-1].messages)

    asyncio.run(asyncio.wait_for(scenario(), 240))


def test_a_notebook_attachment_picks_that_notebooks_kernel(
    jupyter: Jupyter, model: TurnQueue
) -> None:
    notebook = jupyter.root / "analysis.ipynb"
    notebook.write_text(
        '{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}', encoding="utf-8"
    )

    async def scenario() -> None:
        client = ScriptedClient(answers=["allow_once"])
        async with acp_agent(client, jupyter) as conn:
            session = await conn.new_session(cwd=str(jupyter.root), mcp_servers=[])
            model.queue(
                reply(tool_use("python", {"code": "import os; print(os.getcwd())"})),
                reply(text("Done.")),
            )
            link = ResourceContentBlock(
                type="resource_link", uri=Path(notebook).as_uri(), name="analysis.ipynb"
            )
            await conn.prompt(
                session_id=session.session_id, prompt=[text_block("where am I?"), link]
            )
            paths = [s["path"] for s in jupyter.get("api/sessions")]
            assert "analysis.ipynb" in paths
            assert "analysis.ipynb" in str(model.requests[-2].messages)

    asyncio.run(asyncio.wait_for(scenario(), 240))


def test_the_clients_mcp_servers_are_tools_and_todos_are_a_plan(
    jupyter: Jupyter, model: TurnQueue
) -> None:
    clock = McpServerStdio(
        name="clock",
        command=sys.executable,
        args=["-m", "mcp_server_time", "--local-timezone", "UTC"],
        env=[EnvVariable(name="CLOCK_MODE", value="test")],
    )

    async def scenario() -> None:
        client = ScriptedClient(answers=["allow_once"])
        async with acp_agent(client, jupyter) as conn:
            session = await conn.new_session(cwd=str(jupyter.root), mcp_servers=[clock])
            todo = {"todos": [{"content": "look at the clock", "status": "in_progress"}]}
            model.queue(
                reply(tool_use("todo_new", todo)),
                reply(tool_use("clock__get_current_time", {"timezone": "UTC"})),
                reply(text("It is now.")),
            )
            done = await conn.prompt(session_id=session.session_id, prompt=[text_block("time?")])
            await client.settle()
            assert done.stop_reason == "end_turn"
            assert "clock__get_current_time" in [t["name"] for t in model.requests[-2].tools]
            result = str(model.requests[-1].tool_results()[-1])
            assert '"timezone": "UTC"' in result.replace('\\"', '"'), result
            (plan, *_) = client.of("plan")
            assert [(e.content, e.status) for e in plan.entries] == [
                ("look at the clock", "in_progress")
            ]

    asyncio.run(asyncio.wait_for(scenario(), 240))


def test_a_restarted_kernel_is_joined_again_and_the_conversation_goes_on(
    jupyter: Jupyter, model: TurnQueue
) -> None:
    async def scenario() -> None:
        client = ScriptedClient()
        async with acp_agent(client, jupyter) as conn:
            session = await conn.new_session(cwd=str(jupyter.root), mcp_servers=[])
            model.queue(reply(text("The colour is teal.")))
            await conn.prompt(session_id=session.session_id, prompt=[text_block("a colour")])
            kernels = {s["kernel"]["id"] for s in jupyter.get("api/sessions")}
            for kernel_id in kernels:
                await asyncio.to_thread(jupyter.call, "POST", f"api/kernels/{kernel_id}/restart")
            client.clear()
            model.queue(reply(text("It was teal.")))
            done = await conn.prompt(
                session_id=session.session_id, prompt=[text_block("which colour?")]
            )
            await client.settle()
            assert done.stop_reason == "end_turn"
            assert "It was teal." in client.text()
            # A new kernel: the session was resumed from the store, so the model saw turn one.
            assert "teal" in str(model.requests[-1].messages)

    asyncio.run(asyncio.wait_for(scenario(), 240))
