"""``mcpServers`` maps as other clients write them: understood, ignored with a note, or one
entry disabled with a clear message, never the whole agent."""

from __future__ import annotations

from pathlib import Path

import pytest

from jupyter_codelia.standard_tools.mcp import McpServers, parse_mcp_servers


def test_a_cline_entry_with_auto_approve_and_disabled_is_understood() -> None:
    parsed = parse_mcp_servers(
        {
            "github": {
                "command": "npx",
                "args": ["-y", "@modelcontextprotocol/server-github"],
                "autoApprove": ["get_issue"],
                "disabled": False,
                "transportType": "stdio",
            },
            "off": {"command": "x", "disabled": True},
        },
        "config file /home/me/.codelia/config.json",
    )
    assert parsed.problems == {}
    github = parsed.servers["github"]
    assert github.auto_approve == ["get_issue"]
    assert parsed.servers["off"].disabled
    assert parsed.notes["github"] == [
        "ignored 'transportType' (Cline's transport name (the command or URL decides))"
    ]


def test_one_bad_entry_disables_that_server_only() -> None:
    parsed = parse_mcp_servers(
        {"good": {"command": "ok"}, "typo": {"command": "x", "comand": "y"}}, "config.json"
    )
    assert set(parsed.servers) == {"good"}
    assert parsed.problems["typo"] == (
        "config.json: MCP server 'typo': unknown key 'comand' (a typo? see the README's MCP keys)"
    )
    servers = McpServers(parsed)
    assert servers.names == ["good"]
    assert "typo  [not usable]  config.json: MCP server 'typo': unknown key 'comand'" in (
        servers.describe()
    )


def test_gemini_entries_timeout_in_milliseconds_http_url_and_trust() -> None:
    parsed = parse_mcp_servers(
        {
            "remote": {"httpUrl": "https://example.test/mcp", "timeout": 600000, "trust": True},
            "events": {"url": "https://example.test/sse", "type": "sse"},
            "tools": {"command": "srv", "includeTools": ["a"], "excludeTools": ["b"]},
        },
        "settings.json",
    )
    remote = parsed.servers["remote"]
    assert (remote.transport, remote.timeout, remote.trust) == ("http", 600.0, True)
    assert '"timeout": 600000 read as milliseconds (600 s)' in parsed.notes["remote"]
    assert parsed.servers["events"].transport == "sse"
    tools = parsed.servers["tools"]
    assert tools.offers("a") and not tools.offers("b") and not tools.offers("c")


def test_variables_are_expanded_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODELIA_TEST_TOKEN", "tok-123456789")
    monkeypatch.delenv("CODELIA_UNSET_VAR", raising=False)
    parsed = parse_mcp_servers(
        {
            "gh": {
                "command": "srv",
                "args": ["--token", "${CODELIA_TEST_TOKEN}"],
                "env": {"GH": "${env:CODELIA_TEST_TOKEN}", "MODE": "${CODELIA_UNSET_VAR:-ro}"},
            },
            "web": {"url": "https://x.test/mcp", "headers": {"Authorization": "Bearer ${NOPE_X}"}},
        },
        "config.json",
    )
    gh = parsed.servers["gh"]
    assert gh.args == ["--token", "tok-123456789"]
    assert gh.env == {"GH": "tok-123456789", "MODE": "ro"}
    assert parsed.problems["web"] == (
        "config.json: MCP server 'web': headers.Authorization uses ${NOPE_X}, which is not set "
        "in the kernel's environment (set it, or write ${NOPE_X:-default})"
    )


def test_an_env_file_is_read_next_to_the_config_and_env_wins(tmp_path: Path) -> None:
    (tmp_path / "srv.env").write_text("# tokens\nexport A=1\nB='two words'\nC=3\n")
    where = f"config file {tmp_path / 'config.json'}"
    parsed = parse_mcp_servers(
        {"s": {"command": "srv", "envFile": "srv.env", "env": {"C": "env wins"}}}, where
    )
    assert parsed.servers["s"].env == {"A": "1", "B": "two words", "C": "env wins"}
    missing = parse_mcp_servers({"s": {"command": "srv", "envFile": "nope.env"}}, where)
    assert '"envFile" \'' in missing.problems["s"] and "cannot be read" in missing.problems["s"]
    (tmp_path / "bad.env").write_text("JUSTAWORD\n")
    bad = parse_mcp_servers({"s": {"command": "srv", "envFile": "bad.env"}}, where)
    assert "line 1 is not KEY=VALUE" in bad.problems["s"]


def test_a_map_that_is_not_an_object_is_one_problem_not_a_crash() -> None:
    servers = McpServers(parse_mcp_servers(["not", "a", "map"], "config.json"))
    tools, report = servers.tools()
    assert tools == []
    assert report[""].startswith('config.json: "mcpServers" must be an object')
    assert servers.tools() == ([], {})  # reported once
