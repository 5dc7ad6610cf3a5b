"""MCP in a real kernel: ``%codelia mcp add`` and use, retries across runs, prompts, problems."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from jupyter_codelia.testing import ScriptedAnthropicServer, reply, text, tool_use

MCP_SERVER = str(Path(__file__).parents[1] / "standard_tools" / "_mcp_server.py")


def _tool_names(request: Any) -> set[str]:
    return {tool["name"] for tool in request.json["tools"]}


def test_mcp_add_with_env_then_a_run_uses_it_without_a_traceback(
    start_kernel: Any, codelia_home: Path
) -> None:
    script = [
        reply(tool_use("t__echo", {"text": "hi", "times": 2})),
        reply(text("It said hihi.")),
    ]
    with ScriptedAnthropicServer(script) as server:
        kernel = start_kernel(server.url)
        kernel.execute("%load_ext jupyter_codelia")
        command = f"{sys.executable} {MCP_SERVER} stdio"
        added = kernel.execute(f"%codelia mcp add t --env MODE=test --timeout 30 -- {command}")
        assert added.status == "ok", added.reply["content"]
        assert "Added MCP server 't'" in added.stream_text()
        run = kernel.execute("%%codelia --approval-mode full-access\necho hi twice")
        assert run.status == "ok", run.reply["content"]
        kernel.drain()
        printed = run.stream_text()
        assert "Traceback" not in printed and "exception was never retrieved" not in printed
        assert "t__echo" in _tool_names(server.requests[0])
        assert "hihi" in json.dumps(server.requests[1].json["messages"][-1])
        assert "It said hihi." in kernel.html_text()
        bad = kernel.execute("%codelia mcp add x --env NOEQUALS -- cmd")
        assert bad.status == "error"
        assert "--env takes KEY=VALUE, got 'NOEQUALS'" in bad.reply["content"]["evalue"]


def test_a_server_that_failed_is_retried_on_a_later_run_of_the_same_agent(
    start_kernel: Any, codelia_home: Path, tmp_path: Path
) -> None:
    flag = tmp_path / "ready"
    entry = {"command": sys.executable, "args": [MCP_SERVER, "when", str(flag)]}
    broken = {"command": "x", "autoApprove": [], "comand": "typo"}  # Cline key + a typo
    config = {"mcpServers": {"late": entry, "typo": broken}}
    (codelia_home / "config.json").write_text(json.dumps(config))
    script = [reply(text("First.")), reply(text("Second."))]
    with ScriptedAnthropicServer(script) as server:
        kernel = start_kernel(server.url)
        kernel.execute("%load_ext jupyter_codelia")
        first = kernel.execute("%codelia hello")
        assert first.status == "ok", first.reply["content"]  # the bad entry stops nothing
        printed = first.stream_text()
        assert "MCP server 'late'" in printed and "not ready yet" in printed
        assert "MCP server 'typo': unknown key 'comand'" in printed
        listing = kernel.execute("%codelia mcp").stream_text()
        assert "late  [stdio, failed, attempt 1; tried again" in listing
        flag.write_text("go")
        expire = kernel.execute(  # the backoff runs out
            "from jupyter_codelia.notebook import notebook_agent\n"
            "notebook_agent(get_ipython()).mcp_servers().server('late').next_retry_at = 0"
        )
        assert expire.status == "ok", expire.reply["content"]
        second = kernel.execute("%codelia again")
        assert second.status == "ok", second.reply["content"]
        assert "late__echo" in _tool_names(server.requests[1])
        assert "late  [stdio, ready]" in kernel.execute("%codelia mcp").stream_text()


def test_a_server_prompt_runs_as_a_turn(start_kernel: Any, codelia_home: Path) -> None:
    config = {"mcpServers": {"t": {"command": sys.executable, "args": [MCP_SERVER, "stdio"]}}}
    (codelia_home / "config.json").write_text(json.dumps(config))
    with ScriptedAnthropicServer([reply(text("Reviewed."))]) as server:
        kernel = start_kernel(server.url)
        kernel.execute("%load_ext jupyter_codelia")
        run = kernel.execute("%codelia mcp prompt t review_code code='x = 1'")
        assert run.status == "ok", run.reply["content"]
        sent = json.dumps(server.requests[0].json["messages"][-1])
        assert "Please review this code" in sent and "x = 1" in sent
        missing = kernel.execute("%codelia mcp prompt t review_code")
        assert missing.status == "error"
        assert "needs code=..." in missing.reply["content"]["evalue"]


EVERYTHING = (
    Path(__file__).parents[2]
    / ".mcp-servers/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
)


def test_an_elicitation_form_is_filled_in_at_the_kernels_input_prompt(
    start_kernel: Any, codelia_home: Path
) -> None:
    assert EVERYTHING.exists(), "scripts/test installs the everything server into .mcp-servers/"
    config = {"mcpServers": {"ev": {"command": "node", "args": [str(EVERYTHING), "stdio"]}}}
    (codelia_home / "config.json").write_text(json.dumps(config))
    prompts: list[str] = []

    def person(request: dict[str, Any]) -> str:
        prompt = request["content"]["prompt"]
        prompts.append(prompt)
        if "Answer? [y]es" in prompt:
            return "y"
        if prompt.startswith("  name ("):
            return "Ada"
        if prompt.startswith("  check ("):
            return "yes"
        return ""  # the default, or left out

    script = [
        reply(text("Listing.")),  # the first turn sees the tools registered after initialize
        reply(tool_use("ev__trigger-elicitation-request", {})),
        reply(text("Thanks, Ada.")),
    ]
    with ScriptedAnthropicServer(script) as server:
        kernel = start_kernel(server.url)
        kernel.execute("%load_ext jupyter_codelia")
        assert kernel.execute("%codelia hello").status == "ok"
        run = kernel.execute(
            "%%codelia --approval-mode full-access\nask me",
            allow_stdin=True,
            on_input=person,
            timeout=180,
        )
        assert run.status == "ok", run.reply["content"]
        assert any("MCP server 'ev' asks" in p for p in prompts)
        assert any(p.startswith("  name (string, required)") for p in prompts)
        answer = json.dumps(server.requests[2].json["messages"][-1])
        assert "Ada" in answer and "accept" in answer
