"""notebooks/quickstart.ipynb executed headless with nbclient against the scripted server."""

from __future__ import annotations

import json
import os
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from jupyter_codelia.testing import ScriptedAnthropicServer, reply, text, tool_use

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "quickstart.ipynb"


def test_quickstart_notebook_is_committed_without_outputs() -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == []
            assert cell.execution_count is None


def test_quickstart_notebook_runs_headless(tmp_path: Path) -> None:
    script = [
        reply(text("Let me look at your variables."), tool_use("list_variables", {})),
        reply(tool_use("inspect_variable", {"name": "sales"})),
        reply(text("`sales` has **12 months**; revenue dips in June.")),
        reply(text("Revenue grew all year except for a dip in June.")),
    ]
    home = tmp_path / "home"
    home.mkdir()
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "JUPYTER_CODELIA"))
    }
    with ScriptedAnthropicServer(script) as server:
        env.update(
            ANTHROPIC_BASE_URL=server.url,
            ANTHROPIC_API_KEY="test-key",
            JUPYTER_CODELIA_HOME=str(home),
        )
        nb = nbformat.read(NOTEBOOK, as_version=4)
        client = NotebookClient(
            nb,
            timeout=180,
            kernel_name="python3",
            store_widget_state=True,
            resources={"metadata": {"path": str(tmp_path)}},
        )
        client.execute(env=env)
        assert server.remaining == 0
    outputs = {i: cell.outputs for i, cell in enumerate(nb.cells) if cell.cell_type == "code"}
    errors = [o for outs in outputs.values() for o in outs if o.output_type == "error"]
    assert errors == []
    everything = json.dumps([cell.get("outputs", []) for cell in nb.cells], ensure_ascii=False)
    assert "ANTHROPIC_API_KEY is set" in everything
    assert "OFFLINE DEMO" in everything
    assert "completed" in everything
    assert "Revenue grew all year except for a dip in June." in everything
    # Headless (nbclient), the runs are static output and no widget was opened: the file keeps
    # what they showed, and no widget state.
    assert "widgets" not in nb.metadata
    assert "application/vnd.jupyter.widget-view+json" not in everything
    # The demo drew its todo list, the python plot as an image and the edit's diff.
    assert "Plot the monthly sales" in everything
    assert '"image/png": "iVBORw0KGgo' in everything
    assert "codelia-diff" in everything
    assert "<strong>12 months</strong>" in everything
    assert "test-key" not in everything
