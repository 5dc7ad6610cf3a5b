"""``/codelia/mcp`` for a notebook whose kernel runs behind a Jupyter Kernel Gateway.

A real ``jupyter kernelgateway`` and a real Jupyter server started with ``--gateway-url`` and a
token, both on loopback; the official MCP SDK client calls the tools. The kernel is reached the
way the server reaches it, through the gateway's websocket: subshells and control requests
included.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from ..browser.conftest import _clean_env, _stop, _wait_http_ok, free_port, launch_gateway
from .test_mcp_endpoint import mcp_client, text_of

pytest.importorskip("kernel_gateway")
TOKEN = "relay-test-token"


@contextmanager
def jupyter_server(gateway_url: str) -> Iterator[str]:
    """A Jupyter server with jupyter_codelia, its kernels on the gateway; its base URL."""
    base = Path(tempfile.mkdtemp(prefix="codelia-relay-"))
    root, config, runtime = base / "root", base / "config", base / "runtime"
    for directory in (root, config, runtime):
        directory.mkdir()
    (config / "jupyter_server_config.json").write_text(
        json.dumps({"ServerApp": {"jpserver_extensions": {"jupyter_codelia": True}}})
    )
    notebook = {"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (root / "remote.ipynb").write_text(json.dumps(notebook))
    port = free_port()
    env = _clean_env()
    env.update({"JUPYTER_CONFIG_DIR": str(config), "JUPYTER_RUNTIME_DIR": str(runtime)})
    log_path = base / "server.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "jupyter_server",
                "--no-browser",
                "--allow-root",
                "--ip=127.0.0.1",
                f"--port={port}",
                f"--IdentityProvider.token={TOKEN}",
                f"--ServerApp.root_dir={root}",
                f"--gateway-url={gateway_url}",
            ],
            env=env,
            cwd=root,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_http_ok(f"{url}/api/status?token={TOKEN}", process, "the Jupyter server", log_path)
        yield url
    finally:
        _stop(process)


def start_session(url: str, path: str) -> None:
    body = {"path": path, "name": path, "type": "notebook", "kernel": {"name": "python3"}}
    request = urllib.request.Request(
        f"{url}/api/sessions",
        data=json.dumps(body).encode(),
        headers={"Authorization": f"token {TOKEN}", "Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        assert response.status == 201


@pytest.mark.slow
def test_tools_reach_a_kernel_behind_a_gateway() -> None:
    env = {"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else {}
    with launch_gateway(env) as gateway, jupyter_server(gateway.url) as url:
        start_session(url, "remote.ipynb")

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
