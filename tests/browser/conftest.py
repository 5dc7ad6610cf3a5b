"""Real JupyterLab + Debian Chromium for browser tests (run in their own pytest process).

Reusable fixtures:

* ``anthropic`` (session): a :class:`ScriptedAnthropicServer` whose turns each test queues with
  ``anthropic.queue(...)``; kernels reach it through ANTHROPIC_BASE_URL (fake key).
* ``lab`` (session): a JupyterLab server on 127.0.0.1 with private config/runtime dirs, a temp
  JUPYTER_CODELIA_HOME and root dir, serving the *current* labextension build.
* ``page`` (per test): a fresh Chromium page that records console errors; a screenshot goes to
  ``artifacts/<test>.png`` after the test and the test fails if the page logged errors.
* ``open_notebook(name, cells=...)``: writes a notebook and opens it with a ready, idle kernel.

:func:`launch_lab`, :func:`launch_gateway` and :func:`launch_browser` are plain context
managers, so scripts (for example ``bench/sidepanel.py``) can use them without pytest.
``launch_lab(gateway_url=...)`` starts a lab whose kernels run behind a kernel gateway.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from jupyter_codelia.testing import RecordedRequest, ScriptedAnthropicServer

REPO = Path(__file__).resolve().parents[2]
BUILD = REPO / "jupyter_codelia" / "labextension"
ARTIFACTS = REPO / "artifacts"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    "--disable-dev-shm-usage",
]
# Console noise JupyterLab itself makes on a fresh, offline server; anything else fails a test.
BENIGN_CONSOLE = (
    "favicon",
    "Failed to load resource: the server responded with a status of 404",
    # JupyterLab's debugger asks a freshly connected kernel for its state; leaving the page (a
    # test that reloads the workspace) cancels that request and the debugger logs it.
    "Could not restore the debugger state: Canceled future for debug_request",
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# A real ipykernel started without its shell-channel thread, which is how a kernel without
# JEP 91 subshells behaves (older ipykernel, other kernels): no "kernel subshells" feature.
NO_SUBSHELL_KERNEL = "python3-no-subshells"
_NO_SUBSHELL_LAUNCHER = """\
from ipykernel.kernelapp import IPKernelApp


class NoSubshellsApp(IPKernelApp):
    def init_sockets(self):
        super().init_sockets()
        self.shell_channel_thread = None


NoSubshellsApp.launch_instance()
"""


def _write_kernel_without_subshells(directory: Path) -> None:
    directory.mkdir(parents=True)
    launcher = directory / "launch.py"
    launcher.write_text(_NO_SUBSHELL_LAUNCHER)
    spec = {
        "argv": [sys.executable, str(launcher), "-f", "{connection_file}"],
        "display_name": "Python 3 (no subshells)",
        "language": "python",
    }
    (directory / "kernel.json").write_text(json.dumps(spec))


@dataclass
class Lab:
    url: str
    root: Path
    home: Path
    process: subprocess.Popen[bytes]
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


def _clean_env() -> dict[str, str]:
    """This process's environment without any Anthropic or codelia setting of the developer."""
    return {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("ANTHROPIC_", "JUPYTER_CODELIA_"))
    }


def _wait_http_ok(url: str, process: subprocess.Popen[bytes], what: str, log: Path) -> None:
    deadline = time.monotonic() + 90
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited early:\n{log.read_text(errors='replace')}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not start in 90 s:\n{log.read_text(errors='replace')}")
        time.sleep(0.25)


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


@dataclass
class Gateway:
    """A Jupyter Kernel Gateway: its kernels run in ``root`` and keep their store in ``home``."""

    url: str
    root: Path
    home: Path
    process: subprocess.Popen[bytes]
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


# Variables the gateway hands on to the kernels it starts (it passes no others but PATH): the
# model endpoint and key live with the kernels, as on a real cluster; PYTHONPATH lets a work
# tree's jupyter_codelia win over the installed one.
GATEWAY_KERNEL_ENV = (
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_API_KEY",
    "JUPYTER_CODELIA_HOME",
    "PYTHONPATH",
)


