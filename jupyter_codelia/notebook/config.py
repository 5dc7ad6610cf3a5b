"""Notebook configuration: ``%config Codelia.*`` traitlets, environment variables, a config file.

Precedence, highest first: options of the magic call, ``%config Codelia.<name> = ...``,
``JUPYTER_CODELIA_<NAME>`` environment variables, the JSON config file
(``$JUPYTER_CODELIA_CONFIG`` or ``<home>/config.json``, which also holds the remembered
permission rules and the ``mcpServers`` map), then the defaults. The home (sessions,
tool-output cache, config file) is ``%config Codelia.home``, else ``$JUPYTER_CODELIA_HOME``,
else ``<jupyter data dir>/codelia``; the config file cannot move it because it lives there.
API keys are the providers' usual environment variables (``ANTHROPIC_API_KEY``,
``OPENAI_API_KEY``, ``OPENROUTER_API_KEY``) and are never stored or shown by us. ``model`` may
name its provider: ``ollama:qwen3-coder`` is ``provider="ollama"``, ``model="qwen3-coder"``.

This module is imported by ``%load_ext``: it uses only traitlets and the standard library.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from traitlets import Bool, Enum, Float, Integer, Unicode, Union
from traitlets.config import Configurable

from .._approval import APPROVAL_MODES
from ..errors import CodeliaError
from .ui.renderers import text_table

ENV_PREFIX = "JUPYTER_CODELIA_"
DEFAULT_MODEL = (
    "claude-sonnet-5-5"  # the provider's default (llm/anthropic/chat.py), kept import-free
)
# The providers ``Codelia.provider`` accepts (llm/openai/chat.py KNOWN_ENDPOINTS holds their default
# endpoints; listed here so this module stays import-free).
PROVIDERS = ("anthropic", "openai", "ollama", "vllm", "lmstudio", "llamacpp", "openrouter")
LOCAL_PROVIDERS = frozenset({"ollama", "vllm", "lmstudio", "llamacpp"})
PROVIDER_KEY_ENV = {"openai": "OPENAI_API_KEY", "openrouter": "OPENROUTER_API_KEY"}
OPENAI_DEFAULT_MODEL = "gpt-5.1"  # llm/openai/chat.py DEFAULT_MODEL, kept import-free
THINKING_MODES = ("off", "adaptive")
ThinkingSetting = Literal["off", "adaptive"] | int | None
MIN_THINKING_BUDGET = 1024  # Anthropic's minimum (llm/anthropic/chat.py), kept import-free
API_KEY_ENV = "ANTHROPIC_API_KEY"
API_KEY_HELP = (
    "No Anthropic API key is configured, so codelia cannot talk to Claude.\n"
    "Set one, then run the cell again:\n"
    "  - in the shell that starts Jupyter:  export ANTHROPIC_API_KEY=sk-ant-...\n"
    "  - or in this notebook:  import os; os.environ['ANTHROPIC_API_KEY'] = 'sk-ant-...'\n"
    "    (getpass.getpass() keeps it out of the notebook file)\n"
    "Keys come from https://console.anthropic.com/. ANTHROPIC_BASE_URL selects another endpoint.\n"
    "Other models: OpenAI (OPENAI_API_KEY and %config Codelia.model = 'openai:gpt-5.1'), "
    "OpenRouter (OPENROUTER_API_KEY and %config Codelia.provider = 'openrouter'), or a local "
    "Ollama, no key needed (%config Codelia.model = 'ollama:qwen3-coder').\n"
    "Without a key, try the offline demo on a scripted server:  %codelia --demo"
)


class ConfigError(CodeliaError, ValueError):
    """A configuration value or file cannot be used; the message says where and how to fix it."""


class Codelia(Configurable):
    """``%config Codelia.<name> = value`` settings (None means: not set here)."""

    model = Unicode(
        None, allow_none=True, help="Model id, optionally provider-prefixed (ollama:qwen3-coder)."
    ).tag(config=True)
    provider = Enum(
        PROVIDERS, None, allow_none=True, help="Model provider (anthropic, openai, ollama, ...)."
    ).tag(config=True)
    base_url = Unicode(None, allow_none=True, help="Endpoint of an OpenAI-compatible server.").tag(
        config=True
    )
    approval_mode = Enum(
        APPROVAL_MODES, None, allow_none=True, help="Which tool calls ask for approval."
    ).tag(config=True)
    max_iterations = Integer(None, allow_none=True, help="Model calls per turn.").tag(config=True)
    background = Bool(
        None, allow_none=True, help="Run turns in the background (live Stop and approval buttons)."
    ).tag(config=True)
    python_timeout = Float(
        None, allow_none=True, help="Default timeout of the python tool in seconds."
    ).tag(config=True)
    python_timeout_to_job = Bool(
        None,
        allow_none=True,
        help="A python call outliving its timeout becomes a background job (False: stop it).",
    ).tag(config=True)
    max_tokens = Integer(
        None,
        allow_none=True,
        help="Max output tokens per model call (default: the model's limit, at most 32000).",
    ).tag(config=True)
    thinking = Union(
        [Enum(THINKING_MODES), Integer()],
        default_value=None,
        allow_none=True,
        help="'off', 'adaptive' or a thinking budget in tokens (default: the model's own).",
    ).tag(config=True)
    max_cost_per_run = Float(
        None, allow_none=True, help="Budget: USD one run may spend (then it ends with a summary)."
    ).tag(config=True)
    max_tokens_per_run = Integer(
        None, allow_none=True, help="Budget: tokens (input + output) one run may use."
    ).tag(config=True)
    max_tool_calls_per_run = Integer(
        None, allow_none=True, help="Budget: tool calls one run may make."
    ).tag(config=True)
    max_seconds_per_run = Float(
        None, allow_none=True, help="Budget: wall-clock seconds one run may take."
    ).tag(config=True)
    max_cost_per_session = Float(
        None, allow_none=True, help="Budget: USD the session may spend."
    ).tag(config=True)
    max_tokens_per_session = Integer(
        None, allow_none=True, help="Budget: tokens the session may use."
    ).tag(config=True)
    max_tool_calls_per_session = Integer(
        None, allow_none=True, help="Budget: tool calls the session may make."
    ).tag(config=True)
    max_seconds_per_session = Float(
        None, allow_none=True, help="Budget: wall-clock seconds of the session's runs."
    ).tag(config=True)
    root = Unicode(
        None, allow_none=True, help="Directory the file tools may touch (default: cwd)."
    ).tag(config=True)
    system_prompt = Unicode(
        None, allow_none=True, help="Extra instructions appended to the system prompt."
    ).tag(config=True)
    home = Unicode(
        None,
        allow_none=True,
        help=(
            "Directory of the session store, the tool-output cache and config.json (default: "
            "$JUPYTER_CODELIA_HOME, else <jupyter data dir>/codelia). Several kernels, also on "
            "different hosts, may share one."
        ),
    ).tag(config=True)


@dataclass(frozen=True)
class _Field:
    name: str
    kind: type
    default: Any


FIELDS: tuple[_Field, ...] = (
    _Field("model", str, DEFAULT_MODEL),
    _Field("provider", str, "anthropic"),
    _Field("base_url", str, None),
    _Field("approval_mode", str, "minimal"),
    _Field("max_iterations", int, 200),
    _Field("background", bool, False),
    _Field("python_timeout", float, 120.0),
    _Field("python_timeout_to_job", bool, True),
    _Field("max_tokens", int, None),
    _Field("thinking", str, None),
    _Field("max_cost_per_run", float, None),
    _Field("max_tokens_per_run", int, None),
    _Field("max_tool_calls_per_run", int, None),
    _Field("max_seconds_per_run", float, None),
    _Field("max_cost_per_session", float, None),
    _Field("max_tokens_per_session", int, None),
    _Field("max_tool_calls_per_session", int, None),
    _Field("max_seconds_per_session", float, None),
    _Field("root", str, None),
    _Field("system_prompt", str, None),
)
FIELD_NAMES = tuple(f.name for f in FIELDS)
BUDGET_MEASURES = {"cost": "max_cost_usd", "tokens": "max_tokens", "tool_calls": "max_tool_calls",
                   "seconds": "max_wall_seconds"}  # fmt: skip
"""Setting ``max_<measure>_per_<scope>`` -> the agent's ``BudgetLimits`` field."""
BUDGET_FIELDS = tuple(f"max_{m}_per_{s}" for s in ("run", "session") for m in BUDGET_MEASURES)


