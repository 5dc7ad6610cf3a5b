"""``/codelia/mcp`` with the official MCP SDK client as the outside agent, against a real Jupyter
server (pytest-jupyter's, on loopback) and real kernels.

Unmarked coroutine tests run on the server's loop (see test_handlers.py), so the SDK client and
the server share it.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

MCP_TOOLS = {
    "notebooks",
    "list_variables",
    "inspect_variable",
    "kernel_history",
    "python",
    "job_list",
    "job_output",
    "job_wait",
    "job_stop",
    "notebook_read",
    "notebook_edit",
    "notebook_run",
    "tool_output_cache",
    "tool_output_cache_line",
    "tool_output_cache_grep",
}


@pytest.fixture
def full_access(monkeypatch: pytest.MonkeyPatch) -> None:
    """Kernels started from now on run every call without asking (they inherit this)."""
    monkeypatch.setenv("JUPYTER_CODELIA_APPROVAL_MODE", "full-access")


def mcp_url(jp_http_port: int, jp_base_url: str) -> str:
    return f"http://127.0.0.1:{jp_http_port}{jp_base_url}codelia/mcp"


async def open_notebook(jp_fetch: Any, jp_root_dir: Path, name: str) -> str:
    """A notebook file and a session (its kernel) for it, as JupyterLab makes one."""
    notebook = {"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (jp_root_dir / name).write_text(json.dumps(notebook))
    body = {"path": name, "name": name, "type": "notebook", "kernel": {"name": "python3"}}
    response = await jp_fetch("api", "sessions", method="POST", body=json.dumps(body))
    return str(json.loads(response.body)["kernel"]["id"])


@contextlib.asynccontextmanager
async def mcp_client(url: str, token: str, name: str = "claude-code") -> AsyncIterator[Any]:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client
    from mcp_types import Implementation

    http = create_mcp_http_client(headers={"Authorization": f"token {token}"})
    try:
        async with (
            streamable_http_client(url, http_client=http) as (read, write, *_),
            ClientSession(read, write, client_info=Implementation(name=name, version="1")) as s,
        ):
            await s.initialize()
            yield s
    finally:
        await http.aclose()


def text_of(result: Any) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


async def test_a_missing_or_wrong_token_is_refused(
    jp_serverapp: Any, jp_fetch: Any, jp_http_port: int, jp_base_url: str
) -> None:
    # jp_fetch: pytest-jupyter serves the app only for tests that ask for its client.
    url = mcp_url(jp_http_port, jp_base_url)
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {"Accept": "application/json, text/event-stream"}
    async with httpx2.AsyncClient() as http:
        missing = await http.post(url, json=body, headers=headers)
        wrong = await http.post(
            url, json=body, headers={**headers, "Authorization": "token not-the-token"}
        )
        # A browser's cookie without the XSRF token is no way in either.
        cookie = await http.post(url, json=body, headers={**headers, "Cookie": "_xsrf=x"})
    assert missing.status_code in (401, 403)
    assert wrong.status_code in (401, 403)
    assert cookie.status_code in (401, 403)


async def test_an_outside_agent_lists_and_calls_each_tool(
    jp_serverapp: Any,
    jp_fetch: Any,
    jp_root_dir: Path,
    jp_http_port: int,
    jp_base_url: str,
    codelia_home: Path,
    full_access: None,
) -> None:
    await open_notebook(jp_fetch, jp_root_dir, "sales.ipynb")
    token = jp_serverapp.identity_provider.token
    async with mcp_client(mcp_url(jp_http_port, jp_base_url), token) as session:
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        assert set(tools) == MCP_TOOLS
        assert tools["list_variables"].annotations.read_only_hint is True
        assert tools["python"].annotations.destructive_hint is True
        assert tools["python"].input_schema["required"][0] == "notebook_path"
        # Every kernel tool declares its structured result; the SDK client checks each result
        # against it below.
        assert {"outcome", "diff", "edit_id", "namespace_changes", "job_id"} <= set(
            tools["python"].output_schema["properties"]
        )
        assert tools["notebooks"].output_schema["required"] == ["notebooks"]

        listed = await session.call_tool("notebooks", {})
        (row,) = listed.structured_content["notebooks"]
        assert row["notebook_path"] == "sales.ipynb"
        assert row["tab_open"] is False

        nb = {"notebook_path": "sales.ipynb"}
        ran = await session.call_tool(
            "python", {**nb, "code": "import pandas as pd\nsales = pd.DataFrame({'x': [1, 2]})"}
        )
        assert not ran.is_error, text_of(ran)
        assert "sales" in text_of(ran)
        data = ran.structured_content
        assert data["outcome"] == "completed" and data["queued"] is False
        assert {"name": "sales", "change": "added"} in data["namespace_changes"]
        assert {"name": "pd", "change": "added"} in data["namespace_changes"]
        assert isinstance(data["run_id"], str)
        # An exception in the code is the code's result (the traceback); a call the tool
        # cannot take is an error.
        raised = await session.call_tool("python", {**nb, "code": "1 / 0"})
        assert not raised.is_error and "ZeroDivisionError" in text_of(raised)
        failed = await session.call_tool("inspect_variable", nb)
        assert failed.is_error, text_of(failed)
        assert failed.structured_content["outcome"] == "error"

        variables = await session.call_tool("list_variables", nb)
        assert "sales: pandas.DataFrame" in text_of(variables)
        assert variables.structured_content["outcome"] == "completed"
        assert "namespace_changes" not in variables.structured_content
        inspected = await session.call_tool("inspect_variable", {**nb, "name": "sales"})
        assert "x" in text_of(inspected)
        history = await session.call_tool("kernel_history", nb)
        assert not history.is_error, text_of(history)
        jobs = await session.call_tool("job_list", nb)
        assert not jobs.is_error, text_of(jobs)

        # Without a tab the notebook tools read the saved file or say why they cannot act.
        read = await session.call_tool("notebook_read", nb)
        assert read.content, read
        edit = await session.call_tool(
            "notebook_edit", {**nb, "action": "insert", "index": 0, "source": "print(1)"}
        )
        assert edit.content, edit

        cached = await session.call_tool("tool_output_cache", {**nb, "ref_id": "no-such-ref"})
        assert "no-such-ref" in text_of(cached)

        unknown = await session.call_tool("list_variables", {"notebook_path": "other.ipynb"})
        assert unknown.is_error
        assert "no notebook 'other.ipynb' on this Jupyter server" in text_of(unknown)


async def test_a_python_call_outliving_the_client_becomes_a_job(
    jp_serverapp: Any,
    jp_fetch: Any,
    jp_root_dir: Path,
    jp_http_port: int,
    jp_base_url: str,
    codelia_home: Path,
    full_access: None,
) -> None:
    await open_notebook(jp_fetch, jp_root_dir, "long.ipynb")
    jp_serverapp.web_app.settings["codelia_relay"].call_seconds = 2.0
    token = jp_serverapp.identity_provider.token
    nb = {"notebook_path": "long.ipynb"}
    async with mcp_client(mcp_url(jp_http_port, jp_base_url), token) as session:
        code = "import time\nfor step in range(3):\n    time.sleep(1.5)\nprint('trained')"
        first = await session.call_tool("python", {**nb, "code": code, "timeout_seconds": 600})
        text = text_of(first)
        job = re.search(r"job-\d+", text)
        assert job is not None, text
        assert first.structured_content["job_id"] == job.group(0)
        waited = await session.call_tool(
            "job_wait", {**nb, "job_id": job.group(0), "timeout_seconds": 30}
        )
        # The wait is capped below the client's timeout too: wait again until it ends.
        for _ in range(20):
            if "trained" in text_of(waited):
                break
            waited = await session.call_tool("job_wait", {**nb, "job_id": job.group(0)})
        assert "trained" in text_of(waited)


async def test_a_call_needing_approval_is_denied_with_nobody_watching(
    jp_serverapp: Any,
    jp_fetch: Any,
    jp_root_dir: Path,
    jp_http_port: int,
    jp_base_url: str,
    codelia_home: Path,
) -> None:
    await open_notebook(jp_fetch, jp_root_dir, "quiet.ipynb")
    token = jp_serverapp.identity_provider.token
    async with mcp_client(mcp_url(jp_http_port, jp_base_url), token, name="cursor") as session:
        denied = await session.call_tool(
            "python", {"notebook_path": "quiet.ipynb", "code": "secret_plan = 1"}
        )
        assert denied.is_error
        assert "no codelia side panel is open on this notebook" in text_of(denied)
        assert denied.structured_content["outcome"] == "denied"
        variables = await session.call_tool("list_variables", {"notebook_path": "quiet.ipynb"})
        assert "secret_plan" not in text_of(variables)


async def test_tools_are_listed_with_no_kernel_and_a_call_starts_the_notebooks_kernel(
    jp_serverapp: Any,
    jp_fetch: Any,
    jp_root_dir: Path,
    jp_http_port: int,
    jp_base_url: str,
    codelia_home: Path,
) -> None:
    notebook = {
        "cells": [],
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (jp_root_dir / "closed.ipynb").write_text(json.dumps(notebook))
    token = jp_serverapp.identity_provider.token
    async with mcp_client(mcp_url(jp_http_port, jp_base_url), token) as session:
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        assert set(tools) == MCP_TOOLS
        assert tools["python"].annotations.destructive_hint is True
        # Listing started nothing.
        assert json.loads((await jp_fetch("api", "kernels")).body) == []

        nb = {"notebook_path": "closed.ipynb"}
        variables = await session.call_tool("list_variables", nb)
        assert not variables.is_error, text_of(variables)
        assert "a python3 kernel was started for it" in text_of(variables)
        sessions = json.loads((await jp_fetch("api", "sessions")).body)
        assert [s["path"] for s in sessions] == ["closed.ipynb"]
        again = await session.call_tool("list_variables", nb)
        assert "was started" not in text_of(again)

        missing = await session.call_tool("list_variables", {"notebook_path": "nowhere.ipynb"})
        assert missing.is_error
        assert "no notebook 'nowhere.ipynb' on this Jupyter server" in text_of(missing)
        assert "'closed.ipynb'" in text_of(missing)
        assert len(json.loads((await jp_fetch("api", "kernels")).body)) == 1


def test_the_packaged_tool_listing_is_the_generators_output() -> None:
    from jupyter_codelia.notebook.run.external import packaged_listing as generate
    from jupyter_codelia.server.mcp_endpoint import packaged_listing

    assert [tool.dump() for tool in packaged_listing()] == generate().dump()["tools"], (
        "jupyter_codelia/server/kernel_tools.json is out of date: run `python -m "
        "jupyter_codelia.notebook.run.external > jupyter_codelia/server/kernel_tools.json`"
    )


async def test_a_big_notebook_without_a_tab_is_run_and_read_again_and_again(
    jp_serverapp: Any,
    jp_fetch: Any,
    jp_root_dir: Path,
    jp_http_port: int,
    jp_base_url: str,
    codelia_home: Path,
    full_access: None,
) -> None:
    """The agent's common loop on a notebook nobody has open: run a cell, read the notebook,
    again. Each read answers from the server (500 cells of it) through the kernel's comm.

    Before the server's kernel channel polled with a timeout, about one run in three stopped
    here: the kernel sent its replies, the channel's endless poll never woke for them."""
    await open_notebook(jp_fetch, jp_root_dir, "big.ipynb")
    cells = [
        {
            "id": f"c{i}",
            "cell_type": "code",
            "source": f"value_{i} = {i} * 2",
            "metadata": {},
            "outputs": [],
            "execution_count": None,
        }
        for i in range(500)
    ]
    notebook = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (jp_root_dir / "big.ipynb").write_text(json.dumps(notebook))
    token = jp_serverapp.identity_provider.token
    nb = {"notebook_path": "big.ipynb"}
    async with mcp_client(mcp_url(jp_http_port, jp_base_url), token) as session:
        for _round in range(3):
            ran = await session.call_tool("notebook_run", {**nb, "cell_ids": ["c499"]})
            assert not ran.is_error, text_of(ran)
            read = await session.call_tool("notebook_read", {**nb, "start": 0, "end": 500})
            assert not read.is_error, text_of(read)
            assert "value_499 = 499 * 2" in text_of(read)
        variables = await session.call_tool("list_variables", nb)
        assert "value_499" in text_of(variables)


