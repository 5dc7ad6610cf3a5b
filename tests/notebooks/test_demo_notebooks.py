"""Each demo notebook runs top to bottom offline (no API key) and shows what it promises.

The kernel has no ANTHROPIC_* variables, so every notebook's ``offline_demo`` plays its script
on a ScriptedAnthropicServer inside the kernel, and the REAL tools run. nbclient renders no
widget, so every run is static output and nothing is widget state: the assertions read the
saved outputs, exactly what the notebook file, nbconvert and GitHub show.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest

from jupyter_codelia.testing import OFFLINE_API_KEY, OFFLINE_BANNER

ExecutedNotebook = Any  # conftest.ExecutedNotebook (conftest modules are not importable)
Run = Callable[[str], ExecutedNotebook]
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def assert_offline_run(result: ExecutedNotebook) -> None:
    assert result.errors == []
    assert OFFLINE_BANNER in result.outputs_text
    assert OFFLINE_API_KEY not in result.everything
    assert "no scripted turn left" not in result.everything
    assert "only have scripted answers" not in result.everything  # every prompt hit its cue
    assert "Error executing tool" not in result.everything  # no scripted call went wrong
    assert "the script expected" not in result.everything  # every tool returned what it should
    # Headless: static output only, no widget state, no widget repr.
    assert "widgets" not in result.nb.metadata
    assert WIDGET_VIEW not in result.outputs_text
    assert raw_reprs(result) == []


RAW_REPRS = ("Output(", "VBox(", "HBox(", "RunResult(", "<RunHandle", "ScriptedAnthropicServer(")


def raw_reprs(result: ExecutedNotebook) -> list[str]:
    """The outputs that are a raw Python repr: a widget's, a result object's, a server's."""
    return [
        text
        for cell in result.nb.cells
        for out in cell.get("outputs", [])
        if out.output_type in ("execute_result", "display_data")
        for text in [str(out.get("data", {}).get("text/plain", ""))]
        if text.startswith(RAW_REPRS)
    ]


@pytest.mark.slow
def test_tools_tour_runs_every_standard_tool(run_notebook: Run) -> None:
    result = run_notebook("tools-tour.ipynb")
    assert_offline_run(result)
    outputs = result.outputs_text
    for tool in (
        "todo_new", "todo_patch", "read", "edit", "apply_patch", "grep", "glob", "view_image",
        "list_variables", "inspect_variable", "python", "webfetch", "search", "shell",
    ):  # fmt: skip
        assert f"<b>{tool}</b>" in outputs, tool
    assert outputs.count("codelia-diff") >= 2  # edit and apply_patch
    assert '"image/png": "iVBORw0KGgo' in outputs  # view_image shows the chart
    assert "3x faster" in outputs  # webfetch read the local page
    assert "Permission denied: blocked by deny rule (search)" in outputs
    assert "The web search was denied by this notebook" in outputs  # said from the result
    assert "report.py" in outputs and "stats.py" in outputs  # glob and the shell's ls
    assert "the one in `stats.py` went away with the patch" in outputs
    # The file as the notebook prints it afterwards: the typo is fixed on disk.
    printed = json.dumps(
        [o for cell in result.nb.cells for o in cell.get("outputs", []) if "text" in o]
    )
    assert "The new exporter is the fastest yet." in printed
    assert "teh fastest" not in printed
    assert 'raise ValueError(\\"mean() of an empty list\\")' in outputs


@pytest.mark.slow
def test_data_analysis_plots_the_csv_and_explains_the_dip(run_notebook: Run) -> None:
    result = run_notebook("data-analysis.ipynb")
    assert_offline_run(result)
    outputs = result.outputs_text
    assert '"image/png": "iVBORw0KGgo' in outputs  # the python tool returned the plot
    assert "<b>python</b>" in outputs and "<b>inspect_variable</b>" in outputs
    assert "Load data/revenue.csv" in outputs  # the todo list
    assert "revenue -37%, orders -39%" in outputs  # the agent's own check ran on the real data
    assert "37% below May" in outputs
    assert "2026-06-01" in outputs  # `revenue` lives in the user's namespace


def _cache_reads(result: ExecutedNotebook) -> str:
    return json.dumps(
        [o for o in result.nb.cells[7].outputs if "text/html" in o.get("data", {})],
        ensure_ascii=False,
    )


