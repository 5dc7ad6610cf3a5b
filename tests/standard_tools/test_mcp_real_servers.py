"""MCP against real servers nobody here wrote, started on loopback only by the test setup.

``scripts/test`` installs them: the official "everything" server (npm, into ``.mcp-servers/``)
and ``mcp-server-time``, ``mcp-server-git``, ``mcp-server-fetch`` (pip, the ``test`` extra).
Questions a server asks (elicitation, sampling) go through a real :class:`Agent` and its
approval channel, against a scripted model on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import http.server
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_codelia.agent import Agent
from jupyter_codelia.agent import events as ev
from jupyter_codelia.agent._approvals import ConfirmResponse
from jupyter_codelia.agent.permissions import PermissionPolicy
from jupyter_codelia.llm.anthropic import AnthropicChat
from jupyter_codelia.standard_tools.mcp import McpServerConfig, McpServers, McpTool
from jupyter_codelia.testing import ScriptedAnthropicServer, reply, text, tool_use
from jupyter_codelia.tools import TextResult, ToolContext

EVERYTHING = (
    Path(__file__).parents[2]
    / ".mcp-servers/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
)


def everything_config(**settings: Any) -> McpServerConfig:
    if not EVERYTHING.exists():
        raise RuntimeError(
            f"{EVERYTHING} is missing: scripts/test installs the everything server "
            "(cd .mcp-servers && npm install)"
        )
    return McpServerConfig(command="node", args=[str(EVERYTHING), "stdio"], **settings)


@pytest.fixture(scope="module")
def everything() -> Iterator[McpServers]:
    mcp = McpServers({"ev": everything_config(env={"CODELIA_SHOWN": "passed-on"})})
    mcp.roots = [Path(__file__).parent]
    yield mcp
    mcp.close()


def listed(mcp: McpServers) -> dict[str, Any]:
    tools, failures = mcp.tools()
    assert failures == {}
    return {t.name: t for t in tools}


def call(tool: Any, args: dict[str, Any] | None = None) -> Any:
    return asyncio.run(tool.execute_raw(json.dumps(args or {}), ToolContext(tool_call_id="c1")))


def test_tools_annotations_and_tasks_of_the_everything_server(everything: McpServers) -> None:
    tools = listed(everything)
    echo = tools["ev__echo"]
    assert isinstance(echo, McpTool)
    assert echo.hints.read_only and echo.risk.approval == "never"
    assert call(echo, {"message": "hi"}) == TextResult(text="Echo: hi")
    assert tools["ev__toggle-simulated-logging"].risk.approval == "always"
    # A tool that runs only as an MCP task is not offered, and the listing says why.
    assert "ev__simulate-research-query" not in tools
    assert "ev__simulate-research-query  (not offered: it runs only as an MCP task)" in (
        everything.describe()
    )


def test_tools_registered_after_initialize_arrive_with_list_changed(
    everything: McpServers,
) -> None:
    listed(everything)  # the first listing may predate the server's conditional tools
    tools = listed(everything)  # list_changed marked the listing stale: fetched again
    assert {"ev__get-roots-list", "ev__trigger-elicitation-request"} <= set(tools)
    roots = call(tools["ev__get-roots-list"])
    assert Path(__file__).parent.as_uri() in roots.text


def test_resources_templates_and_text_blobs(everything: McpServers) -> None:
    tools = listed(everything)
    listing = call(tools["mcp_resources"]).text
    assert "demo://resource/static/document/architecture.md" in listing
    assert "demo://resource/dynamic/blob/{resourceId} " in listing
    blob = call(
        tools["mcp_read_resource"], {"server": "ev", "uri": "demo://resource/dynamic/blob/7"}
    )
    assert "Resource 7: This is a base64 blob created at" in blob.text
    embedded = call(tools["ev__get-resource-reference"], {"resourceType": "Blob", "resourceId": 3})
    assert "Resource 3: This is a base64 blob created at" in embedded.text
    assert "[other:" not in embedded.text


def test_a_subscribed_resource_that_changes_is_named_for_the_next_turn(
    everything: McpServers,
) -> None:
    tools = listed(everything)
    uri = "demo://resource/dynamic/text/1"
    call(tools["mcp_read_resource"], {"server": "ev", "uri": uri, "subscribe": True})
    call(tools["ev__toggle-subscriber-updates"])

    async def updated() -> None:
        while uri not in everything.server("ev").updated_resources:
            await asyncio.sleep(0.1)

    everything.run_blocking(updated(), timeout=60)
    notice = everything.turn_notice()
    assert notice is not None and f"ev: {uri}" in notice


def test_prompts_are_listed_and_filled_in(everything: McpServers) -> None:
    listed(everything)
    text_of_prompt = everything.run_blocking(
        everything.prompt("ev", "args-prompt", {"city": "Oslo"})
    )
    assert "Oslo" in text_of_prompt
    from jupyter_codelia.standard_tools.mcp import McpServerError

    with pytest.raises(McpServerError, match=r"needs city=\.\.\."):
        everything.run_blocking(everything.prompt("ev", "args-prompt", {}))
    with pytest.raises(McpServerError, match="has no prompt 'nope'"):
        everything.run_blocking(everything.prompt("ev", "nope", {}))
    assert "prompts: simple-prompt, args-prompt" in everything.describe()


def test_the_server_inherits_only_the_safe_environment_plus_its_env(
    everything: McpServers, monkeypatch: pytest.MonkeyPatch
) -> None:
    shown = call(listed(everything)["ev__get-env"]).text
    assert '"CODELIA_SHOWN": "passed-on"' in shown
    assert "ANTHROPIC_API_KEY" not in shown and "PYTEST_CURRENT_TEST" not in shown
    assert '"PATH"' in shown


def test_structured_content_with_an_output_schema(everything: McpServers) -> None:
    result = call(listed(everything)["ev__get-structured-content"], {"location": "Chicago"})
    assert "temperature" in result.text


# --- the person and the model, through a real agent ------------------------------------------


def agent_run(
    mcp: McpServers,
    script: list[Any],
    confirm: Any,
    monkeypatch: pytest.MonkeyPatch,
    prompt: str = "go",
) -> tuple[list[Any], Any]:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    tools, _ = mcp.tools()
    with ScriptedAnthropicServer(script) as model:
        chat = AnthropicChat(base_url=model.url, api_key="sk-ant-test")
        agent = Agent(
            chat, tools, permissions=PermissionPolicy("full-access"), confirm=confirm,
            output_cache=None,
        )  # fmt: skip

        async def run() -> list[Any]:
            return [e async for e in agent.run_stream(prompt)]

        events = asyncio.run(run())
        return events, model


def answering(asked: list[ev.PermissionRequestEvent], answer: ConfirmResponse) -> Any:
    """A person who gives ``answer`` to every question, keeping the questions in ``asked``."""

    async def person(request: ev.PermissionRequestEvent) -> ConfirmResponse:
        asked.append(request)
        return answer

    return person


def tool_result(events: list[Any]) -> str:
    return next(e for e in events if isinstance(e, ev.ToolResultEvent)).result


def test_an_elicitation_form_is_answered_on_the_approval_channel(
    everything: McpServers, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[ev.PermissionRequestEvent] = []
    form = {"name": "Ada", "check": "yes"}
    person = answering(asked, ConfirmResponse(decision="allow", content=form))

    listed(everything)
    script = [reply(tool_use("ev__trigger-elicitation-request", {})), reply(text("Thanks."))]
    events, _ = agent_run(everything, script, person, monkeypatch)
    assert asked[0].kind == "elicitation"
    assert asked[0].message == "Please provide inputs for the following fields:"
    assert "name" in (asked[0].fields or {}).get("properties", {})
    result = tool_result(events)
    assert "Ada" in result and '"check": true' in result


def test_a_url_elicitation_shows_the_link_and_takes_the_answer(
    everything: McpServers, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[ev.PermissionRequestEvent] = []
    person = answering(asked, ConfirmResponse(decision="allow"))

    listed(everything)
    link = "http://127.0.0.1:9/consent"
    script = [
        reply(tool_use("ev__trigger-url-elicitation", {"url": link, "message": "Consent?"})),
        reply(text("Done.")),
    ]
    events, _ = agent_run(everything, script, person, monkeypatch)
    assert (asked[0].kind, asked[0].url, asked[0].fields) == ("elicitation", link, None)
    assert "User completed the URL elicitation flow" in tool_result(events)


def test_an_elicitation_nobody_can_answer_is_declined(
    everything: McpServers, monkeypatch: pytest.MonkeyPatch
) -> None:
    listed(everything)
    script = [reply(tool_use("ev__trigger-elicitation-request", {})), reply(text("Ok."))]
    events, _ = agent_run(everything, script, None, monkeypatch)
    assert "declined" in tool_result(events).lower()


def test_sampling_uses_the_agents_model_after_the_person_approves(
    everything: McpServers, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[ev.PermissionRequestEvent] = []
    person = answering(asked, ConfirmResponse(decision="allow"))

    listed(everything)
    script = [
        reply(tool_use("ev__trigger-sampling-request", {"prompt": "name a colour"})),
        reply(text("Teal.")),  # the sampling request, answered by the agent's model
        reply(text("The server got its answer.")),
    ]
    events, model = agent_run(everything, script, person, monkeypatch)
    assert asked[0].kind == "sampling"
    assert "name a colour" in asked[0].message
    assert "Teal." in tool_result(events)
    sampled = model.requests[1].json
    assert sampled.get("tools") is None  # a plain completion: no tools of ours
    assert "name a colour" in json.dumps(sampled["messages"])


def test_sampling_declined_by_the_person_never_reaches_the_model(
    everything: McpServers, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def person(request: ev.PermissionRequestEvent) -> ConfirmResponse:
        return ConfirmResponse(decision="deny")

    listed(everything)
    script = [
        reply(tool_use("ev__trigger-sampling-request", {"prompt": "x"})),
        reply(text("Fine.")),
    ]
    events, model = agent_run(everything, script, person, monkeypatch)
    assert len(model.requests) == 2  # the turn and the answer to the tool result only
    assert "declined" in tool_result(events)


def test_progress_notifications_reach_the_tool_card(
    everything: McpServers, monkeypatch: pytest.MonkeyPatch
) -> None:
    listed(everything)
    script = [
        reply(tool_use("ev__trigger-long-running-operation", {"duration": 1, "steps": 3})),
        reply(text("Done.")),
    ]
    events, _ = agent_run(everything, script, None, monkeypatch)
    progress = [e for e in events if isinstance(e, ev.ToolProgressEvent)]
    call_id = next(e for e in events if isinstance(e, ev.ToolCallEvent)).tool_call_id
    assert [e.progress for e in progress] == [1, 2, 3]
    assert {e.tool_call_id for e in progress} == {call_id}
    assert progress[-1].total == 3


# --- the Python reference servers -------------------------------------------------------------


def python_server(module: str, *args: str) -> McpServerConfig:
    return McpServerConfig(command=sys.executable, args=["-m", module, *args])


def test_mcp_server_time() -> None:
    mcp = McpServers({"time": python_server("mcp_server_time", "--local-timezone", "UTC")})
    try:
        tools = listed(mcp)
        now = call(tools["time__get_current_time"], {"timezone": "UTC"})
        assert '"timezone": "UTC"' in now.text
    finally:
        mcp.close()


def test_mcp_server_git(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "notes.txt").write_text("hello\n")
    mcp = McpServers({"git": python_server("mcp_server_git", "--repository", str(repo))})
    try:
        tools = listed(mcp)
        status = call(tools["git__git_status"], {"repo_path": str(repo)})
        assert "notes.txt" in status.text
    finally:
        mcp.close()


@pytest.fixture
def loopback_page() -> Iterator[str]:
    class Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path == "/robots.txt":
                self.send_response(404)
                self.end_headers()
                return
            body = b"<html><body><h1>Loopback page</h1><p>Served on 127.0.0.1.</p></body></html>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/page"
    finally:
        httpd.shutdown()


def test_mcp_server_fetch_on_loopback(loopback_page: str) -> None:
    fetcher = python_server("mcp_server_fetch", "--ignore-robots-txt", "--allow-private-ips")
    mcp = McpServers({"fetch": fetcher})
    try:
        tools = listed(mcp)
        page = call(tools["fetch__fetch"], {"url": loopback_page})
        assert "Loopback page" in page.text
    finally:
        mcp.close()
