"""``/codelia/mcp`` for a notebook whose kernel runs behind a Jupyter Kernel Gateway.

A real ``jupyter kernelgateway`` and a real Jupyter server started with ``--gateway-url`` and a
token, both on loopback; the official MCP SDK client calls the tools. The kernel is reached the
way the server reaches it, through the gateway's websocket: subshells and control requests
included.
"""

from __future__ import annotations

import asyncio
import os

import pytest

from .jupyter_launch import browser_fixtures, jupyter_server
from .test_mcp_endpoint import mcp_client, text_of

pytest.importorskip("kernel_gateway")
TOKEN = "relay-test-token"


@pytest.mark.slow
def test_tools_reach_a_kernel_behind_a_gateway() -> None:
    env = {"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else {}
    with (
        browser_fixtures().launch_gateway(env) as gateway,
        jupyter_server(TOKEN, gateway_url=gateway.url) as server,
    ):
        server.session("remote.ipynb")
        url = server.url

        async def agent() -> None:
            async with mcp_client(f"{url}/codelia/mcp", TOKEN) as session:
                listed = await session.call_tool("notebooks", {})
                (row,) = listed.structured_content["notebooks"]
                assert row["notebook_path"] == "remote.ipynb"
                nb = {"notebook_path": "remote.ipynb"}
                variables = await session.call_tool("list_variables", nb)
                assert not variables.is_error, text_of(variables)
                assert "No user variables" in text_of(variables)
                history = await session.call_tool("kernel_history", nb)
                assert not history.is_error, text_of(history)
                denied = await session.call_tool("python", {**nb, "code": "x = 1"})
                assert denied.is_error
                assert "no codelia side panel is open" in text_of(denied)

        asyncio.run(agent())
