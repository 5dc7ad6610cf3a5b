"""The kernel peer on the server's own channel to a real kernel (pytest-jupyter's server).

Unmarked coroutine tests run on the server's loop (see test_handlers.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from jupyter_codelia.server._server_channel import ServerKernelChannel, tab_connected
from jupyter_codelia.server.kernel_peer import KernelPeer, KernelRequestError
from jupyter_codelia.server.mcp_endpoint import packaged_listing


@contextlib.asynccontextmanager
async def peer_on_kernel(jp_serverapp: Any, **kwargs: Any) -> AsyncIterator[KernelPeer]:
    """A new kernel of the server and a started peer on it; both gone afterwards."""
    manager = jp_serverapp.kernel_manager
    kernel_id = await manager.start_kernel(kernel_name="python3")
    try:
        channel = await ServerKernelChannel.open(manager, kernel_id)
        peer = KernelPeer(channel, **kwargs)
        try:
            await peer.start()
            yield peer
        finally:
            await peer.close()
    finally:
        await manager.shutdown_kernel(kernel_id, now=True)


async def _run_on_main_shell(peer: KernelPeer, code: str) -> None:
    """Send ``code`` to the main shell without waiting (the cell a person would run)."""
    message = peer._message("shell", "execute_request", {"code": code, "silent": False}, None)
    await peer.channel.send(message)


async def test_a_request_is_answered_on_a_subshell_while_a_cell_is_busy(
    jp_serverapp: Any, codelia_home: Any
) -> None:
    async with peer_on_kernel(jp_serverapp) as peer:
        assert peer.subshells is True
        await _run_on_main_shell(peer, "import time; time.sleep(3)")
        reply = await peer.request("state.get", timeout=2.5)
        assert reply.queued is False
        assert reply.result["protocol"] == 1
        with pytest.raises(KernelRequestError, match=r"unknown request type 'no\.such'"):
            await peer.request("no.such", timeout=2.5)
        assert not tab_connected(jp_serverapp.kernel_manager, "no-such-kernel")


async def test_without_subshells_a_request_waits_for_the_cell_and_says_so(
    jp_serverapp: Any, codelia_home: Any, tmp_path: Any
) -> None:
    # The cell holds the main shell until the test lets it go, so the request is sent while it
    # is busy however slow a loaded machine is to start the cell.
    release = tmp_path / "release"
    async with peer_on_kernel(jp_serverapp) as peer:
        peer.subshells = False  # as a kernel without JEP 91 subshells reports itself
        await _run_on_main_shell(
            peer,
            f"import os, time\nwhile not os.path.exists({str(release)!r}): time.sleep(0.02)",
        )
        for _ in range(1500):
            if peer.busy:
                break
            await asyncio.sleep(0.02)
        assert peer.busy, "the kernel never said it was busy with the cell"
        waiting = asyncio.ensure_future(peer.request("state.get", timeout=60))
        await asyncio.sleep(0.2)
        assert not waiting.done(), "the request was answered while the main shell was busy"
        release.write_text("go")
        reply = await waiting
        assert reply.queued is True
        assert (await peer.request("state.get", timeout=30)).queued is False


async def test_the_peer_answers_the_kernels_notebook_requests_when_no_tab_does(
    jp_serverapp: Any, codelia_home: Any
) -> None:
    asked: list[dict[str, Any]] = []

    async def answer(request: dict[str, Any]) -> dict[str, Any]:
        asked.append(request)
        return {"cells": [], "answered_by": "server"}

    async with peer_on_kernel(jp_serverapp, on_notebook_request=answer) as peer:
        code = (
            "__import__('jupyter_codelia.notebook.extension', fromlist=['x'])"
            ".kernel_extension(get_ipython()).frontend.call('snapshot', {'x': 1}, timeout=20)"
        )
        outcome = await peer._expression(code, None, timeout=30)
        assert outcome["status"] == "ok", outcome
        assert "'answered_by': 'server'" in outcome["data"]["text/plain"]
        assert [(r["action"], r["params"]) for r in asked] == [("snapshot", {"x": 1})]


async def _set_in_kernel(peer: KernelPeer, code: str) -> None:
    outcome = await peer._expression(code, None, timeout=30)
    assert outcome["status"] == "ok", outcome


FULL_ACCESS = "__import__('os').environ.__setitem__('JUPYTER_CODELIA_APPROVAL_MODE', 'full-access')"


async def test_tools_are_listed_with_their_hints_and_run_in_the_kernel(
    jp_serverapp: Any, codelia_home: Any
) -> None:
    async with peer_on_kernel(jp_serverapp) as peer:
        listing = (await peer.request("tools.list", timeout=30)).result
        tools = {tool["name"]: tool for tool in listing["tools"]}
        # What the server lists while no kernel runs is what a kernel lists.
        assert listing["tools"] == [tool.dump() for tool in packaged_listing()]
        assert {"python", "list_variables", "notebook_edit", "job_wait"} <= set(tools)
        assert "shell" not in tools and "write" not in tools
        assert tools["list_variables"]["read_only"] is True
        assert tools["python"]["destructive"] is True
        assert tools["python"]["input_schema"]["properties"]["code"]["type"] == "string"

        await _set_in_kernel(peer, "globals().__setitem__('sales', [3, 1, 2])")
        call = {"caller": "claude-code", "tool": "list_variables", "arguments": {}}
        result = (await peer.request("tool.call", call, timeout=30)).result
        assert result["is_error"] is False
        assert "sales: list" in result["content"][0]["text"]

        with pytest.raises(KernelRequestError, match="no tool 'shell' in this kernel"):
            await peer.request("tool.call", {**call, "tool": "shell"}, timeout=30)


async def test_a_call_needing_approval_is_denied_when_nobody_can_answer(
    jp_serverapp: Any, codelia_home: Any
) -> None:
    async with peer_on_kernel(jp_serverapp) as peer:
        call = {"caller": "cursor", "tool": "python", "arguments": {"code": "x = 1"}}
        result = (await peer.request("tool.call", call, timeout=30)).result
        assert result["is_error"] is True
        text = result["content"][0]["text"]
        assert "no codelia side panel is open on this notebook" in text
        outcome = await peer._expression("'x' in globals()", None, timeout=30)
        assert outcome["data"]["text/plain"] == "False"


async def test_python_returns_figures_as_images_and_its_namespace_changes(
    jp_serverapp: Any, codelia_home: Any
) -> None:
    async with peer_on_kernel(jp_serverapp) as peer:
        await _set_in_kernel(peer, FULL_ACCESS)
        code = (
            "import matplotlib\nmatplotlib.use('agg')\nimport matplotlib.pyplot as plt\n"
            "total = 41 + 1\nplt.plot([1, 2, 3])\nprint('drawn')"
        )
        call = {"caller": "codex", "tool": "python", "arguments": {"code": code}}
        result = (await peer.request("tool.call", call, timeout=60)).result
        assert result["is_error"] is False, result
        kinds = [part["type"] for part in result["content"]]
        assert "image_url" in kinds
        assert result["content"][kinds.index("image_url")]["image_url"]["url"].startswith(
            "data:image/png;base64,"
        )
        text = "\n".join(part["text"] for part in result["content"] if part["type"] == "text")
        assert "drawn" in text
        assert "total" in text  # the change set names the new variable


class SidePanel:
    """A side panel's end of the ``codelia`` comm, opened through the peer's own channel: it
    collects the kernel's messages on the comm, as the labextension's connection does."""

    def __init__(self, peer: KernelPeer) -> None:
        self.peer = peer
        self.comm_id = uuid.uuid4().hex
        self.messages: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        peer.listen(self._on_iopub)

    def _on_iopub(self, message: dict[str, Any]) -> None:
        content = message.get("content") or {}
        if message["header"]["msg_type"] == "comm_msg" and content.get("comm_id") == self.comm_id:
            self.messages.put_nowait(content["data"])

    async def open(self) -> None:
        await _set_in_kernel(
            self.peer, '__import__("jupyter_codelia").load_ipython_extension(get_ipython())'
        )
        content = {"comm_id": self.comm_id, "target_name": "codelia", "data": {}}
        await self.peer.channel.send(self.peer._message("shell", "comm_open", content, None))
        assert (await self.next("hello"))["type"] == "hello"

    async def next(self, kind: str, **fields: Any) -> dict[str, Any]:
        while True:
            data = await asyncio.wait_for(self.messages.get(), 30)
            event = data.get("event") or {}
            matches = all(event.get(k, data.get(k)) == v for k, v in fields.items())
            if kind in (data.get("type"), event.get("type")) and matches:
                return data


async def test_an_approval_is_asked_in_the_side_panel_naming_the_caller_and_remembered_per_caller(
    jp_serverapp: Any, codelia_home: Any
) -> None:
    async with peer_on_kernel(jp_serverapp) as peer:
        panel = SidePanel(peer)
        await panel.open()

        async def call(caller: str, code: str) -> dict[str, Any]:
            request = {"caller": caller, "tool": "python", "arguments": {"code": code}}
            return (await peer.request("tool.call", request, timeout=60)).result

        first = asyncio.ensure_future(call("claude-code", "answer = 42"))
        started = await panel.next("run.started")
        assert started["source"] == "external"
        assert started["prompt"] == "claude-code calls python"
        asked = (await panel.next("permission.request"))["event"]
        assert asked["title"].startswith("claude-code (an agent outside this notebook)")
        respond = {"permission_request_id": asked["request_id"], "decision": "allow_remember"}
        await peer.request("permission.respond", respond, timeout=10)
        result = await first
        assert result["is_error"] is False, result
        assert (await panel.next("tool_result"))["event"]["tool"] == "python"

        # Remembered for claude-code: its next call runs without asking.
        again = await call("claude-code", "answer += 1")
        assert again["is_error"] is False
        # Not for another agent: cursor is asked, and a denial with a reason reaches it.
        other = asyncio.ensure_future(call("cursor", "answer = 0"))
        asked = (await panel.next("permission.request", tool="python"))["event"]
        assert asked["title"].startswith("cursor ")
        deny = {
            "permission_request_id": asked["request_id"],
            "decision": "deny",
            "reason": "not now",
        }
        await peer.request("permission.respond", deny, timeout=10)
        denied = await other
        assert denied["is_error"] is True
        assert "not now" in denied["content"][0]["text"]
        outcome = await peer._expression("answer", None, timeout=30)
        assert outcome["data"]["text/plain"] == "43"


@dataclasses.dataclass
class CellResult:
    cell_id: str
    status: str
    execution_count: int | None = None
    outputs: list[dict[str, Any]] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class Cell:
    cell_id: str
    code: str


async def test_cells_run_on_the_main_shell_with_their_outputs_and_a_long_one_is_awaited_again(
    jp_serverapp: Any, codelia_home: Any
) -> None:
    from jupyter_codelia.server._cell_runs import CellRuns

    async with peer_on_kernel(jp_serverapp) as peer:
        runs = CellRuns(peer, CellResult)
        cells = [
            Cell("c0", "print('from the kernel')\n42"),
            Cell("c1", "1 / 0"),
            Cell("c2", "never = 1"),
        ]
        first, second = await runs(cells, wait_seconds=30, interrupt=False)
        assert first.status == "done"
        assert [o["output_type"] for o in first.outputs] == ["stream", "execute_result"]
        assert first.outputs[0]["text"] == "from the kernel\n"
        assert first.outputs[1]["data"]["text/plain"] == "42"
        assert second.status == "error"
        assert second.outputs[0]["ename"] == "ZeroDivisionError"
        assert second.execution_count == first.execution_count + 1

        slow = [
            Cell("s0", "import time\nprint('started', flush=True)\ntime.sleep(2)\n'end'"),
            Cell("s1", "after = 1"),
        ]
        running, queued = await runs(slow, wait_seconds=0.5, interrupt=False)
        assert (running.status, queued.status) == ("running", "running")
        ended, after = await runs(slow, wait_seconds=30, interrupt=False)
        assert ended.status == "done"
        assert [o["output_type"] for o in ended.outputs] == ["stream", "execute_result"]
        assert after.status == "done"
        outcome = await peer._expression("In[-3:]", None, timeout=30)
        assert outcome["data"]["text/plain"].count("time.sleep(2)") == 1  # run once
