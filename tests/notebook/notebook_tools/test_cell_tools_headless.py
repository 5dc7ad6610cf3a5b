"""The notebook tools without a front end (papermill, nbclient, a closed tab): they read the
saved file, however malformed, and kernel_history always answers."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from jupyter_codelia.notebook.frontend import FrontendClient
from jupyter_codelia.notebook.notebook_tools import cells as nbcells
from jupyter_codelia.notebook.notebook_tools.cell_tools import (
    NotebookContext,
    notebook_tools,
    provenance_table,
)
from jupyter_codelia.tools import ToolContext

from .test_cells import _real_world_malformed


def headless_tools(notebook: Path) -> dict[str, Any]:
    """The tools over a shell that has run two cells and knows its notebook file."""
    shell = SimpleNamespace(
        history_manager=SimpleNamespace(input_hist_raw=["", "a = 1", "b = 2"]),
        user_ns={"__session__": str(notebook), "Out": {}},
    )
    return {tool.name: tool for tool in notebook_tools(NotebookContext(shell, FrontendClient()))}


async def call(tools: dict[str, Any], name: str, **args: Any) -> str:
    result = await tools[name].execute_raw(json.dumps(args), ToolContext())
    return str(result.text)


@pytest.mark.asyncio
async def test_every_tool_reads_a_malformed_saved_notebook(tmp_path: Path) -> None:
    tools = headless_tools(_real_world_malformed(tmp_path / "n.ipynb"))
    overview = await call(tools, "notebook_read")
    assert overview.startswith("Notebook n.ipynb (last SAVED state")
    assert "Not readable, left out: cell 0: metadata is not an object (list)" in overview
    cells = await call(tools, "notebook_read", start=0, end=7)
    assert "--- cell #3 · id index-3 · code · never ran" in cells
    assert "[stdout]\n42" in cells
    history = await call(tools, "kernel_history")
    assert history.startswith("The kernel ran 2 cells this session; the last 2:")
    assert "In [2]: b = 2" in history
    assert "Stale cells (saved file):" in history


@pytest.mark.asyncio
async def test_kernel_history_answers_when_the_notebook_cannot_be_read(tmp_path: Path) -> None:
    broken = tmp_path / "broken.ipynb"
    broken.write_text("{not json")
    history = await call(headless_tools(broken), "kernel_history")
    assert history.startswith("The kernel ran 2 cells this session; the last 2:")
    assert "(no stale check: " in history and "is not a JSON notebook" in history


def test_provenance_prompts_are_redacted_before_they_are_saved_or_sent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    monkeypatch.setenv("MY_SERVICE_TOKEN", "s3cr3t-value-from-env")
    prompt = f"push with {token} and MY_SERVICE_TOKEN=s3cr3t-value-from-env " + "x" * 300
    context = NotebookContext(
        SimpleNamespace(user_ns={}),
        FrontendClient(),
        run_info=lambda: {"prompt": prompt, "run_id": "r1"},
    )
    provenance = context.provenance(ToolContext(tool_call_id="call-1"), "insert")
    assert provenance["prompt"].startswith("push with [REDACTED] and MY_SERVICE_TOKEN=[REDACTED] x")
    assert len(provenance["prompt"]) == 200
    assert "ghp_" not in json.dumps(provenance) and "s3cr3t" not in json.dumps(provenance)
    # A notebook saved before the redaction: %codelia provenance does not print the secret.
    saved = nbcells.NotebookSnapshot(
        cells=[
            nbcells.CellView(
                id="c1", cell_type="code", source="x", metadata={"codelia": {"prompt": token}}
            )
        ]
    )
    assert provenance_table(saved) == [{"index": 0, "id": "c1", "prompt": "[REDACTED]"}]


@pytest.mark.asyncio
async def test_notebook_read_fits_big_image_outputs_to_the_provider_limits(
    tmp_path: Path,
) -> None:
    from ..kernel_tools.test_kernel_tools import _noisy_png

    big = base64.b64encode(_noisy_png(2600, 1900)).decode()
    assert len(big) > 5 * 1024 * 1024  # over the Messages API's per-image limit as saved
    small = base64.b64encode(_noisy_png(20, 20)).decode()
    outputs = [_display(big)] + [_display(small) for _ in range(11)]
    cell = {"cell_type": "code", "execution_count": 1, "metadata": {}, "source": "plot()",
            "outputs": outputs}  # fmt: skip
    path = tmp_path / "plots.ipynb"
    path.write_text(json.dumps({"cells": [cell], "nbformat": 4, "nbformat_minor": 5}))
    tools = headless_tools(path)
    result = await tools["notebook_read"].execute_raw(
        json.dumps({"start": 0, "images": True}), ToolContext()
    )
    text, *images = result.parts
    assert len(images) == 8
    assert "[images] image 1: Downsized from 2600x1900 px" in text.text
    assert "[images] 4 more image(s) not attached" in text.text
    assert all(len(i.image_url.url) <= 5 * 1024 * 1024 for i in images)


def _display(png_base64: str) -> dict[str, Any]:
    return {"output_type": "display_data", "metadata": {}, "data": {"image/png": png_base64}}
