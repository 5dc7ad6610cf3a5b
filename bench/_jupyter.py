"""The tests' Jupyter server launcher (``tests/server/jupyter_launch.py``), for benches that
run a real Jupyter server with the extension: one way to start it, not a copy per bench."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def jupyter_launch() -> Any:
    """The ``jupyter_launch`` module of the tests, loaded by path (tests/ is not a package)."""
    path = REPO / "tests" / "server" / "jupyter_launch.py"
    spec = importlib.util.spec_from_file_location("codelia_jupyter_launch", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
