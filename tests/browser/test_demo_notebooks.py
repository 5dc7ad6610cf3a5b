"""The demo notebooks as a newcomer meets them: real JupyterLab 4 + Debian Chromium, default
settings, no API key (each notebook's offline demo plays), the side panel open, the notebook run
with Run All from the Run menu. The assertions read what the person sees (the page, the files on
disk, the saved notebook and its nbconvert HTML), not that cells merely ran.

These ran wrong in a live notebook while headless runs passed: the notebook outline the agent
adds to a prompt picked the wrong script (tools-tour played its plan reply for every cell,
notebook-tools never inserted its cell), output-cache read another notebook's cache entry, and a
saved notebook kept "Output()" / "VBox(...)" widget reprs.
"""

from __future__ import annotations

import html
import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .conftest import (
    NOTEBOOK_JS,
    ConsoleLog,
    Lab,
    browser_page,
    launch_lab,
    open_lab,
)

pytestmark = pytest.mark.browser

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
SIDE_PANEL = "#jp-codelia-panel"
WIDGET_REPRS = ("Output()", "VBox(", "HBox(", "Error displaying widget", "RunResult(")

# Every code cell ran (Run All reached the end) and nothing runs any more.
ALL_RAN = (
    "() => { const p = " + NOTEBOOK_JS + "; if (!p || !p.model) { return false; }"
    " const kernel = p.sessionContext.session && p.sessionContext.session.kernel;"
    " const code = Array.from(p.model.cells).filter(c => c.type === 'code');"
    " return !!kernel && kernel.status === 'idle' && code.length > 0 && code.every("
    "c => c.executionCount !== null && c.executionState !== 'running'); }"
)


@pytest.fixture(scope="module")
def demo_lab() -> Iterator[Lab]:
    """A lab whose kernels have no API key (the person's first visit), with the demos in it."""
    with launch_lab() as lab:
        shutil.copytree(NOTEBOOKS, lab.root / "notebooks")
        yield lab


@pytest.fixture
def demo_page(browser: Any, demo_lab: Lab, request: Any) -> Iterator[Any]:
    console = ConsoleLog()
    with browser_page(browser, console, request.node.name) as page:
        yield page
    assert console.errors == [], f"the page logged errors: {console.errors}"


def run_all(page: Any, lab: Lab, name: str) -> None:
    """Open notebooks/<name> with the side panel open, Run All from the menu, wait for the end."""
    open_lab(page, lab, f"notebooks/{name}")
    page.wait_for_function(
        "() => { const p = " + NOTEBOOK_JS + "; return !!p && p.context.isReady && "
        "p.sessionContext.isReady && !!p.sessionContext.session && "
        "p.sessionContext.session.kernel.status === 'idle'; }",
        timeout=120_000,
        polling=250,
    )
    page.evaluate("() => window.jupyterapp.commands.execute('codelia:open')")
    page.locator(".lm-MenuBar-item", has_text="Run").first.click()
    page.locator(".lm-Menu-item", has_text="Run All Cells").first.click()
    page.wait_for_function(ALL_RAN, timeout=600_000, polling=500)


def cell_outputs(page: Any) -> list[str]:
    """What each code cell's outputs hold, in order: their text and HTML as the notebook model
    keeps them (JupyterLab renders only the cells on screen, so the page would miss some)."""
    outputs = page.evaluate(
        "() => Array.from((" + NOTEBOOK_JS + ").model.cells)"
        ".filter(c => c.type === 'code').map(c => JSON.stringify(c.outputs.toJSON()))"
    )
    return [_readable(json.loads(text)) for text in outputs]


def _readable(outputs: list[dict[str, Any]]) -> str:
    parts: list[str] = []
    for output in outputs:
        text = output.get("text", "")
        parts.append("".join(text) if isinstance(text, list) else str(text))
        for mime in ("text/html", "text/plain"):
            value = output.get("data", {}).get(mime, "")
            parts.append("".join(value) if isinstance(value, list) else str(value))
    return html.unescape("\n".join(parts))