@contextmanager
def launch_gateway(env_extra: dict[str, str] | None = None) -> Iterator[Gateway]:
    """Start ``jupyter kernelgateway`` on a free loopback port; stop it (and kernels) on exit.

    Its kernels get their own working directory and codelia home, apart from the lab's: the
    side panel must reach their store through the kernel, as with a kernel on another host.
    """
    base = Path(tempfile.mkdtemp(prefix="codelia-gateway-"))
    root, home, runtime = base / "root", base / "home", base / "runtime"
    for directory in (root, home, runtime):
        directory.mkdir(parents=True)
    port = free_port()
    env = _clean_env()
    env.update(
        {
            "JUPYTER_RUNTIME_DIR": str(runtime),
            "JUPYTER_CODELIA_HOME": str(home),
            "PYTHONUNBUFFERED": "1",
            # The gateway splits this on commas (a list option on its command line would not).
            "KG_ENV_PROCESS_WHITELIST": ",".join(GATEWAY_KERNEL_ENV),
        }
    )
    env.update(env_extra or {})
    log_path = base / "gateway.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "kernel_gateway",
                "--KernelGatewayApp.ip=127.0.0.1",
                f"--KernelGatewayApp.port={port}",
                # The lab lists and reconnects to running kernels through the gateway.
                "--JupyterWebsocketPersonality.list_kernels=True",
            ],
            env=env,
            cwd=root,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    gateway = Gateway(f"http://127.0.0.1:{port}", root, home, process, log_path)
    try:
        _wait_http_ok(f"{gateway.url}/api/kernelspecs", process, "the kernel gateway", log_path)
        yield gateway
    finally:
        _stop(process)
        shutil.rmtree(base, ignore_errors=True)


@contextmanager
def launch_lab(
    env_extra: dict[str, str] | None = None, *, gateway_url: str | None = None
) -> Iterator[Lab]:
    """Start JupyterLab on a free loopback port; stop it (and its kernels) on exit.

    With ``gateway_url`` the lab runs its kernels on that kernel gateway (``--gateway-url``).
    """
    if not (BUILD / "package.json").is_file():
        raise RuntimeError(
            f"the labextension is not built ({BUILD} is missing): run `pip install -e .` or "
            "`cd labextension && jlpm build:prod`"
        )
    base = Path(tempfile.mkdtemp(prefix="codelia-lab-"))
    root, home = base / "root", base / "home"
    config, runtime, data = base / "config", base / "runtime", base / "data"
    for directory in (root, home, config / "labconfig", runtime, data / "labextensions"):
        directory.mkdir(parents=True)
    # Serve the build in the work tree (not an older copy installed into the venv).
    (data / "labextensions" / "jupyter-codelia").symlink_to(BUILD)
    (config / "labconfig" / "page_config.json").write_text(
        json.dumps({"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}})
    )
    _write_kernel_without_subshells(data / "kernels" / NO_SUBSHELL_KERNEL)
    (config / "jupyter_server_config.json").write_text(
        json.dumps({"ServerApp": {"jpserver_extensions": {"jupyter_codelia": True}}})
    )
    port = free_port()
    env = _clean_env()
    env.update(
        {
            "JUPYTER_CONFIG_DIR": str(config),
            "JUPYTER_RUNTIME_DIR": str(runtime),
            "JUPYTER_PATH": str(data),
            "JUPYTER_CODELIA_HOME": str(home),
            "PYTHONUNBUFFERED": "1",
        }
    )
    env.update(env_extra or {})
    log_path = base / "lab.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "jupyterlab",
                "--no-browser",
                "--allow-root",
                "--ip=127.0.0.1",
                f"--port={port}",
                "--IdentityProvider.token=",
                "--ServerApp.password=",
                "--ServerApp.disable_check_xsrf=False",
                f"--ServerApp.root_dir={root}",
                "--LabApp.expose_app_in_browser=True",
                "--LabApp.news_url=None",
                "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
                *([f"--gateway-url={gateway_url}"] if gateway_url else []),
            ],
            env=env,
            cwd=root,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    lab = Lab(f"http://127.0.0.1:{port}", root, home, process, log_path)
    try:
        _wait_http_ok(f"{lab.url}/api/status", process, "JupyterLab", log_path)
        yield lab
    finally:
        _stop(process)
        shutil.rmtree(base, ignore_errors=True)


@contextmanager
def launch_browser(extra_args: list[str] | None = None) -> Iterator[Any]:
    """Debian Chromium through Playwright (never a Playwright-downloaded browser)."""
    if not Path(CHROMIUM).exists():
        raise RuntimeError(
            f"{CHROMIUM} is missing: install Debian's browser with `apt-get install -y chromium`"
        )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, args=[*CHROMIUM_ARGS, *(extra_args or [])]
        )
        try:
            yield browser
        finally:
            browser.close()


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


