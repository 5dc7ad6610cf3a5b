"""Fixtures for agent tests: the real SDKs against scripted servers on 127.0.0.1.

Tests about the agent run once per provider: ``server`` / ``chat`` are the Anthropic pair
(ScriptedAnthropicServer + AnthropicChat) or the OpenAI pair (ScriptedOpenAIServer +
OpenAIChat), both playing the same script. A test that checks one provider's wire format is
marked ``@pytest.mark.provider("anthropic")`` and runs for that provider only.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from jupyter_codelia.agent import Agent
from jupyter_codelia.llm.anthropic import AnthropicChat
from jupyter_codelia.llm.openai import OpenAIChat
from jupyter_codelia.testing import ScriptedAnthropicServer, ScriptedOpenAIServer, ScriptedServer
from jupyter_codelia.tools import define_tool

FAKE_KEY = "sk-ant-test-0123456789abcdef-SECRET"
PROVIDERS = ("anthropic", "openai")


# Tools shared by the agent tests.
class AddInput(BaseModel):
    a: int
    b: int


add = define_tool(
    name="add", description="Add two integers", input=AddInput, execute=lambda p, ctx: p.a + p.b
)


class NoInput(BaseModel):
    pass


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "provider(name): run this agent test only against that provider's pair"
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "provider" not in metafunc.fixturenames:
        return
    marker = metafunc.definition.get_closest_marker("provider")
    providers = marker.args if marker is not None else PROVIDERS
    metafunc.parametrize("provider", providers)


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import os

    for name in list(os.environ):
        if name.startswith(("ANTHROPIC_", "OPENAI_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    monkeypatch.setenv("JUPYTER_CODELIA_HOME", str(tmp_path / "home"))


@pytest.fixture
def server(provider: str) -> Iterator[ScriptedServer]:
    kind = ScriptedAnthropicServer if provider == "anthropic" else ScriptedOpenAIServer
    with kind() as srv:
        yield srv


@pytest.fixture
def chat(server: ScriptedServer, provider: str) -> Any:
    return make_chat(provider, server)


def make_chat(provider: str, server: ScriptedServer) -> Any:
    if provider == "anthropic":
        return AnthropicChat(model="claude-sonnet-5-5", base_url=server.url, api_key=FAKE_KEY)
    return OpenAIChat(model="gpt-4o", base_url=server.url, api_key=FAKE_KEY)


# How each pair answers ``fault.overloaded()``: Anthropic's 529, OpenAI's 503.
OVERLOADED_STATUS = {"anthropic": 529, "openai": 503}


def chat_source(provider: str, url: str, key: str) -> str:
    """The Python source that builds ``provider``'s chat (for tests in a fresh process)."""
    if provider == "anthropic":
        return (
            "__import__('jupyter_codelia.llm.anthropic', fromlist=['x'])"
            f".AnthropicChat(base_url={url!r}, api_key={key!r})"
        )
    return (
        "__import__('jupyter_codelia.llm.openai', fromlist=['x'])"
        f".OpenAIChat('gpt-4o', base_url={url!r}, api_key={key!r})"
    )


def new_agent(chat: Any, tools: Any = (), **kwargs: Any) -> Agent:
    kwargs.setdefault("output_cache", None)
    return Agent(chat, tools, **kwargs)


@pytest.fixture
def make_agent() -> Any:
    return new_agent