def kernel_value(page: Any, expression: str) -> str:
    """``expression`` evaluated silently in the notebook's kernel (its ``str``)."""
    return str(
        page.evaluate(
            """async expression => {
              const kernel = (NOTEBOOK_JS).sessionContext.session.kernel;
              const reply = await kernel.requestExecute({
                code: '', silent: true, store_history: false,
                user_expressions: { value: 'str(' + expression + ')' }
              }).done;
              const value = reply.content.user_expressions.value;
              return value.status === 'ok' ? JSON.parse(
                JSON.stringify(value.data['text/plain'])) : 'ERROR ' + value.evalue;
            }""".replace("NOTEBOOK_JS", NOTEBOOK_JS),
            expression,
        )
    ).strip("'\"")


def exported_html(notebook: Path, directory: Path) -> str:
    """``notebook`` exported with nbconvert's HTML exporter (into ``directory``)."""
    subprocess.run(
        [sys.executable, "-m", "jupyter", "nbconvert", "--to", "html", "--output-dir",
         str(directory), str(notebook)],
        check=True, capture_output=True,
    )  # fmt: skip
    return (directory / f"{notebook.stem}.html").read_text()


def side_panel_text(page: Any) -> str:
    return str(page.locator(SIDE_PANEL).inner_text())


def test_tools_tour_fixes_the_typo_on_disk_and_plays_each_cells_own_script(
    demo_page: Any, demo_lab: Lab
) -> None:
    run_all(demo_page, demo_lab, "tools-tour.ipynb")
    per_cell = cell_outputs(demo_page)
    outputs = "\n".join(per_cell)
    workspace = Path(kernel_value(demo_page, "workspace"))
    assert (workspace / "notes.md").read_text() == (
        "# Release notes\n\nThe new exporter is the fastest yet.\n\nTODO: benchmark on big files\n"
    )
    assert "if not values:" in (workspace / "src" / "stats.py").read_text()
    # Each cell played the script of its own prompt, not the plan's (the outline the agent adds
    # to every prompt has the heading "1. Todos: plan first").
    for card in ("apply_patch", "grep", "glob", "view_image", "inspect_variable", "webfetch"):
        assert card in outputs, card
    assert len([cell for cell in per_cell if "The plan is above" in cell]) == 1
    assert "the script expected" not in outputs and "only have scripted answers" not in outputs


def test_notebook_tools_inserts_the_mean_cell_and_runs_it(demo_page: Any, demo_lab: Lab) -> None:
    run_all(demo_page, demo_lab, "notebook-tools.ipynb")
    cells = demo_page.evaluate(
        "() => Array.from((" + NOTEBOOK_JS + ").model.cells).map(c => ({"
        " id: c.id, type: c.type, source: c.sharedModel.getSource(),"
        " count: c.type === 'code' ? c.executionCount : null,"
        " agent: !!c.getMetadata('codelia') }))"
    )
    ids = [cell["id"] for cell in cells]
    inserted = cells[ids.index("total-cell") + 1]
    assert inserted["source"] == "mean = total / len(prices)\nmean"
    assert inserted["agent"] and inserted["count"] is not None  # inserted, marked and run
    outputs = cell_outputs(demo_page)
    code_ids = [cell["id"] for cell in cells if cell["type"] == "code"]
    assert "4.25" in outputs[code_ids.index(inserted["id"])]
    assert "Added a cell after the total" in "\n".join(outputs)
    assert "here is the code to paste" not in "\n".join(outputs)


def test_output_cache_greps_its_own_log_after_other_notebooks_entries(
    demo_page: Any, demo_lab: Lab
) -> None:
    # Another notebook of this home already cached an output under the call id the script's
    # python call gets (toolu_1): the log is saved as toolu_1-2, and the script must read that.
    from jupyter_codelia.cache import ToolOutputCacheStore

    other = ToolOutputCacheStore(demo_lab.home / "cache" / "tool-output")
    other.save(tool_call_id="toolu_1", tool_name="python", content="another notebook's output")
    run_all(demo_page, demo_lab, "output-cache.ipynb")
    run = cell_outputs(demo_page)[3]  # the %%codelia cell
    assert "ERROR tests/test_export.py::test_big_csv FAILED" in run
    assert "E   AssertionError: expected 1048576 rows, got 1048575" in run
    assert "One test failed" in run
    assert "No matches" not in run and "out of range" not in run
    assert "another notebook's output" not in run


