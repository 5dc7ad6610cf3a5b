"""Each demo notebook runs top to bottom offline (no API key) and shows what it promises.

The kernel has no ANTHROPIC_* variables, so every notebook's ``offline_demo`` plays its script
on a ScriptedAnthropicServer inside the kernel, and the REAL tools run: the assertions look for
their traces in the saved widget state (tool cards, diffs, images) and the cell outputs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from jupyter_codelia.testing import OFFLINE_API_KEY, OFFLINE_BANNER

ExecutedNotebook = Any  # conftest.ExecutedNotebook (conftest modules are not importable)
Run = Callable[[str], ExecutedNotebook]


def assert_offline_run(result: ExecutedNotebook) -> None:
    assert result.errors == []
    assert OFFLINE_BANNER in result.outputs_text
    assert OFFLINE_API_KEY not in result.everything
    assert "no scripted turn left" not in result.everything
    assert "only have scripted answers" not in result.everything  # every prompt hit its cue
    assert "Error executing tool" not in result.everything  # no scripted call went wrong


@pytest.mark.slow
def test_tools_tour_runs_every_standard_tool(run_notebook: Run) -> None:
    result = run_notebook("tools-tour.ipynb")
    assert_offline_run(result)
    state = result.widget_state
    for tool in (
        "todo_new", "todo_patch", "read", "edit", "apply_patch", "grep", "glob", "view_image",
        "list_variables", "inspect_variable", "python", "webfetch", "search", "shell",
    ):  # fmt: skip
        assert f"<b>{tool}</b>" in state, tool
    assert state.count("codelia-diff") >= 2  # edit and apply_patch
    assert "ImageModel" in state  # view_image shows the chart
    assert "3x faster" in state  # webfetch read the local page
    assert "Permission denied: blocked by deny rule (search)" in state
    assert "report.py" in state and "stats.py" in state  # glob and the shell's ls
    outputs = result.outputs_text
    assert "The new exporter is the fastest yet." in outputs
    assert "teh fastest" not in outputs
    assert 'raise ValueError(\\"mean() of an empty list\\")' in outputs


@pytest.mark.slow
def test_data_analysis_plots_the_csv_and_explains_the_dip(run_notebook: Run) -> None:
    result = run_notebook("data-analysis.ipynb")
    assert_offline_run(result)
    state = result.widget_state
    assert "ImageModel" in state  # the python tool returned the plot as an image
    assert "<b>python</b>" in state and "<b>inspect_variable</b>" in state
    assert "Load data/revenue.csv" in state  # the todo list
    assert "revenue -37%, orders -39%" in state  # the agent's own check ran on the real data
    assert "37% below May" in state
    assert "2026-06-01" in result.outputs_text  # `revenue` lives in the user's namespace


@pytest.mark.slow
def test_output_cache_reads_back_a_huge_output(run_notebook: Run) -> None:
    result = run_notebook("output-cache.ipynb")
    assert_offline_run(result)
    state = result.widget_state
    for tool in ("tool_output_cache_grep", "tool_output_cache", "tool_output_cache_line"):
        assert f"<b>{tool}</b>" in state, tool
    assert "E   AssertionError: expected 1048576 rows" in state
    assert "Use char_offset=300 to continue." in state  # the long-line window
    assert "SelectModel" in state and "2803 lines" in state  # the cache browser lists the log
    assert "AssertionError: expected 1048576 rows" in result.outputs_text  # store.grep


@pytest.mark.slow
def test_custom_tools_define_override_and_test_offline(run_notebook: Run) -> None:
    result = run_notebook("custom-tools.ipynb")
    assert result.errors == []
    outputs = result.outputs_text
    assert "Unrecognized key" in outputs  # a bad argument becomes a message for the model
    assert "ValueError: unknown item 'fig'; known: apple" in outputs  # the override applied
    assert "4 pears cost **3.00**" in outputs  # the agent loop on ScriptedAnthropicServer
    assert OFFLINE_BANNER in outputs
    state = result.widget_state
    assert "<b>quote</b>" in state
    assert "Error executing tool: unknown item &#x27;mango&#x27;" in state
    assert "10 figs cost <strong>12.00</strong>" in state


@pytest.mark.slow
def test_quickstart_runs_top_to_bottom_offline(run_notebook: Run) -> None:
    """What Binder opens: Run All without a key reaches the last cell, clearly labelled."""
    result = run_notebook("quickstart.ipynb")
    assert_offline_run(result)
    outputs = result.outputs_text
    assert "No ANTHROPIC_API_KEY is set: the cells below run the OFFLINE DEMO" in outputs
    assert "June revenue: 98, May: 150" in outputs or "June revenue: 98, May: 150" in (
        result.widget_state
    )
    state = result.widget_state
    for tool in ("list_variables", "inspect_variable", "python"):
        assert f"<b>{tool}</b>" in state, tool
    assert "ImageModel" in state  # the plot came back to the model and the panel
    assert "completed" in outputs  # the %%codelia result object
    assert "with one dip in June that recovered by August." in outputs  # the background run
    last = result.nb.cells[-1]
    assert last.source == "%codelia config" and last.outputs  # Run All reached the end
