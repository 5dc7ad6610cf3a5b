"""The side panel with kernels behind a Jupyter Kernel Gateway, in real JupyterLab + Chromium.

The lab runs with ``--gateway-url``; the gateway's kernels have their own working directory and
codelia home (as on another host) and reach the scripted Anthropic server through the
environment the gateway hands them. The lab server's own store stays empty: everything the
panel shows about past sessions comes from the kernel.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlparse

import psutil
import pytest

from jupyter_codelia.cache import ToolOutputCacheStore
from jupyter_codelia.session import SessionStore, read_store_id
from jupyter_codelia.testing import reply, tool_use

from .conftest import (
    BENIGN_CONSOLE,
    ConsoleLog,
    Gateway,
    Lab,
    TurnQueue,
    browser_page,
    launch_gateway,
    launch_lab,
    open_gateway_notebook,
    run_cell,
)
from .test_sidepanel import CELL_RUNNING, LOAD, PANEL, open_panel, send, wait_idle_panel

pytestmark = pytest.mark.browser

# Through a gateway, JupyterLab first asks for the v1 kernel websocket protocol, which the
# server's gateway proxy does not negotiate; Lab logs the refusal and reconnects with the
# default protocol.
GATEWAY_CONSOLE = (*BENIGN_CONSOLE, "Sent non-empty 'Sec-WebSocket-Protocol' header")
# With the gateway gone the server answers kernel requests with 503 and the websocket fails.
GATEWAY_DOWN_CONSOLE = (
    *GATEWAY_CONSOLE,
    "the server responded with a status of 503",
    "WebSocket connection to",
)
LOST_MESSAGE = (
    "Lost contact with the kernel: no answer for 8 s. It may have stopped, or the kernel "
    "gateway serving it may be down. What the run did so far is saved in its session."
)
PANEL_JS = (
    "Array.from(window.jupyterapp.shell.widgets('right')).find(w => w.id === 'jp-codelia-panel')"
)


def _kernel_env(anthropic: TurnQueue) -> dict[str, str]:
    assert anthropic.server is not None
    env = {"ANTHROPIC_BASE_URL": anthropic.server.url, "ANTHROPIC_API_KEY": "fake"}
    # A work tree's jupyter_codelia (tests run with it first on PYTHONPATH) in the kernels too.
    if os.environ.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return env


@pytest.fixture(scope="module")
def gateway_lab(anthropic: TurnQueue) -> Iterator[tuple[Gateway, Lab]]:
    with (
        launch_gateway(_kernel_env(anthropic)) as gateway,
        launch_lab(gateway_url=gateway.url) as lab,
    ):
        yield gateway, lab


def test_codelia_cell_approvals_sessions_resume_and_cache_over_a_gateway(
    browser: Any, gateway_lab: tuple[Gateway, Lab], anthropic: TurnQueue, request: Any
) -> None:
    gateway, lab = gateway_lab
    console = ConsoleLog(benign=GATEWAY_CONSOLE)
    anthropic.turns.clear()
    server_errors: list[str] = []
    with browser_page(browser, console, request.node.name) as page:
        page.on("response", lambda r: server_errors.append(r.url) if r.status >= 500 else None)
        open_gateway_notebook(page, lab, gateway, "remote.ipynb")
        run_cell(page, LOAD)
        open_panel(page)
        # The kernel runs on the gateway (its cwd and home), and says where its store is.
        hello = page.evaluate(f"() => ({PANEL_JS}).connection.hello")
        assert hello["api_key_configured"] is True
        assert hello["store"] == {
            "home": str(gateway.home),
            "store_id": read_store_id(gateway.home),
        }
        assert page.evaluate(f"() => ({PANEL_JS}).history.route()") == "kernel"

        # A blocking %%codelia cell shows in the panel.
        anthropic.queue(reply("Hello from the **gateway** kernel."))
        run_cell(page, "%%codelia\nSay hello")
        page.locator(f"{PANEL} .jp-codelia-final strong", has_text="gateway").wait_for()
        wait_idle_panel(page)

        anthropic.queue(
            reply(tool_use("write", {"file_path": "out.txt", "content": "from the gateway\n"})),
            reply(tool_use("python", {"code": "print(open('out.txt').read() * 3)"})),
            reply("Wrote and printed **out.txt**."),
        )
        run_cell(page, "%%codelia --background\nWrite out.txt and print it")
        magic_prompt = page.locator(f"{PANEL} .jp-codelia-user", has_text="Write out.txt")
        magic_prompt.wait_for()
        assert magic_prompt.locator(".jp-codelia-badge").inner_text() == "%%codelia"

        # Approve the write from the panel while a user cell keeps the kernel busy: the answer
        # travels on a kernel subshell through the gateway.
        card = page.locator(f"{PANEL} .jp-codelia-permission").first
        card.locator(".jp-codelia-allow").wait_for()
        assert "out.txt" in card.locator(".jp-codelia-permission-message").inner_text()
        run_cell(
            page,
            "import os, time\nwhile not os.path.exists('release.flag'):\n    time.sleep(0.05)",
            wait=False,
        )
        page.wait_for_function(CELL_RUNNING)
        card.locator(".jp-codelia-allow").click()
        outcome = card.locator(".jp-codelia-permission-outcome")
        page.wait_for_function("el => el.textContent === 'Allowed'", arg=outcome.element_handle())
        assert page.evaluate(CELL_RUNNING) is True
        (gateway.root / "release.flag").write_text("go")

        python_card = page.locator(f"{PANEL} .jp-codelia-permission").nth(1)
        python_card.locator(".jp-codelia-allow").click()
        page.locator(f"{PANEL} .jp-codelia-final strong", has_text="out.txt").wait_for()
        wait_idle_panel(page)
        assert (gateway.root / "out.txt").read_text() == "from the gateway\n"
        assert not (lab.root / "out.txt").exists()

        # The cache browser lists and reads the kernel's cache.
        page.locator(f"{PANEL} .jp-codelia-cache-button").click()
        entry = page.locator(f"{PANEL} .jp-codelia-cache-entry", has_text="python")
        entry.click()
        output = page.locator(f"{PANEL} .jp-codelia-cache-output")
        page.wait_for_function(
            "el => el.textContent.includes('from the gateway')", arg=output.element_handle()
        )
        page.locator(f"{PANEL} .jp-codelia-cache-button").click()

        # Past sessions come from the kernel's store: the lab server's own store is empty.
        assert SessionStore(lab.home).list_sessions() == []
        page.locator(f"{PANEL} .jp-codelia-new-session").click()
        page.locator(f"{PANEL} .jp-codelia-sessions-button").click()
        rows = page.locator(f"{PANEL} .jp-codelia-session")
        rows.first.wait_for()
        # One session: the blocking and the background magic run continued the same one.
        assert rows.count() == 1
        rows.filter(has_text="Say hello").click()
        page.locator(f"{PANEL} .jp-codelia-final", has_text="Wrote and printed").wait_for()
        assert "Resuming" in page.locator(f"{PANEL} .jp-codelia-resume").inner_text()

        anthropic.queue(reply("It said: from the gateway."))
        send(page, "What did out.txt say?")
        page.locator(f"{PANEL} .jp-codelia-final", has_text="It said: from the").wait_for()
        wait_idle_panel(page)
        sent = json.dumps(anthropic.requests[-1].json["messages"])
        assert "Write out.txt and print it" in sent
        sessions = SessionStore(gateway.home).list_sessions()
        assert sessions[0].last_user_message == "What did out.txt say?"
        assert SessionStore(lab.home).list_sessions() == []

        # Stop reaches the kernel through the gateway.
        anthropic.queue(reply(" ".join(f"word{i}" for i in range(600)), delay_s=0.05))
        send(page, "Talk for a long time")
        page.locator(f"{PANEL} .jp-codelia-streaming").wait_for()
        page.locator(f"{PANEL} .jp-codelia-stop").click()
        page.locator(f"{PANEL} .jp-codelia-notice-warning").wait_for()
        wait_idle_panel(page)
        assert "word599" not in page.locator(f"{PANEL} .jp-codelia-assistant").last.inner_text()
    # JupyterLab asks the server to resolve paths it finds in outputs; for a gateway kernel the
    # server cannot (500). Those are the only server errors allowed, and nothing else logged.
    assert all(urlparse(url).path == "/api/resolvePath" for url in server_errors), server_errors
    unexpected = [e for e in console.errors if "status of 500" not in e or not server_errors]
    assert unexpected == [], f"the page logged errors: {console.errors}"


def _kernel_processes(gateway: Gateway) -> list[psutil.Process]:
    return psutil.Process(gateway.process.pid).children(recursive=True)


def test_killing_the_gateway_mid_run_is_reported_and_tears_nothing(
    browser: Any, anthropic: TurnQueue, request: Any
) -> None:
    console = ConsoleLog(benign=GATEWAY_DOWN_CONSOLE)
    anthropic.turns.clear()
    with launch_gateway(_kernel_env(anthropic)) as gateway:
        with (
            launch_lab(gateway_url=gateway.url) as lab,
            browser_page(browser, console, request.node.name, shutdown_kernels=False) as page,
        ):
            open_gateway_notebook(page, lab, gateway, "doomed.ipynb")
            run_cell(page, LOAD)
            open_panel(page)
            anthropic.queue(
                reply("Noted: 7."), reply(" ".join(f"w{i}" for i in range(3000)), delay_s=0.05)
            )
            send(page, "Remember the number 7")
            page.locator(f"{PANEL} .jp-codelia-final", has_text="Noted: 7.").wait_for()
            wait_idle_panel(page)
            send(page, "Now talk for a long time")
            page.locator(f"{PANEL} .jp-codelia-streaming").wait_for()
            kernels = _kernel_processes(gateway)
            assert kernels, "the gateway started no kernel process"

            gateway.process.send_signal(signal.SIGKILL)
            gateway.process.wait(timeout=30)

            page.wait_for_selector(f'{PANEL}[data-kernel-lost="true"]', timeout=60_000)
            assert page.locator(f"{PANEL} .jp-codelia-status").inner_text() == LOST_MESSAGE
            # The kernel notices its parent is gone and exits; whatever it was writing is cut.
            _, alive = psutil.wait_procs(kernels, timeout=30)
            assert alive == [], f"kernels outlived their gateway: {alive}"

        _assert_store_intact(gateway)


def _assert_store_intact(gateway: Gateway) -> None:
    """Every file of the gateway's store reads back whole after the crash."""
    store = SessionStore(gateway.home)
    try:
        sessions = store.list_sessions()
        assert len(sessions) == 1
        state = store.load_state(sessions[0].session_id)
        assert "Remember the number 7" in json.dumps(state.model_dump(mode="json"))
        paths = store.run_log_paths(sessions[0].session_id)
        assert len(paths) == 2
        for path in paths:
            lines = path.read_bytes().split(b"\n")
            assert lines[-1] == b"", f"{path} ends in a partial line"
            records = [json.loads(line) for line in lines[:-1]]
            assert records[0]["type"] == "header"
        leftovers = list((store.sessions_dir / "state" / ".tmp").glob("*"))
        assert leftovers == []
    finally:
        store.close()
    assert read_store_id(gateway.home) is not None
    ToolOutputCacheStore(gateway.home / "cache" / "tool-output").list_entries()