@pytest.mark.slow
def test_output_cache_reads_back_a_huge_output(run_notebook: Run) -> None:
    result = run_notebook("output-cache.ipynb")
    assert_offline_run(result)
    outputs = result.outputs_text
    for tool in ("tool_output_cache_grep", "tool_output_cache", "tool_output_cache_line"):
        assert f"<b>{tool}</b>" in outputs, tool
    assert "E   AssertionError: expected 1048576 rows" in outputs
    assert "Use char_offset=300 to continue." in outputs  # the long-line window
    assert "2803" in outputs and "codelia tool-output cache" in outputs  # the cache, static
    assert "AssertionError: expected 1048576 rows" in outputs  # store.grep
    assert len(result.nb.cells[3].outputs[0]["text"]) < 1000  # the log is not printed whole


@pytest.mark.slow
def test_output_cache_reads_its_own_entry_after_another_demo(run_notebook: Run) -> None:
    """Run after another demo in one home, the python call's id (toolu_1) names an older
    entry: the script reads the ref the result names, and its answer says what it found."""
    first = run_notebook("data-analysis.ipynb")  # its first call, toolu_1, is in the cache
    assert first.errors == []
    result = run_notebook("output-cache.ipynb")
    assert_offline_run(result)
    reads = _cache_reads(result)
    assert re.search(r"cached as <code>toolu_1-\d+</code>", reads), reads[:3000]
    assert "test_big_csv FAILED" in reads and "No matches" not in reads
    assert "Offset exceeds output length" not in reads and "out of range" not in reads
    assert "I read " in reads and " KB of the cached output" in reads


@pytest.mark.slow
def test_custom_tools_define_override_and_test_offline(run_notebook: Run) -> None:
    result = run_notebook("custom-tools.ipynb")
    assert result.errors == []
    outputs = result.outputs_text
    assert "Unrecognized key" in outputs  # a bad argument becomes a message for the model
    assert "ValueError: unknown item 'fig'; known: apple" in outputs  # the override applied
    assert "4 pears cost **3.00**" in outputs  # the agent loop on ScriptedAnthropicServer
    assert OFFLINE_BANNER in outputs
    assert "<b>quote</b>" in outputs
    assert "Error executing tool: unknown item &#x27;mango&#x27;" in outputs
    assert "10 figs cost <strong>12.00</strong>" in outputs
    assert "%%codelia cells below" not in outputs  # the banner names no cell it lacks
    assert raw_reprs(result) == []


@pytest.mark.slow
def test_notebook_tools_demo_degrades_headless_with_the_documented_messages(
    run_notebook: Run,
) -> None:
    """nbclient has no labextension: the saved file is read, the edit is refused, not faked."""
    result = run_notebook("notebook-tools.ipynb")
    assert result.errors == []
    outputs = result.outputs_text
    assert OFFLINE_BANNER in outputs
    assert OFFLINE_API_KEY not in result.everything
    assert "no scripted turn left" not in result.everything
    for tool in ("notebook_read", "kernel_history", "notebook_edit"):
        assert f"<b>{tool}</b>" in outputs, tool
    assert "notebook-tools.ipynb (last SAVED state read from disk" in outputs
    assert "#2 Some work for the agent to look at" in outputs
    assert "total = sum(prices)" in outputs  # kernel_history shows what really ran
    assert "notebook_edit needs the live notebook and no JupyterLab or Notebook 7 tab" in outputs
    assert outputs.count("Error executing tool") == 1  # only the documented refusal
    assert "here is the code to paste" in outputs
    assert "No cell of" in outputs and "was made or changed by the agent" in outputs
    assert result.nb.cells[1].outputs == []  # the setup cell prints no notebook path


@pytest.mark.slow
def test_quickstart_runs_top_to_bottom_offline(run_notebook: Run) -> None:
    """What Binder opens: Run All without a key reaches the last cell, clearly labelled."""
    result = run_notebook("quickstart.ipynb")
    assert_offline_run(result)
    outputs = result.outputs_text
    assert "No ANTHROPIC_API_KEY is set: the cells below run the OFFLINE DEMO" in outputs
    assert "OPENAI_API_KEY" in outputs and "ollama:qwen3-coder" in outputs
    assert "June revenue: 98, May: 150" in outputs
    for tool in ("list_variables", "inspect_variable", "python"):
        assert f"<b>{tool}</b>" in outputs, tool
    assert '"image/png": "iVBORw0KGgo' in outputs  # the plot came back to the model
    assert "completed" in outputs  # the %%codelia result object
    assert "with one dip in June that recovered by August." in outputs  # the background run
    assert "offline demo · no cost" in outputs and "$0." not in outputs
    last = result.nb.cells[-1]
    assert last.source == "%codelia config" and last.outputs  # Run All reached the end
