"""Choosing the provider and MCP servers from notebook configuration (no kernel needed)."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from IPython.core.error import UsageError

from jupyter_codelia.llm.anthropic import AnthropicChat
from jupyter_codelia.llm.openai import LOCAL_PLACEHOLDER_KEY, OpenAIChat
from jupyter_codelia.notebook import _subcommands
from jupyter_codelia.notebook.config import (
    Codelia,
    ConfigError,
    Settings,
    api_key_configured,
    api_key_help,
    describe_settings,
    resolve_settings,
)
from jupyter_codelia.notebook.frontend import FrontendClient
from jupyter_codelia.notebook.run.runner import NotebookAgent, chat_model
from jupyter_codelia.standard_tools.jobs import JobRegistry
from jupyter_codelia.testing import ScriptedAnthropicServer, ScriptedOpenAIServer, reply, text

OPENAI_KEY = "sk-proj-SECRET-abcdef0123456789"


def _notebook_agent(shell: Any, settings: Callable[[], Settings]) -> NotebookAgent:
    """A notebook agent as the kernel extension makes it, on its own job registry and client."""
    return NotebookAgent(shell, settings, jobs=JobRegistry(), frontend=FrontendClient())


def _no_kernel_shell() -> Any:
    """The little of an IPython shell these checks touch: a namespace (they never run code)."""
    return SimpleNamespace(user_ns={}, user_ns_hidden={})


@pytest.fixture
def shell() -> Iterator[Any]:
    """An IPython shell for these in-process checks, cleared after (it is a process singleton,
    and later tests expect plain Python)."""
    from IPython.core.interactiveshell import InteractiveShell

    yield InteractiveShell.instance()
    InteractiveShell.clear_instance()


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("JUPYTER_CODELIA_HOME", str(tmp_path))
    monkeypatch.delenv("JUPYTER_CODELIA_CONFIG", raising=False)
    for name in ("MODEL", "PROVIDER", "BASE_URL"):
        monkeypatch.delenv(f"JUPYTER_CODELIA_{name}", raising=False)
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OLLAMA_API_KEY", "OPENROUTER_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def test_the_model_shorthand_names_the_provider(home: Path) -> None:
    traits = Codelia()
    traits.model = "ollama:qwen3-coder:30b"
    settings = resolve_settings(traits)
    assert (settings.provider, settings.model) == ("ollama", "qwen3-coder:30b")
    assert "model prefix" in settings.sources["provider"]
    per_call = resolve_settings().with_overrides(model="openai:gpt-5.1")
    assert (per_call.provider, per_call.model) == ("openai", "gpt-5.1")
    # A colon that is not a provider prefix stays part of the model id.
    local = Codelia()
    local.provider = "ollama"
    local.model = "my-model:latest"
    assert resolve_settings(local).model == "my-model:latest"
    # Only Claude ids are checked against a list; other services host open-ended sets.
    with pytest.raises(ConfigError, match=r"^option: unknown model 'gpt-5\.1'"):
        resolve_settings().with_overrides(model="gpt-5.1")
    with pytest.raises(ConfigError, match=r"^option: unknown model 'nonsense'"):
        resolve_settings().with_overrides(model="anthropic:nonsense")


def test_a_provider_without_a_model_is_refused_and_openai_gets_its_default(home: Path) -> None:
    openai = Codelia()
    openai.provider = "openai"
    assert resolve_settings(openai).model == "gpt-5.1"
    vllm = Codelia()
    vllm.provider = "vllm"
    with pytest.raises(ConfigError, match="provider 'vllm' needs a model"):
        resolve_settings(vllm)


def test_provider_and_base_url_are_validated(home: Path) -> None:
    (home / "config.json").write_text(json.dumps({"provider": "skynet"}))
    with pytest.raises(ConfigError, match="provider must be one of anthropic, openai, ollama"):
        resolve_settings()
    (home / "config.json").write_text(json.dumps({"base_url": "localhost:11434"}))
    with pytest.raises(ConfigError, match="base_url must start with http"):
        resolve_settings()


def test_keys_come_from_each_providers_variable_and_are_never_shown(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert not api_key_configured({}, provider="openai")
    assert api_key_configured({"OPENAI_API_KEY": OPENAI_KEY}, provider="openai")
    assert api_key_configured({}, provider="ollama")  # local servers need none
    assert "OPENROUTER_API_KEY" in api_key_help("openrouter")
    # A newcomer without an Anthropic key learns every other way in, not only Anthropic's.
    anthropic = api_key_help("anthropic")
    assert "ANTHROPIC_API_KEY" in anthropic and "OPENAI_API_KEY" in anthropic
    assert "OPENROUTER_API_KEY" in anthropic and "'ollama:qwen3-coder'" in anthropic
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    traits = Codelia()
    traits.provider = "openai"
    text = describe_settings(resolve_settings(traits))
    assert "$OPENAI_API_KEY" in text
    assert OPENAI_KEY not in text


def test_the_factory_builds_the_chosen_provider(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert isinstance(chat_model(resolve_settings()), AnthropicChat)
    local = chat_model(resolve_settings().with_overrides(model="ollama:qwen3-coder"))
    assert isinstance(local, OpenAIChat)
    assert (local.provider, local.model) == ("ollama", "qwen3-coder")
    assert local.base_url == "http://localhost:11434/v1"
    assert local.client.api_key == LOCAL_PLACEHOLDER_KEY  # a local server needs no key
    traits = Codelia()
    traits.provider = "vllm"
    traits.model = "qwen3-coder"
    traits.base_url = "http://127.0.0.1:9999/v1"
    vllm = chat_model(resolve_settings(traits))
    assert vllm.base_url == "http://127.0.0.1:9999/v1"


def test_a_model_without_tools_is_refused_before_the_run(home: Path) -> None:
    nb = _notebook_agent(_no_kernel_shell(), resolve_settings)
    settings = resolve_settings().with_overrides(model="openai:o1-mini")
    with pytest.raises(ConfigError, match="'o1-mini' \\(openai\\) cannot call tools"):
        nb.prepare(settings, llm=OpenAIChat("o1-mini", api_key=OPENAI_KEY))


def test_mcp_servers_from_the_config_file_and_the_subcommand(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (home / "config.json").write_text(
        json.dumps({"mcpServers": {"files": {"command": "npx", "args": ["-y", "fs-server"]}}})
    )
    resolve_settings()  # the mcpServers key is accepted
    nb = _notebook_agent(_no_kernel_shell(), resolve_settings)
    _subcommands.run(nb, "mcp", "")
    assert "files  [stdio, not started]  npx -y fs-server" in capsys.readouterr().out
    _subcommands.run(nb, "mcp", f"add calc -- {sys.executable} -m calc --flag")
    assert "Added MCP server 'calc'" in capsys.readouterr().out
    _subcommands.run(nb, "mcp", "add docs --url http://127.0.0.1:1/mcp")
    listing = nb.mcp_servers().describe()
    assert "calc  [stdio, not started]" in listing
    assert "docs  [http, not started]  http://127.0.0.1:1/mcp" in listing
    with pytest.raises(UsageError, match="Usage: %codelia mcp add NAME"):
        _subcommands.run(nb, "mcp", "add lonely")
    with pytest.raises(UsageError, match="must start with http"):
        _subcommands.run(nb, "mcp", "add web --url ftp://x")
    with pytest.raises(UsageError, match="MCP server name 'a__b'"):
        _subcommands.run(nb, "mcp", "add a__b -- cmd")
    nb.mcp_servers().close()


def test_a_bad_mcp_entry_in_the_config_file_names_the_file_and_stops_nothing(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (home / "config.json").write_text(json.dumps({"mcpServers": {"x": {"url": "nope"}}}))
    nb = _notebook_agent(_no_kernel_shell(), resolve_settings)
    problem = nb.mcp_servers().problems["x"]
    assert re.match(
        r'config file .*config.json: MCP server .x.: "url" must start with http', problem
    )
    assert nb._mcp_tools() == []  # what a run asks first: it goes on, and says why
    assert problem in capsys.readouterr().out


def test_an_ollama_model_without_tools_is_refused_before_the_run(home: Path) -> None:
    with ScriptedOpenAIServer() as server:
        server.model_capabilities = {"llama3": ["completion"]}
        traits = Codelia()
        traits.base_url = server.url
        settings = resolve_settings(traits).with_overrides(model="ollama:llama3")
        nb = _notebook_agent(_no_kernel_shell(), resolve_settings)
        with pytest.raises(ConfigError, match=r"'llama3' \(ollama\) cannot call tools"):
            nb.prepare(settings)
        assert server.requests == []  # refused before any model call


def test_a_failing_mcp_server_is_reported_before_the_run_which_goes_on(
    home: Path, shell: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = {"command": sys.executable, "args": ["-c", "import sys; sys.exit(5)"]}
    (home / "config.json").write_text(json.dumps({"mcpServers": {"broken": broken}}))
    nb = _notebook_agent(shell, resolve_settings)
    try:
        nb.prepare(resolve_settings(), llm=AnthropicChat(api_key="sk-ant-unused-key"))
        assert nb.mcp_servers().server("broken").state == "not started"  # a run starts it
        tools = nb._mcp_tools()  # what each run asks for before the model is called
        out = capsys.readouterr().out
        assert "MCP server 'broken'" in out
        assert "failed to start" in out
        assert "The run goes on without its tools; %codelia mcp shows the state." in out
        assert tools == []
        assert "broken  [stdio, failed, attempt 1; tried again" in nb.mcp_servers().describe()
    finally:
        nb.close_mcp()


def test_a_model_without_vision_gets_a_note_before_the_run(
    home: Path, shell: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    nb = _notebook_agent(shell, resolve_settings)
    settings = resolve_settings().with_overrides(model="openai:gpt-4")
    nb.prepare(settings, llm=OpenAIChat("gpt-4", api_key=OPENAI_KEY))
    assert "Note: the model 'gpt-4' cannot read images" in capsys.readouterr().out


def test_the_notebook_agent_keeps_its_chat_model_from_turn_to_turn(
    home: Path, shell: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each blocking turn runs on an event loop of its own; the agent's chat model (and the
    request cache it keeps) serves them all, and a key set between turns is used."""
    with ScriptedOpenAIServer([reply(text("first")), reply(text("second"))]) as server:
        traits = Codelia()
        traits.provider = "vllm"
        traits.model = "qwen3-coder"
        traits.base_url = server.url
        traits.approval_mode = "full-access"
        nb = _notebook_agent(shell, lambda: resolve_settings(traits))
        agent = nb.prepare(nb.settings())
        chat = agent.llm
        first = nb.run_blocking(agent, "hello")
        monkeypatch.setenv("VLLM_API_KEY", OPENAI_KEY)  # %env between turns
        assert nb.prepare(nb.settings()) is agent
        second = nb.run_blocking(agent, "again")
        assert (first.status, first.final_text) == ("completed", "first")
        assert (second.status, second.final_text) == ("completed", "second")
        assert agent.llm is chat
        assert len(server.requests) == 2


