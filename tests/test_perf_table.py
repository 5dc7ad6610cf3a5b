"""The README's performance table has exactly the rows scripts/perf_table.py generates (the
numbers are the benches', not checked here)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("perf_table", ROOT / "scripts" / "perf_table.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while it runs
    spec.loader.exec_module(module)
    return module


def test_readme_table_rows_match_the_script() -> None:
    script = _script()
    readme = (ROOT / "README.md").read_text()
    assert script.table_labels(readme) == [row.label for row in script.ROWS]


def test_rendering_and_rewriting_keep_the_row_set() -> None:
    script = _script()
    table = script.render({"files": {"patch_wall": 1.23}})
    assert "| 1.23x |" in table and "not measured" in table
    rewritten = script.rewrite(f"before\n{script.BEGIN}\nold\n{script.END}\nafter\n", table)
    assert rewritten.startswith("before\n") and rewritten.endswith(f"{script.END}\nafter\n")
    assert script.table_labels(rewritten) == [row.label for row in script.ROWS]


def test_every_row_names_a_bench_the_script_runs() -> None:
    script = _script()
    for row in script.ROWS:
        assert row.bench in script.BENCHES
        assert (ROOT / script.BENCHES[row.bench][0]).is_file()
