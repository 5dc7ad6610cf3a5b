"""Shared setup of the cache tests: this directory goes on ``sys.path`` (the suite runs with
``--import-mode=importlib``) so test modules can import ``_cache_reference``."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

_HERE = str(Path(__file__).parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)


@pytest.fixture(autouse=True)
def _no_cache_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Limits are the documented defaults unless a test sets the environment itself."""
    import os

    for name in list(os.environ):
        if name.startswith("JUPYTER_CODELIA_TOOL_OUTPUT_CACHE_"):
            monkeypatch.delenv(name)
