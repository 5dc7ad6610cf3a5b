"""A finished run is static rich output: saved, converted with nbconvert, it keeps the agent's work.

The offline demo runs headless with nbclient in a real kernel (its scripted server plays the
turns, the real tools run); the notebook is saved and converted to HTML by the real
``jupyter nbconvert``, and the answer, the plot and the diff must be in that HTML.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import nbformat
import pytest

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


@pytest.mark.slow
def test_demo_run_is_saved_as_static_output_that_nbconvert_renders(
    run_cells: Any, tmp_path: Path
) -> None:
    nb = run_cells(
        "%load_ext jupyter_codelia",
        "%codelia --demo --approval-mode full-access",
        "import ipywidgets\nprint('live widgets:', len(ipywidgets.widgets.widget._instances))",
    )
    demo_outputs = nb.cells[1].outputs
    assert all(out.output_type != "error" for out in demo_outputs), demo_outputs
    # The live panel was replaced in place: no widget view is left in the cell's outputs.
    assert not [o for o in demo_outputs if WIDGET_VIEW in o.get("data", {})]
    (static,) = [
        o for o in demo_outputs if "codelia-static" in o.get("data", {}).get("text/html", "")
    ]
    data = static["data"]
    assert data["image/png"].startswith("iVBORw0KGgo")  # the plot, base64 PNG
    assert "Done. In this demo I:" in data["text/markdown"]
    assert "```diff" in data["text/markdown"] and "+TAX_RATE = 0.15" in data["text/markdown"]
    assert "[x] Plot the monthly sales" in data["text/markdown"]
    assert data["text/plain"].startswith("codelia run completed: Done. In this demo I:")
    # Every widget of the finished run was closed in the kernel.
    assert "live widgets: 0" in "".join(o.get("text", "") for o in nb.cells[2].outputs)

    saved = tmp_path / "demo.ipynb"
    nbformat.write(nb, saved)
    subprocess.run(
        [sys.executable, "-m", "jupyter", "nbconvert", "--to", "html", str(saved)],
        check=True,
        capture_output=True,
    )
    html = (tmp_path / "demo.html").read_text(encoding="utf-8")
    assert "planned with a <strong>todo list</strong>" in html  # the answer, markdown rendered
    assert re.search(r'<img [^>]*src="data:image/png;base64,iVBORw0KGgo', html)  # the plot
    assert "+TAX_RATE = 0.15  # lowered in the demo" in html  # a line of the coloured diff
    assert "codelia-diff" in html
    assert "VBox(children=" not in html
    assert "☑ Plot the monthly sales" in html  # the todo list
    assert "completed" in html  # the header's final status


@pytest.mark.slow
def test_static_output_escapes_model_text(run_cells: Any) -> None:
    nb = run_cells(
        "%load_ext jupyter_codelia",
        "%codelia --demo --approval-mode full-access <script>alert('x')</script>",
    )
    html = json.dumps([o.get("data", {}).get("text/html", "") for o in nb.cells[1].outputs])
    assert "<script>" not in html
    assert "&lt;script&gt;alert" in html  # the prompt line, escaped
