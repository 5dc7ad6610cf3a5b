"""The side panel and the review of agent-made cells as a person meets them: real JupyterLab and
Debian Chromium, default settings, the side panel open, cells and messages typed and sent with
the keyboard; every check is on what the page shows."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from jupyter_codelia.testing import RecordedRequest, reply, tool_use

from .conftest import (
    BENIGN_CONSOLE,
    NOTEBOOK_JS,
    WAIT_KERNEL_IDLE,
    ConsoleLog,
    Lab,
    TurnQueue,
    browser_page,
    open_lab,
    write_notebook,
)
from .test_notebook_tools import cell_id, tool_result

pytestmark = pytest.mark.browser

PANEL = "#jp-codelia-panel"
LOAD = "%load_ext jupyter_codelia"
# Streamed slowly (a word every quarter second): the page reloads well before the answer ends.
WORDS = [f"word{i}" for i in range(120)]
WORD_DELAY_S = 0.25
# A page reloaded while a blocking cell runs never saw the cell panel's widgets; when the run
# ends the kernel closes them and JupyterLab logs each close of a comm it does not know.
RELOAD_CONSOLE = (*BENIGN_CONSOLE, "Comm not found for comm id")
STREAMED_JS = (
    "(words) => { const items = document.querySelectorAll('#jp-codelia-panel "
    ".jp-codelia-assistant'); const text = items.length ? items[items.length - 1].innerText : '';"
    " return words.every(word => text.includes(word)); }"
)


@pytest.fixture
def reload_page(browser: Any, lab: Lab, anthropic: TurnQueue, request: Any) -> Iterator[Any]:
    """A page that may be reloaded mid-run (see RELOAD_CONSOLE)."""
    anthropic.turns.clear()
    console = ConsoleLog(benign=RELOAD_CONSOLE)
    with browser_page(browser, console, request.node.name) as page:
        yield page
    assert console.errors == [], f"the page logged errors: {console.errors}"


def open_notebook_with_panel(page: Any, lab: Lab, name: str, cells: list[str]) -> None:
    """Open ``name`` with an idle kernel and the side panel open, as a person leaves it."""
    write_notebook(lab.root, name, cells)
    open_lab(page, lab, name)
    page.wait_for_function(WAIT_KERNEL_IDLE, timeout=90_000, polling=250)
    page.locator(".jp-Notebook").click()
    page.keyboard.press("Control+Alt+C")  # the panel's shortcut
    page.wait_for_selector(f'{PANEL} .jp-codelia-kernel[data-state="ready"]')


def type_in_cell(page: Any, index: int, source: str, *, run: bool = True) -> None:
    """Click into cell ``index``, type ``source`` and (by default) press Shift+Enter."""
    editor = page.locator(".jp-Notebook .jp-Cell").nth(index).locator(".cm-content")
    editor.click()
    page.keyboard.press("Control+A")
    for number, line in enumerate(source.split("\n")):
        if number:
            page.keyboard.press("Enter")
            page.keyboard.press("Home")
        page.keyboard.type(line)
    if run:
        page.keyboard.press("Shift+Enter")


def send(page: Any, prompt: str) -> None:
    box = page.locator(f"{PANEL} .jp-codelia-input")
    box.click()
    page.keyboard.type(prompt)
    page.keyboard.press("Enter")


def panel_visible(page: Any) -> bool:
    return bool(page.locator(PANEL).is_visible())


def wait_idle_panel(page: Any) -> None:
    page.wait_for_selector(f'{PANEL}[data-running="false"]', state="attached")


def allow_until_done(page: Any) -> None:
    """Answer Allow to every approval the run asks (default mode asks for edits and code)
    until its final answer shows."""
    pending = page.locator(
        f'{PANEL} .jp-codelia-permission[data-decision="pending"] .jp-codelia-allow'
    )
    final = page.locator(f"{PANEL} .jp-codelia-final")
    while final.count() == 0:
        page.wait_for_function(
            "() => document.querySelector('#jp-codelia-panel .jp-codelia-final') || "
            "document.querySelector('#jp-codelia-panel "
            '.jp-codelia-permission[data-decision="pending"] .jp-codelia-allow:not([disabled])\')',
            timeout=60_000,
        )
        if final.count() == 0 and pending.count() > 0:
            pending.first.click()


def last_answer(page: Any) -> str:
    return str(page.locator(f"{PANEL} .jp-codelia-assistant").last.inner_text())


def test_reload_mid_panel_run_shows_the_prompt_and_the_text_streamed_so_far(
    reload_page: Any, lab: Lab, anthropic: TurnQueue
) -> None:
    page = reload_page
    open_notebook_with_panel(page, lab, "reload-panel.ipynb", [LOAD])
    type_in_cell(page, 0, LOAD)
    anthropic.queue(reply(" ".join(WORDS), delay_s=WORD_DELAY_S))
    send(page, "Count to a hundred and twenty for me")
    page.wait_for_function(STREAMED_JS, arg=WORDS[:30])

    page.reload()

    page.wait_for_selector(f'{PANEL} .jp-codelia-kernel[data-state="ready"]', timeout=90_000)
    assert panel_visible(page)
    user = page.locator(f"{PANEL} .jp-codelia-user")
    user.wait_for()
    assert user.inner_text().strip() == "Count to a hundred and twenty for me"
    # What was streamed before the reload is back at once, while the run goes on.
    page.wait_for_function(STREAMED_JS, arg=WORDS[:30])
    assert page.locator(f'{PANEL}[data-running="true"]').count() == 1
    assert not last_answer(page).strip().endswith(WORDS[-1])
    # Then it continues live, every word once and in order.
    page.locator(f"{PANEL} .jp-codelia-final").wait_for(timeout=120_000)
    assert last_answer(page).split() == WORDS
    assert user.count() == 1
    wait_idle_panel(page)


def test_reload_mid_blocking_cell_shows_the_prompt_and_the_text_streamed_so_far(
    reload_page: Any, lab: Lab, anthropic: TurnQueue
) -> None:
    page = reload_page
    open_notebook_with_panel(page, lab, "reload-cell.ipynb", [LOAD, ""])
    type_in_cell(page, 0, LOAD)
    page.wait_for_function(WAIT_KERNEL_IDLE, polling=250)
    anthropic.queue(reply(" ".join(WORDS), delay_s=WORD_DELAY_S))
    type_in_cell(page, 1, "%%codelia\nCount slowly in the cell")
    page.wait_for_function(STREAMED_JS, arg=WORDS[:30])

    page.reload()

    # The cell still runs (the kernel takes no comm_open until it ends), yet the panel shows
    # the prompt and what was streamed, and goes on live.
    page.wait_for_selector(f'{PANEL} .jp-codelia-kernel[data-state="ready"]', timeout=90_000)
    assert panel_visible(page)
    user = page.locator(f"{PANEL} .jp-codelia-user", has_text="Count slowly in the cell")
    user.wait_for()
    assert user.locator(".jp-codelia-badge").inner_text() == "%%codelia"
    page.wait_for_function(STREAMED_JS, arg=WORDS[:30])
    # Still mid-run (the kernel's status is no witness: subshell replies set it idle).
    assert page.locator(f'{PANEL}[data-running="true"]').count() == 1
    assert page.locator(f"{PANEL} .jp-codelia-final").count() == 0
    page.wait_for_function(STREAMED_JS, arg=WORDS[:100], timeout=120_000)
    page.locator(f"{PANEL} .jp-codelia-final").wait_for(timeout=120_000)
    assert last_answer(page).split() == WORDS
    assert user.count() == 1


def test_a_long_replay_opens_at_the_newest_message(
    reload_page: Any, lab: Lab, anthropic: TurnQueue
) -> None:
    page = reload_page
    open_notebook_with_panel(page, lab, "long-replay.ipynb", [LOAD])
    type_in_cell(page, 0, LOAD)
    paragraph = " ".join(["This step looked at the data once more."] * 6)
    steps = 24
    anthropic.queue(
        *[
            reply(f"Step {n}. {paragraph}", tool_use("list_variables", {}, id=f"toolu_long{n}"))
            for n in range(steps)
        ],
        reply("All steps done: **the newest message**."),
    )
    send(page, "Go through the data step by step")
    page.locator(f"{PANEL} .jp-codelia-final").wait_for(timeout=120_000)
    wait_idle_panel(page)

    page.reload()  # the panel replays the session from the kernel

    newest = page.locator(f"{PANEL} .jp-codelia-final", has_text="the newest message")
    newest.wait_for(timeout=90_000)
    assert page.locator(f"{PANEL} .jp-codelia-tool").count() == steps
    # Opened at the bottom: the newest message is in view, the first prompt scrolled away.
    page.wait_for_function(
        """() => { const log = document.querySelector('#jp-codelia-panel .jp-codelia-transcript');
          const last = log.querySelector('.jp-codelia-final');
          const box = log.getBoundingClientRect(), item = last.getBoundingClientRect();
          return log.scrollTop > 0 && item.bottom <= box.bottom + 1 && item.top >= box.top; }"""
    )
    transcript = page.locator(f"{PANEL} .jp-codelia-transcript")
    assert transcript.evaluate("log => log.scrollHeight > 3 * log.clientHeight")


def test_a_half_typed_message_stays_with_its_notebook(
    page: Any, lab: Lab, anthropic: TurnQueue
) -> None:
    write_notebook(lab.root, "draft-b.ipynb", [""])
    open_notebook_with_panel(page, lab, "draft-a.ipynb", [""])
    box = page.locator(f"{PANEL} .jp-codelia-input")
    label = page.locator(f"{PANEL} .jp-codelia-kernel")
    box.click()
    page.keyboard.type("Half a question about notebook A")

    def switch_to(name: str) -> None:
        page.evaluate(
            "(path) => window.jupyterapp.commands.execute('docmanager:open', {path})", name
        )
        page.wait_for_function(
            "([el, name]) => el.textContent.startsWith(name + ' · ') && "
            "el.dataset.state === 'ready'",
            arg=[label.element_handle(), name],
            timeout=90_000,
        )

    switch_to("draft-b.ipynb")
    assert box.input_value() == ""
    box.click()
    page.keyboard.type("B's own draft")
    switch_to("draft-a.ipynb")
    assert box.input_value() == "Half a question about notebook A"
    switch_to("draft-b.ipynb")
    assert box.input_value() == "B's own draft"


def test_the_no_key_help_names_the_configured_provider(
    page: Any, lab: Lab, anthropic: TurnQueue
) -> None:
    open_notebook_with_panel(page, lab, "nokey.ipynb", [""])
    # The person switches to OpenAI in a cell and has not set its key yet.
    type_in_cell(
        page,
        0,
        "%load_ext jupyter_codelia\n%config Codelia.provider = 'openai'\n"
        "import os; os.environ.pop('OPENAI_API_KEY', None)",
    )
    page.wait_for_function(WAIT_KERNEL_IDLE, polling=250)
    send(page, "Hello?")

    help_box = page.locator(f"{PANEL} .jp-codelia-key-help")
    help_box.wait_for()
    assert help_box.locator(".jp-codelia-key-title").inner_text() == (
        "No OpenAI API key in this kernel."
    )
    code = help_box.locator(".jp-codelia-key-code").inner_text()
    assert "os.environ['OPENAI_API_KEY'] = getpass.getpass(" in code
    assert "Anthropic" not in help_box.inner_text()
    # Short: the other ways wait behind Details.
    details = help_box.locator(".jp-codelia-key-details .jp-codelia-disclosure-body")
    assert not details.is_visible()
    help_box.get_by_role("button", name="Details").click()
    assert "Ollama" in details.inner_text()
    assert "%codelia --demo" in details.inner_text()
    # No wall of red text in the footer; no run started, the message is still in the box.
    status = page.locator(f"{PANEL} .jp-codelia-status")
    assert status.inner_text() == ""
    assert page.locator(f"{PANEL} .jp-codelia-user").count() == 0
    assert page.locator(f"{PANEL} .jp-codelia-input").input_value() == "Hello?"

    # The panel of a reloaded page says it at once, from the kernel's hello.
    page.reload()
    page.wait_for_selector(f'{PANEL} .jp-codelia-kernel[data-state="ready"]', timeout=90_000)
    help_box.wait_for()
    assert "No OpenAI API key" in help_box.inner_text()


def _cells(page: Any) -> list[dict[str, Any]]:
    return list(
        page.evaluate(
            f"""() => {{ const cells = ({NOTEBOOK_JS}).model.cells; const out = [];
            for (let i = 0; i < cells.length; i++) {{ const c = cells.get(i);
              out.push({{source: c.sharedModel.getSource(),
                         codelia: c.getMetadata('codelia') ?? null}}); }}
            return out; }}"""
        )
    )


def test_the_review_card_shows_who_changed_a_cell_keeps_its_diff_and_accept_shows(
    page: Any, lab: Lab, anthropic: TurnQueue
) -> None:
    open_notebook_with_panel(page, lab, "review.ipynb", [LOAD, "total = 1 + 1"])
    type_in_cell(page, 0, LOAD)
    page.wait_for_function(WAIT_KERNEL_IDLE, polling=250)
    seen: dict[str, str] = {}

    def replace_total(request: RecordedRequest) -> Any:
        seen["total"] = cell_id(tool_result(request)[0], 1)
        args = {"cell_id": seen["total"], "old_string": "1 + 1", "new_string": "sum([1, 1])"}
        return reply(tool_use("notebook_edit", {"action": "replace", **args}))

    anthropic.queue(
        reply(tool_use("notebook_read", {"start": 0, "end": 2})),
        replace_total,
        reply(tool_use("notebook_edit", {"action": "insert", "index": 2, "source": "total"})),
        reply("Rewrote the sum and added a cell showing it."),
    )
    send(page, "Use sum() for the total and show it")
    # Default approval mode: each notebook edit asks; the person allows it in the panel.
    for _ in range(2):
        allow = page.locator(f"{PANEL} .jp-codelia-permission .jp-codelia-allow").last
        allow.wait_for()
        allow.click()
        page.wait_for_function(
            "() => !document.querySelector('#jp-codelia-panel .jp-codelia-permission"
            '[data-decision="pending"]\')'
        )
    page.locator(f"{PANEL} .jp-codelia-final").wait_for()
    badges = page.locator(".jp-codelia-cell-badge")
    page.wait_for_function("() => document.querySelectorAll('.jp-codelia-cell-badge').length === 2")

    def open_card(index: int) -> Any:
        cell = page.locator(".jp-Notebook .jp-Cell").nth(index)
        cell.locator(".jp-codelia-cell-badge").click()
        card = cell.locator(".jp-codelia-edit-card")
        card.wait_for()
        return card

    card = open_card(1)
    # Who changed it, on the card itself.
    assert card.locator(".jp-codelia-edit-prompt").inner_text() == (
        "Use sum() for the total and show it"
    )
    assert card.locator(".jp-codelia-edit-model").inner_text() != ""
    assert len(card.locator(".jp-codelia-edit-run").inner_text()) == 8
    assert card.locator(".jp-codelia-edit-diff .jp-codelia-diff-del").inner_text() == (
        "- total = 1 + 1"
    )
    assert card.locator(".jp-codelia-edit-diff .jp-codelia-diff-add").inner_text() == (
        "+ total = sum([1, 1])"
    )
    # JupyterLab's own buttons, styled like the rest of Lab.
    accept = card.get_by_role("button", name="Accept", exact=True)
    assert "jp-mod-styled" in (accept.get_attribute("class") or "")
    assert accept.evaluate("b => getComputedStyle(b).borderRadius") != "0px"

    # Save and reload: the card still has the diff, from the notebook's own metadata.
    page.keyboard.press("Escape")
    page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
    page.wait_for_function(f"() => !({NOTEBOOK_JS}).model.dirty")
    page.reload()
    page.wait_for_function(WAIT_KERNEL_IDLE, timeout=90_000, polling=250)
    page.wait_for_function("() => document.querySelectorAll('.jp-codelia-cell-badge').length === 2")
    card = open_card(1)
    assert card.locator(".jp-codelia-edit-diff .jp-codelia-diff-add").inner_text() == (
        "+ total = sum([1, 1])"
    )
    assert card.locator(".jp-codelia-edit-prompt").inner_text() == (
        "Use sum() for the total and show it"
    )

    # Accept run: both cells lose their badge and mark; the metadata says they were kept.
    card.get_by_role("button", name="Accept run (2)").click()
    page.wait_for_function("() => document.querySelectorAll('.jp-codelia-cell-badge').length === 0")
    assert page.locator(".jp-codelia-agent-cell").count() == 0
    assert page.locator(".jp-codelia-edit-card").count() == 0
    now = _cells(page)
    assert now[1]["source"] == "total = sum([1, 1])"
    assert now[1]["codelia"]["review"]["accepted_at"]
    assert now[2]["codelia"]["review"]["accepted_at"]
    assert "before" not in now[1]["codelia"]["review"]
    page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
    page.wait_for_function(f"() => !({NOTEBOOK_JS}).model.dirty")
    saved = json.loads((lab.root / "review.ipynb").read_text())
    assert saved["cells"][1]["metadata"]["codelia"]["review"]["accepted_at"]
    page.reload()
    page.wait_for_function(WAIT_KERNEL_IDLE, timeout=90_000, polling=250)
    page.locator(".jp-Notebook .jp-Cell").nth(2).wait_for()
    assert badges.count() == 0


def test_at_the_default_width_code_scrolls_and_cache_rows_are_whole(
    page: Any, lab: Lab, anthropic: TurnQueue
) -> None:
    open_notebook_with_panel(page, lab, "narrow.ipynb", [""])
    type_in_cell(page, 0, LOAD)
    page.wait_for_function(WAIT_KERNEL_IDLE, polling=250)
    width = page.locator(PANEL).evaluate("p => p.getBoundingClientRect().width")
    assert width <= 260, width  # JupyterLab's sidebar opens at 250 px
    code = (
        "monthly_revenue_by_region = summarise_the_orders_table(orders_dataframe, "
        "include_refunds=True)"
    )
    anthropic.queue(
        reply(tool_use("python", {"code": "print('one line')"}, id="toolu_narrow_cache_row")),
        reply(f"Here is the line:\n\n```python\n{code}\n```"),
    )
    send(page, "Show me the long line")
    allow_until_done(page)
    final = page.locator(f"{PANEL} .jp-codelia-final")
    block = final.locator("pre").first
    # One line, scrolled sideways, never wrapped inside an identifier.
    height, line = block.evaluate(
        "pre => [pre.getBoundingClientRect().height, parseFloat(getComputedStyle(pre).lineHeight)]"
    )
    assert height < 2 * line + 12, (height, line)
    assert block.evaluate("pre => pre.scrollWidth > pre.clientWidth")
    assert block.evaluate("pre => getComputedStyle(pre).overflowX") == "auto"
    # The panel fits the sidebar: nothing spills past its right edge.
    assert page.locator(PANEL).evaluate("p => p.scrollWidth <= p.clientWidth + 1")

    page.locator(f"{PANEL} .jp-codelia-cache-button").click()
    row = page.locator(f"{PANEL} .jp-codelia-cache-entry[data-ref-id^='toolu_narrow_cache_row']")
    row.wait_for()
    ref = row.locator(".jp-codelia-cache-ref")
    assert ref.inner_text().startswith("toolu_narrow_cache_row")
    assert ref.evaluate("el => el.clientWidth > 0 && el.scrollWidth <= el.clientWidth")
    assert (row.get_attribute("title") or "").startswith("toolu_narrow_cache_row")
    assert "python" in (row.get_attribute("title") or "")