def budget_limits(settings: Settings, scope: str) -> dict[str, float]:
    """The set budget limits of ``scope`` ("run" or "session") as ``BudgetLimits`` fields."""
    limits: dict[str, float] = {}
    for measure, field_name in BUDGET_MEASURES.items():
        value = getattr(settings, f"max_{measure}_per_{scope}")
        if value is not None:
            limits[field_name] = value
    return limits


@dataclass
class Settings:
    """The resolved configuration and, per field, where its value came from."""

    model: str = DEFAULT_MODEL
    provider: str = "anthropic"
    base_url: str | None = None
    approval_mode: str = "minimal"
    max_iterations: int = 200
    background: bool = False
    python_timeout: float = 120.0
    python_timeout_to_job: bool = True
    max_tokens: int | None = None
    thinking: ThinkingSetting = None
    max_cost_per_run: float | None = None
    max_tokens_per_run: int | None = None
    max_tool_calls_per_run: int | None = None
    max_seconds_per_run: float | None = None
    max_cost_per_session: float | None = None
    max_tokens_per_session: int | None = None
    max_tool_calls_per_session: int | None = None
    max_seconds_per_session: float | None = None
    root: str | None = None
    system_prompt: str | None = None
    home: Path = field(default_factory=lambda: _default_home())
    config_path: Path | None = None
    sources: dict[str, str] = field(default_factory=dict)

    def with_overrides(self, **values: Any) -> Settings:
        """A copy with per-call values (magic options) applied and validated."""
        data = {f.name: getattr(self, f.name) for f in FIELDS}
        sources = dict(self.sources)
        for name, value in values.items():
            if value is None:
                continue
            data[name] = _validate(name, value, "option")
            sources[name] = "magic option"
        _split_model_shorthand(data, sources)
        if values.get("model") is not None or values.get("provider") is not None:
            _check_model(data, sources, "option")
        return Settings(**data, home=self.home, config_path=self.config_path, sources=sources)


