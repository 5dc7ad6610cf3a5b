"""The ``%codelia`` / ``%%codelia`` magics: option parsing, subcommands and running turns.

``%load_ext jupyter_codelia`` calls :func:`register`, which only defines the magics, the
``Codelia`` configurable and the ``codelia`` comm target, then starts loading the agent, the SDK
and the widgets on a background thread (``_warmup``) so the first run does not pay for them.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class

from .._approval import ApprovalMode
from .config import (
    BUDGET_FIELDS,
    FIELD_NAMES,
    OPTIONS,
    ConfigError,
    api_key_configured,
    api_key_help,
    model_problem,
)

if TYPE_CHECKING:
    from .extension import KernelExtension
    from .run.runner import NotebookAgent

SUBCOMMANDS = (
    *("help", "sessions", "todos", "cache", "config", "provenance"),
    *("stop", "compact", "undo", "jobs", "mcp"),
)


def _option_lines() -> str:
    """The options of one turn: the settings' options (from ``Settings``) among the flags."""
    rows = [
        ("--new", "start a new session"),
        ("--resume SESSION_ID", "continue a saved session (see %codelia sessions)"),
    ]
    for option, spec in OPTIONS.items():
        text = spec.setting.option_help
        if text is None:
            text = " | ".join(spec.kind) if isinstance(spec.kind, tuple) else spec.setting.help
        rows.append((f"{option} {spec.setting.metavar}", text))
    rows += [
        ("--background", "run in the background: the cell returns a handle at once and the "
         "panel's Stop / Allow / Deny buttons work"),
        ("--blocking", "keep the cell busy until the turn ends (the default); the panel's "
         "Stop / Allow / Deny work in JupyterLab and Notebook 7, the kernel interrupt (■) "
         "everywhere, and approvals are asked at the input prompt"),
        ("--demo", "offline demo on a scripted server (no API key, not Claude)"),
    ]  # fmt: skip
    lines = []
    for name, text in rows:
        wrapped = textwrap.wrap(text, width=70) or [""]
        lines.append(f"  {name:<21}  {wrapped[0]}")
        lines.extend(f"  {'':<21}  {more}" for more in wrapped[1:])
    return "\n".join(lines)


_CONFIGURED = ", ".join(name for name in FIELD_NAMES if name not in BUDGET_FIELDS)

USAGE = f"""\
%%codelia [options]          the cell body is the prompt; runs one turn of the notebook's session
%codelia [options] <prompt>  the same on one line

Options:
{_option_lines()}

Subcommands:
  %codelia sessions      list saved sessions
  %codelia todos         show the session's todo list
  %codelia cache         browse cached tool outputs
  %codelia config        show the configuration and where each value comes from
  %codelia provenance    list the notebook's cells the agent inserted or edited
  %codelia stop          stop the active background run
  %codelia mcp           list MCP servers, their state and tools
  %codelia mcp add NAME [--env K=V] [--timeout S] -- command args...
                                             add a stdio MCP server (this kernel)
  %codelia mcp add NAME [--header 'K: V'] [--sse] --url URL
                                             add a streamable-HTTP (or SSE) MCP server
  %codelia mcp prompt SERVER NAME [k=v ...]   run a server's prompt as a turn
  %codelia mcp logout NAME                   forget an MCP server's OAuth sign-in
  %codelia compact       summarise the conversation now, so the next turn starts small
  %codelia undo [ID]     undo what the last run (or one python call / run ID) did to your
                         variables; says exactly what was restored and what could not be
  %codelia jobs          list background jobs; %codelia jobs stop JOB_ID stops one
  %codelia help          this text

Configure with %config Codelia.<name> = value ({_CONFIGURED}, and the budgets
max_{{cost,tokens,tool_calls,seconds}}_per_{{run,session}}), JUPYTER_CODELIA_<NAME> environment
variables, or <home>/config.json (which may also hold an "mcpServers" map). %config Codelia.home
(or JUPYTER_CODELIA_HOME) moves sessions, cache and config, e.g. to shared storage. API keys:
ANTHROPIC_API_KEY, OPENAI_API_KEY, OPENROUTER_API_KEY.
"""

