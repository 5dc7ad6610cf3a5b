"""Fixtures for the session store tests: a store in a temp dir and a fresh-interpreter runner."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from jupyter_codelia.session import SessionStore


@pytest.fixture
def store(tmp_path: Path) -> SessionStore:
    return SessionStore(tmp_path / "home")


def _run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ),
        check=False,
    )


@pytest.fixture
def run_python() -> Callable[[str], subprocess.CompletedProcess[str]]:
    """Runs code in a fresh interpreter (resume and cross-process tests need a new process)."""
    return _run_python
