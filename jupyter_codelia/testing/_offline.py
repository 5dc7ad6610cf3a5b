"""Offline demos for notebooks: ``offline_demo(script)``, the prompt-keyed ``by_prompt``, ``play``.

A demo notebook calls ``offline_demo(...)`` once near its top. With real credentials
(``ANTHROPIC_API_KEY`` or ``ANTHROPIC_AUTH_TOKEN``) it does nothing and returns None, so the
``%%codelia`` cells below talk to Claude. Without them it starts a
:class:`ScriptedAnthropicServer` on 127.0.0.1, points the kernel's Anthropic SDK at it through
``ANTHROPIC_BASE_URL`` and an obviously fake key, and shows an "OFFLINE DEMO" banner: the
scripted "model" then calls the real tools, so the panel shows real tool cards, plots and diffs.
The notebook ends the demo by itself (:func:`end_demo_if_superseded`) once a real key is set or
another provider is configured, so a real model never runs with the demo's settings.

Scripts are usually a mapping from a *cue* (text the person typed in a cell's prompt) to that
prompt's turns: the server answers from the latest prompt and the number of model calls made
since, so cells may run in any order and re-run, and a prompt no cue matches gets a polite
scripted answer instead of an error. A script reads what its tools really returned
(:func:`last_result`, with the ref id of a cut output) and stops with an honest note when a
call failed or returned something else than it expects, so a demo never claims what did not
happen.
"""

from __future__ import annotations

import html
import json
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..cache.protocol import refs_in
from ..llm.messages import context_kind
from ._script import Fault, Recorded, Reply, ScriptError, ToolUseBlock, parse_turn, reply, text
from ._server import RecordedRequest, Script, ScriptedAnthropicServer

if TYPE_CHECKING:  # the standard tools are not needed at run time here
    from .._approval import ApprovalMode

OFFLINE_API_KEY = "offline-demo-not-a-real-key"
"""The fake key an offline demo puts in ``ANTHROPIC_API_KEY`` (the scripted server wants one)."""

OFFLINE_BANNER = "OFFLINE DEMO — scripted replies, not Claude"

REAL_MODEL_HINT = (
    "To use a real model: set ANTHROPIC_API_KEY for Claude; or OPENAI_API_KEY with "
    "%config Codelia.model = 'openai:gpt-5.1'; or OPENROUTER_API_KEY with "
    "%config Codelia.provider = 'openrouter'; or run a local Ollama and use "
    "%config Codelia.model = 'ollama:qwen3-coder' (no key needed)."
)
"""How to leave the offline demo for a real model, for every provider codelia speaks."""

APPROVAL_MODE_ENV = "JUPYTER_CODELIA_APPROVAL_MODE"

TurnLike = Reply | Fault | Recorded | dict[str, Any]
TurnSource = TurnLike | Callable[[RecordedRequest], TurnLike]
"""A scripted turn, or a function of the request that builds one (e.g. to echo a tool id)."""

_DEMO_VARIABLES = ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", APPROVAL_MODE_ENV)

_lock = threading.Lock()
_running: ScriptedAnthropicServer | None = None
_saved_env: dict[str, str | None] = {}
"""The values the demo replaced, put back once real credentials appear."""


def has_real_credentials(environ: Mapping[str, str] | None = None) -> bool:
    """True when the SDK would reach a real endpoint: a key that is not the demo's fake one."""
    env = os.environ if environ is None else environ
    key = env.get("ANTHROPIC_API_KEY", "").strip()
    token = env.get("ANTHROPIC_AUTH_TOKEN", "").strip()
    return bool(token) or (bool(key) and key != OFFLINE_API_KEY)


def offline_demo(
    script: Mapping[str, Sequence[TurnSource]] | Script,
    *,
    approval_mode: ApprovalMode | None = "full-access",
    banner: bool = True,
) -> ScriptedAnthropicServer | None:
    """Run this notebook's ``%%codelia`` cells on a scripted server when there is no API key.

    ``script``: a mapping ``{cue: [turns]}`` (see :func:`by_prompt`) or anything
    :class:`ScriptedAnthropicServer` accepts (a list of turns, a function of the request).
    ``approval_mode``: set for the demo through ``JUPYTER_CODELIA_APPROVAL_MODE`` (default
    ``full-access``: the scripted tool calls run without prompts, and a headless run cannot
    answer prompts); None leaves the configuration alone. Returns the running server, or None
    when real credentials are set. Calling it again (a re-run cell) replaces the previous demo
    server; calling it once a real key is set stops the demo and restores the variables it
    changed, so the next turn goes to Claude (a ``%%codelia`` run does the same by itself, see
    :func:`end_demo_if_superseded`).
    """
    global _running
    if has_real_credentials():
        end_demo()
        return None
    if isinstance(script, Mapping):
        script = by_prompt(script)
    server = ScriptedAnthropicServer(script)
    with _lock:
        previous, _running = _running, None
        if previous is not None:
            previous.stop()
        else:
            _saved_env.clear()
            _saved_env.update({name: os.environ.get(name) for name in _DEMO_VARIABLES})
        server.start()
        _running = server
    os.environ["ANTHROPIC_BASE_URL"] = server.url
    os.environ["ANTHROPIC_API_KEY"] = OFFLINE_API_KEY
    if approval_mode is not None:
        os.environ[APPROVAL_MODE_ENV] = approval_mode
    if banner:
        _show_banner(server.url, approval_mode)
    return server


