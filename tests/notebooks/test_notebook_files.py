"""Demo notebooks are committed clean and consistent; the data has its dip; README links them."""

from __future__ import annotations

import csv
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = REPO / "notebooks"
CLEAN_SCRIPT = REPO / "scripts" / "clean_notebooks.py"
DEMOS = (
    "tools-tour.ipynb",
    "custom-tools.ipynb",
    "data-analysis.ipynb",
    "output-cache.ipynb",
    "notebook-tools.ipynb",
)
ALL = ("quickstart.ipynb", *DEMOS)


def test_every_demo_notebook_exists_and_nothing_else() -> None:
    assert sorted(p.name for p in NOTEBOOKS.glob("*.ipynb")) == sorted(ALL)


@pytest.mark.parametrize("name", ALL)
def test_notebook_is_committed_clean(name: str) -> None:
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    nbformat.validate(nb)
    assert nb.metadata["kernelspec"]["name"] == "python3"
    assert "widgets" not in nb.metadata
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            assert cell.outputs == [], f"{name} cell {index} has outputs"
            assert cell.execution_count is None, f"{name} cell {index} has an execution count"
    ids = [cell.get("id") for cell in nb.cells]
    assert len(set(ids)) == len(ids), f"{name} has duplicate cell ids"


@pytest.mark.parametrize("name", DEMOS)
def test_demo_notebook_explains_itself_and_has_an_offline_path(name: str) -> None:
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    first = nb.cells[0]
    assert first.cell_type == "markdown" and first.source.startswith("# ")
    markdown = [c for c in nb.cells if c.cell_type == "markdown"]
    assert len(markdown) >= 4, f"{name} should explain each step in markdown"
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    assert "offline_demo(" in code or "ScriptedAnthropicServer(" in code
    assert "sk-ant-" not in code, "never a key in a notebook"


def test_revenue_csv_has_a_visible_dip() -> None:
    with (NOTEBOOKS / "data" / "revenue.csv").open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0]) == ["month", "revenue_k", "orders"]
    revenue = [float(r["revenue_k"]) for r in rows]
    worst = min(range(1, len(revenue)), key=lambda i: revenue[i] / revenue[i - 1])
    assert rows[worst]["month"] == "2026-06-01"
    assert revenue[worst] / revenue[worst - 1] < 0.7  # a dip of 30%+ that a plot shows plainly
    others = [
        revenue[i] / revenue[i - 1] for i in range(1, len(revenue)) if i not in (worst, worst + 1)
    ]
    assert min(others) > 0.97


def test_readme_links_every_notebook() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    for name in ALL:
        assert f"(notebooks/{name})" in readme, name


def test_clean_script_checks_and_cleans(tmp_path: Path) -> None:
    target = tmp_path / "dirty.ipynb"
    shutil.copy(NOTEBOOKS / "custom-tools.ipynb", target)
    nb = nbformat.read(target, as_version=4)
    code_cell = next(c for c in nb.cells if c.cell_type == "code")
    code_cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="hi\n")]
    code_cell.execution_count = 3
    code_cell.metadata["execution"] = {"iopub.status.idle": "2026-11-29T00:00:00Z"}
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}}}
    nbformat.write(nb, target)

    check = [sys.executable, str(CLEAN_SCRIPT), "--check", str(target)]
    dirty = subprocess.run(check, capture_output=True, text=True)
    assert dirty.returncode == 1
    assert "has outputs" in dirty.stdout and "execution count" in dirty.stdout
    assert "widget state" in dirty.stdout
    assert "need `python scripts/clean_notebooks.py`" in dirty.stderr

    cleaned = subprocess.run(
        [sys.executable, str(CLEAN_SCRIPT), str(target)], capture_output=True, text=True
    )
    assert cleaned.returncode == 0 and f"cleaned {target}" in cleaned.stdout
    assert subprocess.run(check, capture_output=True, text=True).returncode == 0
    after = nbformat.read(target, as_version=4)
    assert [c.source for c in after.cells] == [c.source for c in nb.cells]


def test_clean_script_names_a_missing_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.ipynb"
    done = subprocess.run(
        [sys.executable, str(CLEAN_SCRIPT), str(missing)], capture_output=True, text=True
    )
    assert done.returncode == 2
    assert f"{missing}: no such notebook" in done.stderr


def test_committed_notebooks_pass_the_clean_script() -> None:
    done = subprocess.run(
        [sys.executable, str(CLEAN_SCRIPT), "--check"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout
