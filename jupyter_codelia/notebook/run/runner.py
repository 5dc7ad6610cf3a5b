"""Running agent turns inside the kernel: the notebook's session, blocking and background runs.

``NotebookAgent`` (one per kernel) owns the notebook's :class:`~jupyter_codelia.agent.Agent`,
the :class:`~jupyter_codelia.agent.Approvals` its agents' requests wait in (every UI answers
there, the first answer wins) and the listeners (the comm bridge) that receive every event as a
JSON envelope (docs/comm-protocol.md). A turn runs one of two ways:

* **blocking** (:meth:`NotebookAgent.run_blocking`): the agent runs on the kernel's private turn
  loop (``_loop``, a thread of its own) while the cell's thread draws the panel and asks
  approvals at the kernel's input prompt (when the cell's front end takes input, see
  ``_stdin``). The panel's own Stop and approval buttons, and the side panel, answer over
  ``bridge.control()`` on a kernel subshell, since the cell holds the main shell. The kernel
  interrupt (■) arrives as
  KeyboardInterrupt in the cell's thread; it cancels the run, waits until history is repaired
  and the session saved, then re-raises so Run All stops.
* **background** (:meth:`NotebookAgent.start_background`): the turn is a task on the kernel's
  own event loop and the cell gets a :class:`RunHandle` at once; the panel's buttons work.
"""

from __future__ import annotations

import asyncio
import functools
import os
import queue
import uuid
import weakref
from collections.abc import Callable
from concurrent import futures
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..._redact import redact_secrets
from ..._text import describe_exc
from ...agent import Approvals, RunAlreadyActiveError
from ...agent import events as ev
from ...llm.messages import TextPart, context_block
from ...standard_tools.jobs import JobRegistry
from ...wire import RunStarted, status_message
from ..config import ConfigError, Settings, tool_output_dir
from ..kernel_tools.undo import NamespaceUndo
from ._loop import TurnLoop
from ._sink import Envelope, Listener, LiveRun, RunSink, tick_forever
from .results import FinalStatus, RunHandle, RunInterrupted, RunNotFinishedError, RunResult

if TYPE_CHECKING:
    from ...agent import Agent
    from ...cache import EntryOrigin, ToolOutputCacheStore
    from ...llm.base import ChatModel
    from .._shell import KernelShell
    from ..frontend import FrontendClient
    from ..ui.panel import RunPanel
    from ._stdin import Reader

__all__ = ["NotebookAgent", "RunHandle", "RunNotFinishedError", "RunResult", "parse_answer"]

FLUSH_INTERVAL = 0.05
_DONE = object()


NOBODY_ANSWERS = (
    "no one can answer approvals here (headless run: the cell takes no input and no JupyterLab "
    "or Notebook 7 tab with jupyter-codelia is connected to this kernel)"
)


