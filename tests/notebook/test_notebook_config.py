"""Configuration precedence, option parsing and approval answers (no kernel needed)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from IPython.core.error import UsageError

from jupyter_codelia.notebook.config import (
    Codelia,
    ConfigError,
    api_key_configured,
    describe_settings,
    resolve_settings,
)
from jupyter_codelia.notebook.magics import parse_options
from jupyter_codelia.notebook.run.runner import parse_answer


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("JUPYTER_CODELIA_HOME", str(tmp_path))
    monkeypatch.delenv("JUPYTER_CODELIA_CONFIG", raising=False)
    for name in ("MODEL", "APPROVAL_MODE", "MAX_ITERATIONS", "BACKGROUND"):
        monkeypatch.delenv(f"JUPYTER_CODELIA_{name}", raising=False)
    return tmp_path


def test_precedence_traits_over_env_over_file_over_default(home: Path) -> None:
    (home / "config.json").write_text(
        json.dumps(
            {
                "model": "claude-opus-4-5",
                "max_iterations": 7,
                "background": True,
                "permissions": {"allow": []},
            }
        )
    )
    env = {"JUPYTER_CODELIA_MODEL": "claude-haiku-4-5", "JUPYTER_CODELIA_MAX_ITERATIONS": "9"}
    traits = Codelia(model="claude-opus-5")
    settings = resolve_settings(traits, env)
    assert settings.model == "claude-opus-5"
    assert settings.sources["model"] == "%config Codelia.model"
    assert settings.max_iterations == 9
    assert settings.sources["max_iterations"] == "$JUPYTER_CODELIA_MAX_ITERATIONS"
    assert settings.background is True
    assert settings.sources["background"].startswith("config file ")
    assert settings.approval_mode == "minimal"
    assert settings.sources["approval_mode"] == "default"
    override = settings.with_overrides(model="claude-sonnet-4-6", approval_mode=None)
    assert override.model == "claude-sonnet-4-6"
    assert override.sources["model"] == "magic option"
    assert override.approval_mode == "minimal"


def test_bad_values_name_the_source(home: Path) -> None:
    with pytest.raises(ConfigError) as info:
        resolve_settings(None, {"JUPYTER_CODELIA_APPROVAL_MODE": "yolo"})
    assert str(info.value) == (
        "$JUPYTER_CODELIA_APPROVAL_MODE: approval_mode must be one of minimal, trusted, "
        "full-access, got 'yolo'."
    )
    with pytest.raises(ConfigError, match="max_iterations must be a number, got 'many'"):
        resolve_settings(None, {"JUPYTER_CODELIA_MAX_ITERATIONS": "many"})
    with pytest.raises(ConfigError, match="background must be true or false"):
        resolve_settings(None, {"JUPYTER_CODELIA_BACKGROUND": "perhaps"})
    with pytest.raises(ConfigError, match="max_iterations must be a positive number"):
        resolve_settings(Codelia(max_iterations=0), {})


def test_config_file_errors(home: Path) -> None:
    path = home / "config.json"
    path.write_text("{not json")
    with pytest.raises(ConfigError, match=r"is not valid JSON .* Fix or delete it"):
        resolve_settings(None, {})
    path.write_text("[1]")
    with pytest.raises(ConfigError, match="must hold a JSON object"):
        resolve_settings(None, {})
    path.write_text(json.dumps({"api_key": "sk-secret"}))
    with pytest.raises(ConfigError) as info:
        resolve_settings(None, {})
    assert "unknown key 'api_key'" in str(info.value)
    assert "read from ANTHROPIC_API_KEY, OPENAI_API_KEY" in str(info.value)
    assert "never from this file" in str(info.value)
    assert "sk-secret" not in str(info.value)


def test_config_path_from_env(tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    other = tmp_path / "elsewhere.json"
    other.write_text(json.dumps({"model": "claude-fable-5"}))
    monkeypatch.setenv("JUPYTER_CODELIA_CONFIG", str(other))
    settings = resolve_settings(None, {})
    assert settings.model == "claude-fable-5"
    assert settings.config_path == other


def test_describe_settings_never_shows_the_key(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-very-secret")
    text = describe_settings(resolve_settings(None, {}))
    assert "sk-ant-very-secret" not in text
    assert re.search(r"^api key +set +\$ANTHROPIC_API_KEY$", text, re.M)
    assert api_key_configured({"ANTHROPIC_API_KEY": " "}) is False
    assert api_key_configured({"ANTHROPIC_AUTH_TOKEN": "t"}) is True


def test_parse_options_leaves_the_prompt_verbatim() -> None:
    options = parse_options("--new --model claude-haiku-5-5 --max-iterations=5 what's 'this'?")
    assert options.new
    assert options.model == "claude-haiku-5-5"
    assert options.max_iterations == 5
    assert options.rest == "what's 'this'?"
    assert parse_options("-- --new is text").rest == "--new is text"
    assert parse_options("--background").background
    assert parse_options("--resume abc plot").resume == "abc"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("--nope hi", "Unknown option --nope. Known options:"),
        ("--model", "--model needs a value, e.g. --model claude-sonnet-5-5."),
        ("--max-iterations two hi", "--max-iterations needs a whole number, got 'two'."),
        ("--max-iterations 0 hi", "--max-iterations must be greater than 0, got 0."),
        ("--new --resume abc hi", "--new and --resume exclude each other: pick one."),
        ("--background --blocking hi", "--background and --blocking exclude each other"),
        ("--demo=1", "--demo takes no value."),
    ],
)
def test_parse_options_errors(line: str, message: str) -> None:
    with pytest.raises(UsageError) as info:
        parse_options(line)
    assert str(info.value).startswith(message)


def test_parse_answer() -> None:
    assert parse_answer("y") == ("allow", None)
    assert parse_answer(" YES ") == ("allow", None)
    assert parse_answer("a") == ("allow_remember", None)
    assert parse_answer("") == ("deny", None)
    assert parse_answer("n") == ("deny", None)
    assert parse_answer("use pandas instead") == ("deny", "use pandas instead")


@pytest.mark.asyncio
async def test_run_handle_result_before_the_end_says_what_to_do() -> None:
    import asyncio

    from jupyter_codelia.notebook.run._sink import LiveRun
    from jupyter_codelia.notebook.run.results import RunHandle, RunNotFinishedError, RunResult
    from jupyter_codelia.tools import CancelSignal

    run = LiveRun("run-1", "session-1", "p", "magic", CancelSignal(), "background")
    release = asyncio.Event()

    async def turn() -> RunResult:
        await release.wait()
        status = "cancelled" if run.signal.is_set() else "completed"
        return RunResult(final_text="ok", status=status, session_id="session-1", run_id="run-1")

    handle = RunHandle(run, asyncio.ensure_future(turn()))
    with pytest.raises(RunNotFinishedError) as info:
        handle.result()
    assert str(info.value) == (
        "run run-1 is still going; `await handle` in a cell, or call .result() once the panel "
        "shows it finished"
    )
    assert repr(handle) == "<RunHandle run-1 session=session-1 running>"
    finished: list[str] = []
    handle.add_done_callback(lambda h: finished.append(h.run_id))
    handle.cancel()
    release.set()
    result = await handle
    assert result.status == "cancelled"
    assert handle.result() is result
    await asyncio.sleep(0)
    assert finished == ["run-1"]


def test_home_from_the_trait_beats_the_environment(home: Path, tmp_path: Path) -> None:
    shared = tmp_path / "shared-volume" / "codelia"
    (shared).mkdir(parents=True)
    (shared / "config.json").write_text(json.dumps({"model": "claude-opus-5-5"}))

    settings = resolve_settings(Codelia(home=f"{shared}/"), {})

    assert settings.home == shared
    assert settings.sources["home"] == "%config Codelia.home"
    # The config file is the one in that home.
    assert settings.config_path == shared / "config.json"
    assert settings.model == "claude-opus-5-5"
    table = describe_settings(settings)
    assert re.search(rf"^home +{re.escape(str(shared))} +%config Codelia.home$", table, re.M)
    # Every row's value starts in the same column, however long the values are.
    header, *rows = table.splitlines()
    start = header.index("value")
    assert all(row[start - 2 : start] == "  " and row[start] != " " for row in rows), table


def test_home_from_the_environment(home: Path, tmp_path: Path) -> None:
    other = tmp_path / "env-home"

    settings = resolve_settings(None, {"JUPYTER_CODELIA_HOME": f"  {other}  "})

    assert settings.home == other
    assert settings.sources["home"] == "$JUPYTER_CODELIA_HOME"
    assert settings.config_path == other / "config.json"


def test_home_errors_say_how_to_fix_them(home: Path, tmp_path: Path) -> None:
    a_file = tmp_path / "not-a-dir"
    a_file.write_text("x")
    with pytest.raises(ConfigError) as info:
        resolve_settings(Codelia(home=str(a_file)), {})
    assert str(info.value) == (
        f"%config Codelia.home: the codelia home {a_file} exists but is not a directory; "
        "point it at a directory (it is created if missing)"
    )
    with pytest.raises(ConfigError) as info:
        resolve_settings(Codelia(home="  "), {})
    assert "%config Codelia.home = None" in str(info.value)


def test_an_unknown_model_is_refused_with_the_known_ones(home: Path) -> None:
    with pytest.raises(ConfigError) as info:
        resolve_settings(Codelia(model="nonsense"), {})
    message = str(info.value)
    assert message.startswith("%config Codelia.model: unknown model 'nonsense'. Known models: ")
    assert "claude-sonnet-5-5" in message and "claude-haiku-4-5-20251001" in message
    with pytest.raises(ConfigError, match=r"^option: unknown model 'gpt-4'"):
        resolve_settings(None, {}).with_overrides(model="gpt-4")
    with pytest.raises(UsageError) as usage:
        parse_options("--model nonsense hi")
    assert str(usage.value).startswith("--model: unknown model 'nonsense'. Known models: claude-")
    dated = resolve_settings(None, {"JUPYTER_CODELIA_MODEL": "claude-opus-4-5-20251101"})
    assert dated.model == "claude-opus-4-5-20251101"


def test_thinking_and_max_tokens_settings(home: Path) -> None:
    defaults = resolve_settings(None, {})
    assert (defaults.thinking, defaults.max_tokens) == (None, None)
    assert resolve_settings(Codelia(thinking="adaptive"), {}).thinking == "adaptive"
    assert resolve_settings(Codelia(thinking=4096), {}).thinking == 4096
    assert resolve_settings(None, {"JUPYTER_CODELIA_THINKING": "2048"}).thinking == 2048
    assert resolve_settings(None, {"JUPYTER_CODELIA_THINKING": "OFF"}).thinking == "off"
    with pytest.raises(ConfigError) as info:
        resolve_settings(None, {"JUPYTER_CODELIA_THINKING": "512"})
    assert str(info.value) == (
        "$JUPYTER_CODELIA_THINKING: thinking must be 'off', 'adaptive' or a budget of at least "
        "1024 tokens, got 512."
    )


def test_settings_is_the_one_declaration_the_rest_derives_from() -> None:
    from jupyter_codelia.notebook import config, magics

    declared = [f.name for f in config.ALL_FIELDS]
    assert sorted(Codelia.class_trait_names(config=True)) == sorted(declared)
    assert tuple(name for name in declared if name != "home") == config.FIELD_NAMES
    for option, spec in config.OPTIONS.items():
        assert f"  {option} {spec.setting.metavar}" in magics.USAGE
        assert magics.parse_options(f"{option} {spec.setting.example} hi").rest == "hi"
    # Budgets and background apply per run: changing them keeps the agent.
    base = config.Settings()
    assert base.with_overrides(max_cost_per_run=1.0, background=True).agent_key() == (
        base.agent_key()
    )
    assert base.with_overrides(approval_mode="trusted").agent_key() != base.agent_key()
    with pytest.raises(ConfigError, match="approval_mode must be one of minimal, trusted"):
        base.with_overrides(approval_mode="yolo")
