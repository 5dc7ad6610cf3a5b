"""MCP over the network: legacy SSE, and OAuth sign-in with tokens kept private on disk."""

from __future__ import annotations

import asyncio
import stat
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

from jupyter_codelia.standard_tools.mcp import McpServerConfig, McpServers
from jupyter_codelia.standard_tools.mcp.oauth import FileTokenStorage, remove_tokens
from jupyter_codelia.tools import TextResult, ToolContext

from ._mcp_procs import serving

TOKEN_TTL_S = 2


def echo_through(mcp: McpServers, server: str) -> object:
    tools, failures = mcp.tools()
    assert failures == {}, failures
    echo = {t.name: t for t in tools}[f"{server}__echo"]
    return asyncio.run(echo.execute_raw('{"text": "over the wire"}', ToolContext()))


def test_a_legacy_sse_server_lists_and_calls() -> None:
    with serving("sse") as base:
        mcp = McpServers({"old": McpServerConfig(url=f"{base}/sse", type="sse", timeout=10)})
        try:
            assert echo_through(mcp, "old") == TextResult(text="over the wire")
            assert "old  [sse, ready]" in mcp.describe()
        finally:
            mcp.close()


def test_oauth_sign_in_once_then_silently_with_private_tokens(tmp_path: Path) -> None:
    token_dir = tmp_path / "home" / "mcp-oauth"
    shown: list[str] = []

    def person_opens(server: str, url: str) -> None:
        shown.append(url)
        # The browser: the authorization server approves and redirects to our loopback page.
        threading.Thread(target=lambda: urllib.request.urlopen(url, timeout=30).read()).start()

    with serving("oauth-http") as base:
        config = McpServerConfig(url=f"{base}/mcp", timeout=10, startup_timeout=60)
        first = McpServers({"guarded": config})
        first.token_dir, first.show_sign_in = token_dir, person_opens
        try:
            assert echo_through(first, "guarded") == TextResult(text="over the wire")
        finally:
            first.close()
        assert len(shown) == 1 and shown[0].startswith(f"{base}/authorize?")
        saved = token_dir / "guarded.json"
        assert stat.S_IMODE(saved.stat().st_mode) == 0o600
        assert stat.S_IMODE(token_dir.stat().st_mode) == 0o700
        tokens = asyncio.run(FileTokenStorage(saved).get_tokens())
        assert tokens is not None and tokens.refresh_token

        again = McpServers({"guarded": config})  # a new kernel: the stored tokens sign in
        again.token_dir, again.show_sign_in = token_dir, person_opens
        try:
            assert echo_through(again, "guarded") == TextResult(text="over the wire")
        finally:
            again.close()
        assert len(shown) == 1
        assert remove_tokens(token_dir, "guarded")  # %codelia mcp logout guarded
        assert not saved.exists() and not remove_tokens(token_dir, "guarded")


def test_an_expired_token_is_refreshed_without_a_new_sign_in(tmp_path: Path) -> None:
    token_dir = tmp_path / "home" / "mcp-oauth"
    saved = token_dir / "guarded.json"
    shown: list[str] = []

    def person_opens(server: str, url: str) -> None:
        shown.append(url)
        threading.Thread(target=lambda: urllib.request.urlopen(url, timeout=30).read()).start()

    def stored() -> Any:
        tokens = asyncio.run(FileTokenStorage(saved).get_tokens())
        assert tokens is not None and tokens.refresh_token
        return tokens

    def expire() -> None:  # let the access token's lifetime pass
        time.sleep(TOKEN_TTL_S + 0.5)

    with serving("oauth-http", str(TOKEN_TTL_S)) as base:
        config = McpServerConfig(url=f"{base}/mcp", timeout=10, startup_timeout=60)
        first = McpServers({"guarded": config})
        first.token_dir, first.show_sign_in = token_dir, person_opens
        try:
            assert echo_through(first, "guarded") == TextResult(text="over the wire")
            signed_in = stored()
            expire()
            # The same connection: the SDK refreshes before its next request.
            assert echo_through(first, "guarded") == TextResult(text="over the wire")
        finally:
            first.close()
        assert len(shown) == 1
        refreshed = stored()
        assert refreshed.refresh_token != signed_in.refresh_token  # the server rotates it

        expire()
        again = McpServers({"guarded": config})  # a new kernel, with an expired stored token
        again.token_dir, again.show_sign_in = token_dir, person_opens
        try:
            assert echo_through(again, "guarded") == TextResult(text="over the wire")
        finally:
            again.close()
        assert len(shown) == 1  # refreshed silently: no new sign-in
        assert stored().refresh_token not in (signed_in.refresh_token, refreshed.refresh_token)
        assert stat.S_IMODE(saved.stat().st_mode) == 0o600


def test_a_server_with_its_own_authorization_header_gets_no_oauth(tmp_path: Path) -> None:
    with serving("http") as base:
        config = McpServerConfig(url=f"{base}/mcp", headers={"Authorization": "Bearer abcdefgh1"})
        mcp = McpServers({"plain": config})
        mcp.token_dir = tmp_path
        try:
            assert echo_through(mcp, "plain") == TextResult(text="over the wire")
            assert mcp.server("plain").oauth is None
        finally:
            mcp.close()
        assert list(tmp_path.iterdir()) == []