class NotebookAgent:
    """The notebook's agent session and everything that talks to it (one per kernel)."""

    def __init__(
        self,
        shell: KernelShell,
        settings_source: Callable[[], Settings],
        *,
        jobs: JobRegistry,
        frontend: FrontendClient,
    ) -> None:
        self.shell = shell
        self._settings_source = settings_source
        self.agent: Agent | None = None
        self._agent_key: tuple[Any, ...] | None = None
        self._detached: weakref.WeakSet[Any] = weakref.WeakSet()
        self.listeners: list[Listener] = []
        self.active: LiveRun | None = None
        self.approvals = Approvals()
        self.flush_interval = FLUSH_INTERVAL
        self.last_result: RunResult | None = None
        self.last_agent: Agent | None = None
        """The agent of the latest run (the notebook's, or a detached one such as the demo's)."""
        self._prebuilt: tuple[tuple[Any, ...], Agent] | None = None
        self.jobs = jobs  # outlives agents and turns: the kernel extension owns it
        self.frontend = frontend
        from .job_updates import JobNotifier

        self._job_notifier = JobNotifier(self.jobs, self.broadcast)
        self.undo = NamespaceUndo(shell.user_ns, set(getattr(shell, "user_ns_hidden", {}) or {}))
        # The notebook outline last sent per session: a turn carries it only when it changed,
        # so an unchanged notebook adds nothing and the cached prompt prefix stays valid.
        self._outlines: dict[str, str] = {}
        self._mcp: Any = None
        self._turn_loop = TurnLoop()  # where blocking turns run (see _loop)

    # ------------------------------------------------------------------ configuration

    def settings(self, **overrides: Any) -> Settings:
        from ...testing import end_demo_if_superseded

        settings = self._settings_source()
        # An offline demo hands over to a real model once one is set up, taking back the
        # approval mode and endpoint it set: read the settings again without them.
        if end_demo_if_superseded(settings.provider):
            settings = self._settings_source()
        return settings.with_overrides(**overrides)

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        self.listeners.append(listener)
        return lambda: self.listeners.remove(listener) if listener in self.listeners else None

    def broadcast(self, envelope: Envelope) -> None:
        for listener in list(self.listeners):
            try:
                listener(envelope)
            except Exception:  # a broken front end must not break the run
                import logging

                logging.getLogger("jupyter_codelia.notebook").exception("listener failed")

    def prepare(
        self,
        settings: Settings,
        *,
        new_session: bool = False,
        session_id: str | None = None,
        llm: Any = None,
    ) -> Agent:
        """The agent for the next turn: reused, or rebuilt when settings or the session change.

        A rebuild for changed settings keeps the conversation (it resumes the saved session).
        """
        if self.active is not None:
            raise RunAlreadyActiveError(self.active.run_id)
        key = settings.agent_key()
        current = self.agent
        if new_session:
            resume = None
        elif session_id is not None:
            if current is not None:
                current.flush_sync()  # its session may be the one named, saves still queued
            # Fail here, with the store's "session not found: <id>", not mid-run.
            self.session_store().load_state(session_id)
            resume = session_id
        else:
            resume = (
                current.session_id
                if current is not None and current.history and self._same_home(current, settings)
                else None
            )
        if (
            current is not None
            and llm is None
            and not new_session
            and key == self._agent_key
            and (session_id is None or session_id == current.session_id)
        ):
            _configure_budget(current, settings)
            return current
        prebuilt, self._prebuilt = self._prebuilt, None
        if prebuilt is not None and resume is None and llm is None and prebuilt[0] == key:
            agent = prebuilt[1]
        else:
            if current is not None and resume == current.session_id:
                # The new agent reads the session from disk, where the old one's saves are
                # queued on its writer thread: on a loaded machine they may not be there yet.
                current.flush_sync()
            agent = self._build(settings, resume, llm if llm is not None else chat_model(settings))
        _configure_budget(agent, settings)
        self.agent = agent
        self._agent_key = key if llm is None else None
        if current is not None and current.session_id != agent.session_id:
            self._session_ended(current)
        return agent

    def _session_ended(self, agent: Agent) -> None:
        """Another session took over from ``agent``'s: what was kept for its runs goes."""
        self.undo.clear()
        self._outlines.pop(agent.session_id, None)
        if self.last_agent is agent:
            self.last_agent = None

    def prebuild(self) -> None:
        """Build the first turn's agent ahead of time (on the warm-up thread after %load_ext).

        It is only kept aside: :meth:`prepare` adopts it when the first run wants a new
        session with the same settings, so nothing (no session id, no todos) shows before.
        MCP servers are not started here: a run asks for their tools when it starts.
        """
        if self.agent is not None or self.active is not None or self._prebuilt is not None:
            return
        settings = self.settings()
        key = settings.agent_key()
        self._prebuilt = (key, self._build(settings, None, chat_model(settings)))

    def mcp_servers(self) -> Any:
        """The kernel's MCP servers (from the config file's ``mcpServers``; none started yet)."""
        if self._mcp is None:
            from ...standard_tools.mcp import McpServers, parse_mcp_servers
            from ..config import config_path, read_mcp_servers

            # The configured home's file (``%config Codelia.home`` may move it).
            path = self._settings_source().config_path or config_path()
            self._mcp = McpServers(parse_mcp_servers(read_mcp_servers(path), f"config file {path}"))
        return self._mcp

    def close_mcp(self) -> None:
        """Stop the MCP servers (they also stop at interpreter exit); the next run restarts."""
        if self._mcp is not None:
            self._mcp.close()
            self._mcp = None

    def _mcp_tools(self) -> list[Any]:
        """This run's MCP tools: servers that are due start now (concurrently, each within its
        startup timeout), changed listings are fetched again; what failed is reported."""
        from ..._redact import redact_secrets

        servers = self.mcp_servers()
        if not servers.names and not servers.problems:
            return []
        tools, report = servers.tools()
        for reason in report.values():
            print(
                redact_secrets(
                    f"{reason}\nThe run goes on without its tools; %codelia mcp shows the state."
                )
            )
        return list(tools)

    def build_detached(self, settings: Settings, llm: ChatModel) -> Agent:
        """An agent in its own new session that does not replace the notebook's (the demo)."""
        if self.active is not None:
            raise RunAlreadyActiveError(self.active.run_id)
        agent = self._build(settings, None, llm)
        self._detached.add(agent)
        return agent

    def is_demo(self, agent: Agent) -> bool:
        """True for the offline demo's agent and while ``offline_demo()`` is in charge: their
        "model" is a scripted local server, so no figure of theirs is a cost."""
        if agent in self._detached:
            return True
        from ...testing import OFFLINE_API_KEY

        return os.environ.get("ANTHROPIC_API_KEY") == OFFLINE_API_KEY

    def _build(self, settings: Settings, resume: str | None, llm: ChatModel) -> Agent:
        from ...agent import Agent
        from ...agent.permissions import PermissionPolicy
        from ...cache import ToolOutputCacheStore
        from ...llm.base import CapabilityProbe
        from ...session import SessionStore
        from ...standard_tools import standard_tools
        from ..kernel_tools.namespace import kernel_tools
        from ..notebook_tools.cell_tools import NotebookContext, notebook_tools

        root = Path(settings.root).expanduser() if settings.root else Path.cwd()
        probe = llm if isinstance(llm, CapabilityProbe) else None
        if probe is not None:
            probe.discover_capabilities()
        problem = probe.unsupported(needs_tools=True, needs_vision=False) if probe else None
        if problem is not None:
            raise ConfigError(problem)
        if probe is not None and probe.unsupported(needs_tools=False, needs_vision=True):
            print(
                f"Note: the model {settings.model!r} cannot read images; plots and images "
                "reach it as [image] placeholders."
            )
        extra = [
            *kernel_tools(
                shell=self.shell,
                default_timeout=settings.python_timeout,
                jobs=self.jobs,
                timeout_to_job=settings.python_timeout_to_job,
                undo=self.undo,
            ),
            *notebook_tools(
                NotebookContext(self.shell, self.frontend, lambda: self.run_info(settings))
            ),
        ]
        output_store = ToolOutputCacheStore(
            tool_output_dir(settings.home), origin=self.output_origin
        )
        servers = self.mcp_servers()
        servers.output_store, servers.roots = output_store, [root]
        servers.token_dir = settings.home / "mcp-oauth"
        tools = standard_tools(
            root,
            approval_mode=settings.approval_mode,
            output_store=output_store,
            jobs=self.jobs,
            # The shell's read-only commands (ls, rg, git status, ...) run without approval in
            # every mode; everything else it runs asks first, like the python tool.
            extra=extra,
        )
        policy = PermissionPolicy(
            settings.approval_mode,
            sandbox_root=root,
            config_path=settings.config_path,
        )
        store = SessionStore(settings.home)
        agent = Agent(
            llm,
            tools,
            system_prompt=_system_prompt(settings),
            max_iterations=settings.max_iterations,
            permissions=policy,
            approvals=self.approvals,  # answered by the panels and the input prompt
            session_store=store,
            session_id=resume,
        )
        return agent

    def home(self) -> Path:
        """Where this kernel keeps sessions and cache: the configured home (``Codelia.home``)."""
        try:
            return self.settings().home
        except ConfigError:
            from ...session import default_home

            return default_home()

    def run_info(self, settings: Settings) -> dict[str, Any]:
        """Who is acting right now, for the notebook tools' provenance metadata."""
        active = self.active
        if active is None:
            return {"model": settings.model}
        return {
            "run_id": active.run_id,
            "session_id": active.session_id,
            "prompt": active.prompt,
            "model": settings.model,
            "blocking": active.mode == "blocking",
        }

    def session_store(self) -> Any:
        """The agent's store while it is in the configured home, else one opened there."""
        from ...session import SessionStore

        home = self.home()
        agent = self.agent
        store = agent.session_store if agent is not None else None
        if store is not None and Path(store.home) == home:
            return store
        return SessionStore(home)

    @functools.cached_property
    def output_origin(self) -> EntryOrigin:
        """Recorded in every cached output this kernel writes (the agent adds its session
        id), so the cache browser lists this kernel's entries first. Made on first use: the
        cache package is not imported by ``%load_ext``."""
        from ...cache import EntryOrigin

        return EntryOrigin(kernel_id=kernel_id(), notebook=_notebook_name(self.shell))

    def output_store(self) -> ToolOutputCacheStore:
        """The tool-output cache the agent writes, or the configured home's before a run."""
        cache_dir = tool_output_dir(self.home())
        cache = self.agent.output_cache if self.agent is not None else None
        store = cache.store if cache is not None else None
        if store is not None and Path(store.root) == cache_dir:
            return store
        from ...cache import ToolOutputCacheStore

        return ToolOutputCacheStore(cache_dir, origin=self.output_origin)

    @staticmethod
    def _same_home(agent: Agent, settings: Settings) -> bool:
        store = agent.session_store
        return store is None or Path(store.home) == settings.home

    def todos(self) -> tuple[str | None, list[dict[str, Any]]]:
        """(session id, todo items) of the latest run's session; empty before the first run."""
        from ...standard_tools import TodoSessionHook

        agent = self.last_agent or self.agent
        hook = agent.tools.hook(TodoSessionHook) if agent is not None else None
        if agent is None or hook is None:
            return (agent.session_id if agent is not None else None), []
        return agent.session_id, list(hook.store.get(agent.session_id))

    # ------------------------------------------------------------------ approvals

    def respond(
        self,
        request_id: str,
        decision: str,
        reason: str | None = None,
        content: dict[str, Any] | None = None,
    ) -> bool:
        """Answer an open permission request (thread-safe); False if there is no such open
        request or it was answered already (by another UI). ``content``: a form's values."""
        return self.approvals.answer(request_id, decision, reason, content)

    def cancel(self, run_id: str) -> bool:
        active = self.active
        if active is None or active.run_id != run_id:
            return False
        active.cancel("stopped by the user")
        return True

    # ------------------------------------------------------------------ the turn

    def _begin(
        self, agent: Agent, prompt: str, source: Literal["magic", "panel"], mode: Any
    ) -> LiveRun:
        from ...tools import CancelSignal

        run = LiveRun(
            run_id=str(uuid.uuid4()),
            session_id=agent.session_id,
            prompt=prompt,
            source=source,
            signal=CancelSignal(),
            mode=mode,
            demo=self.is_demo(agent),
        )
        self.active = run
        self.last_agent = agent
        self.undo.begin_run(run.run_id)
        started = RunStarted(
            run_id=run.run_id,
            session_id=run.session_id,
            prompt=redact_secrets(prompt),  # masked like the agent's own user-message event
            source=source,
            demo=run.demo,
        )
        self.broadcast(started.dump())
        self.broadcast(status_message(run.run_id, "running"))
        return run

    async def _drive(
        self, agent: Agent, prompt: str, run: LiveRun, deliver: Callable[[Any], None]
    ) -> tuple[FinalStatus, str, str | None]:
        """Run one turn, handing each event to ``deliver``; never raises."""
        from ...agent import AgentRunError
        from ...tools import RunCancelled

        final = ""
        try:
            outline = await self._changed_outline(agent)
            mcp_tools = await asyncio.to_thread(self._mcp_tools)
            context = [] if outline is None else [outline]
            notices = (
                ("background_jobs", self.jobs.turn_notice()),
                ("mcp_servers", self.mcp_servers().turn_notice()),
            )
            context += [context_block(kind, text) for kind, text in notices if text is not None]
            async for event in agent.run_stream(
                prompt,
                signal=run.signal,
                run_id=run.run_id,
                context=context,
                tools=mcp_tools,
                priced=not run.demo,
            ):
                if isinstance(event, ev.FinalEvent):
                    final = event.content
                deliver(event)
        except (RunCancelled, asyncio.CancelledError):
            return "cancelled", final, None
        except AgentRunError as exc:
            return "error", final, str(exc)
        except Exception as exc:
            return "error", final, describe_exc(exc)
        finally:
            self.approvals.deny_open("the run ended", run_id=run.run_id)
        if run.signal.is_set():
            return "cancelled", final, None
        return "completed", final, None

    async def _changed_outline(self, agent: Agent) -> TextPart | None:
        """The live notebook outline block, when a tab answers and it changed since last turn."""
        from ..notebook_tools.cell_tools import NotebookContext, outline_for_turn

        outline = await outline_for_turn(NotebookContext(self.shell, self.frontend))
        if outline is None or self._outlines.get(agent.session_id) == outline:
            return None
        self._outlines[agent.session_id] = outline
        return context_block("notebook_outline", outline)

    def _result(
        self, agent: Agent, run: LiveRun, before: tuple[int, int, float | None], outcome: Any
    ) -> RunResult:
        status, final, error = outcome
        usage = agent.usage
        cost = (
            None  # a demo's usage has no price; an unknown model's none we know
            if run.demo or usage.cost_usd is None or before[2] is None
            else round(usage.cost_usd - before[2], 6)
        )
        return RunResult(
            final_text=final,
            status=status,
            session_id=agent.session_id,
            run_id=run.run_id,
            usage={
                "input_tokens": usage.input_tokens - before[0],
                "output_tokens": usage.output_tokens - before[1],
                "cost_usd": cost,
                "session_input_tokens": usage.input_tokens,
                "session_output_tokens": usage.output_tokens,
            },
            error=error,
        )

    def run_blocking(self, agent: Agent, prompt: str, panel: RunPanel | None = None) -> RunResult:
        """Run a turn while the calling (cell) thread waits; KeyboardInterrupt cancels it."""
        from ._stdin import cell_reader

        # Whether the cell's front end answers input prompts, read from the cell's own request
        # now, on its thread: later requests (the side panel's) change the kernel-wide flag.
        reader = cell_reader(self.shell)
        run = self._begin(agent, prompt, "magic", "blocking")
        if panel is not None:
            panel.bind_run(run.run_id)
        sink = RunSink(self, run, panel, self.flush_interval)
        inbox: queue.Queue[Any] = queue.Queue()
        before = (agent.usage.input_tokens, agent.usage.output_tokens, agent.usage.cost_usd)
        outcome: list[Any] = []

        async def work() -> None:
            try:
                outcome.append(await self._drive(agent, prompt, run, inbox.put))
            except BaseException as exc:
                outcome.append(("error", "", describe_exc(exc)))
            finally:
                inbox.put(_DONE)

        interrupted = False
        try:
            worker = self._turn_loop.submit(work())
            while True:
                try:
                    item = inbox.get(timeout=self.flush_interval)
                except queue.Empty:
                    sink.tick()
                    continue
                except KeyboardInterrupt:
                    interrupted = True
                    run.cancel("interrupted")
                    continue
                if item is _DONE:
                    break
                try:
                    sink.event(item)
                    if isinstance(item, ev.PermissionRequestEvent) and not run.signal.is_set():
                        sink.tick()  # the card shows before the prompt waits
                        self._ask_in_cell(item, run, reader)
                    sink.tick()
                except KeyboardInterrupt:
                    interrupted = True
                    run.cancel("interrupted")
        finally:
            while not worker.done():
                try:
                    futures.wait([worker], 0.1)
                except KeyboardInterrupt:
                    interrupted = True
                    run.cancel("interrupted")
            self.active = None
        result = self._result(agent, run, before, outcome[0])
        if interrupted:
            result.status = "cancelled"
        self.last_result = result
        sink.finish(result.status, result.error)
        if interrupted:
            raise RunInterrupted(result.session_id)
        return result

    def can_answer_elsewhere(self) -> bool:
        """Whether a front end with the jupyter-codelia extension (a notebook tab or the side
        panel) has joined this kernel: its cell-panel buttons and side panel answer approvals."""
        return self.frontend.tab_seen or bool(self.listeners)

    def _ask_in_cell(
        self, event: ev.PermissionRequestEvent, run: LiveRun, reader: Reader | None
    ) -> None:
        """Ask the approval at the cell's input prompt, while the panels' buttons can answer it
        too (the first answer wins, the prompt is then left); nobody at all → deny."""
        request = self.approvals.get(event.request_id)
        if request is None or request.answered:
            return  # answered (and closed) before the event reached this thread
        if reader is None:
            if not self.can_answer_elsewhere():
                self.respond(event.request_id, "deny", NOBODY_ANSWERS)
            return  # the panel's buttons or the side panel answer; the run waits for them
        prompt = (
            f"codelia: {event.title} {event.message.splitlines()[0] if event.message else ''}\n"
            "Allow? [y]es / [a]lways / [n]o, or type a reason to deny: "
        )
        if event.kind != "tool":
            prompt = question_prompt(event)

        def answered() -> bool:
            return request.answered

        try:
            answer = reader.read(prompt, answered)
        except KeyboardInterrupt:
            run.cancel("interrupted")
            self.respond(event.request_id, "deny", "interrupted by the user")
            raise
        except EOFError:
            self.respond(event.request_id, "deny", "the input prompt was closed (end of input)")
            return
        if answer is None:
            return  # answered in the cell's panel or the side panel: the card says how
        decision, reason = parse_answer(answer)
        content = None
        if event.kind == "elicitation" and event.fields and decision != "deny":
            try:
                content = _read_form(reader, event.fields, answered)
            except (EOFError, ValueError) as exc:
                decision, reason = "deny", f"the form was not filled in ({exc})"
            if content is None and request.answered:
                return
        self.respond(event.request_id, decision, reason, content)

    def start_background(
        self,
        agent: Agent,
        prompt: str,
        panel: RunPanel | None = None,
        *,
        source: Literal["magic", "panel"] = "magic",
    ) -> RunHandle:
        """Start the turn as a task on the running (kernel) event loop and return at once."""
        loop = asyncio.get_event_loop()
        run = self._begin(agent, prompt, source, "background")
        sink = RunSink(self, run, panel, self.flush_interval)
        before = (agent.usage.input_tokens, agent.usage.output_tokens, agent.usage.cost_usd)

        async def main() -> RunResult:
            ticker = asyncio.ensure_future(tick_forever(sink, self.flush_interval))
            try:
                outcome = await self._drive(agent, prompt, run, sink.event)
            finally:
                ticker.cancel()
                self.active = None
            result = self._result(agent, run, before, outcome)
            self.last_result = result
            sink.finish(result.status, result.error)
            return result

        task = loop.create_task(main())
        return RunHandle(run, task)


