"""The agent's cell tools in real JupyterLab + Chromium: a blocking ``%%codelia`` run reads the
notebook (text, error, PNG plot), inserts a cell, runs it, edits another; Revert from the badge's
diff card; badge and metadata survive save and reload; stale detection after the person edits a
cell that ran; a long cell run from the side panel returns "still running" and then its result."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from jupyter_codelia.testing import RecordedRequest, reply, tool_use

from .conftest import NOTEBOOK_JS, WAIT_KERNEL_IDLE, Lab, TurnQueue, open_lab, write_notebook

pytestmark = pytest.mark.browser

PANEL = "#jp-codelia-panel"
LOAD = "%load_ext jupyter_codelia\n%config Codelia.approval_mode = 'full-access'"
PLOT = "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.show()"
BADGE = ".jp-codelia-cell-badge"
INSERTED = "plt.plot([3, 1, 2])\nplt.show()\n6 * 7"


def tool_result(request: RecordedRequest) -> tuple[str, list[str]]:
    """(text, block types) of the tool result the request carries back to the model."""
    block = next(b for b in request.messages[-1]["content"] if b.get("type") == "tool_result")
    inner = block["content"]
    if isinstance(inner, str):
        return inner, ["text"]
    return "".join(b.get("text", "") for b in inner), [b["type"] for b in inner]


def cell_id(text: str, index: int) -> str:
    match = re.search(rf"cell #{index} \(id ([\w-]+)\)|cell #{index} · id ([\w-]+)", text)
    assert match, text
    return match.group(1) or match.group(2)


def run_index(page: Any, index: int) -> None:
    page.evaluate(
        """async (index) => {
          const panel = NOTEBOOK_JS;
          window.jupyterapp.shell.activateById(panel.id);
          panel.content.activeCellIndex = index;
          await window.jupyterapp.commands.execute('notebook:run-cell');
        }""".replace("NOTEBOOK_JS", NOTEBOOK_JS),
        index,
    )


def cells(page: Any) -> list[dict[str, Any]]:
    return page.evaluate(
        f"() => ({NOTEBOOK_JS}).model.toJSON().cells.map(c => ({{"
        "source: Array.isArray(c.source) ? c.source.join('') : c.source, "
        "count: c.execution_count, outputs: c.outputs || [], codelia: c.metadata.codelia }))"
    )


def add_cell(page: Any, source: str) -> None:
    page.evaluate(
        f"""(source) => {{ const model = ({NOTEBOOK_JS}).model;
        model.sharedModel.insertCell(model.cells.length, {{cell_type: 'code', source}}); }}""",
        source,
    )


def test_blocking_run_reads_inserts_runs_edits_and_reverts(
    page: Any, lab: Lab, anthropic: TurnQueue
) -> None:
    write_notebook(
        lab.root, "tools.ipynb", [LOAD, PLOT, "1/0", "print('hello')", "%%codelia\nwork on it"]
    )
    open_lab(page, lab, "tools.ipynb")
    page.wait_for_function(WAIT_KERNEL_IDLE, timeout=90_000, polling=250)
    for index in range(4):
        run_index(page, index)

    seen: dict[str, str] = {}

    def run_inserted(request: RecordedRequest) -> Any:
        seen["inserted"] = json.loads(tool_result(request)[0])["cell_id"]
        return reply(tool_use("notebook_run", {"cell_ids": [seen["inserted"]]}))

    def insert_after_reading(request: RecordedRequest) -> Any:
        seen["hello"] = cell_id(tool_result(request)[0], 3)
        args = {"action": "insert", "index": 5, "source": INSERTED}
        return reply(tool_use("notebook_edit", args))

    def edit_hello(request: RecordedRequest) -> Any:
        args = {"cell_id": seen["hello"], "old_string": "hello", "new_string": "hello world"}
        return reply(tool_use("notebook_edit", {"action": "replace", **args}))

    anthropic.queue(
        reply(tool_use("notebook_read", {})),
        reply(tool_use("notebook_read", {"start": 1, "end": 4, "images": True})),
        insert_after_reading,
        run_inserted,
        lambda request: reply(
            tool_use("notebook_run", {"cell_ids": [seen["inserted"]], "interrupt": True})
        ),
        edit_hello,
        reply("Done."),
    )
    start = len(anthropic.requests)
    run_index(page, 4)
    requests = anthropic.requests[start:]
    assert len(requests) == 7

    outline = tool_result(requests[1])[0]
    assert "tools.ipynb (live" in outline and ": 5 cells (5 code, 0 markdown)." in outline
    assert "Errors: #2" in outline
    read, kinds = tool_result(requests[2])
    assert "[error] ZeroDivisionError: division by zero" in read
    assert "[stdout]\nhello" in read
    assert "[display] image/png image (attached)" in read
    assert kinds.count("image") == 1
    inserted = json.loads(tool_result(requests[3])[0])
    assert inserted["summary"].startswith("Inserted code cell #5") and "+6 * 7" in inserted["diff"]
    ran, ran_kinds = tool_result(requests[4])
    assert re.search(r"ran as \[\d+\]:\n\[display\] image/png image \(attached\)", ran), ran
    assert ran.endswith("(attached)\n[result]\n42"), ran
    assert ran_kinds.count("image") == 1
    assert tool_result(requests[5])[0].startswith(
        "Error executing tool: notebook_run: cannot interrupt: the cells run beside a blocking "
        "%%codelia cell"
    )
    replaced = json.loads(tool_result(requests[6])[0])
    assert replaced["summary"].startswith("Replaced the source of cell #3")

    now = cells(page)
    assert now[5]["source"] == INSERTED
    assert "image/png" in now[5]["outputs"][0]["data"]
    assert now[5]["outputs"][1]["data"]["text/plain"] == "42"
    assert now[5]["codelia"]["action"] == "insert"
    assert now[5]["codelia"]["prompt"] == "work on it"
    assert now[3]["source"] == "print('hello world')"
    assert now[3]["codelia"]["action"] == "replace"
    page.locator(BADGE).nth(1).wait_for()
    assert page.locator(BADGE).count() == 2

    # The finished run's panel is static output now; the edited cell's badge reverts the edit.
    magic_cell = page.locator(".jp-Notebook .jp-Cell").nth(4)
    assert magic_cell.locator("button", has_text="Revert").count() == 0
    edited_cell = page.locator(".jp-Notebook .jp-Cell").nth(3)
    edited_cell.locator(BADGE).click()
    edit_card = edited_cell.locator(".jp-codelia-edit-card")
    edit_card.get_by_role("button", name="Revert", exact=True).click()
    page.wait_for_function(
        f"() => ({NOTEBOOK_JS}).model.cells.get(3).sharedModel.getSource() === \"print('hello')\""
    )
    assert cells(page)[3]["codelia"] is None
    page.wait_for_function(f"() => document.querySelectorAll('{BADGE}').length === 1")

    # The badge's card shows the inserted cell's diff.
    inserted_cell = page.locator(".jp-Notebook .jp-Cell").nth(5)
    inserted_cell.locator(BADGE).click()
    card = inserted_cell.locator(".jp-codelia-edit-card")
    assert "+ 6 * 7" in card.inner_text()
    inserted_cell.locator(BADGE).click()  # closes the card

    # Save, reload: the inserted cell keeps its metadata, badge and diff; Accept run keeps the
    # run's edits and takes the badge away.
    page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
    page.wait_for_function(f"() => !({NOTEBOOK_JS}).model.dirty")
    open_lab(page, lab, "tools.ipynb")
    page.wait_for_function(WAIT_KERNEL_IDLE, timeout=90_000, polling=250)
    page.locator(BADGE).first.wait_for()
    assert page.locator(BADGE).count() == 1
    inserted_cell = page.locator(".jp-Notebook .jp-Cell").nth(5)
    inserted_cell.locator(BADGE).click()
    card = inserted_cell.locator(".jp-codelia-edit-card")
    assert "+ 6 * 7" in card.inner_text()
    assert card.locator(".jp-codelia-edit-prompt").inner_text() == "work on it"
    card.locator("button", has_text="Accept run").click()
    page.wait_for_function(f"() => document.querySelectorAll('{BADGE}').length === 0")
    assert cells(page)[5]["codelia"]["review"]["accepted_at"]

    # The person changes cell 3 after it ran: kernel_history reports it stale.
    page.evaluate(
        f"() => ({NOTEBOOK_JS}).model.cells.get(3).sharedModel.setSource(\"print('bye')\")"
    )
    add_cell(page, "%%codelia\nanything stale?")
    anthropic.queue(reply(tool_use("kernel_history", {})), reply("Cell 3 is stale."))
    start = len(anthropic.requests)
    run_index(page, 6)
    history = tool_result(anthropic.requests[start + 1])[0]
    assert "Stale cells (live notebook): changed after the kernel ran them:" in history
    assert "cell #3 (id " in history and "; what ran:\n    print('hello')" in history
    assert "cell #4" not in history  # the %%codelia cell itself is not reported
    # The cell run on the subshell during the blocking run kept In and the counts aligned.
    inserted_count = cells(page)[5]["count"]
    assert f"In [{inserted_count}]: plt.plot([3, 1, 2])" in history
    assert cells(page)[6]["count"] == inserted_count + 1


def test_side_panel_run_returns_still_running_then_the_result(
    page: Any, lab: Lab, anthropic: TurnQueue
) -> None:
    long_cell = "import time\nprint('start')\ntime.sleep(4)\nprint('end')"
    write_notebook(lab.root, "long.ipynb", [LOAD, long_cell])
    open_lab(page, lab, "long.ipynb")
    page.wait_for_function(WAIT_KERNEL_IDLE, timeout=90_000, polling=250)
    run_index(page, 0)
    seen: dict[str, str] = {}

    def first_run(request: RecordedRequest) -> Any:
        seen["id"] = cell_id(tool_result(request)[0], 1)
        return reply(tool_use("notebook_run", {"cell_ids": [seen["id"]], "wait_seconds": 1}))

    def second_run(request: RecordedRequest) -> Any:
        return reply(tool_use("notebook_run", {"cell_ids": [seen["id"]], "wait_seconds": 60}))

    anthropic.queue(
        reply(tool_use("notebook_read", {"start": 1, "end": 2})),
        first_run,
        second_run,
        reply("It printed start and end."),
    )
    page.evaluate("() => window.jupyterapp.commands.execute('codelia:open')")
    page.wait_for_selector(f'{PANEL} .jp-codelia-kernel[data-state="ready"]')
    start = len(anthropic.requests)
    box = page.locator(f"{PANEL} .jp-codelia-input")
    box.fill("run the long cell")
    box.press("Enter")
    page.locator(f"{PANEL} .jp-codelia-final").wait_for()
    requests = anthropic.requests[start:]
    first = tool_result(requests[2])[0]
    assert "is STILL RUNNING; output so far" in first
    assert "[stdout]\nstart" in first and "end" not in first.split("output so far")[1]
    second = tool_result(requests[3])[0]
    assert re.search(r"ran as \[\d+\]:\n\[stdout\]\nstart\nend", second), second
    assert cells(page)[1]["outputs"][0]["text"] == "start\nend\n"


def test_side_panel_edit_card_shows_the_diff_and_reverts(
    page: Any, lab: Lab, anthropic: TurnQueue
) -> None:
    write_notebook(lab.root, "revert.ipynb", [LOAD, "a = 1"])
    open_lab(page, lab, "revert.ipynb")
    page.wait_for_function(WAIT_KERNEL_IDLE, timeout=90_000, polling=250)
    run_index(page, 0)

    def edit_cell(request: RecordedRequest) -> Any:
        target = cell_id(tool_result(request)[0], 1)
        args = {"action": "replace", "cell_id": target, "source": "a = 2"}
        return reply(tool_use("notebook_edit", args))

    anthropic.queue(
        reply(tool_use("notebook_read", {"start": 1, "end": 2})), edit_cell, reply("Set a = 2.")
    )
    page.evaluate("() => window.jupyterapp.commands.execute('codelia:open')")
    page.wait_for_selector(f'{PANEL} .jp-codelia-kernel[data-state="ready"]')
    box = page.locator(f"{PANEL} .jp-codelia-input")
    box.fill("set a to 2")
    box.press("Enter")
    page.locator(f"{PANEL} .jp-codelia-final").wait_for()
    card = page.locator(f"{PANEL} .jp-codelia-tool", has_text="notebook_edit")
    assert "+a = 2" in card.locator(".jp-codelia-diff-added").all_inner_texts()[0]
    assert cells(page)[1]["source"] == "a = 2"
    card.locator(".jp-codelia-edit-revert").click()
    page.wait_for_function(
        f"() => ({NOTEBOOK_JS}).model.cells.get(1).sharedModel.getSource() === 'a = 1'"
    )
    assert card.locator(".jp-codelia-edit-actions").inner_text().endswith("Reverted.")
    assert card.locator(".jp-codelia-edit-revert").is_disabled()
    page.wait_for_function(f"() => document.querySelectorAll('{BADGE}').length === 0")