def test_a_changed_setting_resumes_the_session_even_while_its_save_is_still_on_its_way(
    home: Path, shell: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run ends with its session save queued to the writer thread; the next run with another
    setting rebuilds the agent, which reads that session from disk. On a loaded machine the save
    may not be there yet: the rebuild waits for it instead of saying "session not found"."""
    import asyncio
    import threading

    from jupyter_codelia.session import SessionStore

    saving = threading.Event()
    original = SessionStore.save_state

    def slow_disk(self: SessionStore, *args: Any, **kwargs: Any) -> int:
        saving.set()
        threading.Event().wait(1.0)  # the disk of a loaded machine
        return original(self, *args, **kwargs)

    monkeypatch.setattr(SessionStore, "save_state", slow_disk)
    nb = _notebook_agent(shell, resolve_settings)
    with ScriptedAnthropicServer([reply(text("Hello.")), reply(text("Again."))]) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-key-0000")
        first = nb.prepare(resolve_settings())
        assert asyncio.run(first.run("hello")) == "Hello."
        assert saving.wait(10)  # the save is under way, not done
        changed = resolve_settings().with_overrides(approval_mode="full-access")
        second = nb.prepare(changed)
        assert second is not first
        assert second.session_id == first.session_id
        assert asyncio.run(second.run("again")) == "Again."
        assert [m.role for m in second.history].count("user") == 2  # the first turn came along
    nb.close_mcp()
