"""Provider tests run with a clean environment, so the SDK never sees real credentials."""

import pytest


@pytest.fixture(autouse=True)
def _offline_sdk(clean_anthropic_env: None) -> None:
    """Every test here gets ``clean_anthropic_env`` (tests/conftest.py)."""
