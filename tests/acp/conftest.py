"""A real Jupyter server on loopback, a scripted model, and the ACP SDK's client for the bridge.

* ``model`` (module): a :class:`ScriptedAnthropicServer` whose turns each test queues; the
  server's kernels reach it through ANTHROPIC_BASE_URL.
* ``jupyter`` (module): ``jupyter server`` on 127.0.0.1 with a token, private config/runtime
  dirs, a temporary codelia home and root, and the codelia server extension on.
* :class:`ScriptedClient`: an ACP ``Client`` that records every session update and answers
  each permission request with the next queued option.
* :func:`acp_agent`: spawns ``codelia-acp`` on stdio (``python -m jupyter_codelia.acp`` where
  the console script is not installed) and connects the client to it.
"""

from __future__ import annotations

import asyncio
import json
import os
import runpy
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from acp import PROTOCOL_VERSION, spawn_agent_process
from acp.client.connection import ClientSideConnection
from acp.schema import (
    AllowedOutcome,
    DeniedOutcome,
    PermissionOption,
    RequestPermissionResponse,
    ToolCallUpdate,
)

from jupyter_codelia.testing import RecordedRequest, ScriptedAnthropicServer

# How the tests start a Jupyter server (tests/server/jupyter_launch.py), run by path.
_popen_jupyter_server = runpy.run_path(
    str(Path(__file__).resolve().parents[1] / "server" / "jupyter_launch.py")
)["popen_jupyter_server"]


REPO = Path(__file__).resolve().parents[2]
TOKEN = "acp-test-token"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class TurnQueue:
    """Scripted turns handed out one per model request; tests queue them as they go."""

    def __init__(self) -> None:
        self.turns: list[Any] = []
        self.server: ScriptedAnthropicServer | None = None

    def __call__(self, request: RecordedRequest) -> Any:
        if not self.turns:
            raise AssertionError("the test queued no scripted turn for this model request")
        return self.turns.pop(0)

    def queue(self, *turns: Any) -> None:
        self.turns.extend(turns)

    @property
    def requests(self) -> list[RecordedRequest]:
        assert self.server is not None
        return self.server.requests


@dataclass
class Jupyter:
    url: str
    token: str
    root: Path
    home: Path
    process: subprocess.Popen[bytes]
    log_path: Path
    env: dict[str, str]

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def get(self, path: str) -> Any:
        return self.call("GET", path)

    def call(self, method: str, path: str, body: Any = None) -> Any:
        request = urllib.request.Request(
            self.url + path,
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"token {self.token}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            data = response.read()
        return json.loads(data) if data else None


# pytest-jupyter's suite-wide plugin adopts and closes the current event loop in two autouse
# fixtures; these tests run their server in a subprocess and their own loops with asyncio.run.
@pytest.fixture(autouse=True)
def jp_asyncio_loop() -> None:
    return None


@pytest.fixture(autouse=True)
def jp_server_cleanup() -> None:
    return None


@pytest.fixture(scope="module")
def model() -> Iterator[TurnQueue]:
    turns = TurnQueue()
    with ScriptedAnthropicServer(turns) as server:
        turns.server = server
        yield turns


@contextmanager
def launch_jupyter(env_extra: dict[str, str]) -> Iterator[Jupyter]:
    """``jupyter server`` on a free loopback port, private dirs; stopped (with kernels) on exit."""
    base = Path(tempfile.mkdtemp(prefix="codelia-acp-"))
    root, home, config, runtime = base / "root", base / "home", base / "config", base / "rt"
    for directory in (root, home, config, runtime):
        directory.mkdir(parents=True)
    (config / "jupyter_server_config.json").write_text(
        json.dumps({"ServerApp": {"jpserver_extensions": {"jupyter_codelia": True}}})
    )
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("ANTHROPIC_", "JUPYTER_CODELIA_", "OPENAI_"))
    }
    env.update(
        {
            "JUPYTER_CONFIG_DIR": str(config),
            "JUPYTER_RUNTIME_DIR": str(runtime),
            "JUPYTER_CODELIA_HOME": str(home),
            "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")])),
            "PYTHONUNBUFFERED": "1",
            "MPLBACKEND": "module://matplotlib_inline.backend_inline",
        }
    )
    env.update(env_extra)
    port = free_port()
    log_path = base / "server.log"
    process = _popen_jupyter_server(root, env, port, TOKEN, log_path)
    server = Jupyter(f"http://127.0.0.1:{port}/", TOKEN, root, home, process, log_path, env)
    try:
        deadline = time.monotonic() + 90
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"jupyter server exited early:\n{server.log()}")
            try:
                server.get("api/status")
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"jupyter server did not start:\n{server.log()}") from None
                time.sleep(0.25)
        yield server
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="module")
def jupyter(model: TurnQueue) -> Iterator[Jupyter]:
    assert model.server is not None
    env = {"ANTHROPIC_BASE_URL": model.server.url, "ANTHROPIC_API_KEY": "fake-key"}
    with launch_jupyter(env) as server:
        yield server


