"""MCP servers as tool sources: a real server (the SDK's MCPServer) over stdio and HTTP."""

from __future__ import annotations

import asyncio
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from jupyter_codelia.agent import Agent
from jupyter_codelia.agent import events as ev
from jupyter_codelia.agent.permissions import PermissionPolicy, PermissionRule
from jupyter_codelia.llm.anthropic import AnthropicChat
from jupyter_codelia.llm.messages import FunctionCall, ImagePart, TextPart, ToolCall
from jupyter_codelia.standard_tools.mcp import (
    McpConfigError,
    McpServerConfig,
    McpServerError,
    McpServers,
    McpTool,
    parse_mcp_servers,
    parse_one_server,
    tool_name,
)
from jupyter_codelia.testing import ScriptedAnthropicServer, reply, text, tool_use
from jupyter_codelia.tools import (
    UNDECLARED,
    PartsResult,
    TextResult,
    ToolContext,
    execute_tool_call,
)

from ._mcp_procs import free_port, serving

SERVER_SCRIPT = str(Path(__file__).parent / "_mcp_server.py")
STDIO = McpServerConfig(command=sys.executable, args=[SERVER_SCRIPT, "stdio"], timeout=3)


@pytest.fixture
def servers() -> Iterator[McpServers]:
    mcp = McpServers({"t": STDIO})
    yield mcp
    mcp.close()


def by_name(tools: list[McpTool]) -> dict[str, McpTool]:
    return {t.name: t for t in tools}


def call(tool: McpTool, args: str = "{}") -> object:
    return asyncio.run(tool.execute_raw(args, ToolContext()))


def test_tools_are_listed_namespaced_with_their_schemas(servers: McpServers) -> None:
    assert servers.server("t").state == "not started"  # lazily: nothing runs until asked
    tools, failures = servers.tools()
    assert failures == {}
    names = by_name(tools)
    assert {f"t__{n}" for n in ("echo", "plot", "resources", "crash", "hang", "fail")} <= set(names)
    echo = names["t__echo"].definition
    assert echo.parameters["properties"]["text"] == {"title": "Text", "type": "string"}
    assert echo.parameters["required"] == ["text"]
    assert "Repeat the text." in echo.description
    assert "MCP server 't'" in echo.description
    assert servers.server("t").state == "ready"
    listing = servers.describe()
    assert "t  [stdio, ready]" in listing
    assert "    t__plot" in listing


def test_text_image_and_resource_results_become_content_parts(servers: McpServers) -> None:
    tools = by_name(servers.tools()[0])
    assert call(tools["t__echo"], '{"text": "ab", "times": 2}') == TextResult(text="abab")
    plotted = call(tools["t__plot"], '{"title": "sales"}')
    assert isinstance(plotted, PartsResult)
    caption, image = plotted.parts
    assert caption == TextPart(text="Figure: sales")
    assert isinstance(image, ImagePart)
    assert image.image_url.media_type == "image/png"
    assert (image.data_bytes() or b"").startswith(b"\x89PNG")
    embedded = call(tools["t__resources"])
    assert isinstance(embedded, PartsResult)
    assert embedded.parts[0] == TextPart(text="[resource file:///notes.txt]\nhello")
    assert isinstance(embedded.parts[1], ImagePart)


def test_an_error_result_is_a_tool_error_with_the_servers_message(servers: McpServers) -> None:
    tools = by_name(servers.tools()[0])
    with pytest.raises(McpServerError, match=r"MCP server 't' reported an error: .*out of paper"):
        call(tools["t__fail"], '{"reason": "out of paper"}')


def test_a_crash_mid_call_is_reported_and_the_server_restarts(servers: McpServers) -> None:
    tools = by_name(servers.tools()[0])
    with pytest.raises(McpServerError) as caught:
        call(tools["t__crash"])
    message = str(caught.value)
    assert "MCP server 't'" in message
    assert "crashed during 'crash'" in message
    assert "about to crash: segfault simulated" in message  # the tail of its stderr
    assert "restarted on its next call" in message
    assert servers.server("t").state == "crashed"
    assert call(tools["t__echo"], '{"text": "back"}') == TextResult(text="back")
    assert servers.server("t").state == "ready"


