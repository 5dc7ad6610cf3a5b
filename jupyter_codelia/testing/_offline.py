"""Offline demos for notebooks: ``offline_demo(script)`` and the prompt-keyed ``by_prompt``.

A demo notebook calls ``offline_demo(...)`` once near its top. With real credentials
(``ANTHROPIC_API_KEY`` or ``ANTHROPIC_AUTH_TOKEN``) it does nothing and returns None, so the
``%%codelia`` cells below talk to Claude. Without them it starts a
:class:`ScriptedAnthropicServer` on 127.0.0.1, points the kernel's Anthropic SDK at it through
``ANTHROPIC_BASE_URL`` and an obviously fake key, and shows an "OFFLINE DEMO" banner: the
scripted "model" then calls the real tools, so the panel shows real tool cards, plots and diffs.

Scripts are usually a mapping from a *cue* (text found in a cell's prompt) to that prompt's
turns: the server answers from the latest prompt and the number of model calls made since, so
cells may run in any order and re-run, and a prompt no cue matches gets a polite scripted
answer instead of an error.
"""

from __future__ import annotations

import html
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ._script import Fault, Recorded, Reply, ScriptError, parse_turn, reply, text
from ._server import RecordedRequest, Script, ScriptedAnthropicServer

if TYPE_CHECKING:  # the standard tools are not needed at run time here
    from .._approval import ApprovalMode

OFFLINE_API_KEY = "offline-demo-not-a-real-key"
"""The fake key an offline demo puts in ``ANTHROPIC_API_KEY`` (the scripted server wants one)."""

OFFLINE_BANNER = "OFFLINE DEMO — scripted replies, not Claude"

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
    changed, so the next turn goes to Claude.
    """
    global _running
    if has_real_credentials():
        _end_demo()
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


def _end_demo() -> None:
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
        f"No ANTHROPIC_API_KEY is set, so the %%codelia cells below talk to a scripted server "
        f"on {url}. Its tool calls are real (they run here); its words are canned.{approvals} "
        "To use Claude, set ANTHROPIC_API_KEY and run this cell again (or restart the kernel)."
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

    The cue is matched case-insensitively against the latest user prompt (not tool results);
    the n-th model call since that prompt plays the n-th turn. Past the last turn, or for a
    prompt no cue matches, the reply is ``fallback`` (default: a note listing the cues).
    """
    if not turns_by_cue:
        raise ScriptError("by_prompt needs at least one cue, e.g. {'plot': [reply(...)]}")
    scripted: dict[str, list[TurnSource]] = {}
    for cue, turns in turns_by_cue.items():
        if not isinstance(cue, str) or not cue.strip():
            raise ScriptError(f"by_prompt: every cue must be non-empty text, got {cue!r}")
        if isinstance(turns, (Reply, Fault, Recorded, dict, str)) or not isinstance(
            turns, Sequence
        ):
            raise ScriptError(
                f"by_prompt: the turns of cue {cue!r} must be a list, e.g. [reply(...), ...]"
            )
        scripted[cue.lower()] = [
            t if callable(t) else parse_turn(t, f"cue {cue!r}, turn {i + 1}")
            for i, t in enumerate(turns)
        ]
    cues = ", ".join(repr(c) for c in turns_by_cue)
    note = fallback or (
        "This is the offline demo: I only have scripted answers for this notebook's prompts "
        f"(they mention {cues}). Set ANTHROPIC_API_KEY and restart the kernel to ask Claude "
        "anything."
    )

    def answer(request: RecordedRequest) -> TurnLike:
        prompt, calls_since = latest_prompt(request.messages)
        lowered = prompt.lower()
        for cue, turns in scripted.items():
            if cue in lowered:
                if calls_since >= len(turns):
                    break
                turn = turns[calls_since]
                return turn(request) if callable(turn) else turn
        return reply(text(note))

    return answer


def latest_prompt(messages: Sequence[Mapping[str, Any]]) -> tuple[str, int]:
    """(text of the latest user prompt, assistant messages after it) of a Messages request."""
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
                if isinstance(b, dict) and b.get("type") == "text"
            )
        else:
            continue
        after = sum(1 for m in messages[index + 1 :] if m.get("role") == "assistant")
        return prompt, after
    return "", 0


def last_tool_use_id(request: RecordedRequest, tool_name: str | None = None) -> str:
    """The id of the latest tool call in the request (of ``tool_name`` if given).

    For scripts that read a cached output back: the ref id of a result is its tool call id.
    """
    for message in reversed(request.messages):
        if message.get("role") != "assistant" or not isinstance(message.get("content"), list):
            continue
        for block in reversed(message["content"]):
            if (
                isinstance(block, dict)
                and block.get("type") == "tool_use"
                and (tool_name is None or block.get("name") == tool_name)
            ):
                return str(block["id"])
    wanted = f" of {tool_name}" if tool_name else ""
    raise ScriptError(f"the request has no earlier tool call{wanted} to refer to")