async def test_a_kernel_websocket_that_is_not_a_tab_does_not_stop_the_notebook_tools(
    jp_serverapp: Any,
    jp_fetch: Any,
    jp_ws_fetch: Any,
    jp_root_dir: Path,
    jp_http_port: int,
    jp_base_url: str,
    codelia_home: Path,
    full_access: None,
) -> None:
    """Another tool holding the kernel's websocket (the Jupyter MCP Server does, an editor may)
    looks like a tab to the server, but never answers the kernel's hello: the server does."""
    kernel_id = await open_notebook(jp_fetch, jp_root_dir, "shared.ipynb")
    cell = {"id": "c0", "cell_type": "code", "source": "shared = 1", "metadata": {}}
    notebook = {
        "cells": [{**cell, "outputs": [], "execution_count": None}],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (jp_root_dir / "shared.ipynb").write_text(json.dumps(notebook))
    other_tool = await jp_ws_fetch("api", "kernels", kernel_id, "channels")
    token = jp_serverapp.identity_provider.token
    nb = {"notebook_path": "shared.ipynb"}
    try:
        async with mcp_client(mcp_url(jp_http_port, jp_base_url), token) as session:
            listed = await session.call_tool("notebooks", {})
            assert listed.structured_content["notebooks"][0]["tab_open"] is True
            read = await session.call_tool("notebook_read", {**nb, "start": 0, "end": 1})
            assert not read.is_error, text_of(read)
            assert "shared = 1" in text_of(read)
            ran = await session.call_tool("notebook_run", {**nb, "cell_ids": ["c0"]})
            assert not ran.is_error, text_of(ran)
            variables = await session.call_tool("list_variables", nb)
            assert "shared" in text_of(variables)
    finally:
        other_tool.close()