# pytest-jupyter's plugin is declared suite-wide (for tests/server) and brings two autouse
# fixtures: one adopts and then closes the current event loop, which here is the loop
# Playwright's sync API runs, and one cleans up in-process servers on that loop. Browser tests
# run their server in a subprocess, so they opt out of both.
@pytest.fixture(autouse=True)
def jp_asyncio_loop() -> None:
    return None


@pytest.fixture(autouse=True)
def jp_server_cleanup() -> None:
    return None


@pytest.fixture(scope="session")
def anthropic() -> Iterator[TurnQueue]:
    turns = TurnQueue()
    with ScriptedAnthropicServer(turns) as server:
        turns.server = server
        yield turns


@pytest.fixture(scope="session")
def lab(anthropic: TurnQueue) -> Iterator[Lab]:
    assert anthropic.server is not None
    env = {"ANTHROPIC_BASE_URL": anthropic.server.url, "ANTHROPIC_API_KEY": "fake"}
    with launch_lab(env) as running:
        yield running


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    with launch_browser() as running:
        yield running


@dataclass
class ConsoleLog:
    errors: list[str] = field(default_factory=list)
    benign: tuple[str, ...] = BENIGN_CONSOLE

    def record(self, kind: str, text: str) -> None:
        if kind == "error" and not any(noise in text for noise in self.benign):
            self.errors.append(text)


@pytest.fixture
def console() -> ConsoleLog:
    return ConsoleLog()


