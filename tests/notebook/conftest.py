"""A real ipykernel driven through jupyter_client, pointed at a scripted model server.

The server runs in the test process; the kernel reaches it through ANTHROPIC_BASE_URL with a
fake ANTHROPIC_API_KEY, and keeps its sessions and cache under a temporary JUPYTER_CODELIA_HOME.
Tests about the agent take a ``provider`` argument and run once per provider: ``scripted(...)``
makes that provider's server and ``start_kernel(url, provider=provider)`` configures the kernel
for it (``JUPYTER_CODELIA_PROVIDER`` / ``_BASE_URL`` and ``OPENAI_API_KEY`` for OpenAI).

The client executes with ``allow_stdin: false`` unless a test asks for stdin, and by default it
renders widgets the way ipywidgets 8 front ends announce it, by opening the
``jupyter.widget.control`` comm: the panels are live widgets it records. ``widgets=False`` makes
it a headless client (nbclient-like), where codelia shows static output and opens no widget.
"""

from __future__ import annotations

import os
import queue
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from jupyter_client.manager import KernelManager

from jupyter_codelia.testing import ScriptedAnthropicServer, ScriptedOpenAIServer, ScriptedServer

PROVIDERS = ("anthropic", "openai")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "provider" in metafunc.fixturenames:
        metafunc.parametrize("provider", PROVIDERS)


def scripted(provider: str, script: Any = ()) -> ScriptedServer:
    """That provider's scripted server (not started: use it in ``with``)."""
    kind = ScriptedOpenAIServer if provider == "openai" else ScriptedAnthropicServer
    return kind(script)


@dataclass
class Execution:
    msg_id: str
    reply: dict[str, Any]
    messages: list[dict[str, Any]] = field(default_factory=list)

    @property
    def status(self) -> str:
        return str(self.reply["content"]["status"])

    def stream_text(self) -> str:
        return "".join(m["content"]["text"] for m in self.messages if m["msg_type"] == "stream")

    def result_text(self) -> str:
        for m in self.messages:
            if m["msg_type"] == "execute_result":
                return str(m["content"]["data"].get("text/plain", ""))
        return ""