def test_a_hang_past_the_timeout_is_abandoned_and_the_server_still_answers(
    servers: McpServers,
) -> None:
    tools = by_name(servers.tools()[0])
    with pytest.raises(McpServerError, match=r"did not answer 'hang' within 3 s"):
        call(tools["t__hang"])
    assert call(tools["t__echo"], '{"text": "still here"}') == TextResult(text="still here")


def test_a_server_that_fails_to_start_is_reported_and_the_others_work() -> None:
    broken = McpServerConfig(command=sys.executable, args=["-c", "import sys; sys.exit(7)"])
    missing = McpServerConfig(command="/nonexistent/codelia-mcp-server")
    mcp = McpServers({"broken": broken, "missing": missing, "t": STDIO})
    try:
        tools, failures = mcp.tools()
    finally:
        mcp.close()
    assert {t.name.split("__")[0] for t in tools} == {"t"}
    assert set(failures) == {"broken", "missing"}
    assert (
        "MCP server 'missing' (/nonexistent/codelia-mcp-server) failed to start"
        in (failures["missing"])
    )
    assert "MCP server 'broken'" in failures["broken"]
    assert "failed to start" in failures["broken"]
    assert mcp.server("broken").state == "failed"


def test_a_server_that_never_finishes_starting_times_out() -> None:
    sleeper = McpServerConfig(
        command=sys.executable, args=["-c", "import time; time.sleep(60)"], startup_timeout=1
    )
    mcp = McpServers({"slow": sleeper})
    try:
        tools, failures = mcp.tools()
    finally:
        mcp.close()
    assert tools == []
    assert "did not finish starting within 1 s" in failures["slow"]


@pytest.fixture
def http_server() -> Iterator[str]:
    with serving("http") as base:
        yield f"{base}/mcp"


def test_streamable_http_lists_and_calls_with_images(http_server: str) -> None:
    mcp = McpServers({"web": McpServerConfig(url=http_server, timeout=3)})
    try:
        tools, failures = mcp.tools()
        assert failures == {}
        named = by_name(tools)
        assert "web__plot" in named
        plotted = call(named["web__plot"], '{"title": "q3"}')
        assert isinstance(plotted, PartsResult)
        assert plotted.parts[0] == TextPart(text="Figure: q3")
        assert isinstance(plotted.parts[1], ImagePart)
        with pytest.raises(McpServerError, match="within 3 s"):
            call(named["web__hang"])
        assert "[http, ready]" in mcp.describe()
    finally:
        mcp.close()


def test_an_unreachable_http_server_fails_to_start_clearly() -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp"
    mcp = McpServers({"gone": McpServerConfig(url=url, startup_timeout=10)})
    try:
        _, failures = mcp.tools()
    finally:
        mcp.close()
    assert f"MCP server 'gone' ({url}) failed to start" in failures["gone"]


def test_close_stops_the_server_process(servers: McpServers) -> None:
    import psutil

    servers.tools()
    me = psutil.Process()
    children = [c for c in me.children(recursive=True) if SERVER_SCRIPT in " ".join(c.cmdline())]
    assert children
    servers.close()
    _gone, alive = psutil.wait_procs(children, timeout=10)
    assert alive == []


