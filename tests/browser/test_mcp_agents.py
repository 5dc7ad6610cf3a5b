"""An outside agent on ``/codelia/mcp`` (the official MCP SDK client) and a person in the open
JupyterLab tab, at once: the approval the agent's call needs is answered by clicking Allow in
the side panel, and an agent's notebook edit racing the person's typing loses neither edit."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from .conftest import NOTEBOOK_JS, Lab, TurnQueue, run_cell

pytestmark = pytest.mark.browser

PANEL = "#jp-codelia-panel"
LOAD = "%load_ext jupyter_codelia"
FULL_ACCESS = "import os\nos.environ['JUPYTER_CODELIA_APPROVAL_MODE'] = 'full-access'"


@contextlib.asynccontextmanager
async def mcp_session(lab: Lab, xsrf: str, name: str) -> AsyncIterator[Any]:
    """The SDK client on the lab's endpoint (the lab has no token; its XSRF cookie and header
    stand in for a browser's)."""
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client
    from mcp_types import Implementation

    headers = {"X-XSRFToken": xsrf, "Cookie": f"_xsrf={xsrf}"}
    http = create_mcp_http_client(headers=headers)
    try:
        async with (
            streamable_http_client(f"{lab.url}/codelia/mcp", http_client=http) as (r, w, *_),
            ClientSession(r, w, client_info=Implementation(name=name, version="1")) as session,
        ):
            await session.initialize()
            yield session
    finally:
        await http.aclose()


def call_in_background(
    lab: Lab, page: Any, name: str, calls: list[tuple[str, dict[str, Any]]]
) -> concurrent.futures.Future[list[Any]]:
    """Make ``calls`` in order from a thread of their own (the page stays drivable here)."""
    xsrf = next(c["value"] for c in page.context.cookies() if c["name"] == "_xsrf")

    async def run() -> list[Any]:
        async with mcp_session(lab, xsrf, name) as session:
            return [await session.call_tool(tool, arguments) for tool, arguments in calls]

    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    future = pool.submit(asyncio.run, run())
    pool.shutdown(wait=False)
    return future


def text_of(result: Any) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


def cell_sources(page: Any) -> list[str]:
    return list(
        page.evaluate(
            f"""() => {{ const cells = ({NOTEBOOK_JS}).model.cells; const out = [];
            for (let i = 0; i < cells.length; i++) {{
              out.push(cells.get(i).sharedModel.getSource()); }}
            return out; }}"""
        )
    )


def cell_ids(page: Any) -> list[str]:
    return list(
        page.evaluate(
            f"""() => {{ const cells = ({NOTEBOOK_JS}).model.cells; const out = [];
            for (let i = 0; i < cells.length; i++) {{ out.push(cells.get(i).id); }}
            return out; }}"""
        )
    )


def test_an_outside_agents_call_is_approved_with_allow_in_the_side_panel(
    page: Any, lab: Lab, anthropic: TurnQueue, open_notebook: Any
) -> None:
    open_notebook("approve-mcp.ipynb")
    run_cell(page, LOAD)
    page.evaluate("() => window.jupyterapp.commands.execute('codelia:open')")
    page.wait_for_selector(f'{PANEL} .jp-codelia-kernel[data-state="ready"]')

    code = "approved_value = 41 + 1"
    pending = call_in_background(
        lab, page, "claude-code", [("python", {"notebook_path": "approve-mcp.ipynb", "code": code})]
    )
    card = page.locator(f"{PANEL} .jp-codelia-permission", has_text="claude-code")
    card.locator(".jp-codelia-allow").wait_for()
    assert not pending.done()
    card.locator(".jp-codelia-allow").click()

    (ran,) = pending.result(timeout=120)
    assert not ran.is_error, text_of(ran)
    assert ran.structured_content["outcome"] == "completed"
    assert {"name": "approved_value", "change": "added"} in ran.structured_content[
        "namespace_changes"
    ]
    outcome = card.locator(".jp-codelia-permission-outcome")
    page.wait_for_function("el => el.textContent === 'Allowed'", arg=outcome.element_handle())
    # The call shows in the panel as a card of its own.
    page.locator(f"{PANEL} .jp-codelia-tool", has_text="python").first.wait_for()


def test_an_agents_notebook_edit_racing_the_persons_typing_loses_neither(
    page: Any, lab: Lab, anthropic: TurnQueue, open_notebook: Any
) -> None:
    open_notebook("race.ipynb", ["", "b = 2"])
    run_cell(page, LOAD)
    run_cell(page, FULL_ACCESS)
    first, second = cell_ids(page)
    path = {"notebook_path": "race.ipynb"}

    editor = page.locator(".jp-Notebook .jp-Cell").nth(0).locator(".cm-content")
    editor.click()
    page.wait_for_function(
        f"() => {{ const n = ({NOTEBOOK_JS}).content; return n.mode === 'edit' && "
        "n.activeCellIndex === 0 && n.activeCell.editor.hasFocus(); }"
    )
    page.keyboard.press("Control+A")
    page.keyboard.type("typed_by_the_person = ")
    pending = call_in_background(
        lab,
        page,
        "cursor",
        [
            ("notebook_edit", {**path, "action": "replace", "cell_id": second, "source": "b = 3"}),
            ("notebook_edit", {**path, "action": "replace", "cell_id": first, "source": "lost"}),
        ],
    )
    # The person goes on typing while the agent's edits arrive.
    page.keyboard.type("'every keystroke kept'", delay=40)
    other, mine = pending.result(timeout=120)
    page.keyboard.type("  # done", delay=20)

    assert not other.is_error, text_of(other)
    assert other.structured_content["edit_id"]
    assert "b = 3" in (other.structured_content.get("diff") or "")
    assert mine.is_error, text_of(mine)
    assert "typing in cell" in text_of(mine)
    assert cell_sources(page) == ["typed_by_the_person = 'every keystroke kept'  # done", "b = 3"]