def _default_home() -> Path:
    from ..session import default_home

    return default_home()


def resolve_home(
    traits: Codelia | None = None, environ: dict[str, str] | None = None
) -> tuple[Path, str]:
    """The home directory and where it was chosen (``%config Codelia.home`` or the environment).

    Raises ConfigError when the configured path exists but is not a directory.
    """
    from ..session import HOME_ENV

    configured = getattr(traits, "home", None) if traits is not None else None
    if configured is not None:
        if not configured.strip():
            raise ConfigError(
                "%config Codelia.home must be a directory path; to use the default, "
                "run %config Codelia.home = None"
            )
        home, source = Path(configured.strip()).expanduser(), "%config Codelia.home"
    elif (os.environ if environ is None else environ).get(HOME_ENV, "").strip():
        env = os.environ if environ is None else environ
        home, source = Path(env[HOME_ENV].strip()).expanduser(), f"${HOME_ENV}"
    else:
        # default_home() still honours the process environment when ``environ`` omits it.
        home = _default_home()
        source = f"${HOME_ENV}" if os.environ.get(HOME_ENV, "").strip() else "default"
    if home.exists() and not home.is_dir():
        raise ConfigError(
            f"{source}: the codelia home {home} exists but is not a directory; "
            "point it at a directory (it is created if missing)"
        )
    return home, source


def tool_output_dir(home: Path) -> Path:
    """The tool-output cache inside a codelia home."""
    return home / "cache" / "tool-output"


def config_path(home: Path | None = None) -> Path:
    explicit = os.environ.get(ENV_PREFIX + "CONFIG")
    if explicit:
        return Path(explicit).expanduser()
    return (home if home is not None else _default_home()) / "config.json"


def api_key_env(provider: str = "anthropic") -> str | None:
    """The environment variable ``provider``'s key is read from; None for a local server."""
    if provider in LOCAL_PROVIDERS:
        return None
    return PROVIDER_KEY_ENV.get(provider, API_KEY_ENV)


def api_key_configured(environ: dict[str, str] | None = None, provider: str = "anthropic") -> bool:
    """Whether ``provider`` has its key (local servers need none)."""
    env = os.environ if environ is None else environ
    name = api_key_env(provider)
    if name is None:
        return True
    if name != API_KEY_ENV:
        return bool(env.get(name, "").strip())
    return bool(env.get(API_KEY_ENV, "").strip() or env.get("ANTHROPIC_AUTH_TOKEN", "").strip())