@dataclass
class ScriptedClient:
    """An ACP client: records updates; answers permission requests from ``answers``."""

    answers: list[str] = field(default_factory=list)
    updates: list[tuple[str, Any]] = field(default_factory=list)
    asked: list[ToolCallUpdate] = field(default_factory=list)
    seen: asyncio.Event = field(default_factory=asyncio.Event)

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update))
        self.seen.set()

    async def request_permission(
        self,
        options: list[PermissionOption],
        session_id: str,
        tool_call: ToolCallUpdate,
        **kwargs: Any,
    ) -> RequestPermissionResponse:
        self.asked.append(tool_call)
        if not self.answers:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        choice = self.answers.pop(0)
        assert choice in {o.option_id for o in options}
        return RequestPermissionResponse(
            outcome=AllowedOutcome(option_id=choice, outcome="selected")
        )

    def of(self, kind: str) -> list[Any]:
        return [u for _, u in self.updates if u.session_update == kind]

    def text(self, kind: str = "agent_message_chunk") -> str:
        return "".join(u.content.text for u in self.of(kind) if u.content.type == "text")

    def clear(self) -> None:
        self.updates.clear()
        self.asked.clear()

    async def settle(self, quiet: float = 0.5, timeout: float = 30.0) -> None:
        """Wait until no update came for ``quiet`` seconds: the SDK hands notifications to the
        client on a queue of their own, so a response may overtake the last updates before it."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while loop.time() < deadline:
            self.seen.clear()
            try:
                await asyncio.wait_for(self.seen.wait(), quiet)
            except asyncio.TimeoutError:
                return

    async def wait_for(self, kind: str, timeout: float = 60.0) -> Any:
        deadline = asyncio.get_running_loop().time() + timeout
        while not self.of(kind):
            self.seen.clear()
            left = deadline - asyncio.get_running_loop().time()
            if left <= 0:
                raise AssertionError(f"no {kind} update within {timeout} s: {self.updates}")
            try:
                await asyncio.wait_for(self.seen.wait(), left)
            except asyncio.TimeoutError:
                continue
        return self.of(kind)[0]


def agent_command() -> list[str]:
    """``codelia-acp`` where the console script is installed, else the same as a module."""
    script = Path(sys.executable).with_name("codelia-acp")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "jupyter_codelia.acp"]


@asynccontextmanager
async def acp_agent(
    client: ScriptedClient, jupyter: Jupyter, *args: str
) -> AsyncIterator[ClientSideConnection]:
    """``codelia-acp`` started the way an ACP client starts it, initialized."""
    command = agent_command()
    env = dict(jupyter.env)
    async with spawn_agent_process(
        client, command[0], *command[1:], *args, env=env, cwd=str(jupyter.root)
    ) as (conn, _process):
        await conn.initialize(protocol_version=PROTOCOL_VERSION)
        yield conn
