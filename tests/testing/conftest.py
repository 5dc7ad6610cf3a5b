"""Fixtures for provider tests: a clean environment so the SDK never sees real credentials."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def clean_anthropic_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Drop ANTHROPIC_* variables and point HOME at an empty dir (no SDK profiles on disk)."""
    for name in list(os.environ):
        if name.startswith("ANTHROPIC_"):
            monkeypatch.delenv(name)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
