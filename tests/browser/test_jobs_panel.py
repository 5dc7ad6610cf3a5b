"""Background job cards in the real side panel: live progress and last lines, and Stop."""

from __future__ import annotations

from typing import Any

import pytest

from jupyter_codelia.testing import reply, tool_use

from .conftest import Lab, TurnQueue, run_cell

pytestmark = pytest.mark.browser

PANEL = "#jp-codelia-panel"
JOB = (
    "import sys, time\n"
    "for i in range(600):\n"
    "    print(f'epoch {i}', flush=True)\n"
    "    sys.stderr.write(f'\\r{i % 100}%|###       | {i % 100}/100 [00:01<00:09]')\n"
    "    time.sleep(0.1)\n"
)


def test_job_card_shows_progress_and_lines_and_stops_the_job(
    page: Any, lab: Lab, anthropic: TurnQueue, open_notebook: Any
) -> None:
    open_notebook("jobs.ipynb")
    run_cell(page, "%load_ext jupyter_codelia\n%config Codelia.approval_mode = 'full-access'")
    page.evaluate("() => window.jupyterapp.commands.execute('codelia:open')")
    page.wait_for_selector(f'{PANEL} .jp-codelia-kernel[data-state="ready"]')
    anthropic.queue(reply(tool_use("python", {"code": JOB, "background": True})))
    anthropic.queue(reply("Training runs in the background."))
    box = page.locator(f"{PANEL} .jp-codelia-input")
    box.fill("train in the background")
    box.press("Enter")
    card = page.locator(f'{PANEL} .jp-codelia-job[data-state="running"]')
    card.wait_for()
    page.wait_for_function(
        "() => /epoch [1-9]/.test(document.querySelector('#jp-codelia-panel "
        ".jp-codelia-job-lines').textContent)"
    )
    header = card.locator(".jp-codelia-job-header").inner_text()
    assert header.startswith("⚙ job-1 [python] import sys, time") and "· running ·" in header
    assert card.locator(".jp-codelia-job-progress").is_visible()
    # The run ended, the job goes on; Stop on its card stops it.
    page.wait_for_selector(f'{PANEL}[data-running="false"]', state="attached")
    card.locator(".jp-codelia-job-stop").click()
    stopped = page.locator(f'{PANEL} .jp-codelia-job[data-state="stopped"]')
    stopped.wait_for()
    assert not stopped.locator(".jp-codelia-job-stop").is_visible()
    assert "· stopped ·" in stopped.locator(".jp-codelia-job-header").inner_text()


def test_budget_meter_shows_spend_and_the_limit_that_ended_the_run(
    page: Any, lab: Lab, anthropic: TurnQueue, open_notebook: Any
) -> None:
    open_notebook("budget.ipynb")
    run_cell(
        page,
        "%load_ext jupyter_codelia\n"
        "%config Codelia.approval_mode = 'full-access'\n"
        "%config Codelia.max_tool_calls_per_run = 1",
    )
    page.evaluate("() => window.jupyterapp.commands.execute('codelia:open')")
    page.wait_for_selector(f'{PANEL} .jp-codelia-kernel[data-state="ready"]')
    # One tool call reaches the limit; the next model call is the summary.
    anthropic.queue(
        reply(tool_use("list_variables", {})),
        reply("Stopped at the budget: listed the variables once."),
    )
    box = page.locator(f"{PANEL} .jp-codelia-input")
    box.fill("look around")
    box.press("Enter")
    page.locator(f"{PANEL} .jp-codelia-final", has_text="Stopped at the budget").wait_for()
    page.wait_for_selector(f'{PANEL}[data-running="false"]', state="attached")
    meter = page.locator(f"{PANEL} .jp-codelia-budget")
    assert meter.is_visible()
    # The run ended: its figures are the last run's (the next run drops them).
    assert meter.inner_text() == "budget: last run 1 tool calls / 1 tool calls"
    notice = page.locator(f"{PANEL} .jp-codelia-notice-warning", has_text="Budget reached")
    assert notice.count() == 1

    # The person lifts the limit: the next run has no budget, and the old line goes.
    run_cell(page, "%config Codelia.max_tool_calls_per_run = None")
    anthropic.queue(reply("No limit this time."))
    box.fill("again")
    box.press("Enter")
    page.locator(f"{PANEL} .jp-codelia-final", has_text="No limit this time.").wait_for()
    page.wait_for_selector(f'{PANEL}[data-running="false"]', state="attached")
    assert not meter.is_visible()
