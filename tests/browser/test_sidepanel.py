"""The Codelia side panel in real JupyterLab + Chromium, with the kernel talking to a scripted
Anthropic server: streaming, tool cards, images, diffs, approvals while a cell is busy, Stop,
magic runs and resuming a past session."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from jupyter_codelia.testing import recorded, reply, tool_use, usage

from .conftest import (
    ARTIFACTS,
    NO_SUBSHELL_KERNEL,
    NOTEBOOK_JS,
    Lab,
    TurnQueue,
    notebook_kernel,
    run_cell,
    write_notebook,
)

pytestmark = pytest.mark.browser

PANEL = "#jp-codelia-panel"
LOAD = "%load_ext jupyter_codelia"


TODOS = [
    {"content": "Look at the chart", "status": "completed"},
    {"content": "Fix the notes", "status": "in_progress", "active_form": "Fixing the notes"},
]
EDIT_ARGS = {"file_path": "notes.txt", "old_string": "hello", "new_string": "hello\nworld"}
CELL_RUNNING = f"() => ({NOTEBOOK_JS}).content.activeCell.model.executionState === 'running'"


def open_panel(page: Any) -> None:
    page.evaluate("() => window.jupyterapp.commands.execute('codelia:open')")
    page.wait_for_selector(f'{PANEL} .jp-codelia-kernel[data-state="ready"]')


def send(page: Any, prompt: str) -> None:
    box = page.locator(f"{PANEL} .jp-codelia-input")
    box.fill(prompt)
    box.press("Enter")


def wait_idle_panel(page: Any) -> None:
    page.wait_for_selector(f'{PANEL}[data-running="false"]', state="attached")


def test_prompt_streams_text_tool_cards_image_and_diff(
    page: Any, lab: Lab, anthropic: TurnQueue, open_notebook: Any
) -> None:
    Image.new("RGB", (40, 30), (220, 30, 30)).save(lab.root / "chart.png")
    (lab.root / "notes.txt").write_text("hello\n")
    open_notebook("stream.ipynb")
    run_cell(page, f"{LOAD}\n%config Codelia.approval_mode = 'trusted'")
    open_panel(page)
    anthropic.queue(
        reply(
            "I will look at the chart first, then fix the notes.",
            tool_use("view_image", {"file_path": "chart.png"}),
            usage=usage(1200, 40),
            delay_s=0.01,
        ),
        reply(tool_use("todo_new", {"todos": TODOS})),
        reply(
            tool_use("edit", EDIT_ARGS),
            usage=usage(1500, 30),
        ),
        reply("Done: the **chart** is red and the notes are updated.", usage=usage(1700, 20)),
    )
    # Remember whether any text item was ever shown while still streaming.
    page.evaluate(
        """() => {
          window.__sawStreaming = false;
          const root = document.querySelector('#jp-codelia-panel');
          new MutationObserver(() => {
            if (root.querySelector('.jp-codelia-streaming')) { window.__sawStreaming = true; }
          }).observe(root, { subtree: true, childList: true, attributes: true });
        }"""
    )

    send(page, "Check chart.png and add world to notes.txt")

    final = page.locator(f"{PANEL} .jp-codelia-final")
    final.wait_for()
    assert final.locator("strong").inner_text() == "chart"
    assert (
        page.locator(f"{PANEL} .jp-codelia-user")
        .first.inner_text()
        .endswith("Check chart.png and add world to notes.txt")
    )
    assert (
        "I will look at the chart first"
        in page.locator(f"{PANEL} .jp-codelia-assistant").first.inner_text()
    )
    assert page.evaluate("() => window.__sawStreaming") is True

    image_card = page.locator(f"{PANEL} .jp-codelia-tool", has_text="view_image")
    assert image_card.get_attribute("data-status") == "completed"
    assert image_card.locator(".jp-codelia-tool-duration").inner_text() != ""
    image = image_card.locator("img.jp-codelia-image")
    assert image.get_attribute("src").startswith("data:image/")
    assert image.evaluate("img => img.complete && img.naturalWidth") == 40

    edit_card = page.locator(f"{PANEL} .jp-codelia-tool", has_text="edit")
    assert edit_card.get_attribute("data-status") == "completed"
    added = edit_card.locator(".jp-codelia-diff-added")
    assert "+world" in added.all_inner_texts()[0]
    assert (lab.root / "notes.txt").read_text() == "hello\nworld\n"

    todos = page.locator(f"{PANEL} .jp-codelia-todos")
    assert todos.locator("summary").inner_text() == "Todos (1/2)"
    assert todos.locator(".jp-codelia-todo-in_progress").inner_text().endswith("Fixing the notes")

    meter = page.locator(f"{PANEL} .jp-codelia-meter").inner_text()
    assert " in · " in meter, meter
    assert not meter.startswith("0 in"), meter
    wait_idle_panel(page)


def test_approve_while_a_user_cell_is_busy(
    page: Any, lab: Lab, anthropic: TurnQueue, open_notebook: Any
) -> None:
    open_notebook("approve.ipynb")
    run_cell(page, LOAD)
    open_panel(page)
    anthropic.queue(
        reply(tool_use("write", {"file_path": "out.txt", "content": "approved\n"})),
        reply("Wrote out.txt."),
    )
    send(page, "Write out.txt")
    card = page.locator(f"{PANEL} .jp-codelia-permission")
    card.locator(".jp-codelia-allow").wait_for()
    assert "out.txt" in card.locator(".jp-codelia-permission-message").inner_text()

    # A user cell that stays busy until the test releases it.
    run_cell(
        page,
        "import os, time\nwhile not os.path.exists('release.flag'):\n    time.sleep(0.05)",
        wait=False,
    )
    page.wait_for_function(CELL_RUNNING)
    assert notebook_kernel(page, "supportsSubshells") is True

    card.locator(".jp-codelia-allow").click()

    outcome = card.locator(".jp-codelia-permission-outcome")
    page.wait_for_function("el => el.textContent === 'Allowed'", arg=outcome.element_handle())
    # The answer reached the kernel through a subshell: the cell has not finished. (The kernel's
    # status is no witness: the subshell's own busy/idle messages update it too.)
    assert page.evaluate(CELL_RUNNING) is True
    assert not (lab.root / "release.flag").exists()

    (lab.root / "release.flag").write_text("go")
    page.locator(f"{PANEL} .jp-codelia-final", has_text="Wrote out.txt.").wait_for()
    assert (lab.root / "out.txt").read_text() == "approved\n"
    write_card = page.locator(f"{PANEL} .jp-codelia-tool", has_text="write")
    assert write_card.get_attribute("data-status") == "completed"
    wait_idle_panel(page)


def test_stop_mid_run(page: Any, lab: Lab, anthropic: TurnQueue, open_notebook: Any) -> None:
    open_notebook("stop.ipynb")
    run_cell(page, LOAD)
    open_panel(page)
    words = " ".join(f"word{i}" for i in range(600))
    anthropic.queue(reply(words, delay_s=0.05))
    send(page, "Talk for a long time")
    page.locator(f"{PANEL} .jp-codelia-streaming").wait_for()
    stop = page.locator(f"{PANEL} .jp-codelia-stop")
    assert stop.is_visible()

    # From the keyboard: Escape anywhere in the panel stops the run.
    page.locator(f"{PANEL} .jp-codelia-input").press("Escape")

    page.locator(f"{PANEL} .jp-codelia-notice-warning").wait_for()
    wait_idle_panel(page)
    # The footer shows the ending, not a "Stopping…" left over from the click.
    page.wait_for_function(
        f"() => !document.querySelector('{PANEL} .jp-codelia-status')"
        ".textContent.includes('Stopping')"
    )
    assert not stop.is_visible()
    assert page.locator(f"{PANEL} .jp-codelia-send").is_enabled()
    text = page.locator(f"{PANEL} .jp-codelia-assistant").inner_text()
    assert "word599" not in text
    assert page.locator(f"{PANEL} .jp-codelia-streaming").count() == 0


def test_magic_runs_show_in_the_panel_which_loads_the_extension_itself(
    page: Any, lab: Lab, anthropic: TurnQueue, open_notebook: Any
) -> None:
    open_notebook("magic.ipynb")
    # Nothing loaded jupyter_codelia in this kernel: the panel does it (keyboard shortcut).
    page.locator(".jp-Notebook").click()
    page.keyboard.press("Control+Alt+C")
    page.wait_for_selector(f'{PANEL} .jp-codelia-kernel[data-state="ready"]')
    label = page.locator(f"{PANEL} .jp-codelia-kernel").inner_text()
    assert label.startswith("magic.ipynb · Python 3 (ipykernel)"), label
    assert page.evaluate("() => document.activeElement.classList.contains('jp-codelia-input')")

    # The person's own %load_ext after the panel loaded it prints nothing into the notebook.
    run_cell(page, "%load_ext jupyter_codelia\nprint('loaded-ok')")
    page.locator(".jp-OutputArea-output", has_text="loaded-ok").wait_for()
    assert "already loaded" not in page.locator(".jp-Notebook").inner_text()

    anthropic.queue(reply("Hi from the **magic** run."))
    run_cell(page, "%%codelia\nSay hi from the cell")

    magic_prompt = page.locator(f"{PANEL} .jp-codelia-user", has_text="Say hi from the cell")
    magic_prompt.wait_for()
    assert magic_prompt.locator(".jp-codelia-badge").inner_text() == "%%codelia"
    page.locator(f"{PANEL} .jp-codelia-final strong", has_text="magic").wait_for()
    wait_idle_panel(page)


def test_resume_a_past_session_from_the_picker(
    page: Any, lab: Lab, anthropic: TurnQueue, open_notebook: Any
) -> None:
    open_notebook("resume.ipynb")
    run_cell(page, LOAD)
    open_panel(page)
    anthropic.queue(reply("Noted: 42."), reply("Sure, here it is."), reply("The number was 42."))

    send(page, "Remember the number 42")
    page.locator(f"{PANEL} .jp-codelia-final", has_text="Noted: 42.").wait_for()
    wait_idle_panel(page)
    first_session = anthropic.requests[-1]

    page.locator(f"{PANEL} .jp-codelia-new-session").click()
    assert "New session" in page.locator(f"{PANEL} .jp-codelia-resume").inner_text()
    assert page.locator(f"{PANEL} .jp-codelia-item").count() == 0
    send(page, "An unrelated question")
    page.locator(f"{PANEL} .jp-codelia-final", has_text="Sure, here it is.").wait_for()
    wait_idle_panel(page)

    page.locator(f"{PANEL} .jp-codelia-sessions-button").click()
    rows = page.locator(f"{PANEL} .jp-codelia-session")
    rows.first.wait_for()
    # The lab's session store is shared by every test of this run: look for ours by name.
    assert rows.filter(has_text="An unrelated question").count() == 1
    rows.filter(has_text="Remember the number 42").click()

    # The old conversation is back, and the next message continues it.
    page.locator(f"{PANEL} .jp-codelia-final", has_text="Noted: 42.").wait_for()
    assert page.locator(f"{PANEL} .jp-codelia-user", has_text="An unrelated question").count() == 0
    assert "Resuming" in page.locator(f"{PANEL} .jp-codelia-resume").inner_text()

    send(page, "Which number was it?")
    page.locator(f"{PANEL} .jp-codelia-final", has_text="The number was 42.").wait_for()
    wait_idle_panel(page)
    sent = json.dumps(anthropic.requests[-1].json["messages"])
    assert "Remember the number 42" in sent
    assert "An unrelated question" not in sent
    assert first_session is not anthropic.requests[-1]


def test_approval_card_shows_the_code_that_will_run(
    page: Any, lab: Lab, anthropic: TurnQueue, open_notebook: Any
) -> None:
    open_notebook("code.ipynb")
    run_cell(page, LOAD)
    open_panel(page)
    code = "import math\nprint(math.pi)"
    anthropic.queue(reply(tool_use("python", {"code": code})), reply("Printed pi."))
    send(page, "Print pi")
    card = page.locator(f"{PANEL} .jp-codelia-permission")
    card.locator(".jp-codelia-allow").wait_for()
    block = card.locator(".jp-codelia-code pre code")
    block.wait_for()
    # Real lines of code, coloured like notebook code, not an escaped JSON string.
    assert block.inner_text().strip() == code
    assert block.locator("span").count() > 0
    assert "\\n" not in card.inner_text()
    always = card.locator(".jp-codelia-allow-remember")
    assert always.evaluate("el => getComputedStyle(el).borderTopStyle") == "solid"
    card.locator(".jp-codelia-allow").click()
    page.locator(f"{PANEL} .jp-codelia-final", has_text="Printed pi.").wait_for()
    tool = page.locator(f"{PANEL} .jp-codelia-tool", has_text="python")
    header = tool.locator(".jp-codelia-tool-header")
    if header.get_attribute("aria-expanded") != "true":
        header.click()
    assert tool.locator(".jp-codelia-code pre code").inner_text().strip() == code
    wait_idle_panel(page)


def test_deny_with_a_reason_tells_the_agent(
    page: Any, lab: Lab, anthropic: TurnQueue, open_notebook: Any
) -> None:
    open_notebook("deny.ipynb")
    run_cell(page, LOAD)
    open_panel(page)
    anthropic.queue(
        reply(tool_use("write", {"file_path": "denied.txt", "content": "no\n"})),
        reply("Understood, I will use b.txt."),
    )
    send(page, "Write denied.txt")
    card = page.locator(f"{PANEL} .jp-codelia-permission")
    card.locator(".jp-codelia-deny").wait_for()
    card.locator(".jp-codelia-permission-reason").fill("use b.txt instead")

    card.locator(".jp-codelia-deny").click()

    page.locator(f"{PANEL} .jp-codelia-final", has_text="I will use b.txt").wait_for()
    assert card.locator(".jp-codelia-permission-outcome").inner_text() == (
        "Denied: use b.txt instead"
    )
    write_card = page.locator(f"{PANEL} .jp-codelia-tool", has_text="write")
    assert write_card.get_attribute("data-status") == "denied"
    assert "use b.txt instead" in json.dumps(anthropic.requests[-1].json["messages"])
    assert not (lab.root / "denied.txt").exists()
    wait_idle_panel(page)


def test_void_text_is_removed_and_citations_are_numbered_links(
    page: Any, lab: Lab, anthropic: TurnQueue, open_notebook: Any
) -> None:
    recordings = Path(__file__).parent.parent / "llm" / "recordings"
    open_notebook("citations.ipynb")
    run_cell(page, LOAD)
    open_panel(page)
    anthropic.queue(
        recorded(recordings / "overloaded_mid_stream.http"),
        recorded(recordings / "web_search_paused.http"),
        recorded(recordings / "web_search_answer_with_citations.http"),
    )
    send(page, "What is the latest pandas release?")
    final = page.locator(f"{PANEL} .jp-codelia-final")
    final.wait_for()
    assert "pandas 3.1.0, released on 12 November 2026" in final.inner_text()
    links = final.locator(".jp-codelia-citations a")
    assert links.count() == 2
    assert links.nth(0).inner_text() == "Release notes: pandas 3.1 — pandas documentation"
    assert links.nth(0).get_attribute("href") == (
        "https://pandas.pydata.org/docs/whatsnew/v3.1.0.html"
    )
    assert final.locator(".jp-codelia-citations").inner_text().startswith("[1] Release notes")
    panel_text = page.locator(PANEL).inner_text()
    assert "Half of an answer" not in panel_text
    assert "[other:" not in panel_text
    wait_idle_panel(page)


def test_cache_browser_pages_greps_and_shows_images_in_both_themes(
    page: Any, lab: Lab, anthropic: TurnQueue, open_notebook: Any
) -> None:
    Image.new("RGB", (16, 16), (30, 30, 220)).save(lab.root / "dot.png")
    open_notebook("cache.ipynb")
    run_cell(page, f"{LOAD}\n%config Codelia.approval_mode = 'full-access'")
    open_panel(page)
    code = "print('\\n'.join(f'row {i}' for i in range(450)))"
    anthropic.queue(
        reply(tool_use("python", {"code": code})),
        reply(tool_use("view_image", {"file_path": "dot.png"})),
        reply("Printed and looked."),
    )
    send(page, "Print rows and look at dot.png")
    page.locator(f"{PANEL} .jp-codelia-final", has_text="Printed and looked.").wait_for()
    wait_idle_panel(page)

    # A closed card builds its body when opened; its link opens the entry in the browser.
    python_card = page.locator(f"{PANEL} .jp-codelia-tool", has_text="python")
    python_card.locator(".jp-codelia-tool-header").click()
    python_card.locator(".jp-codelia-link").click()
    label = page.locator(f"{PANEL} .jp-codelia-cache-page")
    page.wait_for_function(
        "el => el.textContent.startsWith('lines 1–200 of')", arg=label.element_handle()
    )
    output = page.locator(f"{PANEL} .jp-codelia-cache-output")
    page.wait_for_function("el => el.textContent.includes('row 10')", arg=output.element_handle())
    assert "row 300" not in output.inner_text()

    page.locator(f"{PANEL} .jp-codelia-cache-next").click()
    page.wait_for_function(
        "el => el.textContent.startsWith('lines 201–')", arg=label.element_handle()
    )
    page.wait_for_function("el => el.textContent.includes('row 300')", arg=output.element_handle())
    assert page.locator(f"{PANEL} .jp-codelia-cache-prev").is_enabled()

    page.locator(f"{PANEL} .jp-codelia-cache-pattern").fill("row 44")
    page.locator(f"{PANEL} .jp-codelia-cache-pattern").press("Enter")
    page.wait_for_function("el => el.textContent.includes('row 449')", arg=output.element_handle())
    assert "row 300" not in output.inner_text()

    # The cache outlives kernels (other tests' entries are listed too): open this run's image
    # output from its card.
    image_card = page.locator(f"{PANEL} .jp-codelia-tool", has_text="view_image")
    image_card.locator(".jp-codelia-link").click()
    image = page.locator(f"{PANEL} .jp-codelia-cache-images img")
    image.wait_for()
    assert image.get_attribute("src").startswith("data:image/")

    # Columns line up across rows; this session's entries come first, labelled as such.
    rows = page.evaluate(
        "() => [...document.querySelectorAll('#jp-codelia-panel .jp-codelia-cache-entry')]"
        ".map(r => [r.querySelector('.jp-codelia-cache-size').getBoundingClientRect().right,"
        " r.querySelector('.jp-codelia-cache-lines').getBoundingClientRect().left,"
        " r.querySelector('.jp-codelia-cache-whose').textContent])"
    )
    assert len(rows) >= 2
    assert len({round(right) for right, _, _ in rows}) == 1
    assert len({round(left) for _, left, _ in rows}) == 1
    assert [whose for _, _, whose in rows[:2]] == ["(this session)", "(this session)"]

    # Colours come from JupyterLab's theme variables: switching theme restyles the panel.
    light = page.evaluate(
        "() => getComputedStyle(document.querySelector('#jp-codelia-panel')).backgroundColor"
    )
    page.evaluate(
        "() => window.jupyterapp.commands.execute('apputils:change-theme',"
        " { theme: 'JupyterLab Dark' })"
    )
    page.wait_for_function("() => document.body.dataset.jpThemeLight === 'false'")
    page.wait_for_function(
        "light => getComputedStyle(document.querySelector('#jp-codelia-panel'))"
        ".backgroundColor !== light",
        arg=light,
    )
    page.wait_for_selector("#jupyterlab-splash", state="detached")
    page.screenshot(path=str(ARTIFACTS / "cache-browser-dark-theme.png"))
    # A diff's context lines stay readable in dark: light text on the dark panel.
    text, back = page.evaluate(DIFF_CONTEXT_COLOURS_JS)
    assert _luminance(text) - _luminance(back) > 0.4, (text, back)
    # The theme is a user setting shared by the lab of this test run: put it back.
    page.evaluate(
        "() => window.jupyterapp.commands.execute('apputils:change-theme',"
        " { theme: 'JupyterLab Light' })"
    )
    page.wait_for_function("() => document.body.dataset.jpThemeLight === 'true'")
    page.wait_for_selector("#jupyterlab-splash", state="detached")


DIFF_CONTEXT_COLOURS_JS = """() => {
  const panel = Array.from(window.jupyterapp.shell.widgets('right'))
    .find(w => w.id === 'jp-codelia-panel');
  const send = (seq, event) =>
    panel.ingest({ type: 'agent.event', run_id: 'dark', seq, event });
  panel.ingest({ type: 'run.started', run_id: 'dark', session_id: null, prompt: 'dark',
                 source: 'panel', demo: false });
  send(0, { type: 'tool_call', tool: 'edit', args: { file_path: 'a.py' }, tool_call_id: 'd1' });
  const diff = '--- a.py\\n+++ a.py\\n@@ -1,2 +1,2 @@\\n keep this\\n-old\\n+new\\n';
  send(1, { type: 'tool_result', tool: 'edit', tool_call_id: 'd1',
            result: 'a.py: 1 line changed',
            data: { outcome: 'completed', diff, summary: 'a.py: 1 line changed' } });
  const line = document.querySelector('#jp-codelia-panel .jp-codelia-diff-context');
  const panelNode = document.querySelector('#jp-codelia-panel');
  return [getComputedStyle(line).color, getComputedStyle(panelNode).backgroundColor];
}"""


def _luminance(css_colour: str) -> float:
    """Relative luminance (0 black .. 1 white) of an ``rgb(...)``/``rgba(...)`` colour."""
    red, green, blue = (float(v) / 255 for v in re.findall(r"[\d.]+", css_colour)[:3])
    return 0.2126 * red + 0.7152 * green + 0.0722 * blue


def test_the_panel_follows_the_active_notebook(
    page: Any, lab: Lab, anthropic: TurnQueue, open_notebook: Any
) -> None:

    open_notebook("first.ipynb")
    open_panel(page)
    label = page.locator(f"{PANEL} .jp-codelia-kernel")
    assert label.inner_text().startswith("first.ipynb · ")
    anthropic.queue(reply("Answer in the first notebook."))
    send(page, "Question in the first notebook")
    page.locator(f"{PANEL} .jp-codelia-final", has_text="Answer in the first").wait_for()
    wait_idle_panel(page)

    write_notebook(lab.root, "second.ipynb", [""])
    page.evaluate(
        "() => window.jupyterapp.commands.execute('docmanager:open', {path: 'second.ipynb'})"
    )
    page.wait_for_function(
        "el => el.textContent.startsWith('second.ipynb · ') && el.dataset.state === 'ready'",
        arg=label.element_handle(),
    )
    # Another kernel, another conversation: the first one's transcript is not shown here.
    assert page.locator(f"{PANEL} .jp-codelia-item").count() == 0

    page.evaluate(
        "() => window.jupyterapp.commands.execute('docmanager:open', {path: 'first.ipynb'})"
    )
    page.wait_for_function(
        "el => el.textContent.startsWith('first.ipynb · ') && el.dataset.state === 'ready'",
        arg=label.element_handle(),
    )
    # Back on the first kernel, its session's history is loaded from the kernel.
    page.locator(f"{PANEL} .jp-codelia-final", has_text="Answer in the first").wait_for()


def test_without_subshells_answers_wait_for_the_busy_cell_and_the_panel_says_so(
    page: Any, lab: Lab, anthropic: TurnQueue, open_notebook: Any
) -> None:
    open_notebook("nosub.ipynb", kernel=NO_SUBSHELL_KERNEL)
    run_cell(page, LOAD)
    open_panel(page)
    assert notebook_kernel(page, "supportsSubshells") is False
    anthropic.queue(
        reply(tool_use("write", {"file_path": "late.txt", "content": "late\n"})),
        reply("Wrote late.txt."),
    )
    send(page, "Write late.txt")
    card = page.locator(f"{PANEL} .jp-codelia-permission")
    card.locator(".jp-codelia-allow").wait_for()
    run_cell(
        page,
        "import os, time\nwhile not os.path.exists('release-late.flag'):\n    time.sleep(0.05)",
        wait=False,
    )
    page.wait_for_function(CELL_RUNNING)
    page.wait_for_function(f"() => ({NOTEBOOK_JS}).sessionContext.session.kernel.status === 'busy'")

    card.locator(".jp-codelia-allow").click()

    status = page.locator(f"{PANEL} .jp-codelia-status")
    page.wait_for_function(
        "el => el.textContent === "
        "'The kernel is busy; the answer is delivered when the current cell finishes.'",
        arg=status.element_handle(),
    )
    assert card.locator(".jp-codelia-permission-outcome").inner_text() == "Sending…"

    (lab.root / "release-late.flag").write_text("go")
    page.wait_for_function(
        "el => el.textContent === 'Allowed'",
        arg=card.locator(".jp-codelia-permission-outcome").element_handle(),
    )
    page.locator(f"{PANEL} .jp-codelia-final", has_text="Wrote late.txt.").wait_for()
    assert (lab.root / "late.txt").read_text() == "late\n"
    wait_idle_panel(page)


def test_reconnects_after_a_kernel_restart(
    page: Any, lab: Lab, anthropic: TurnQueue, open_notebook: Any
) -> None:
    open_notebook("restart.ipynb")
    open_panel(page)
    anthropic.queue(reply("Before the restart."), reply("After the restart."))
    send(page, "First question")
    page.locator(f"{PANEL} .jp-codelia-final", has_text="Before the restart.").wait_for()
    wait_idle_panel(page)

    page.evaluate(
        f"async () => {{ await ({NOTEBOOK_JS}).sessionContext.session.kernel.restart(); }}"
    )

    # A fresh kernel: the panel loads the extension into it again and starts clean.
    page.locator(f"{PANEL} .jp-codelia-final").wait_for(state="detached")
    page.wait_for_selector(f'{PANEL} .jp-codelia-kernel[data-state="ready"]')
    send(page, "Second question")
    page.locator(f"{PANEL} .jp-codelia-final", has_text="After the restart.").wait_for()
    assert page.locator(f"{PANEL} .jp-codelia-user").count() == 1
    wait_idle_panel(page)


def test_joining_mid_run_and_reloading_show_every_event_once_in_order(
    page: Any, lab: Lab, anthropic: TurnQueue, open_notebook: Any
) -> None:
    """Live events and the transcript replay carry the agent's one numbering: a panel that opens
    while a run is going, and one opened after a reload, show each step exactly once, in order."""
    open_notebook("midrun.ipynb")
    steps = [f"step{i}" for i in range(4)]
    anthropic.queue(
        *[
            reply(
                f"Working on {name}.",
                tool_use("list_variables", {}, id=f"toolu_{name}"),
                delay_s=0.15,
            )
            for name in steps
        ],
        reply("All four steps are done.", delay_s=0.15),
    )
    before = len(anthropic.requests)
    # Loading the extension and starting a background run in one cell (as Run All does): the
    # panel's comm opens only once the run is going, so its live stream starts mid-run.
    run_cell(
        page,
        "get_ipython().run_line_magic('load_ext', 'jupyter_codelia')\n"
        "get_ipython().run_cell_magic('codelia', '--background', 'Work through the steps')",
    )
    # Open the side panel while the run is between its first and last model calls.
    deadline = time.monotonic() + 60
    while len(anthropic.requests) < before + 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(anthropic.requests) >= before + 2, "the run did not reach its second model call"
    open_panel(page)

    def assert_each_step_once() -> None:
        page.locator(f"{PANEL} .jp-codelia-final", has_text="All four steps are done.").wait_for()
        assert page.locator(f"{PANEL} .jp-codelia-final").count() == 1
        texts = page.locator(f"{PANEL} .jp-codelia-assistant").all_inner_texts()
        said = [t.strip() for t in texts if t.strip().startswith("Working on")]
        assert said == [f"Working on {name}." for name in steps], said
        assert page.locator(f"{PANEL} .jp-codelia-tool").count() == len(steps)
        assert page.locator(f"{PANEL} .jp-codelia-user").count() == 1

    assert_each_step_once()
    wait_idle_panel(page)

    # A reload replays the session from the kernel's log: the same items, once each.
    open_notebook("midrun.ipynb")
    open_panel(page)
    assert_each_step_once()