def _configure_budget(agent: Agent, settings: Settings) -> None:
    """This turn's budget: per-run limits apply to the turn, per-session ones to the agent's
    session (a rebuilt agent, a new or resumed session, starts counting again)."""
    from ...agent import BudgetLimits
    from ..config import budget_limits

    agent.budget.configure(
        run=BudgetLimits(**budget_limits(settings, "run")),
        session=BudgetLimits(**budget_limits(settings, "session")),
    )


def question_prompt(event: ev.PermissionRequestEvent) -> str:
    """The input prompt for a question a tool relays (an MCP form, link, sampling request)."""
    lines = [f"codelia: {event.title}", *event.message.splitlines()[:12]]
    if event.url:
        lines.append(f"Open: {event.url}")
    if event.kind == "elicitation" and event.fields:
        lines.append("Answer? [y]es (then fill in the fields) / [n]o to decline: ")
    elif event.url:
        lines.append("Done (or consent)? [y]es / [n]o to decline: ")
    else:
        lines.append("Allow? [y]es / [n]o to decline: ")
    return "\n".join(lines)


def _read_form(
    reader: Reader, schema: dict[str, Any], answered: Callable[[], bool]
) -> dict[str, Any] | None:
    """One input prompt per field of a flat form schema; typed values, defaults kept. None
    when another UI answered meanwhile."""
    properties = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    values: dict[str, Any] = {}
    for name, field_schema in properties.items():
        kind = field_schema.get("type", "string")
        choices = field_schema.get("enum")
        about = field_schema.get("description") or field_schema.get("title") or ""
        hint = f"one of {', '.join(map(str, choices))}" if choices else kind
        default = field_schema.get("default")
        label = f"  {name} ({hint}{', required' if name in required else ''})"
        if about:
            label += f" {about}"
        if default is not None:
            label += f" [{default}]"
        line = reader.read(f"{label}: ", answered)
        if line is None:
            return None
        typed = line.strip()
        if not typed:
            if default is not None:
                values[name] = default
            elif name in required:
                raise ValueError(f"{name} is required")
            continue
        values[name] = typed
    return values


