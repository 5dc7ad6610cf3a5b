"""Approvals and Stop in a blocking ``%%codelia`` cell as a newcomer meets them: real JupyterLab
and Debian Chromium, default settings (approval mode ``minimal``, no extra config), the side panel
open, every cell typed and run with Shift+Enter. The checks read what the page shows and what
the kernel and the files on disk hold: an approved call ran, a denied one did not.

In a live Lab every approval of a blocking cell used to be denied at once ("no one can answer
approvals here") because the side panel's own requests flipped the kernel's stdin flag, the cell
panel's Stop did nothing, and the status bar said Idle while the cell ran.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_codelia.testing import RecordedRequest, reply, tool_use

from .conftest import NOTEBOOK_JS, WAIT_KERNEL_IDLE, Lab, TurnQueue, open_lab
from .test_demo_notebooks import WIDGET_REPRS, exported_html, kernel_value
from .test_notebook_tools import tool_result
from .test_sidepanel_person import PANEL, open_notebook_with_panel, type_in_cell

pytestmark = pytest.mark.browser

LOAD = "%load_ext jupyter_codelia"
STATUS_BAR = "#jp-main-statusbar"
# A slow final answer: the run is still going while the test looks at the page.
WORDS = [f"w{i}" for i in range(60)]


def cell(page: Any, index: int) -> Any:
    return page.locator(".jp-Notebook .jp-Cell").nth(index)


def start(page: Any, lab: Lab, name: str, cells: int = 2) -> None:
    """A notebook whose first cell loads the extension (typed, Shift+Enter), the panel open."""
    open_notebook_with_panel(page, lab, name, [LOAD] + [""] * (cells - 1))
    type_in_cell(page, 0, LOAD)
    page.wait_for_function(WAIT_KERNEL_IDLE, polling=250)


def pending_approval(page: Any, index: int) -> Any:
    """The approval card cell ``index`` shows, once its buttons are there to click."""
    card = cell(page, index).locator(".codelia-approval").last
    card.locator('[data-codelia-action="allow"]').wait_for(state="visible")
    return card


def codelia_prompt(page: Any, index: int) -> Any:
    """The cell's own input prompt for the approval (JupyterLab's stdin box)."""
    return cell(page, index).locator(".jp-Stdin", has_text="codelia:")


def wait_cell_done(page: Any, index: int) -> None:
    """Cell ``index`` finished: an execution count, not running, the kernel idle."""
    page.wait_for_function(
        "(i) => { const c = (" + NOTEBOOK_JS + ").model.cells.get(i);"
        " return c.executionCount !== null && c.executionState !== 'running'; }",
        arg=index,
        timeout=120_000,
        polling=250,
    )
    page.wait_for_function(WAIT_KERNEL_IDLE, polling=250)


def output_text(page: Any, index: int) -> str:
    return str(cell(page, index).locator(".jp-Cell-outputWrapper").inner_text())


def kernel_status(page: Any) -> str:
    """The kernel status the status bar shows ("Idle", "Busy", ...)."""
    item = page.locator(f"{STATUS_BAR} .jp-StatusBar-Item", has_text="Python 3 (ipykernel) |")
    return str(item.inner_text()).split("|")[-1].strip()


def save(page: Any) -> None:
    page.locator(".jp-Notebook").click()
    page.keyboard.press("Escape")
    page.keyboard.press("Control+s")
    page.wait_for_function(f"() => !({NOTEBOOK_JS}).model.dirty")


def test_allow_in_the_cell_runs_the_code_and_the_status_bar_says_busy(
    page: Any, lab: Lab, anthropic: TurnQueue, tmp_path: Path
) -> None:
    start(page, lab, "allow.ipynb")
    made = lab.root / "allowed.txt"
    code = f"allowed = 6 * 7\nprint('made', allowed)\nopen({str(made)!r}, 'w').write('42')"
    anthropic.queue(
        reply(tool_use("python", {"code": code})),
        reply(" ".join(WORDS), delay_s=0.05),
    )
    type_in_cell(page, 1, "%%codelia\nSet allowed to 42")

    card = pending_approval(page, 1)
    assert "Run tool?" in card.inner_text()
    assert "allowed = 6 * 7" in card.inner_text()
    # The cell's own input prompt asks the same (for a front end without this extension).
    assert "Allow? [y]es / [a]lways / [n]o" in codelia_prompt(page, 1).inner_text()
    # The side panel shows the same approval, open.
    page.locator(f'{PANEL} .jp-codelia-permission[data-decision="pending"]').wait_for()
    assert not made.exists()  # nothing runs before the person answers

    card.locator('[data-codelia-action="allow"]').click()
    cell(page, 1).locator(".codelia-approval", has_text="Allowed").wait_for()
    # The click answered the input prompt too: no box is left waiting in the cell.
    codelia_prompt(page, 1).wait_for(state="detached")
    page.wait_for_selector(
        f'{PANEL} .jp-codelia-permission[data-decision="pending"]', state="detached"
    )
    # The cell runs on (its slow answer streams): the status bar says so, although the click
    # and the side panel ran requests on subshells meanwhile, each ending with an "idle".
    cell(page, 1).locator(".codelia-panel", has_text=WORDS[5]).wait_for()
    assert page.evaluate(f"() => ({NOTEBOOK_JS}).model.cells.get(1).executionState") == "running"
    assert kernel_status(page) == "Busy"

    wait_cell_done(page, 1)
    page.wait_for_function(
        "() => document.querySelector('#jp-main-statusbar').innerText.includes('| Idle')"
    )
    assert kernel_value(page, "allowed") == "42" and made.read_text() == "42"
    # The python card's result, opened as a person does.
    card_result = cell(page, 1).locator("details", has=page.locator("summary", has_text="Result"))
    card_result.locator("summary").first.click()
    card_result.locator("text=made 42").first.wait_for()
    shown = output_text(page, 1)
    assert "made 42" in shown and "Allowed" in shown and WORDS[-1] in shown
    assert "Permission denied" not in shown and "no one can answer" not in shown

    # Saved with Ctrl+S: the file holds readable output, not widget reprs, and so does its
    # nbconvert HTML; reopened, the cell shows it (never "Error displaying widget").
    save(page)
    saved = lab.root / "allow.ipynb"
    assert_no_widget_reprs(saved.read_text())
    notebook = json.loads(saved.read_text())
    assert "made 42" in json.dumps(notebook["cells"][1]["outputs"])
    exported = exported_html(saved, tmp_path)
    assert_no_widget_reprs(exported)
    assert "made 42" in exported and "Allowed" in exported
    open_lab(page, lab, "allow.ipynb")
    page.wait_for_function(WAIT_KERNEL_IDLE, timeout=90_000, polling=250)
    cell(page, 1).locator(".jp-OutputArea-output", has_text="made 42").first.wait_for()
    assert "Error displaying widget" not in page.locator(".jp-Notebook").inner_text()
    assert "Allowed" in output_text(page, 1)


def assert_no_widget_reprs(content: str) -> None:
    for raw in (*WIDGET_REPRS, "HTML(value="):
        assert raw not in content, raw


def test_deny_in_the_cell_does_not_run_the_code(page: Any, lab: Lab, anthropic: TurnQueue) -> None:
    start(page, lab, "deny.ipynb")
    target = lab.root / "denied.txt"
    code = f"denied = 1\nopen({str(target)!r}, 'w').write('ran')"
    anthropic.queue(
        reply(tool_use("python", {"code": code})),
        reply("Understood: I left it alone."),
    )
    type_in_cell(page, 1, "%%codelia\nWrite the file")
    card = pending_approval(page, 1)
    card.locator("[data-codelia-reason]").click()
    page.keyboard.type("not on this machine")
    card.locator('[data-codelia-action="deny"]').click()

    wait_cell_done(page, 1)
    shown = output_text(page, 1)
    assert "Denied: not on this machine" in shown
    assert "Understood: I left it alone." in shown
    assert not target.exists()
    assert kernel_value(page, "'denied' in globals()") == "False"
    # The model was told, with the person's reason.
    result, _ = tool_result(anthropic.requests[-1])
    assert "Permission denied: not on this machine" in result
    # The click answered the cell's input prompt too: no box is left waiting in the cell.
    codelia_prompt(page, 1).wait_for(state="detached")


def test_the_input_box_answers_an_approval_too(page: Any, lab: Lab, anthropic: TurnQueue) -> None:
    start(page, lab, "stdin.ipynb")
    anthropic.queue(
        reply(tool_use("python", {"code": "typed_answer = 'y'"})),
        reply("Set it."),
    )
    type_in_cell(page, 1, "%%codelia\nSet typed_answer")
    pending_approval(page, 1)
    box = codelia_prompt(page, 1).locator("input.jp-Stdin-input")
    box.click()
    page.keyboard.type("y")
    page.keyboard.press("Enter")

    wait_cell_done(page, 1)
    assert kernel_value(page, "typed_answer") == "y"
    shown = output_text(page, 1)
    assert "Allowed" in shown and "Set it." in shown
    # The buttons went with the answer (the approval card is static and answered now).
    assert cell(page, 1).locator('[data-codelia-action="allow"]').count() == 0


@pytest.fixture
def forget_always_allow(lab: Lab) -> Iterator[None]:
    """ "Always allow" saves its rule in the home's config.json, which the lab's other tests
    share: put the file back as it was afterwards."""
    config = lab.home / "config.json"
    before = config.read_text() if config.exists() else None
    yield
    if before is None:
        config.unlink(missing_ok=True)
    else:
        config.write_text(before)


@pytest.mark.usefixtures("forget_always_allow")
def test_always_allow_is_not_asked_again(page: Any, lab: Lab, anthropic: TurnQueue) -> None:
    start(page, lab, "always.ipynb", cells=3)
    anthropic.queue(
        reply(tool_use("python", {"code": "first = 1"})),
        reply(tool_use("python", {"code": "second = 2"})),
        reply("Both set."),
    )
    type_in_cell(page, 1, "%%codelia\nSet first and second")
    pending_approval(page, 1).locator('[data-codelia-action="allow_remember"]').click()
    wait_cell_done(page, 1)
    assert kernel_value(page, "first + second") == "3"
    assert cell(page, 1).locator(".codelia-approval").count() == 1
    assert "Always allowed" in output_text(page, 1)
    saved = json.loads((lab.home / "config.json").read_text())
    assert {"tool": "python"} in saved["permissions"]["allow"]

    # The next cell's python call is not asked either.
    anthropic.queue(reply(tool_use("python", {"code": "third = 3"})), reply("Third set."))
    type_in_cell(page, 2, "%%codelia\nSet third")
    wait_cell_done(page, 2)
    assert kernel_value(page, "third") == "3"
    assert cell(page, 2).locator(".codelia-approval").count() == 0
    assert "Third set." in output_text(page, 2)


def test_the_cells_own_stop_button_stops_a_blocking_run(
    page: Any, lab: Lab, anthropic: TurnQueue
) -> None:
    start(page, lab, "stop.ipynb", cells=3)
    anthropic.queue(reply("slow " * 3000, delay_s=0.05))
    type_in_cell(page, 1, "%%codelia\nWrite at length")
    cell(page, 1).locator(".codelia-panel", has_text="slow slow slow").wait_for()
    stop = cell(page, 1).locator('button[data-codelia-action="stop"]')
    assert stop.is_visible()
    stop.click()

    wait_cell_done(page, 1)
    header = cell(page, 1).locator(".codelia-header").last
    assert "cancelled" in header.inner_text()
    assert "slow " * 3000 not in output_text(page, 1)  # stopped before the answer ended
    # The kernel takes the next cell at once.
    type_in_cell(page, 2, "print('after the stop')")
    cell(page, 2).locator(".jp-OutputArea-output", has_text="after the stop").wait_for()


def test_a_cell_the_agent_inserts_and_runs_gets_its_own_execution_count(
    page: Any, lab: Lab, anthropic: TurnQueue
) -> None:
    start(page, lab, "count.ipynb")
    seen: dict[str, str] = {}

    def run_inserted(request: RecordedRequest) -> Any:
        seen["inserted"] = json.loads(tool_result(request)[0])["cell_id"]
        return reply(tool_use("notebook_run", {"cell_ids": [seen["inserted"]]}))

    anthropic.queue(
        reply(tool_use("notebook_edit", {"action": "insert", "index": 2, "source": "6 * 7"})),
        run_inserted,
        reply("Inserted and ran it."),
    )
    type_in_cell(page, 1, "%%codelia\nAdd a cell computing 6 * 7 and run it")
    # Default mode asks for the edit and for the run; the person allows both in the cell.
    for _ in range(2):
        card = pending_approval(page, 1)
        card.locator('[data-codelia-action="allow"]').click()
        card.locator(".widget-html-content", has_text="Allowed").wait_for()
    wait_cell_done(page, 1)
    counts = page.evaluate(
        f"() => Array.from(({NOTEBOOK_JS}).model.cells).map(c => c.executionCount ?? null)"
    )
    assert cell(page, 2).locator(".jp-OutputArea-output", has_text="42").count() == 1
    magic, inserted = counts[1], counts[2]
    assert inserted is not None and magic is not None
    assert inserted != magic, counts
    # In the order they ran: the %%codelia cell keeps the number the kernel's history has.
    assert counts[:3] == [1, 2, 3], counts
