"""Fixtures for agent tests: the real SDK against ScriptedAnthropicServer on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_codelia.agent import Agent
from jupyter_codelia.llm.anthropic import AnthropicChat
from jupyter_codelia.testing import ScriptedAnthropicServer

FAKE_KEY = "sk-ant-test-0123456789abcdef-SECRET"


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import os

    for name in list(os.environ):
        if name.startswith("ANTHROPIC_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    monkeypatch.setenv("JUPYTER_CODELIA_HOME", str(tmp_path / "home"))


@pytest.fixture
def server() -> Iterator[ScriptedAnthropicServer]:
    with ScriptedAnthropicServer() as srv:
        yield srv


@pytest.fixture
def chat(server: ScriptedAnthropicServer) -> AnthropicChat:
    return AnthropicChat(model="claude-sonnet-5-5", base_url=server.url, api_key=FAKE_KEY)


def new_agent(chat: AnthropicChat, tools: Any = (), **kwargs: Any) -> Agent:
    kwargs.setdefault("output_cache", None)
    return Agent(chat, tools, **kwargs)


@pytest.fixture
def make_agent() -> Any:
    return new_agent