def parse_answer(answer: str) -> tuple[str, str | None]:
    """Map a typed approval answer to (decision, reason)."""
    text = (answer or "").strip()
    lowered = text.lower()
    if lowered in ("y", "yes", "allow", "ok"):
        return "allow", None
    if lowered in ("a", "always", "always allow"):
        return "allow_remember", None
    if lowered in ("", "n", "no", "deny"):
        return "deny", None
    return "deny", text


def chat_model(settings: Settings) -> ChatModel:
    """The chat model ``settings`` name. It lives as long as its agent: its clients follow the
    event loop each turn runs on (blocking turns use a private loop, background turns the
    kernel's) and a credential set in the environment meanwhile (``%env``)."""
    if settings.provider != "anthropic":
        return _openai_chat(settings)
    from ...llm.anthropic.chat import AnthropicChat

    # api_key / base_url stay None: the SDK reads ANTHROPIC_API_KEY / ANTHROPIC_BASE_URL.
    return AnthropicChat(
        model=settings.model, max_tokens=settings.max_tokens, thinking=settings.thinking
    )


def _openai_chat(settings: Settings) -> ChatModel:
    from ...llm.openai.chat import KNOWN_ENDPOINTS, OpenAIChat
    from ..config import LOCAL_PROVIDERS

    provider = settings.provider
    default_url, key_env = KNOWN_ENDPOINTS[provider]
    # OpenAI itself: a None base_url lets the SDK read OPENAI_BASE_URL.
    base_url = settings.base_url if provider == "openai" else settings.base_url or default_url
    return OpenAIChat(
        model=settings.model,
        api_key_env=key_env,
        needs_key=provider not in LOCAL_PROVIDERS,
        base_url=base_url,
        provider=provider,
        max_tokens=settings.max_tokens,
    )


