"""Strip outputs, execution counts and widget state from the demo notebooks before a commit.

    python scripts/clean_notebooks.py            # clean notebooks/*.ipynb in place
    python scripts/clean_notebooks.py --check    # list dirty notebooks, exit 1 if any
    python scripts/clean_notebooks.py a.ipynb    # only these files

Notebooks are committed without outputs so diffs stay readable and CI (tests/notebooks/) runs
them from a known state.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import nbformat

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
VOLATILE_CELL_METADATA = ("execution", "ExecuteTime", "collapsed", "scrolled")


def dirty_reasons(nb: Any) -> list[str]:
    """Why ``nb`` is not in its committed state (empty when clean)."""
    reasons = []
    if "widgets" in nb.metadata:
        reasons.append("widget state in the notebook metadata")
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        if cell.get("outputs"):
            reasons.append(f"cell {index} has outputs")
        if cell.get("execution_count") is not None:
            reasons.append(f"cell {index} has an execution count")
        for key in VOLATILE_CELL_METADATA:
            if key in cell.metadata:
                reasons.append(f"cell {index} has metadata {key!r}")
    return reasons


def clean(nb: Any) -> None:
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        cell.outputs = []
        cell.execution_count = None
        for key in VOLATILE_CELL_METADATA:
            cell.metadata.pop(key, None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", type=Path, help="notebooks (default: notebooks/)")
    parser.add_argument("--check", action="store_true", help="report only; exit 1 when dirty")
    args = parser.parse_args(argv)
    paths = args.paths or sorted(NOTEBOOKS.glob("*.ipynb"))
    dirty = 0
    for path in paths:
        if not path.is_file():
            print(f"{path}: no such notebook", file=sys.stderr)
            return 2
        nb = nbformat.read(path, as_version=4)
        reasons = dirty_reasons(nb)
        if not reasons:
            continue
        dirty += 1
        if args.check:
            print(f"{path}: {'; '.join(reasons)}")
        else:
            clean(nb)
            nbformat.write(nb, path)
            print(f"cleaned {path}")
    if args.check and dirty:
        print(f"{dirty} notebook(s) need `python scripts/clean_notebooks.py`", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