_VALUE_OPTIONS = {"--resume": "resume", **{option: f.name for option, f in OPTIONS.items()}}
_FLAG_OPTIONS = {"--new": "new", "--background": "background", "--blocking": "blocking",
                 "--demo": "demo"}  # fmt: skip


@dataclass
class MagicOptions:
    new: bool = False
    resume: str | None = None
    model: str | None = None
    approval_mode: ApprovalMode | None = None
    max_iterations: int | None = None
    max_cost_per_run: float | None = None
    max_tool_calls_per_run: int | None = None
    max_seconds_per_run: float | None = None
    max_tokens_per_run: int | None = None
    background: bool = False
    blocking: bool = False
    demo: bool = False
    rest: str = ""
    given: list[str] = field(default_factory=list)


def parse_options(line: str, provider: str = "anthropic") -> MagicOptions:
    """Leading ``--options`` of a magic line; everything after them is the prompt, verbatim.

    The prompt is not shell-split, so apostrophes and quotes in it need no escaping.
    """
    options = MagicOptions()
    text = line.strip()
    while text.startswith("--"):
        token, _, remainder = text.partition(" ")
        remainder = remainder.lstrip()
        name, has_equals, inline_value = token.partition("=")
        if name == "--":
            text = remainder
            break
        if name in _FLAG_OPTIONS:
            if has_equals:
                raise UsageError(f"{name} takes no value.")
            setattr(options, _FLAG_OPTIONS[name], True)
        elif name in _VALUE_OPTIONS:
            if has_equals:
                value = inline_value
            else:
                value, _, remainder = remainder.partition(" ")
                remainder = remainder.lstrip()
            if not value or value.startswith("--"):
                raise UsageError(f"{name} needs a value, e.g. {name} {_example(name)}.")
            setattr(options, _VALUE_OPTIONS[name], _convert(name, value, provider))
        else:
            known = ", ".join([*_FLAG_OPTIONS, *_VALUE_OPTIONS])
            raise UsageError(f"Unknown option {name}. Known options: {known}. See %codelia help.")
        options.given.append(name)
        text = remainder
    if options.new and options.resume:
        raise UsageError("--new and --resume exclude each other: pick one.")
    if options.background and options.blocking:
        raise UsageError("--background and --blocking exclude each other: pick one.")
    options.rest = text
    return options


def _example(name: str) -> str:
    if name == "--resume":
        return "<session id from %codelia sessions>"
    return OPTIONS[name].setting.example or "..."


def _convert(name: str, value: str, provider: str) -> Any:
    """The value of option ``name`` for its setting, checked as the setting is (before a run
    starts, rather than as an HTTP 404 from the API mid-run for a model)."""
    spec = OPTIONS.get(name)
    if spec is None:  # --resume: any id; the store says whether it exists
        return value
    if spec.kind in (int, float):
        try:
            number = spec.kind(value)
        except ValueError:
            noun = "a number" if spec.kind is float else "a whole number"
            raise UsageError(f"{name} needs {noun}, got {value!r}.") from None
        if not number > 0:
            raise UsageError(f"{name} must be greater than 0, got {value}.")
        return number
    if isinstance(spec.kind, tuple) and value not in spec.kind:
        raise UsageError(f"{name} must be one of {', '.join(spec.kind)}, got {value!r}.")
    if spec.name == "model":
        problem = model_problem(value, provider)
        if problem is not None:
            raise UsageError(f"{name}: {problem}")
    return value


