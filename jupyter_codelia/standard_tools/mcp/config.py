"""The ``mcpServers`` map: validation, other clients' keys, ``${VAR}`` expansion.

People bring the map they already have from Claude Desktop, Cursor, VS Code, Cline, Roo,
Windsurf, Gemini CLI or Claude Code, so each entry is read leniently but never silently:

* keys of our own (``command``, ``args``, ``env``, ``cwd``, ``url``, ``headers``, ``type``,
  ``timeout``, ``startup_timeout``, ``disabled``, ``includeTools``/``excludeTools``) are
  validated;
* keys other clients write are understood where they mean something here (``autoApprove`` /
  ``alwaysAllow`` become allow rules, ``trust`` allows the whole server, ``envFile`` is read,
  ``httpUrl`` / ``serverUrl`` are URLs, Gemini's ``timeout`` in milliseconds is converted,
  ``"type": "sse"`` selects the legacy SSE transport) or ignored with a note;
* anything else (a typo such as ``comand``) makes *that* entry unusable with a message naming
  the key; the other servers and the agent still start.

``${VAR}`` and ``${env:VAR}`` in ``command``, ``args``, ``env``, ``cwd``, ``url`` and
``headers`` are replaced from the kernel's environment (``${VAR:-default}`` gives a default); an
unset variable is a problem of that entry, reported by name.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ...errors import CodeliaError

TOOL_SEPARATOR = "__"
DEFAULT_CALL_TIMEOUT_S = 120.0
DEFAULT_START_TIMEOUT_S = 30.0
# A "timeout" this large is Gemini CLI's milliseconds (its default is 600000); no sane
# per-call timeout in seconds reaches it.
_MILLISECONDS_FROM = 1000.0
_SERVER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")
_VARIABLE = re.compile(r"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")

Transport = Literal["stdio", "http", "sse"]

# Keys other clients write that mean nothing here: ignored, with a note in ``%codelia mcp``.
_IGNORED_KEYS = {
    "description": "a description for the other client's UI",
    "icon": "an icon for the other client's UI",
    "networkTimeout": "Cline's network timeout (the call timeout applies)",
    "transportType": "Cline's transport name (the command or URL decides)",
    "oauth": "Gemini's OAuth settings (OAuth is discovered from the server)",
    "authProviderType": "Gemini's auth provider (OAuth is discovered from the server)",
    "inputs": "VS Code's prompted inputs (use ${VAR} from the environment)",
    "envVars": "an environment list (use env)",
    "gallery": "VS Code's gallery reference",
    "version": "a version pin of the other client",
}


class McpConfigError(CodeliaError, ValueError):
    """An ``mcpServers`` entry cannot be used; the message names the server and the problem."""


class McpServerConfig(BaseModel):
    """One usable ``mcpServers`` entry: a command (stdio), or a URL (streamable HTTP or SSE)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    type: Literal["stdio", "http", "streamable-http", "streamable_http", "sse"] | None = None
    timeout: float = Field(default=DEFAULT_CALL_TIMEOUT_S, gt=0)
    startup_timeout: float = Field(default=DEFAULT_START_TIMEOUT_S, gt=0)
    disabled: bool = False
    include_tools: list[str] | None = None
    exclude_tools: list[str] = Field(default_factory=list)
    auto_approve: list[str] = Field(default_factory=list)
    trust: bool = False

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError('give either "command" (stdio) or "url" (HTTP), not both')
        if self.command is not None and not self.command.strip():
            raise ValueError('"command" must not be empty')
        if self.url is not None and not self.url.startswith(("http://", "https://")):
            raise ValueError(f'"url" must start with http:// or https://, got {self.url!r}')
        if self.type == "sse" and self.url is None:
            raise ValueError('"type": "sse" needs a "url"')
        return self

    @property
    def transport(self) -> Transport:
        if self.command is not None:
            return "stdio"
        return "sse" if self.type == "sse" else "http"

    def describe(self) -> str:
        """Where the server is, without env values or headers (they may hold secrets)."""
        if self.command is not None:
            return " ".join([self.command, *self.args])
        return self.url or ""

    def offers(self, tool: str) -> bool:
        """Whether ``includeTools`` / ``excludeTools`` let ``tool`` through."""
        if tool in self.exclude_tools:
            return False
        return self.include_tools is None or tool in self.include_tools


@dataclass
class ParsedServers:
    """The outcome of reading an ``mcpServers`` map: what can run, and what was said about it."""

    servers: dict[str, McpServerConfig] = field(default_factory=dict)
    problems: dict[str, str] = field(default_factory=dict)
    """Entries that cannot be used (name → message); ``""`` names the map itself."""
    notes: dict[str, list[str]] = field(default_factory=dict)
    """What was converted or ignored in a usable entry (name → notes)."""


def parse_mcp_servers(raw: Any, where: str) -> ParsedServers:
    """Read an ``mcpServers`` map (``where`` names its source in messages); never raises."""
    parsed = ParsedServers()
    if not isinstance(raw, dict):
        parsed.problems[""] = (
            f'{where}: "mcpServers" must be an object mapping names to server settings, '
            f"got {type(raw).__name__}; no MCP server from it is used"
        )
        return parsed
    for name, entry in raw.items():
        try:
            check_server_name(name, where)
            config, notes = _read_entry(entry, Path(where.rpartition(" ")[2]).parent)
        except McpConfigError as exc:
            parsed.problems[str(name)] = f"{where}: MCP server {name!r}: {exc}"
            continue
        parsed.servers[name] = config
        if notes:
            parsed.notes[name] = notes
    return parsed


