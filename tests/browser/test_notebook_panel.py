"""The in-cell widget panel rendered by real JupyterLab + Chromium: %%codelia output with text,
tool cards, a plot image, a coloured diff and todos; a background run's Allow and Stop buttons
clicked in the page."""

from __future__ import annotations

from typing import Any

import pytest

from jupyter_codelia.testing import reply, text, tool_use

from .conftest import Lab, TurnQueue, run_cell

pytestmark = pytest.mark.browser

LOAD = "%load_ext jupyter_codelia"
PANEL = ".jp-OutputArea-output .codelia-panel"
PLOT = (
    "import matplotlib.pyplot as plt\n"
    "fig, ax = plt.subplots(figsize=(3, 2))\n"
    "ax.plot([1, 2, 3], [3, 1, 2])\n"
    "print('plotted')\n"
)


def _header_status(page: Any) -> str:
    return str(page.locator(f"{PANEL} .codelia-header").last.inner_text())


def test_codelia_cell_renders_text_cards_image_diff_and_todos(
    page: Any, lab: Lab, anthropic: TurnQueue, open_notebook: Any
) -> None:
    (lab.root / "calc.py").write_text("rate = 1\nother = 3\n")
    todos = [{"id": "1", "content": "Plot the data", "status": "in_progress"}]
    anthropic.queue(
        reply(text("Planning the **plot**."), tool_use("todo_new", {"todos": todos})),
        reply(tool_use("python", {"code": PLOT})),
        reply(
            tool_use(
                "edit", {"file_path": "calc.py", "old_string": "rate = 1", "new_string": "rate = 2"}
            )
        ),
        reply(text("Finished: the rate is **2** now.")),
    )
    open_notebook("panel.ipynb")
    run_cell(page, LOAD)
    run_cell(page, "%%codelia --approval-mode full-access\nplot it and raise the rate")
    panel = page.locator(PANEL).last
    panel.locator("strong", has_text="2").wait_for()
    assert panel.locator("strong", has_text="plot").count() == 1
    assert panel.locator(".codelia-tool-card").count() == 3
    image = panel.locator("img").first
    image.wait_for()
    assert image.evaluate("img => img.naturalWidth") > 50
    diff = panel.locator(".codelia-diff").last  # the edit's result (its arguments show it too)
    assert "+rate = 2" in diff.inner_text()
    assert "-rate = 1" in diff.inner_text()
    # Pygments colours added and removed lines with inline styles.
    assert diff.locator("span[style]").count() >= 2
    assert "◐ Plot the data" in panel.locator(".codelia-todos").inner_text()
    assert "completed" in _header_status(page)
    assert (lab.root / "calc.py").read_text() == "rate = 2\nother = 3\n"
    # The finished run is static output now: no widget view is left in the cell.
    output = page.locator(".jp-OutputArea-output", has=page.locator(".codelia-static")).last
    output.wait_for()
    assert output.locator(".jupyter-widgets").count() == 0
    assert output.locator("details summary", has_text="Arguments").count() == 2
    # The python card shows its code whole (open), not folded behind a first line.
    code = output.locator("details[open]", has=page.locator("summary", has_text="Code"))
    assert code.count() == 1 and "ax.plot([1, 2, 3], [3, 1, 2])" in code.inner_text()


def test_background_run_allow_button_and_stop_button(
    page: Any, lab: Lab, anthropic: TurnQueue, open_notebook: Any
) -> None:
    anthropic.queue(
        reply(tool_use("python", {"code": "from_the_button = 'yes'"})),
        reply(text("The value is set.")),
        reply(text("slow " * 3000), delay_s=0.02),
    )
    open_notebook("background.ipynb")
    run_cell(page, LOAD)
    run_cell(page, "%%codelia --background\nset a value")
    approval = page.locator(f"{PANEL} .codelia-approval").last
    allow = approval.locator("button", has_text="Allow").first
    allow.wait_for()
    allow.click()
    approval.locator("text=Allowed").wait_for()
    page.locator(f"{PANEL} p", has_text="The value is set.").wait_for()
    run_cell(page, "print(from_the_button)")
    page.locator(".jp-OutputArea-output", has_text="yes").last.wait_for()

    # A long background answer, stopped with the panel's Stop button.
    run_cell(page, "%%codelia --background\nwrite at length")
    page.locator(f"{PANEL} p", has_text="slow slow").last.wait_for()
    stop = page.locator(f"{PANEL} button", has_text="Stop").last
    stop.click()
    page.wait_for_function(
        """() => {
          const headers = document.querySelectorAll('.codelia-panel .codelia-header');
          return headers.length && headers[headers.length - 1].innerText.includes('cancelled');
        }""",
        timeout=60_000,
    )


def test_live_panel_prose_is_not_double_spaced_and_images_do_not_scroll_sideways(
    page: Any, lab: Lab, open_notebook: Any
) -> None:
    """The panel's own prose and image widgets, live: ipywidgets gives an HTML widget the
    28 px inline-widget line height and every widget a 2 px margin, which would double-space
    prose and push a full-width image past its card (a horizontal scrollbar)."""
    open_notebook("live.ipynb")
    run_cell(
        page,
        "import base64, io, ipywidgets as w\n"
        "from PIL import Image\n"
        "from jupyter_codelia.notebook.ui import renderers\n"
        "from jupyter_codelia.notebook.ui._kit import LIVE\n"
        "from jupyter_codelia.notebook.ui.panel import _images_of\n"
        "buf = io.BytesIO(); Image.new('RGB', (900, 60), 'navy').save(buf, 'PNG')\n"
        "url = 'data:image/png;base64,' + base64.b64encode(buf.getvalue()).decode()\n"
        "prose = w.HTML(renderers.markdown_to_html('word ' * 200))\n"
        "image = {'type': 'image_url', 'image_url': {'url': url}}\n"
        "card = w.VBox([prose, *_images_of(LIVE, [image])],\n"
        "              layout=w.Layout(width='320px', overflow='auto'))\n"
        "card.add_class('live-card')\n"
        "card",
    )
    card = page.locator(".live-card").last
    card.locator("img").wait_for()
    page.wait_for_function(
        "el => el.querySelector('img').getBoundingClientRect().width > 0",
        arg=card.element_handle(),
    )
    assert card.evaluate("el => el.scrollWidth <= el.clientWidth")
    assert card.locator(".codelia-prose").evaluate(
        "el => parseFloat(getComputedStyle(el).lineHeight)"
        " < 1.8 * parseFloat(getComputedStyle(el).fontSize)"
    )