def _system_prompt(settings: Settings) -> str:
    base = (
        "You are codelia, a coding and data agent running inside the user's Jupyter kernel. "
        "Use the python tool to run code against the user's live variables (they share the "
        "namespace); list_variables and inspect_variable describe what exists. Plots you make "
        "with matplotlib are returned to you as images. For long work (training, slow queries, "
        "servers) pass background: true to python or shell and watch the job with job_output / "
        "job_wait instead of blocking; python results list the variables you changed, which "
        "the user can undo. Plan multi-step work with the todo "
        "tools, keep the user informed briefly, and answer in concise markdown."
    )
    if settings.system_prompt:
        return base + "\n\n" + settings.system_prompt
    return base


def kernel_id() -> str | None:
    """This kernel's id, from its connection file name (``kernel-<id>.json`` under Jupyter
    Server; another unique name when a client started it directly), if any."""
    try:
        from ipykernel.connect import get_connection_file

        stem = Path(get_connection_file()).stem
    except Exception:  # not in an ipykernel (a plain IPython shell)
        return None
    return stem.removeprefix("kernel-") or None


def _notebook_name(shell: KernelShell) -> str | None:
    """The notebook file the front end told the kernel about (JupyterLab, VS Code), if any."""
    ns = getattr(shell, "user_ns", {}) or {}
    for candidate in (
        ns.get("__vsc_ipynb_file__"),
        ns.get("__session__"),
        os.environ.get("JPY_SESSION_NAME"),
    ):
        if isinstance(candidate, str) and candidate:
            return Path(candidate).name
    return None