@pytest.mark.asyncio
async def test_a_crashing_mcp_tool_gives_an_error_result_and_the_run_goes_on(
    servers: McpServers, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    tools, _ = servers.tools()
    script = [reply(tool_use("t__crash", {})), reply(text("The server crashed; moving on."))]
    with ScriptedAnthropicServer(script) as model:
        chat = AnthropicChat(base_url=model.url, api_key="sk-ant-test")
        policy = PermissionPolicy("minimal", allow=[PermissionRule(tool="t__*")])
        agent = Agent(chat, tools, permissions=policy, output_cache=None)
        events = [e async for e in agent.run_stream("crash it")]
        final = events[-1].content
        called = [e for e in events if isinstance(e, ev.ToolCallEvent)]
        result = model.requests[1].messages[-1]["content"][0]
    assert final == "The server crashed; moving on."
    assert called[0].display_name == "crash (MCP: t)"
    assert result["is_error"] is True
    assert "crashed during 'crash'" in str(result["content"])


def test_permission_rules_cover_a_whole_server_or_one_tool() -> None:
    policy = PermissionPolicy(
        "minimal",
        allow=[PermissionRule(tool="docs__*"), PermissionRule(tool="git__status")],
        deny=[PermissionRule(tool="docs__delete")],
    )
    assert policy.evaluate("docs__search", {}, UNDECLARED).kind == "allow"
    assert policy.evaluate("docs__delete", {}, UNDECLARED).kind == "deny"
    assert policy.evaluate("git__status", {}, UNDECLARED).kind == "allow"
    assert policy.evaluate("git__push", {}, UNDECLARED).kind == "confirm"
    assert policy.evaluate("docsx__search", {}, UNDECLARED).kind == "confirm"


@pytest.mark.asyncio
async def test_bad_arguments_are_a_tool_error_before_reaching_the_server() -> None:
    mcp = McpServers({"t": STDIO})  # never started: the JSON is refused first
    listed = type("Listed", (), {"name": "echo", "description": "", "input_schema": {}})()
    tool = McpTool(mcp, "t", listed, "t__echo", auto_approved=False)
    bad = ToolCall(id="c1", function=FunctionCall(name="t__echo", arguments="[1"))
    execution = await execute_tool_call(bad, [tool])
    assert execution.message.is_error
    assert "Invalid tool arguments JSON for t__echo" in str(execution.message.content)
    assert mcp.server("t").state == "not started"
    mcp.close()


def test_config_maps_are_validated_with_clear_messages() -> None:
    parsed = parse_mcp_servers(
        {"files": {"command": "npx", "args": ["-y", "server"]}, "web": {"url": "http://x/mcp"}},
        "config.json",
    )
    assert parsed.servers["files"].transport == "stdio"
    assert parsed.servers["web"].transport == "http"
    assert parsed.problems == {}

    def problem(entry: object, name: str = "x") -> str:
        return parse_mcp_servers({name: entry}, "config.json").problems[name]

    assert re.search(r"'both': .*either \"command\"", problem({"command": "a", "url": "h"}, "both"))
    assert "must start with http" in problem({"url": "ftp://x"})
    assert "name 'a__b'" in problem({"command": "x"}, "a__b")
    assert "unknown key 'comand' (a typo?" in problem({"command": "x", "comand": "typo"})
    whole = parse_mcp_servers(["x"], "config.json")
    assert "must be an object" in whole.problems[""]
    with pytest.raises(McpConfigError, match="unknown key 'comand'"):
        parse_one_server("y", {"command": "x", "comand": "typo"}, "%codelia mcp add")


def test_tool_names_are_safe_for_every_provider() -> None:
    assert tool_name("gh", "issues.create") == "gh__issues_create"
    assert len(tool_name("server", "x" * 100)) == 64


def test_secrets_in_server_env_and_headers_are_redacted() -> None:
    from jupyter_codelia._redact import redact_secrets

    token = "ghp_mcpSecretToken0123456789"
    McpServers(
        {
            "gh": McpServerConfig(command="gh-mcp", env={"GH_TOKEN": token}),
            "web": McpServerConfig(
                url="http://127.0.0.1:1/mcp", headers={"Authorization": "Bearer hdrSecret98765"}
            ),
        }
    )
    assert redact_secrets(f"token {token} leaked") == "token [REDACTED] leaked"
    assert "hdrSecret98765" not in redact_secrets("auth: hdrSecret98765")


def test_replacing_a_running_server_stops_the_old_process(servers: McpServers) -> None:
    import psutil

    servers.tools()
    me = psutil.Process()
    old = [c for c in me.children(recursive=True) if SERVER_SCRIPT in " ".join(c.cmdline())]
    assert len(old) == 1
    servers.add("t", McpServerConfig(command=sys.executable, args=[SERVER_SCRIPT, "stdio"]))
    _gone, alive = psutil.wait_procs(old, timeout=15)
    assert alive == []
    assert servers.server("t").state == "not started"
    tools, _ = servers.tools()  # the new one starts on the next listing
    assert "t__echo" in {t.name for t in tools}
