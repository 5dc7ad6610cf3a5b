"""%%codelia in a real kernel with an OpenAI-compatible provider and with an MCP server."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import psutil

from jupyter_codelia.testing import ScriptedOpenAIServer, reply, text, tool_use

MCP_SERVER = str(Path(__file__).parents[1] / "standard_tools" / "_mcp_server.py")
OPENAI_KEY = "sk-proj-test-SECRET-0011223344"
PLOT = (
    "import matplotlib.pyplot as plt\n"
    "fig, ax = plt.subplots(figsize=(3, 2))\n"
    "ax.plot([1, 2, 3], [3, 1, 2])\n"
    "print('plotted')\n"
)


def test_openai_provider_runs_a_tool_turn_with_a_plot(start_kernel: Any) -> None:
    script = [
        reply(text("Plotting."), tool_use("python", {"code": PLOT})),
        reply(text("Done: one **line**.")),
    ]
    with ScriptedOpenAIServer(script) as server:
        kernel = start_kernel(None, api_key=None, OPENAI_API_KEY=OPENAI_KEY)
        kernel.execute("%load_ext jupyter_codelia")
        kernel.execute("%config Codelia.provider = 'openai'")
        kernel.execute(f"%config Codelia.base_url = {server.url!r}")
        kernel.execute("%config Codelia.model = 'gpt-4o'")
        run = kernel.execute("%%codelia --approval-mode full-access\nplot a line")
        assert run.status == "ok", run.reply["content"]
        kernel.drain()
        assert "<p>Done: one <strong>line</strong>.</p>" in kernel.html_text()
        assert len(kernel.widgets_of("ImageModel")) == 1
        sent = server.requests[1].json["messages"]
        tool_message = next(m for m in sent if m["role"] == "tool")
        assert "plotted" in tool_message["content"]
        # The figure reached the model as an image right after the tool results.
        image_turn = sent[sent.index(tool_message) + 1]
        assert image_turn["role"] == "user"
        assert image_turn["content"][1]["type"] == "image_url"
        assert server.requests[0].headers["authorization"] == "[redacted]"
        config = kernel.execute("%codelia config").stream_text()
        assert "$OPENAI_API_KEY" in config
        assert OPENAI_KEY not in json.dumps(kernel.iopub, default=str)


def test_model_shorthand_selects_a_local_server_without_a_key(start_kernel: Any) -> None:
    with ScriptedOpenAIServer([reply(text("Hello from qwen."))]) as server:
        kernel = start_kernel(None, api_key=None)
        kernel.execute("%load_ext jupyter_codelia")
        kernel.execute(f"%config Codelia.base_url = {server.url!r}")
        run = kernel.execute("%codelia --model ollama:qwen3-coder:30b say hello")
        assert run.status == "ok", run.reply["content"]
        body = server.requests[0].json
    assert body["model"] == "qwen3-coder:30b"
    assert "max_tokens" not in body  # not configured: the server's own limit applies
    assert "Hello from qwen." in kernel.html_text()


def test_a_missing_openai_key_names_the_variable(start_kernel: Any) -> None:
    kernel = start_kernel(None, api_key=None)
    kernel.execute("%load_ext jupyter_codelia")
    run = kernel.execute("%codelia --model openai:gpt-5.1 hi")
    assert run.status == "error"
    assert run.reply["content"]["ename"] == "UsageError"
    assert "OPENAI_API_KEY" in run.reply["content"]["evalue"]


def _mcp_children(kernel: Any) -> list[psutil.Process]:
    pid = kernel.km.provisioner.process.pid
    children = psutil.Process(pid).children(recursive=True)
    return [c for c in children if MCP_SERVER in " ".join(c.cmdline())]


def test_mcp_tools_in_a_kernel_listed_called_and_stopped_with_the_extension(
    start_kernel: Any, codelia_home: Path
) -> None:
    config = {"mcpServers": {"t": {"command": sys.executable, "args": [MCP_SERVER, "stdio"]}}}
    (codelia_home / "config.json").write_text(json.dumps(config))
    script = [
        reply(tool_use("t__echo", {"text": "ping", "times": 2})),
        reply(text("The server said pingping.")),
    ]
    with ScriptedOpenAIServer(script) as server:
        kernel = start_kernel(None, api_key=None, OPENAI_API_KEY=OPENAI_KEY)
        kernel.execute("%load_ext jupyter_codelia")
        listing = kernel.execute("%codelia mcp").stream_text()
        assert "t  [stdio, not started]" in listing  # nothing starts before a run
        assert _mcp_children(kernel) == []
        kernel.execute(f"%config Codelia.base_url = {server.url!r}")
        kernel.execute("%config Codelia.provider = 'openai'")
        run = kernel.execute("%%codelia --approval-mode full-access\nping the server")
        assert run.status == "ok", run.reply["content"]
        tools = [t["function"]["name"] for t in server.requests[0].json["tools"]]
        assert "t__echo" in tools and "t__plot" in tools
        kernel.drain()
        assert "<b>echo (MCP: t)</b>" in kernel.html_text()  # the card names the server
        result = next(m for m in server.requests[1].json["messages"] if m["role"] == "tool")
        assert result["content"] == "pingping"
        listing = kernel.execute("%codelia mcp").stream_text()
        assert "t  [stdio, ready]" in listing
        assert "    t__echo" in listing
        children = _mcp_children(kernel)
        assert len(children) == 1
        assert kernel.execute("%unload_ext jupyter_codelia").status == "ok"
        _gone, alive = psutil.wait_procs(children, timeout=15)
        assert alive == []


def test_the_side_panel_runs_an_mcp_tool_through_the_openai_provider(
    start_kernel: Any, codelia_home: Path
) -> None:
    from .test_notebook_bridge import FrontEnd

    config = {"mcpServers": {"t": {"command": sys.executable, "args": [MCP_SERVER, "stdio"]}}}
    (codelia_home / "config.json").write_text(json.dumps(config))
    script = [reply(tool_use("t__plot", {"title": "q3"})), reply(text("Plotted q3."))]
    with ScriptedOpenAIServer(script) as server:
        kernel = start_kernel(server.url, provider="openai", api_key=OPENAI_KEY)
        kernel.execute("%load_ext jupyter_codelia")
        front = FrontEnd(kernel)
        hello = front.wait(lambda d: d.get("type") == "hello")
        assert hello["model"] == "openai:gpt-4o"
        assert hello["api_key_configured"] is True
        started = front.request({"type": "run.start", "prompt": "plot q3"})
        assert started["ok"] is True, started
        asking = front.wait(
            lambda d: d.get("type") == "agent.event" and d["event"]["type"] == "permission.request"
        )
        front.request(
            {
                "type": "permission.respond",
                "permission_request_id": asking["event"]["request_id"],
                "decision": "allow",
            }
        )
        front.wait(lambda d: d.get("type") == "run.status" and d.get("status") == "completed")
        events = [d["event"] for d in front.received if d.get("type") == "agent.event"]
        call = next(e for e in events if e["type"] == "tool_call")
        assert (call["tool"], call["display_name"]) == ("t__plot", "plot (MCP: t)")
        assert events[-1]["content"] == "Plotted q3."
        sent = server.requests[1].json["messages"]
        image_turn = sent[-1]
        assert image_turn["role"] == "user"
        assert image_turn["content"][1]["type"] == "image_url"  # the MCP image reached the model
        assert OPENAI_KEY not in json.dumps(front.received)
