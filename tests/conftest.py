"""Suite-wide pytest configuration.

``pytest_plugins`` may only be declared here, at the top of the tests: the jupyter-server fixtures
(``jp_fetch`` and friends) are used by tests/server.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest_plugins = ["pytest_jupyter.jupyter_server"]


@pytest.fixture
def clean_anthropic_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Drop ANTHROPIC_* / OPENAI_* variables and point HOME at an empty dir (no SDK profiles)."""
    for name in list(os.environ):
        if name.startswith(("ANTHROPIC_", "OPENAI_")):
            monkeypatch.delenv(name)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