def end_demo_if_superseded(provider: str) -> bool:
    """End a running demo when a real model should answer instead: real Anthropic credentials
    were set after it started, or ``provider`` (the configured one) is not Anthropic. Returns
    True when it ended one, so the caller reads its settings again (the approval mode the demo
    set is gone too)."""
    if _running is None or (provider == "anthropic" and not has_real_credentials()):
        return False
    end_demo()
    return True


def end_demo() -> None:
    """Stop a running demo server and put back what it changed (the real key stays)."""
    global _running
    with _lock:
        previous, _running = _running, None
        if previous is None:
            return
        previous.stop()
        for name, value in _saved_env.items():
            if name == "ANTHROPIC_API_KEY" and os.environ.get(name) != OFFLINE_API_KEY:
                continue  # the person's real key
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        _saved_env.clear()


def _show_banner(url: str, approval_mode: str | None) -> None:
    approvals = (
        f" Approval mode for the demo: {approval_mode}."
        if approval_mode is not None
        else " Approvals follow your configuration."
    )
    detail = (
        "No ANTHROPIC_API_KEY is set, so every Anthropic model this notebook asks below is "
        f"a scripted server on {url}. Its tool calls are real (they run here); its words are "
        f"canned.{approvals} {REAL_MODEL_HINT} Then run the cells that ask it again."
    )
    try:
        from IPython import get_ipython
        from IPython.display import HTML, display
    except ImportError:
        get_ipython = None
    if get_ipython is None or get_ipython() is None:  # plain Python: print the banner
        print(f"{OFFLINE_BANNER}\n{detail}")
        return
    display(
        HTML(
            '<div style="border:2px solid #e37400;border-radius:6px;padding:8px 12px;'
            'background:#fff4e5;color:#5f3700">'
            f"<strong>{html.escape(OFFLINE_BANNER)}</strong><br>{html.escape(detail)}</div>"
        )
    )


def by_prompt(
    turns_by_cue: Mapping[str, Sequence[TurnSource]],
    *,
    fallback: str | None = None,
) -> Callable[[RecordedRequest], TurnLike]:
    """A script function answering each prompt from the turns of the first cue it contains.

    The cue is matched case-insensitively against what the person typed in the latest prompt:
    not tool results, and not the context blocks the agent adds to a prompt (the notebook
    outline, news of background jobs). The n-th model call since that prompt plays the n-th
    turn, checked as :func:`play` checks it. Past the last turn, or for a prompt no cue
    matches, the reply is ``fallback`` (default: a note listing the cues).
    """
    if not turns_by_cue:
        raise ScriptError("by_prompt needs at least one cue, e.g. {'plot': [reply(...)]}")
    players: dict[str, _Player] = {}
    for cue, turns in turns_by_cue.items():
        if not isinstance(cue, str) or not cue.strip():
            raise ScriptError(f"by_prompt: every cue must be non-empty text, got {cue!r}")
        players[cue.lower()] = _Player(turns, f"cue {cue!r}")
    cues = ", ".join(repr(c) for c in turns_by_cue)
    note = fallback or (
        "This is the offline demo: I only have scripted answers for this notebook's prompts "
        f"(they mention {cues}). {REAL_MODEL_HINT}"
    )

    def answer(request: RecordedRequest) -> TurnLike:
        prompt, calls_since = latest_prompt(request.messages)
        lowered = prompt.lower()
        for cue, player in players.items():
            if cue in lowered:
                return player.turn(request, calls_since) or reply(text(note))
        return reply(text(note))

    return answer


def play(
    turns: Sequence[TurnSource], *, fallback: str | None = None
) -> Callable[[RecordedRequest], TurnLike]:
    """A script function playing ``turns`` for every prompt: the n-th model call since the
    latest prompt plays the n-th turn.

    Before each turn after the first it reads the results of the previous call: a tool call
    that failed (unless built with ``tool_use(..., may_fail=True)``), or whose result lacks the
    text its ``tool_use(..., expect=...)`` names, ends the turn with a note saying what came back
    instead of the scripted words, so a demo never claims what did not happen.
    """
    player = _Player(turns, "play")
    note = fallback or f"This is the offline demo: its scripted turn is over. {REAL_MODEL_HINT}"

    def answer(request: RecordedRequest) -> TurnLike:
        _, calls_since = latest_prompt(request.messages)
        return player.turn(request, calls_since) or reply(text(note))

    return answer


