"""The cell panel and the side panel in Notebook 7 (Chromium): a %%codelia cell ends as static
output, and the side panel connects to the notebook's kernel and answers from there."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from jupyter_codelia.testing import reply, text, tool_use

from .conftest import (
    ARTIFACTS,
    WAIT_KERNEL_IDLE,
    ConsoleLog,
    Lab,
    TurnQueue,
    launch_lab,
    run_cell,
    write_notebook,
)

pytestmark = pytest.mark.browser

PANEL = "#jp-codelia-panel"


@pytest.fixture(scope="module")
def notebook7(anthropic: TurnQueue) -> Iterator[Lab]:
    assert anthropic.server is not None
    env = {"ANTHROPIC_BASE_URL": anthropic.server.url, "ANTHROPIC_API_KEY": "fake"}
    with launch_lab(env, app="notebook") as running:
        yield running


def _record_page_error(console: ConsoleLog, error: Any) -> None:
    # Notebook 7.6 itself throws one error while loading its settings (also with this
    # extension disabled); any error raised from another bundle still fails the test.
    stack = str(error.stack or "")
    if "/static/notebook/notebook_core." in stack and "jupyter-codelia" not in stack:
        return
    console.errors.append(f"page error: {error}")


@pytest.fixture
def nb7_page(browser: Any, notebook7: Lab, anthropic: TurnQueue, request: Any) -> Iterator[Any]:
    console = ConsoleLog()
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    context.set_default_timeout(60_000)
    page = context.new_page()
    page.on("console", lambda message: console.record(message.type, message.text))
    page.on("pageerror", lambda error: _record_page_error(console, error))
    anthropic.turns.clear()
    try:
        yield page
    finally:
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"{request.node.name}.png"))
        page.evaluate(
            "async () => { await window.jupyterapp.serviceManager.sessions.shutdownAll(); }"
        )
        context.close()
    assert console.errors == [], f"the page logged errors: {console.errors}"


def test_cell_panel_and_side_panel_work_in_notebook_7(
    nb7_page: Any, notebook7: Lab, anthropic: TurnQueue
) -> None:
    page = nb7_page
    write_notebook(notebook7.root, "n7.ipynb", [""])
    page.goto(f"{notebook7.url}/notebooks/n7.ipynb")
    page.wait_for_function("() => window.jupyterapp && window.jupyterapp.started", timeout=90_000)
    page.wait_for_function(WAIT_KERNEL_IDLE, timeout=90_000, polling=250)
    run_cell(page, "%load_ext jupyter_codelia")
    anthropic.queue(
        reply(text("Computing."), tool_use("python", {"code": "seven = 3 + 4"})),
        reply(text("The answer is **seven**.")),
    )
    run_cell(page, "%%codelia --approval-mode full-access\nadd 3 and 4")
    static = page.locator(".jp-OutputArea-output .codelia-static").last
    static.locator("strong", has_text="seven").wait_for()
    assert "completed" in static.locator(".codelia-header").inner_text()
    assert static.locator(".codelia-tool-card").count() == 1

    page.evaluate("() => window.jupyterapp.commands.execute('codelia:open')")
    page.wait_for_selector(f'{PANEL} .jp-codelia-kernel[data-state="ready"]')
    anthropic.queue(reply(text("Hello from the **side panel**.")))
    box = page.locator(f"{PANEL} .jp-codelia-input")
    box.fill("say hello")
    box.press("Enter")
    page.locator(f"{PANEL} .jp-codelia-final strong", has_text="side panel").wait_for()
