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

:class:`Settings` declares every setting once; the traitlets class, the resolvers, the magic's
options and ``%codelia config`` read it. This module is imported by ``%load_ext`` (pydantic is
loaded by then) and imports nothing of the agent's.
"""

from __future__ import annotations

import json
import os
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field
from traitlets import Bool, Enum, Float, Integer, Unicode, Union
from traitlets.config import Configurable

from .._approval import ApprovalMode
from ..errors import CodeliaError
from .ui.renderers import text_table

ENV_PREFIX = "JUPYTER_CODELIA_"
DEFAULT_MODEL = (
    "claude-sonnet-5-5"  # the provider's default (llm/anthropic/chat.py), kept import-free
)
# The providers ``Codelia.provider`` accepts (llm/openai/chat.py KNOWN_ENDPOINTS holds their default
# endpoints; listed here so this module stays import-free).
Provider = Literal["anthropic", "openai", "ollama", "vllm", "lmstudio", "llamacpp", "openrouter"]
PROVIDERS: tuple[Provider, ...] = get_args(Provider)
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


@dataclass(frozen=True)
class Setting:
    """What a :class:`Settings` field is besides its type and default (its ``Annotated`` mark).

    ``help`` is the trait's help; ``option`` the ``%%codelia`` option that sets it for one turn
    (``example`` its sample value in messages); ``per_run`` says it is applied to each run, so
    a change needs no new agent; ``home`` marks the one setting resolved before the config file,
    which lives in it.
    """

    help: str
    option: str | None = None
    option_help: str | None = None
    """What the option does in ``%codelia help`` (default: the values a choice allows)."""
    metavar: str = "N"
    example: str | None = None
    per_run: bool = False
    home: bool = False


class Settings(BaseModel):
    """The configuration, the one declaration of every setting: the ``Codelia`` traitlets, the
    environment variables, the config file's keys, the ``%%codelia`` options, ``%codelia
    config`` / ``help`` and the agent's build key are all derived from these fields.

    A resolved instance also says, per field, where its value came from (``sources``).
    """

    model_config = ConfigDict(validate_assignment=False, extra="forbid")

    model: Annotated[
        str,
        Setting(
            "Model id, optionally provider-prefixed (ollama:qwen3-coder).",
            option="--model",
            option_help="model for this turn (claude-sonnet-5-5, openai:gpt-5.1, "
            "ollama:qwen3-coder, vllm:..., lmstudio:..., openrouter:...)",
            metavar="MODEL",
            example="claude-sonnet-5-5",
        ),
    ] = DEFAULT_MODEL
    provider: Annotated[Provider, Setting("Model provider (anthropic, openai, ollama, ...).")] = (
        "anthropic"
    )
    base_url: Annotated[str | None, Setting("Endpoint of an OpenAI-compatible server.")] = None
    approval_mode: Annotated[
        ApprovalMode,
        Setting(
            "Which tool calls ask for approval.",
            option="--approval-mode",
            metavar="MODE",
            example="trusted",
        ),
    ] = "minimal"
    max_iterations: Annotated[
        int,
        Setting(
            "Model calls per turn.",
            option="--max-iterations",
            option_help="model calls allowed in this turn",
            example="20",
        ),
    ] = 200
    background: Annotated[
        bool,
        Setting("Run turns in the background (live Stop and approval buttons).", per_run=True),
    ] = False
    python_timeout: Annotated[float, Setting("Default timeout of the python tool in seconds.")] = (
        120.0
    )
    python_timeout_to_job: Annotated[
        bool,
        Setting("A python call outliving its timeout becomes a background job (False: stop it)."),
    ] = True
    max_tokens: Annotated[
        int | None,
        Setting("Max output tokens per model call (default: the model's limit, at most 32000)."),
    ] = None
    thinking: Annotated[
        ThinkingSetting,
        Setting("'off', 'adaptive' or a thinking budget in tokens (default: the model's own)."),
    ] = None
    max_cost_per_run: Annotated[
        float | None,
        Setting(
            "Budget: USD one run may spend (then it ends with a summary).",
            option="--max-cost",
            option_help="budget of this turn in US dollars (e.g. 0.2); reaching it ends the "
            "turn with a summary, never in the middle of a tool",
            metavar="USD",
            example="0.2",
            per_run=True,
        ),
    ] = None
    max_tokens_per_run: Annotated[
        int | None,
        Setting(
            "Budget: tokens (input + output) one run may use.",
            option="--max-run-tokens",
            option_help="budget of this turn in tokens (input + output)",
            example="200000",
            per_run=True,
        ),
    ] = None
    max_tool_calls_per_run: Annotated[
        int | None,
        Setting(
            "Budget: tool calls one run may make.",
            option="--max-tool-calls",
            option_help="budget of this turn in tool calls",
            example="10",
            per_run=True,
        ),
    ] = None
    max_seconds_per_run: Annotated[
        float | None,
        Setting(
            "Budget: wall-clock seconds one run may take.",
            option="--max-seconds",
            option_help="budget of this turn in wall-clock seconds",
            metavar="S",
            example="300",
            per_run=True,
        ),
    ] = None
    max_cost_per_session: Annotated[
        float | None, Setting("Budget: USD the session may spend.", per_run=True)
    ] = None
    max_tokens_per_session: Annotated[
        int | None, Setting("Budget: tokens the session may use.", per_run=True)
    ] = None
    max_tool_calls_per_session: Annotated[
        int | None, Setting("Budget: tool calls the session may make.", per_run=True)
    ] = None
    max_seconds_per_session: Annotated[
        float | None, Setting("Budget: wall-clock seconds of the session's runs.", per_run=True)
    ] = None
    root: Annotated[str | None, Setting("Directory the file tools may touch (default: cwd).")] = (
        None
    )
    system_prompt: Annotated[
        str | None, Setting("Extra instructions appended to the system prompt.")
    ] = None
    home: Annotated[
        Path,
        Setting(
            "Directory of the session store, the tool-output cache and config.json (default: "
            "$JUPYTER_CODELIA_HOME, else <jupyter data dir>/codelia). Several kernels, also on "
            "different hosts, may share one.",
            home=True,
        ),
    ] = Field(default_factory=lambda: _default_home())
    config_path: Path | None = None
    sources: dict[str, str] = Field(default_factory=dict)

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

    def agent_key(self) -> tuple[Any, ...]:
        """What an agent is built from: a change in any of it means a new agent (the settings
        applied per run, such as the budgets, are left out)."""
        return tuple(getattr(self, f.name) for f in ALL_FIELDS if not f.setting.per_run)


@dataclass(frozen=True)
class _Field:
    """One setting as the resolvers see it: its name, its kind and its declaration."""

    name: str
    kind: Any
    """``bool``, ``int``, ``float``, ``str``, ``Path``, or the allowed values of a Literal."""
    default: Any
    setting: Setting


def _field_of(name: str, info: Any) -> _Field:
    setting = next(m for m in info.metadata if isinstance(m, Setting))
    annotation = info.annotation
    kind: Any
    if name == "thinking":
        kind = "thinking"  # a choice or a number of tokens: checked by _validate_thinking
    elif get_origin(annotation) is Literal:
        kind = get_args(annotation)
    else:  # X or X | None
        kind = next((a for a in get_args(annotation) if a is not type(None)), annotation)
    default = None if info.default_factory is not None else info.default
    return _Field(name, kind, default, setting)


ALL_FIELDS: tuple[_Field, ...] = tuple(
    _field_of(name, info)
    for name, info in Settings.model_fields.items()
    if any(isinstance(m, Setting) for m in info.metadata)
)
FIELDS: tuple[_Field, ...] = tuple(f for f in ALL_FIELDS if not f.setting.home)
"""The settings resolved from traits, environment, file and defaults (all but ``home``)."""
FIELD_NAMES = tuple(f.name for f in FIELDS)
OPTIONS: dict[str, _Field] = {f.setting.option: f for f in FIELDS if f.setting.option}
"""The ``%%codelia`` options that set a setting for one turn, by option name."""


def _trait(spec: _Field) -> Any:
    """The ``%config Codelia.<name>`` trait of a setting (None: not set there)."""
    kind, help_text = spec.kind, spec.setting.help
    trait: Any
    if kind == "thinking":
        trait = Union(
            [Enum(THINKING_MODES), Integer()], default_value=None, allow_none=True, help=help_text
        )
    elif isinstance(kind, tuple):
        trait = Enum(kind, None, allow_none=True, help=help_text)
    else:
        make = {bool: Bool, int: Integer, float: Float}.get(kind, Unicode)
        trait = make(None, allow_none=True, help=help_text)
    return trait.tag(config=True)


Codelia: type[Configurable] = types.new_class(
    "Codelia",
    (Configurable,),
    exec_body=lambda namespace: namespace.update(
        {
            "__doc__": "``%config Codelia.<name> = value`` settings (None means: not set here).",
            "__module__": __name__,
            **{spec.name: _trait(spec) for spec in ALL_FIELDS},
        }
    ),
)


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


def _default_home() -> Path:
    from ..session import default_home

    return default_home()


def resolve_home(
    traits: Configurable | None = None, environ: dict[str, str] | None = None
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
    """``value`` for setting ``name`` as its declaration wants it (``where`` names its source);
    strings from the environment become booleans and numbers."""
    spec = next((f for f in FIELDS if f.name == name), None)
    if spec is None:
        raise ConfigError(f"{where}: unknown setting {name!r}; known: {', '.join(FIELD_NAMES)}.")
    if spec.kind == "thinking":
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
    elif not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{where}: {name} must be a non-empty string, got {value!r}.")
    if isinstance(spec.kind, tuple) and value not in spec.kind:
        raise ConfigError(f"{where}: {name} must be one of {', '.join(spec.kind)}, got {value!r}.")
    if name == "base_url" and not value.startswith(("http://", "https://")):
        raise ConfigError(f"{where}: base_url must start with http:// or https://, got {value!r}.")
    if name == "model":
        return value.strip()  # checked against its provider by _check_model
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
    traits: Configurable | None = None, environ: dict[str, str] | None = None
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