def parse_one_server(name: str, entry: dict[str, Any], where: str) -> McpServerConfig:
    """One entry (``%codelia mcp add``), raising :class:`McpConfigError` when it is unusable."""
    parsed = parse_mcp_servers({name: entry}, where)
    if name in parsed.problems:
        raise McpConfigError(parsed.problems[name])
    return parsed.servers[name]


def check_server_name(name: Any, where: str) -> None:
    if not isinstance(name, str) or not _SERVER_NAME.match(name) or TOOL_SEPARATOR in name:
        raise McpConfigError(
            f"{where}: MCP server name {name!r} must start with a letter or digit and use only "
            f"letters, digits, '-' and single '_' (tools are named <server>{TOOL_SEPARATOR}<tool>)"
        )


def _read_entry(entry: Any, base: Path) -> tuple[McpServerConfig, list[str]]:
    if not isinstance(entry, dict):
        raise McpConfigError(f"must be an object, got {type(entry).__name__}")
    data = dict(entry)
    notes: list[str] = []
    for key in list(data):
        if key in _IGNORED_KEYS:
            notes.append(f"ignored {key!r} ({_IGNORED_KEYS[key]})")
            del data[key]
    _rename(data, "httpUrl", "url", notes, force_type="http")
    _rename(data, "serverUrl", "url", notes)
    _rename(data, "alwaysAllow", "autoApprove", notes)
    _rename(data, "includeTools", "include_tools", None)
    _rename(data, "excludeTools", "exclude_tools", None)
    _rename(data, "autoApprove", "auto_approve", None)
    _rename(data, "startupTimeout", "startup_timeout", None)
    _rename(data, "startup_timeout_sec", "startup_timeout", None)
    _rename(data, "tool_timeout_sec", "timeout", None)
    if "enabled" in data:
        enabled = data.pop("enabled")
        data.setdefault("disabled", enabled is False)
    timeout = data.get("timeout")
    is_number = isinstance(timeout, (int, float)) and not isinstance(timeout, bool)
    if is_number and isinstance(timeout, (int, float)) and timeout >= _MILLISECONDS_FROM:
        data["timeout"] = timeout / 1000
        notes.append(f'"timeout": {timeout:g} read as milliseconds ({timeout / 1000:g} s)')
    env_file = data.pop("envFile", None)
    try:
        if env_file is not None:
            if not isinstance(env_file, str):
                raise McpConfigError(f'"envFile" must be a path, got {type(env_file).__name__}')
            from_file = _read_env_file(_expand(env_file, "envFile"), base)
            user_env = data.get("env")
            data["env"] = {**from_file, **(user_env if isinstance(user_env, dict) else {})}
        data = _expand_values(data)
        config = McpServerConfig.model_validate(data)
    except ValidationError as exc:
        raise McpConfigError(_problems(exc)) from None
    if config.trust:
        notes.append('"trust": its tools run without asking')
    return config, notes


def _rename(
    data: dict[str, Any], old: str, new: str, notes: list[str] | None, force_type: str = ""
) -> None:
    if old not in data:
        return
    value = data.pop(old)
    if new in data:
        raise McpConfigError(f"give {old!r} or {new!r}, not both")
    data[new] = value
    if force_type:
        data.setdefault("type", force_type)
    if notes is not None:
        notes.append(f"{old!r} read as {new!r}")


def _problems(exc: ValidationError) -> str:
    texts = []
    for err in exc.errors(include_url=False):
        where = ".".join(str(p) for p in err["loc"])
        if err["type"] == "extra_forbidden":
            texts.append(f"unknown key {where!r} (a typo? see the README's MCP keys)")
        else:
            message = err["msg"].removeprefix("Value error, ")  # our validators' own words
            texts.append(f"{where}: {message}" if where else message)
    return "; ".join(texts)


def _expand(text: str, where: str) -> str:
    def value(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        found = os.environ.get(name)
        if found is not None:
            return found
        if default is not None:
            return default
        raise McpConfigError(
            f"{where} uses ${{{name}}}, which is not set in the kernel's environment "
            f"(set it, or write ${{{name}:-default}})"
        )

    return _VARIABLE.sub(value, text)


def _expand_values(data: dict[str, Any]) -> dict[str, Any]:
    out = dict(data)
    for key in ("command", "cwd", "url"):
        if isinstance(out.get(key), str):
            out[key] = _expand(out[key], key)
    if isinstance(out.get("args"), list):
        out["args"] = [
            _expand(a, f"args[{i}]") if isinstance(a, str) else a for i, a in enumerate(out["args"])
        ]
    for key in ("env", "headers"):
        if isinstance(out.get(key), dict):
            out[key] = {
                k: _expand(v, f"{key}.{k}") if isinstance(v, str) else v
                for k, v in out[key].items()
            }
    return out


def _read_env_file(path_text: str, base: Path) -> dict[str, str]:
    """``KEY=VALUE`` lines (``#`` comments, ``export`` and quotes allowed), as dotenv reads them."""
    path = Path(path_text).expanduser()
    if not path.is_absolute():
        path = base / path
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise McpConfigError(f'"envFile" {str(path)!r} cannot be read: {exc.strerror}') from None
    values: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        line = line.removeprefix("export ").strip()
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            raise McpConfigError(f'"envFile" {str(path)!r} line {number} is not KEY=VALUE')
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        values[key.strip()] = value
    return values
