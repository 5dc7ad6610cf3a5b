"""Shared helpers: run a demo notebook as CI and a key-less Binder visitor do (offline, a copy).

The kernel gets no ANTHROPIC_* variables (so each notebook's ``offline_demo`` starts its
scripted server), a private JUPYTER_CODELIA_HOME, and runs with the working directory set to a
temporary copy of ``notebooks/`` (so ``data/revenue.csv`` resolves and nothing is written into
the repository).
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


@dataclass
class ExecutedNotebook:
    nb: Any
    workdir: Path

    @property
    def errors(self) -> list[dict[str, Any]]:
        return [
            {"cell": index, "ename": out.get("ename"), "evalue": out.get("evalue")}
            for index, cell in enumerate(self.nb.cells)
            if cell.cell_type == "code"
            for out in cell.outputs
            if out.output_type == "error"
        ]

    @property
    def outputs_text(self) -> str:
        return json.dumps([cell.get("outputs", []) for cell in self.nb.cells], ensure_ascii=False)

    @property
    def widget_state(self) -> str:
        return json.dumps(self.nb.metadata.get("widgets", {}), ensure_ascii=False)

    @property
    def everything(self) -> str:
        return self.outputs_text + self.widget_state

    def output_mime_types(self) -> set[str]:
        return {
            mime
            for cell in self.nb.cells
            if cell.cell_type == "code"
            for out in cell.outputs
            for mime in out.get("data", {})
        }


def offline_env(home: Path) -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "JUPYTER_CODELIA"))
    }
    env["JUPYTER_CODELIA_HOME"] = str(home)
    env["MPLBACKEND"] = "Agg"
    return env


def execute_notebook(name: str, tmp_path: Path, timeout: int = 240) -> ExecutedNotebook:
    """Run ``name`` from a copy of notebooks/; notebooks run in one ``tmp_path`` share a home,
    as the demos of one person do (cache and sessions)."""
    workdir = tmp_path / "notebooks"
    if not workdir.exists():
        shutil.copytree(NOTEBOOKS, workdir)
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    nb = nbformat.read(workdir / name, as_version=4)
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        store_widget_state=True,
        resources={"metadata": {"path": str(workdir)}},
    )
    client.execute(env=offline_env(home))
    return ExecutedNotebook(nb=nb, workdir=workdir)


@pytest.fixture
def run_notebook(tmp_path: Path) -> Any:
    """``run_notebook("tools-tour.ipynb")`` executes it offline and returns the result."""

    def run(name: str) -> ExecutedNotebook:
        return execute_notebook(name, tmp_path)

    return run


@pytest.fixture
def run_cells(tmp_path: Path) -> Any:
    """``run_cells("%load_ext jupyter_codelia", ...)`` executes new code cells offline in
    ``tmp_path`` (nbclient, a real kernel) and returns the executed notebook."""

    def run(*sources: str) -> Any:
        home = tmp_path / "home"
        home.mkdir(exist_ok=True)
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
        client = NotebookClient(nb, timeout=240, kernel_name="python3")
        client.execute(env=offline_env(home), cwd=str(tmp_path))
        return nb

    return run