class Kernel:
    """A started kernel with a log of every iopub message and the widget states seen."""

    def __init__(self, km: KernelManager) -> None:
        self.km = km
        self.kc = km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=60)
        self.iopub: list[dict[str, Any]] = []
        self.widgets: dict[str, dict[str, Any]] = {}
        self.widget_buffers: dict[str, list[bytes]] = {}
        self.idle: set[str] = set()

    def render_widgets(self) -> None:
        """Announce a widget front end: the ipywidgets control comm (what Lab opens)."""
        # Silent: the test's own cells keep their execution counts (Out[1] is theirs).
        self.kc.execute_interactive("import ipywidgets", silent=True, timeout=60)
        msg = self.kc.session.msg(
            "comm_open",
            {"comm_id": uuid.uuid4().hex, "target_name": "jupyter.widget.control", "data": {}},
            metadata={"version": "1.0.0"},  # the control protocol jupyterlab_widgets speaks
        )
        self.kc.shell_channel.send(msg)
        check = "any(c.target_name == 'jupyter.widget.control' for c in __import__('comm')" \
            ".get_comm_manager().comms.values())"  # fmt: skip
        reply = self.kc.execute_interactive(
            "", silent=True, user_expressions={"open": check}, timeout=60
        )
        opened = reply["content"]["user_expressions"]["open"]
        assert opened["data"]["text/plain"] == "True", opened

    def displayed(self, execution: Execution) -> list[dict[str, Any]]:
        """The data of each output the cell shows at its end (display updates applied)."""
        shown: list[dict[str, Any]] = []
        by_id: dict[str, int] = {}
        for m in self.iopub:
            content = m["content"]
            display_id = (content.get("transient") or {}).get("display_id")
            if m["msg_type"] == "update_display_data":
                if display_id in by_id:
                    shown[by_id[display_id]] = content["data"]
            elif m["msg_type"] in ("display_data", "execute_result") and (
                m["parent_header"].get("msg_id") == execution.msg_id
            ):
                if display_id:
                    by_id[display_id] = len(shown)
                shown.append(content["data"])
        return shown

    def _record(self, msg: dict[str, Any]) -> None:
        self.iopub.append(msg)
        content = msg["content"]
        if msg["msg_type"] == "status" and content["execution_state"] == "idle":
            self.idle.add(msg["parent_header"].get("msg_id"))
        if msg["msg_type"] == "comm_open":
            state = content.get("data", {}).get("state", {})
            self.widgets[content["comm_id"]] = dict(state)
            if msg.get("buffers"):
                self.widget_buffers[content["comm_id"]] = [bytes(b) for b in msg["buffers"]]
        elif msg["msg_type"] == "comm_msg":
            data = content.get("data", {})
            if data.get("method") == "update" and content["comm_id"] in self.widgets:
                self.widgets[content["comm_id"]].update(data.get("state", {}))
                if msg.get("buffers"):
                    self.widget_buffers[content["comm_id"]] = [bytes(b) for b in msg["buffers"]]

    def drain(self, timeout: float = 0.05) -> None:
        while True:
            try:
                msg = self.kc.get_iopub_msg(timeout=timeout)
            except queue.Empty:
                return
            self._record(msg)

    def execute(
        self,
        code: str,
        *,
        timeout: float = 120,
        allow_stdin: bool = False,
        on_input: Callable[[dict[str, Any]], str | None] | None = None,
        during: Callable[[Kernel], None] | None = None,
    ) -> Execution:
        """Run ``code`` until its reply and idle status; ``during`` is polled while it runs."""
        msg_id = self.kc.execute(code, allow_stdin=allow_stdin)
        deadline = time.monotonic() + timeout
        execution: Execution | None = None
        while time.monotonic() < deadline:
            if on_input is not None:
                try:
                    request = self.kc.get_stdin_msg(timeout=0.01)
                except queue.Empty:
                    pass
                else:
                    answer = on_input(request)
                    if answer is not None:  # None: leave the prompt unanswered
                        self.kc.input(answer)
            try:
                msg = self.kc.get_iopub_msg(timeout=0.05)
            except queue.Empty:
                msg = None
            if msg is not None:
                self._record(msg)
            if during is not None and execution is None:
                during(self)
            if execution is None:
                try:
                    reply = self.kc.get_shell_msg(timeout=0.01)
                except queue.Empty:
                    reply = None
                if reply is not None and reply["parent_header"].get("msg_id") == msg_id:
                    execution = Execution(msg_id, reply)
            if execution is not None and msg_id in self.idle:
                # Messages may have been read by a helper polling meanwhile: take them from
                # the log, not from this loop.
                execution.messages = [
                    m for m in self.iopub if m["parent_header"].get("msg_id") == msg_id
                ]
                return execution
        raise AssertionError(f"no reply within {timeout} s for: {code[:80]}")

    def wait_for(self, predicate: Callable[[Kernel], bool], timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate(self):
                return
            self.drain(0.05)
        raise AssertionError("condition not reached in time")

    def widgets_of(self, model_name: str) -> dict[str, dict[str, Any]]:
        return {k: v for k, v in self.widgets.items() if v.get("_model_name") == model_name}

    def html_text(self) -> str:
        return "\n".join(str(s.get("value", "")) for s in self.widgets_of("HTMLModel").values())

    def button(self, description: str) -> str | None:
        for comm_id, state in self.widgets_of("ButtonModel").items():
            if state.get("description") == description and not state.get("disabled"):
                return comm_id
        return None

    def click(self, comm_id: str) -> None:
        """A button click the way ipywidgets front ends send it."""
        msg = self.kc.session.msg(
            "comm_msg",
            {"comm_id": comm_id, "data": {"method": "custom", "content": {"event": "click"}}},
        )
        self.kc.shell_channel.send(msg)

    def set_value(self, comm_id: str, value: Any) -> None:
        msg = self.kc.session.msg(
            "comm_msg",
            {
                "comm_id": comm_id,
                "data": {"method": "update", "state": {"value": value}, "buffer_paths": []},
            },
        )
        self.kc.shell_channel.send(msg)

    def close(self) -> None:
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)


@pytest.fixture
def codelia_home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    # Private, as codelia makes its own home: a loose one is tightened on first use with a
    # logged note, and that note lands in whichever cell is running at the time.
    home.mkdir(mode=0o700)
    return home


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    (work / "a.py").write_text("x = 1\ny = 3\n", encoding="utf-8")
    return work


@pytest.fixture
def start_kernel(codelia_home: Path, workspace: Path) -> Iterator[Callable[..., Kernel]]:
    started: list[Kernel] = []

    def start(
        base_url: str | None = None,
        *,
        api_key: str | None = "test-key",
        provider: str = "anthropic",
        widgets: bool = True,
        **env: str,
    ) -> Kernel:
        environ = {
            k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))
        }
        environ = {k: v for k, v in environ.items() if not k.startswith("JUPYTER_CODELIA_")}
        environ["JUPYTER_CODELIA_HOME"] = str(codelia_home)
        if provider == "openai":
            environ["JUPYTER_CODELIA_PROVIDER"] = "openai"
            environ["JUPYTER_CODELIA_MODEL"] = "gpt-4o"
            if base_url is not None:
                environ["JUPYTER_CODELIA_BASE_URL"] = base_url
            if api_key is not None:
                environ["OPENAI_API_KEY"] = api_key
        else:
            if base_url is not None:
                environ["ANTHROPIC_BASE_URL"] = base_url
            if api_key is not None:
                environ["ANTHROPIC_API_KEY"] = api_key
        environ.update(env)
        km = KernelManager(kernel_name="python3")
        km.start_kernel(env=environ, cwd=str(workspace))
        kernel = Kernel(km)
        started.append(kernel)
        if widgets:
            kernel.render_widgets()
        return kernel

    yield start
    for kernel in started:
        kernel.close()