def api_key_help(provider: str = "anthropic") -> str:
    """What to do when ``provider``'s key is missing (names the variable, never a value)."""
    if provider not in PROVIDER_KEY_ENV:
        return API_KEY_HELP
    name = PROVIDER_KEY_ENV[provider]
    return (
        f"No {provider} API key is configured (provider {provider!r}).\n"
        "Set one, then run the cell again:\n"
        f"  - in the shell that starts Jupyter:  export {name}=...\n"
        f"  - or in this notebook:  import os, getpass; os.environ[{name!r}] = getpass.getpass()\n"
        "Or pick another provider: %config Codelia.provider = 'anthropic' (or a local server "
        "such as 'ollama')."
    )


def _split_model_shorthand(values: dict[str, Any], sources: dict[str, str]) -> None:
    """``ollama:qwen3-coder`` → provider ``ollama``, model ``qwen3-coder`` (in place)."""
    prefix, colon, rest = str(values.get("model") or "").partition(":")
    if colon and prefix in PROVIDERS and rest.strip():
        values["provider"], values["model"] = prefix, rest
        sources["provider"] = sources.get("model", "?") + " (model prefix)"


def _validate_thinking(value: Any, where: str) -> ThinkingSetting:
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, str) and value.strip().lower() == "off":
        return "off"
    if isinstance(value, str) and value.strip().lower() == "adaptive":
        return "adaptive"
    if isinstance(value, int) and not isinstance(value, bool) and value >= MIN_THINKING_BUDGET:
        return value
    raise ConfigError(
        f"{where}: thinking must be 'off', 'adaptive' or a budget of at least "
        f"{MIN_THINKING_BUDGET} tokens, got {value!r}."
    )


def unknown_model_message(model: str) -> str | None:
    """Why ``model`` cannot be used, listing the known ids; None for a known model."""
    from ..llm.anthropic.models import is_known_model, known_models

    if is_known_model(model):
        return None
    return (
        f"unknown model {model!r}. Known models: {', '.join(known_models())} "
        "(dated snapshots such as claude-haiku-4-5-20251001 work too)."
    )


def model_problem(model: str, provider: str = "anthropic") -> str | None:
    """Why ``model`` cannot be used with ``provider`` (a ``provider:`` prefix wins); None if it
    can. Only Claude models are checked against a list: other services host open-ended sets."""
    prefix, colon, rest = model.partition(":")
    if colon and prefix in PROVIDERS:
        provider, model = prefix, rest
    return unknown_model_message(model) if provider == "anthropic" else None


def _check_model(values: dict[str, Any], sources: dict[str, str], where: str) -> None:
    """After the provider is known: an unknown Claude model, or no model for a provider whose
    models we cannot guess, is refused before any run (``where`` names the setting)."""
    provider = values.get("provider", "anthropic")
    if provider != "anthropic" and sources.get("model") == "default":
        if provider == "openai":
            values["model"] = OPENAI_DEFAULT_MODEL
            return
        raise ConfigError(
            f"provider {provider!r} needs a model: %config Codelia.model = '...' "
            f"(or per cell: %%codelia --model {provider}:MODEL)."
        )
    problem = model_problem(values["model"], provider)
    if problem is not None:
        raise ConfigError(f"{where}: {problem}")


def _validate(name: str, value: Any, where: str) -> Any:
    spec = next((f for f in FIELDS if f.name == name), None)
    if spec is None:
        raise ConfigError(f"{where}: unknown setting {name!r}; known: {', '.join(FIELD_NAMES)}.")
    if name == "thinking":
        return _validate_thinking(value, where)
    if spec.kind is bool:
        if isinstance(value, str):
            lowered = value.strip().lower()
            if lowered in ("1", "true", "yes", "on"):
                value = True
            elif lowered in ("0", "false", "no", "off"):
                value = False
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: {name} must be true or false, got {value!r}.")
    elif spec.kind in (int, float):
        try:
            number = spec.kind(value)
        except (TypeError, ValueError):
            raise ConfigError(f"{where}: {name} must be a number, got {value!r}.") from None
        if isinstance(value, bool) or number <= 0:
            raise ConfigError(f"{where}: {name} must be a positive number, got {value!r}.")
        value = number
    else:
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(f"{where}: {name} must be a non-empty string, got {value!r}.")
    if name == "provider" and value not in PROVIDERS:
        raise ConfigError(
            f"{where}: provider must be one of {', '.join(PROVIDERS)}, got {value!r}."
        )
    if name == "base_url" and not value.startswith(("http://", "https://")):
        raise ConfigError(f"{where}: base_url must start with http:// or https://, got {value!r}.")
    if name == "model":
        return value.strip()  # checked against its provider by _check_model
    if name == "approval_mode" and value not in APPROVAL_MODES:
        raise ConfigError(
            f"{where}: approval_mode must be one of {', '.join(APPROVAL_MODES)}, got {value!r}."
        )
    return value