@magics_class
class CodeliaMagics(Magics):
    # Any: IPython's Magics wants its own InteractiveShell class, not the KernelShell Protocol.
    def __init__(self, shell: Any, extension: KernelExtension) -> None:
        super().__init__(shell)
        self.extension = extension

    @property
    def notebook_agent(self) -> NotebookAgent:
        return self.extension.agent

    def _configured_provider(self) -> str:
        """The provider ``--model`` is checked against (a broken config is reported later)."""
        try:
            return self.notebook_agent.settings().provider
        except ConfigError:
            return "anthropic"

    @line_cell_magic
    def codelia(self, line: str, cell: str | None = None) -> Any:
        """Run one turn of the notebook's codelia agent; ``%codelia help`` lists the options."""
        from . import _warmup

        words = line.split(maxsplit=1)
        if (cell is not None or not words or words[0] not in SUBCOMMANDS) and _warmup.running():
            # The first run of a Run All: paint now and say what loads, before anything here
            # waits for the warm-up's imports (the options need the configured provider).
            loading = _warmup.Loading()
            loading.show()
            loading.wait()
            try:
                return self._codelia(line, cell, loading.display_id)
            except BaseException:
                loading.clear()
                raise
        return self._codelia(line, cell, None)

    def _codelia(self, line: str, cell: str | None, display_id: str | None) -> Any:
        options = parse_options(line, self._configured_provider())
        first = options.rest.split(maxsplit=1)[0] if options.rest.strip() else ""
        if cell is None and first in SUBCOMMANDS and not options.given:
            argument = options.rest[len(first) :].strip()
            if first != "mcp" or not argument.startswith("prompt"):
                return self._subcommand(first, argument)
            from ._subcommands import mcp_prompt_text

            # A server's prompt, filled in, runs as this cell's turn.
            options.rest = mcp_prompt_text(self.notebook_agent, argument)
        prompt = options.rest
        if cell is not None and cell.strip():
            prompt = f"{prompt}\n{cell}" if prompt.strip() else cell
        prompt = prompt.strip()
        if not prompt and not options.demo:
            raise UsageError(
                "Give a prompt: `%codelia <prompt>` or a `%%codelia` cell whose body is the "
                "prompt. `%codelia help` lists options and subcommands."
            )
        try:
            return self._start(options, prompt, display_id)
        except ConfigError as exc:
            raise UsageError(str(exc)) from None

    def _start(self, options: MagicOptions, prompt: str, display_id: str | None) -> Any:
        """Run the turn; its panel takes the output ``display_id`` shows (when given)."""
        nb = self.notebook_agent
        settings = nb.settings(
            model=options.model,
            approval_mode=options.approval_mode,
            max_iterations=options.max_iterations,
            max_cost_per_run=options.max_cost_per_run,
            max_tool_calls_per_run=options.max_tool_calls_per_run,
            max_seconds_per_run=options.max_seconds_per_run,
            max_tokens_per_run=options.max_tokens_per_run,
        )
        background = settings.background
        if options.background:
            background = True
        if options.blocking:
            background = False
        if options.demo:
            from .demo import run_demo

            return run_demo(
                nb, settings, prompt or None, background=background, display_id=display_id
            )
        if not api_key_configured(provider=settings.provider):
            raise UsageError(api_key_help(settings.provider))
        from ..session import InvalidSessionIdError, SessionNotFound

        try:
            agent = nb.prepare(settings, new_session=options.new, session_id=options.resume)
        except (SessionNotFound, InvalidSessionIdError) as exc:
            raise UsageError(f"{exc}. List saved sessions with %codelia sessions.") from None
        except (RuntimeError, ConfigError) as exc:
            raise UsageError(str(exc)) from None
        except Exception as exc:
            raise UsageError(
                f"Could not start the codelia agent: {type(exc).__name__}: {exc}"
            ) from None
        from .run.in_cell import run_with_panel

        return run_with_panel(
            nb, agent, prompt, settings.model, background=background, display_id=display_id
        )

    def _subcommand(self, name: str, argument: str) -> Any:
        from . import _subcommands

        if name == "help":
            print(USAGE)
            return None
        try:
            return _subcommands.run(self.notebook_agent, name, argument)
        except ConfigError as exc:
            raise UsageError(str(exc)) from None
