"""The browser-test launchers (tests/browser/conftest.py) for scripts that run outside pytest.

Benchmarks and ``scripts/screenshot.py`` start the same real JupyterLab, kernel gateway and
Debian Chromium the browser tests use, by loading that conftest as a module.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def load_browser_fixtures() -> Any:
    path = REPO / "tests" / "browser" / "conftest.py"
    spec = importlib.util.spec_from_file_location("codelia_browser_fixtures", path)
    if spec is None or spec.loader is None:
        raise RuntimeError(f"cannot load the browser fixtures from {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