def test_a_saved_and_exported_notebook_shows_readable_output_not_widget_reprs(
    demo_page: Any, demo_lab: Lab, tmp_path: Path
) -> None:
    """The quickstart's background run, its job box and %codelia cache: saved, exported with
    nbconvert, and reopened after the kernel restarted."""
    run_all(demo_page, demo_lab, "quickstart.ipynb")
    demo_page.locator(".codelia-static", has_text="recovered by August").first.wait_for()
    demo_page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
    demo_page.wait_for_function("() => !(" + NOTEBOOK_JS + ").context.model.dirty")
    saved = demo_lab.root / "notebooks" / "quickstart.ipynb"
    notebook = json.loads(saved.read_text())
    shown: list[str] = []
    for cell in notebook["cells"]:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            plain = data.get("text/plain", "")
            shown.append("".join(plain) if isinstance(plain, list) else plain)
            if "application/vnd.jupyter.widget-view+json" in data:
                # A live widget (the cache browser) keeps a readable static form beside it.
                assert "text/html" in data and output["metadata"]["jupyter_codelia"]["fallback"]
    assert not [text for text in shown if text.startswith(WIDGET_REPRS)], shown
    assert any("recovered by August" in json.dumps(cell) for cell in notebook["cells"])

    html = exported_html(saved, tmp_path)
    for raw in WIDGET_REPRS:
        assert raw not in html, raw
    assert "recovered by August" in html and "codelia tool-output cache" in html

    # Reopened after a restart (the widgets are gone): static output, never "model not found".
    demo_page.evaluate(
        "async () => { await (" + NOTEBOOK_JS + ").sessionContext.session.kernel.restart(); }"
    )
    open_lab(demo_page, demo_lab, "notebooks/quickstart.ipynb")
    demo_page.locator(".codelia-static", has_text="recovered by August").first.wait_for()
    # The extension asked the kernel about the saved widget outputs: none is left (the
    # kernel knows none of them any more), so their static forms show.
    demo_page.wait_for_function(
        "() => { const p = " + NOTEBOOK_JS + "; return !!p && !!p.model && Array.from("
        "p.model.cells).every(c => c.type !== 'code' || Array.from({length: c.outputs.length},"
        " (_, i) => c.outputs.get(i).data).every(d => !d['application/vnd.jupyter.widget-view"
        "+json'])); }",
        timeout=120_000,
        polling=250,
    )
    assert "Error displaying widget" not in demo_page.locator(".jp-Notebook").inner_text()
    reopened = "\n".join(cell_outputs(demo_page))
    assert "codelia tool-output cache" in reopened  # the cache browser's static form


def test_a_demo_shows_no_price_in_the_cells_or_the_side_panel(
    demo_page: Any, demo_lab: Lab
) -> None:
    run_all(demo_page, demo_lab, "data-analysis.ipynb")
    demo_page.wait_for_selector(f'{SIDE_PANEL} .jp-codelia-kernel[data-state="ready"]')
    cells = "\n".join(cell_outputs(demo_page))
    assert "offline demo · no cost" in cells and "$0." not in cells
    meter = demo_page.locator(f"{SIDE_PANEL} .jp-codelia-meter")
    meter.filter(has_text="offline demo").wait_for()
    assert "$" not in meter.inner_text()
    # Reloaded, the side panel replays the session from the store: still no price.
    open_lab(demo_page, demo_lab, "notebooks/data-analysis.ipynb")
    demo_page.evaluate("() => window.jupyterapp.commands.execute('codelia:open')")
    demo_page.wait_for_selector(f'{SIDE_PANEL} .jp-codelia-kernel[data-state="ready"]')
    demo_page.locator(f"{SIDE_PANEL} .jp-codelia-meter", has_text="offline demo").wait_for()
    assert "$" not in demo_page.locator(f"{SIDE_PANEL} .jp-codelia-meter").inner_text()
    assert "$0." not in side_panel_text(demo_page)