class _Player:
    """The turns of one scripted prompt, and what their tool calls are expected to return."""

    def __init__(self, turns: Sequence[TurnSource], where: str) -> None:
        if isinstance(turns, (Reply, Fault, Recorded, dict, str)) or not isinstance(
            turns, Sequence
        ):
            raise ScriptError(f"{where}: the turns must be a list, e.g. [reply(...), ...]")
        self.turns: list[TurnSource] = [
            t if callable(t) else parse_turn(t, f"{where}, turn {i + 1}")
            for i, t in enumerate(turns)
        ]
        self.where = where
        self._expected: dict[tuple[str, str], ToolUseBlock] = {}

    def turn(self, request: RecordedRequest, calls_since: int) -> TurnLike | None:
        """The turn for the ``calls_since``-th call since the prompt (None past the end)."""
        if calls_since >= len(self.turns):
            return None
        if calls_since > 0:
            problem = self._unexpected(request)
            if problem is not None:
                return reply(text(problem))
        source = self.turns[calls_since]
        turn = source(request) if callable(source) else source
        parsed = parse_turn(turn, f"{self.where}, turn {calls_since + 1}")
        if isinstance(parsed, Reply):
            for block in parsed.content:
                if isinstance(block, ToolUseBlock) and (block.may_fail or block.expect):
                    self._expected[_call_key(block.name, block.input)] = block
        return parsed

    def _unexpected(self, request: RecordedRequest) -> str | None:
        """What the previous call's tool results say that the script did not expect."""
        for seen in latest_results(request):
            block = self._expected.get(_call_key(seen.name, seen.input))
            if seen.is_error and not (block is not None and block.may_fail):
                return _stop_note(f"`{seen.name}` to succeed", seen.text)
            if block is not None and block.expect and block.expect not in seen.text:
                return _stop_note(f"`{seen.name}` to return {block.expect!r}", seen.text)
        return None


def _call_key(name: str, arguments: Any) -> tuple[str, str]:
    return name, json.dumps(arguments, sort_keys=True, default=str)


def _stop_note(expected: str, got: str) -> str:
    shown = got if len(got) <= 600 else got[:599] + "…"
    return (
        f"**Offline demo:** the script expected {expected}, but it returned:\n\n"
        f"```\n{shown}\n```\n\nSo the scripted answer stops here instead of claiming what did "
        "not happen. Running the notebook from the top (Restart Kernel and Run All) gives the "
        "tools what the script expects."
    )


@dataclass(frozen=True)
class SeenResult:
    """A tool result as the model (or a script playing it) sees it in a request."""

    tool_use_id: str
    name: str
    input: Any
    text: str
    is_error: bool

    @property
    def ref(self) -> str | None:
        """The ref id its cut output names (``[tool output truncated; ref=...]``), read back
        with the ``tool_output_cache*`` tools; None when the whole output is in the context."""
        refs = refs_in(self.text)
        return refs[-1] if refs else None


def latest_results(request: RecordedRequest) -> list[SeenResult]:
    """The results of the request's latest model call (empty when it is a fresh prompt)."""
    results = all_results(request)
    if not results:
        return []
    messages = request.messages
    last = messages[-1] if messages else {}
    fresh = {b.get("tool_use_id") for b in _blocks_of(last) if b.get("type") == "tool_result"}
    return [r for r in results if r.tool_use_id in fresh]


def all_results(request: RecordedRequest) -> list[SeenResult]:
    """Every tool result in the request, oldest first, with the call it answers."""
    calls = {
        block.get("id"): block
        for message in request.messages
        if message.get("role") == "assistant"
        for block in _blocks_of(message)
        if block.get("type") == "tool_use"
    }
    seen: list[SeenResult] = []
    for result in request.tool_results():
        call = calls.get(result["id"]) or {}
        seen.append(
            SeenResult(
                tool_use_id=str(result["id"]),
                name=str(call.get("name", "")),
                input=call.get("input"),
                text=result["text"],
                is_error=bool(result["is_error"]),
            )
        )
    return seen


def last_result(request: RecordedRequest, tool_name: str | None = None) -> SeenResult:
    """The latest tool result in the request (of ``tool_name`` if given).

    For scripts that act on what a tool returned, e.g. read a cut output back by the ref its
    result names (``last_result(request, "python").ref``), or word an answer after it.
    """
    for seen in reversed(all_results(request)):
        if tool_name is None or seen.name == tool_name:
            return seen
    wanted = f" of {tool_name}" if tool_name else ""
    raise ScriptError(f"the request has no earlier tool result{wanted} to refer to")


def _blocks_of(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def latest_prompt(messages: Sequence[Mapping[str, Any]]) -> tuple[str, int]:
    """(what the person typed in the latest prompt, assistant messages after it) of a Messages
    request. Context blocks the agent added to the prompt (one whole text block each, see
    :func:`~jupyter_codelia.llm.messages.context_block`) are not part of it."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            prompt = content
        elif isinstance(content, list):
            if any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
                continue
            prompt = "\n".join(
                str(b.get("text", ""))
                for b in content
                if isinstance(b, dict)
                and b.get("type") == "text"
                and context_kind(str(b.get("text", ""))) is None
            )
        else:
            continue
        after = sum(1 for m in messages[index + 1 :] if m.get("role") == "assistant")
        return prompt, after
    return "", 0