@contextmanager
def browser_page(
    browser: Any, console: ConsoleLog, name: str, *, shutdown_kernels: bool = True
) -> Iterator[Any]:
    """A fresh page recording console errors; on exit a screenshot ``artifacts/<name>.png``,
    this page's kernels shut down (unless they are gone already) and the context closed."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    context.set_default_timeout(60_000)
    page = context.new_page()
    page.on("console", lambda message: console.record(message.type, message.text))
    page.on("pageerror", lambda error: console.errors.append(f"page error: {error}"))
    try:
        yield page
    finally:
        ARTIFACTS.mkdir(exist_ok=True)
        try:
            page.screenshot(path=str(ARTIFACTS / f"{name}.png"))
        except Exception as exc:  # the page may already be gone after a failure
            print(f"screenshot failed: {exc}")
        if shutdown_kernels:
            # Shut this test's kernels down so the next test starts clean.
            page.evaluate(
                "async () => { await window.jupyterapp.serviceManager.sessions.shutdownAll(); }"
            )
        context.close()


@pytest.fixture
def page(
    browser: Any, lab: Lab, console: ConsoleLog, anthropic: TurnQueue, request: Any
) -> Iterator[Any]:
    anthropic.turns.clear()
    with browser_page(browser, console, request.node.name) as page:
        yield page
    assert console.errors == [], f"the page logged errors: {console.errors}"


def write_notebook(
    root: Path, name: str, cells: list[str], kernel: str = "python3", display: str = "Python 3"
) -> None:
    notebook = {
        "cells": [
            {
                "cell_type": "code",
                "metadata": {},
                "source": source,
                "outputs": [],
                "execution_count": None,
            }
            for source in cells or [""]
        ],
        "metadata": {"kernelspec": {"name": kernel, "display_name": display, "language": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (root / name).write_text(json.dumps(notebook))


def open_lab(page: Any, lab: Lab, path: str = "") -> None:
    """Open a fresh workspace (optionally on ``path``) and wait for the app to start."""
    workspace = f"w{time.monotonic_ns()}"
    suffix = f"/tree/{path}" if path else ""
    page.goto(f"{lab.url}/lab/workspaces/{workspace}{suffix}?reset")
    page.wait_for_function("() => window.jupyterapp && window.jupyterapp.started", timeout=90_000)
    page.evaluate("() => window.jupyterapp.started")


# The open notebook panel (tests open one notebook per workspace; shell.currentWidget follows
# focus and is null while the side panel has it).
NOTEBOOK_JS = (
    "Array.from(window.jupyterapp.shell.widgets('main')).find(w => w.sessionContext && w.content)"
)

# A synchronous predicate (wait_for_function treats a returned Promise as truthy).
WAIT_KERNEL_IDLE = (
    "() => { const widget = "
    + NOTEBOOK_JS
    + "; if (!widget || !widget.context.isReady || !widget.sessionContext.isReady) "
    "{ return false; } const session = widget.sessionContext.session; "
    "return !!session && !!session.kernel && session.kernel.status === 'idle'; }"
)


def open_notebook_in(
    page: Any, lab: Lab, name: str, cells: list[str] | None = None, kernel: str = "python3"
) -> None:
    """Write a notebook into ``lab`` and open it with a ready, idle kernel."""
    write_notebook(lab.root, name, cells or [""], kernel)
    open_lab(page, lab, name)
    page.wait_for_function(WAIT_KERNEL_IDLE, timeout=90_000, polling=250)


# Through a gateway JupyterLab first asks for the v1 kernel websocket protocol, which the
# server's gateway proxy refuses; Lab reconnects at once with the same session id, and on a busy
# machine the gateway may keep the refused attempt's connection ("Replacing stale connection")
# instead of the new one, leaving the kernel's status "unknown". Reconnecting recovers, as
# reloading the page does for a user.
RECONNECT_KERNEL_JS = (
    "async () => { await (" + NOTEBOOK_JS + ").sessionContext.session.kernel.reconnect(); }"
)


def open_gateway_notebook(
    page: Any, lab: Lab, gateway: Gateway, name: str, *, attempts: int = 3
) -> None:
    """Open a notebook on a gateway kernel (see RECONNECT_KERNEL_JS); on failure show logs."""
    write_notebook(lab.root, name, [""])
    open_lab(page, lab, name)
    for attempt in range(attempts):
        try:
            page.wait_for_function(WAIT_KERNEL_IDLE, timeout=40_000, polling=250)
            return
        except Exception as exc:
            if attempt == attempts - 1:
                raise AssertionError(
                    f"the notebook's gateway kernel did not become idle ({exc})\n"
                    f"--- lab log ---\n{lab.log()[-4000:]}\n"
                    f"--- gateway log ---\n{gateway.log()[-4000:]}"
                ) from exc
            page.evaluate(RECONNECT_KERNEL_JS)


@pytest.fixture
def open_notebook(page: Any, lab: Lab) -> Callable[..., None]:
    def open_it(name: str, cells: list[str] | None = None, kernel: str = "python3") -> None:
        open_notebook_in(page, lab, name, cells, kernel)

    return open_it


def run_cell(page: Any, source: str, *, wait: bool = True) -> None:
    """Put ``source`` in the active cell of the current notebook and run it."""
    page.evaluate(
        """async ({ source, wait }) => {
          const panel = NOTEBOOK_JS;
          window.jupyterapp.shell.activateById(panel.id);
          panel.content.activeCell.model.sharedModel.setSource(source);
          const done = window.jupyterapp.commands.execute('notebook:run-cell');
          if (wait) { await done; }
        }""".replace("NOTEBOOK_JS", NOTEBOOK_JS),
        {"source": source, "wait": wait},
    )


def notebook_kernel(page: Any, attribute: str) -> Any:
    """An attribute of the open notebook's kernel connection (``status``, ``supportsSubshells``)."""
    return page.evaluate(f"() => ({NOTEBOOK_JS}).sessionContext.session.kernel.{attribute}")