def read_config_file(path: Path) -> dict[str, Any]:
    """The settings in ``path`` (missing file: none); the ``permissions`` key is left to policy."""
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"Cannot read the codelia config file {path}: {exc}") from None
    except ValueError as exc:
        raise ConfigError(
            f"The codelia config file {path} is not valid JSON ({exc}). Fix or delete it."
        ) from None
    if not isinstance(data, dict):
        raise ConfigError(f"The codelia config file {path} must hold a JSON object.")
    settings = {k: v for k, v in data.items() if k not in _OTHER_FILE_KEYS}
    for key in settings:
        if key not in FIELD_NAMES:
            raise ConfigError(
                f"The codelia config file {path} has an unknown key {key!r}; "
                f"known keys: {', '.join((*FIELD_NAMES, *_OTHER_FILE_KEYS))}. "
                "(API keys are read from ANTHROPIC_API_KEY, OPENAI_API_KEY and the like, "
                "never from this file.)"
            )
    return settings


_OTHER_FILE_KEYS = ("permissions", "mcpServers")


def read_mcp_servers(path: Path) -> Any:
    """The raw ``mcpServers`` map of the config file (validated by standard_tools.mcp)."""
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}  # read_config_file reports these problems with the file's name
    return data.get("mcpServers", {}) if isinstance(data, dict) else {}


def resolve_settings(
    traits: Codelia | None = None, environ: dict[str, str] | None = None
) -> Settings:
    """Merge %config traits > environment > config file > defaults, validating each value."""
    env = dict(os.environ if environ is None else environ)
    home, home_source = resolve_home(traits, env)
    path = config_path(home)
    from_file = read_config_file(path)
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for spec in FIELDS:
        trait_value = getattr(traits, spec.name) if traits is not None else None
        env_name = ENV_PREFIX + spec.name.upper()
        if trait_value is not None:
            where = f"%config Codelia.{spec.name}"
            values[spec.name] = _validate(spec.name, trait_value, where)
            sources[spec.name] = where
        elif env.get(env_name, "").strip():
            values[spec.name] = _validate(spec.name, env[env_name], f"${env_name}")
            sources[spec.name] = f"${env_name}"
        elif spec.name in from_file:
            values[spec.name] = _validate(spec.name, from_file[spec.name], f"config file {path}")
            sources[spec.name] = f"config file {path}"
        else:
            values[spec.name] = spec.default
            sources[spec.name] = "default"
    _split_model_shorthand(values, sources)
    _check_model(values, sources, sources["model"])
    sources["home"] = home_source
    return Settings(**values, home=home, config_path=path, sources=sources)


def describe_settings(settings: Settings) -> str:
    """The ``%codelia config`` table: value and source of every setting (never secrets)."""
    rows: list[tuple[str, str, str]] = []
    for spec in FIELDS:
        value = getattr(settings, spec.name)
        if value is None and spec.name in BUDGET_FIELDS:
            continue  # an unset budget: listed only when set, to keep the table short
        rows.append((spec.name, repr(value), settings.sources.get(spec.name, "?")))
    provider = settings.provider
    if provider in LOCAL_PROVIDERS:
        rows.append(("api key", "not needed", "local server"))
    else:
        configured = api_key_configured(provider=provider)
        key_state = "set" if configured else "NOT SET - see %codelia help"
        rows.append(("api key", key_state, f"${PROVIDER_KEY_ENV.get(provider, API_KEY_ENV)}"))
    if provider == "anthropic":
        base_url = os.environ.get("ANTHROPIC_BASE_URL")
        rows.append(("base url", base_url or "Anthropic default", "$ANTHROPIC_BASE_URL"))
    rows.append(("config file", str(settings.config_path), ""))
    rows.append(("home", str(settings.home), settings.sources.get("home", "default")))
    # Aligned whatever the values' lengths (a long path no longer shifts the next column).
    return text_table(("setting", "value", "from"), rows, wide=200)
