"""The agent run loop.

One ``Agent`` is one conversation: a history, a session id and usage totals. ``run_stream`` runs a
turn as an inner task that feeds a queue, so events raised while the loop awaits (streamed tokens,
approval requests, todo updates) reach the caller as they happen. Cancellation — through a
``CancelSignal`` or by cancelling the consuming task — cancels the inner task; it repairs history,
saves the session and logs the outcome before the cancellation propagates.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import platform
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel

from .. import __version__
from .._redact import StreamRedactor, redact_secrets
from .._text import clip_utf8, js_round
from ..errors import CodeliaError
from ..llm.base import ChatModel, LlmError
from ..llm.messages import (
    AssistantMessage,
    ChatInvokeCompletion,
    ContentPart,
    Message,
    ReasoningMessage,
    SystemMessage,
    TextPart,
    ToolCall,
    ToolMessage,
    UserMessage,
    answer_text,
    citations_of,
    context_block,
    has_non_text_part,
    load_messages,
    prompt_text,
    text_projection,
)
from ..tools import (
    COMPLETED,
    UNDECLARED,
    CancelSignal,
    RunCancelled,
    SessionStateHook,
    Tool,
    ToolContext,
    ToolIndex,
    ToolResultData,
    ToolRisk,
    ToolSet,
    execute_tool_call,
    find_tool,
    risk_of,
    tool_index,
)
from ..tools._host import RUN_HOST
from . import events as ev
from ._approvals import Approvals
from ._budget import (
    BUDGET_PREFIX,
    BUDGET_PROMPT,
    BudgetMeter,
    BudgetReached,
    budget_event,
    not_run_messages,
)
from ._compaction import CompactionConfig, parse_reply, prepare_request, rebuild
from ._history import HistoryRepair, repair_history
from ._host import AgentRunHost
from ._permission_hook import ConfirmCallback, PermissionHookBuilder, parse_tool_args
from ._persistence import FORKED_FROM_META_KEY, RunLogHandle, SessionWriter
from ._resume import (
    CONTEXT_META_KEY,
    change_reminder,
    context_from_run_headers,
    context_record,
)
from ._retry import RetryConfig

if TYPE_CHECKING:
    from ..cache import ToolOutputCache, ToolOutputCacheStore
    from ..session import SessionStore
    from .permissions import PermissionPolicy

log = logging.getLogger("jupyter_codelia.agent")

MAX_ITERATIONS_PREFIX = "[Max Iterations Reached]\n\n"
SUMMARY_UNAVAILABLE = "Summary unavailable due to an internal error."
MAX_ITERATIONS_PROMPT = (
    "You have reached the maximum number of steps for this turn. Without calling any tools, write "
    "a concise summary for the user: what was done, what is still pending, any blockers, and "
    "(optionally) short next steps. Do not mention internal agent mechanics."
)
CONTINUE_PROMPT = "Continue the task from where you left off, using the summary above."
MAX_PAUSE_CONTINUATIONS = 8
"""How often one turn asks the API to resume a reply it paused (``stop_reason: "pause_turn"``,
long server-tool work) before giving up with what arrived."""
PAUSE_LIMIT_NOTE = (
    "(The model paused its reply {count} times while working with server tools; codelia stopped "
    "resuming it. Ask again to continue.)"
)
_SAVE_INTERVAL_S = 1.5
_RAW_LOG_LIMIT = 256 * 1024
_LOGGED_EVENTS_SKIP = ("text_delta", "reasoning_delta")
_STREAMED_EVENTS = _LOGGED_EVENTS_SKIP
_CUT_OFF = ToolResultData(outcome="cut_off")


class AgentRunError(CodeliaError, RuntimeError):
    """A turn failed for a reason the caller should show (provider failure after retries, ...)."""

    def __init__(self, message: str, *, kind: str = "error", status: int | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.status = status


class RunAlreadyActiveError(AgentRunError):
    """A turn was asked for while another one runs: the one form of "busy".

    ``run_id`` names the run going on when the caller knows it (the notebook's active run).
    """

    def __init__(self, run_id: str | None = None) -> None:
        where = f" (run {run_id})" if run_id is not None else ""
        super().__init__(
            f"a run is already in progress{where}; wait for it or stop it first", kind="busy"
        )
        self.run_id = run_id


@dataclass
class UsageTotals:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float | None = 0.0
    last_total_tokens: int = 0
    model_calls: int = 0
    web_search_requests: int = 0
    web_fetch_requests: int = 0

    def add(self, input_tokens: int, output_tokens: int, cached: int, created: int) -> None:
        self.input_tokens += input_tokens
        self.output_tokens += output_tokens
        self.cache_read_tokens += cached
        self.cache_write_tokens += created
        self.model_calls += 1


_DEFAULT: Any = object()


@dataclass
class _Run:
    run_id: str
    queue: asyncio.Queue[Any]
    signal: CancelSignal
    run_log: RunLogHandle | None
    seq: int = 0
    last_save: float = field(default_factory=time.monotonic)
    approval_waits: dict[str, float] = field(default_factory=dict)
    """Seconds each tool call spent waiting for an approval (filled by the permission hook)."""
    priced: bool = True
    """False when a stand-in answers (an offline demo's scripted server): usage is not priced."""


class Agent:
    """A tool-using agent over a chat model; see the module docstring for the turn lifecycle."""

    def __init__(
        self,
        llm: ChatModel,
        tools: Sequence[Tool] = (),
        *,
        system_prompt: str | None = None,
        max_iterations: int = 200,
        require_done_tool: bool = False,
        tool_choice: str | None = None,
        permissions: PermissionPolicy | None = None,
        confirm: ConfirmCallback | None = None,
        approvals: Approvals | None = None,
        output_cache: ToolOutputCache | None = _DEFAULT,
        output_store: ToolOutputCacheStore | None = None,
        session_store: SessionStore | None = None,
        session_id: str | None = None,
        dependency_overrides: dict[str, Callable[[], Any]] | None = None,
        state_hooks: Sequence[SessionStateHook] = (),
        retry: RetryConfig | None = None,
        compaction: CompactionConfig | None = _DEFAULT,
        client_name: str = "jupyter-codelia",
    ) -> None:
        if max_iterations < 1:
            raise ValueError("max_iterations must be at least 1")
        self.llm = llm
        # The agent's own copy: a ToolSet keeps its shared state (output store, state hooks).
        self.tools: ToolSet = ToolSet.of(tools)
        self.system_prompt = system_prompt
        self.max_iterations = max_iterations
        self.require_done_tool = require_done_tool
        self.tool_choice = tool_choice
        self.permissions = permissions
        self.confirm = confirm
        # Requests wait here for an answer; a host that passes its own Approvals answers them.
        self.approvals = approvals if approvals is not None else Approvals()
        self._host_answers = approvals is not None
        if output_cache is _DEFAULT:
            output_cache = _default_output_cache(self.tools, output_store)
        elif output_store is not None:
            raise ValueError(
                "pass either output_cache=ToolOutputCache(store, config) or output_store=store, "
                "not both"
            )
        self.output_cache = output_cache
        self.session_store = session_store
        self.dependency_overrides = dict(dependency_overrides or {})
        self.state_hooks: list[SessionStateHook] = [*self.tools.state_hooks, *state_hooks]
        self.retry = retry or RetryConfig()
        self.compaction: CompactionConfig | None = (
            CompactionConfig() if compaction is _DEFAULT else compaction
        )
        self.client_name = client_name
        self.history: list[Message] = []
        self._repair = HistoryRepair()
        self.usage = UsageTotals()
        self.budget = BudgetMeter()  # limits are set per turn by the host (agent.budget.configure)
        self.meta: dict[str, Any] = {}
        self.invoke_seq = 0
        self._pending_resume = session_id
        self.session_id: str = session_id or str(uuid.uuid4())
        self._restored = session_id is None
        self._system_added = False
        self._resume_reminder: TextPart | None = None
        self._fork_event: ev.SessionForkedEvent | None = None
        self._running = False
        self._logged_upto = 0
        self._writer = SessionWriter(session_store) if session_store is not None else None
        for hook in self.state_hooks:
            hook.bind_session(self.session_id)

    # ----------------------------------------------------------------------------- public API

    @property
    def is_running(self) -> bool:
        return self._running

    async def run(self, prompt: str | list[ContentPart], **kwargs: Any) -> str:
        """Run one turn and return the content of its ``final`` event (``""`` if none)."""
        final = ""
        async for event in self.run_stream(prompt, **kwargs):
            if isinstance(event, ev.FinalEvent):
                final = event.content
        return final

    async def run_stream(
        self,
        prompt: str | list[ContentPart],
        *,
        signal: CancelSignal | None = None,
        run_id: str | None = None,
        tools: Sequence[Tool] = (),
        tool_choice: str | None = None,
        run_meta: dict[str, Any] | None = None,
        force_compaction: bool = False,
        context: Sequence[TextPart | str] = (),
        priced: bool = True,
    ) -> AsyncIterator[ev.AgentEvent]:
        """Yield the events of one turn; raises ``RunCancelled`` or ``AgentRunError`` at the end.

        ``force_compaction`` summarises the history before the prompt is added, whatever its
        size (the compaction events come first). ``context``: blocks the model reads after the
        prompt in the same user message (a notebook outline, news of background jobs), each made
        with :func:`~jupyter_codelia.llm.messages.context_block` (a plain string is wrapped in
        ``<context>`` tags); they stay marked as context in the history, and the run log
        records them apart, so titles, transcripts and front ends show the prompt as typed.
        ``priced=False``: the model is a stand-in (an offline demo's scripted server), so the
        turn's usage is counted but never priced: its usage events carry no cost, the session's
        total leaves it out and the run log says so (replays show it unpriced too).
        """
        if self._running:
            raise RunAlreadyActiveError
        self._running = True
        try:
            self._ensure_session()
            self._fork_event = await self._follow_fork()
            signal = signal or CancelSignal()
            rid = run_id or str(uuid.uuid4())
            run = _Run(
                run_id=rid,
                queue=asyncio.Queue(),
                signal=signal,
                run_log=self._open_run_log(rid),
                priced=priced,
            )
            task = asyncio.ensure_future(
                self._run_turn(
                    run,
                    prompt,
                    [*self.tools, *tools],
                    tool_choice,
                    run_meta or {},
                    force_compaction=force_compaction,
                    context=tuple(
                        block if isinstance(block, TextPart) else context_block("context", block)
                        for block in context
                    ),
                )
            )
            loop = asyncio.get_running_loop()

            def cancel_task() -> None:
                loop.call_soon_threadsafe(task.cancel)

            remove = signal.add_callback(cancel_task)
            try:
                async for event in _drain(run.queue, task):
                    yield event
            finally:
                remove()
                if not task.done():
                    task.cancel()
                    with contextlib.suppress(BaseException):
                        await task
        finally:
            self._running = False

    async def compact(self) -> bool:
        """Summarise the conversation now (``%codelia compact``); True if the history was
        replaced by the summary (then the session is saved)."""
        if self._running:
            raise RunAlreadyActiveError()
        self._running = True
        try:
            self._ensure_session()
            # No run log: a compaction on its own is not a turn (the snapshot records it).
            run = _Run(
                run_id=str(uuid.uuid4()), queue=asyncio.Queue(), signal=CancelSignal(), run_log=None
            )
            compacted = await self._maybe_compact(run, mid_turn=False, force=True)
            if compacted:
                self._save_state(run)
            return compacted
        finally:
            self._running = False

    def snapshot_messages(self) -> list[Any]:
        """The history as saved in a session snapshot: no leading system messages, repaired."""
        messages = self._repair(self.history)
        start = 0
        while start < len(messages) and isinstance(messages[start], SystemMessage):
            start += 1
        return messages[start:]

    # ----------------------------------------------------------------------------- sessions

    def _ensure_session(self) -> None:
        if self._restored:
            return
        self._restored = True
        if self.session_store is None or self._pending_resume is None:
            return
        state = self.session_store.load_state(self._pending_resume)
        history = repair_history(load_messages(state.messages))
        # The current system prompt is inserted by the turn; a stored one must not win over it.
        while history and isinstance(history[0], SystemMessage):
            history.pop(0)
        self.history = history
        self.meta = dict(state.meta)
        saved_context = self.meta.get(CONTEXT_META_KEY)
        if saved_context is None:
            saved_context = context_from_run_headers(self._run_headers(self._pending_resume))
        self._resume_reminder = change_reminder(saved_context, self._context_record())
        if self._writer is not None:
            self._writer.generation = state.generation
        self.invoke_seq = state.invoke_seq
        self._system_added = False
        self._logged_upto = len(self.history)
        for hook in self.state_hooks:
            hook.restore_meta(self.session_id, self.meta)

    async def _follow_fork(self) -> ev.SessionForkedEvent | None:
        """Continue under a new session id if another process saved ours (see SessionWriter)."""
        if self._writer is None:
            return None
        await self._writer.flush()
        self._writer.fork_if_saved_elsewhere(self.session_id)
        fork = self._writer.take_fork()
        if fork is None:
            return None
        self.session_id = fork[1]
        self.meta[FORKED_FROM_META_KEY] = fork[0]
        for hook in self.state_hooks:
            hook.bind_session(self.session_id)
        return ev.SessionForkedEvent(session_id=fork[1], forked_from=fork[0])

    def _run_headers(self, session_id: str) -> Iterator[dict[str, Any]]:
        """The header records of a session's run logs, newest first (first lines only)."""
        assert self.session_store is not None
        from ..session import SessionNotFound, read_jsonl

        try:
            paths = self.session_store.run_log_paths(session_id)
        except SessionNotFound:
            return
        for path in reversed(paths):
            try:
                first = next(read_jsonl(path), None)
            except OSError:
                continue
            if first is not None and first.get("type") == "header":
                yield first

    def _context_record(self) -> dict[str, Any]:
        return context_record(
            model=self.llm.model,
            root=str(self.tools.sandbox_root or os.getcwd()),
            tools=[t.name for t in self.tools],
            date=datetime.now(timezone.utc).date().isoformat(),
        )

    def _open_run_log(self, run_id: str) -> RunLogHandle | None:
        if self._writer is None:
            return None
        header = {
            "run_id": run_id,
            "session_id": self.session_id,
            "started_at": datetime.now(timezone.utc).isoformat(),
            "client": {"name": self.client_name, "version": __version__},
            "model": {"provider": self.llm.provider, "name": self.llm.model},
            "prompts": {"system": self.system_prompt},
            "tools": {"definitions": [t.definition.dump() for t in self.tools]},
            "runtime": {
                "cwd": os.getcwd(),
                "os": platform.system(),
                "arch": platform.machine(),
                "version": platform.python_version(),
            },
        }
        return self._writer.open_run(run_id=run_id, session_id=self.session_id, header=header)

    def _save_state(self, run: _Run) -> None:
        run.last_save = time.monotonic()
        if self._writer is None:
            return
        from ..session import SessionState

        meta = dict(self.meta)
        meta[CONTEXT_META_KEY] = self._context_record()
        for hook in self.state_hooks:
            hook.save_meta(self.session_id, meta)
        self.meta = meta
        state = SessionState(
            session_id=self.session_id,
            updated_at=datetime.now(timezone.utc).isoformat(),
            run_id=run.run_id,
            invoke_seq=self.invoke_seq,
            meta=meta,
            title=_title_of(self.history),
        )
        self._writer.save(state, self.snapshot_messages())

    def _record(self, run: _Run, record_type: str, **fields: Any) -> None:
        if self._writer is not None and run.run_log is not None:
            self._writer.record(run.run_log, record_type, fields)

    async def flush(self) -> None:
        """Wait until the session's run logs and snapshot are on disk (writes are queued)."""
        if self._writer is not None:
            await self._writer.flush()

    def flush_sync(self, timeout: float | None = None) -> None:
        """``flush`` for synchronous callers (not from the event loop's own thread mid-run)."""
        if self._writer is not None:
            self._writer.flush_sync(timeout)

    # ----------------------------------------------------------------------------- the turn

    def _emit(self, run: _Run, event: BaseModel) -> None:
        # Streamed deltas arrive redacted by a StreamRedactor (see _DeltaStream); every other
        # event is masked here, before the panel, the side panel or a run_stream caller sees it.
        if event.type not in _STREAMED_EVENTS:  # type: ignore[attr-defined]
            event = redact_secrets(event)
        seq = run.seq
        run.seq += 1
        event = event.model_copy(update={"seq": seq})
        run.queue.put_nowait(event)
        if event.type not in _LOGGED_EVENTS_SKIP:  # type: ignore[attr-defined]
            self._record(run, "agent.event", seq=seq, event=ev.event_to_json(event))

    async def _run_turn(
        self,
        run: _Run,
        prompt: str | list[ContentPart],
        tools: list[Tool],
        tool_choice: str | None,
        run_meta: dict[str, Any],
        *,
        force_compaction: bool = False,
        context: tuple[TextPart, ...] = (),
    ) -> None:
        user_input = (
            {"type": "text", "text": prompt}
            if isinstance(prompt, str)
            else {"type": "parts", "parts": [p.dump() for p in prompt]}
        )
        started: dict[str, Any] = {"input": user_input, "meta": run_meta}
        if context:
            started["context"] = [block.dump() for block in context]
        if not run.priced:
            started["priced"] = False
        self._record(run, "run.start", session_id=self.session_id, **started)
        if self.output_cache is not None:
            self.output_cache.bind_session(self.session_id)
        self._record(run, "run.status", status="running")
        if self._fork_event is not None:
            self._emit(run, self._fork_event)
            self._fork_event = None
        if run_meta:
            self.meta.update(run_meta)
        self.budget.start_run()
        if self.budget.active:
            self._emit(run, budget_event(self.budget))
        outcome: Literal["completed", "cancelled", "error"] = "completed"
        final: str | None = None
        try:
            if self.system_prompt and not self._system_added:
                if not any(isinstance(m, SystemMessage) for m in self.history):
                    self.history.insert(0, SystemMessage(content=self.system_prompt))
                self._system_added = True
            if force_compaction:
                await self._maybe_compact(run, mid_turn=False, force=True)
            if self._resume_reminder is not None:
                self.history.append(UserMessage(content=[self._resume_reminder]))
                self._resume_reminder = None
            # Repair after appending: an unanswered prompt of a failed turn merges with this one.
            self.history = self._repair([*self.history, _user_message(prompt, context)])
            self._logged_upto = min(self._logged_upto, len(self.history) - 1)
            final = await self._loop(run, tools, tool_choice)
        except asyncio.CancelledError:
            outcome = "cancelled"
            raise RunCancelled(run.signal.reason or "run cancelled") from None
        except AgentRunError as exc:
            outcome = "error"
            self._record(run, "run.error", error={"name": exc.kind, "message": str(exc)})
            raise
        except Exception as exc:
            outcome = "error"
            self._record(run, "run.error", error={"name": type(exc).__name__, "message": str(exc)})
            raise AgentRunError(f"{type(exc).__name__}: {exc}") from exc
        finally:
            self.budget.end_run()
            self.history = self._repair(self.history)
            self._save_state(run)
            self._record(run, "run.status", status=outcome)
            self._record(run, "run.end", outcome=outcome, final=final)
            if self._writer is not None and run.run_log is not None:
                self._writer.close_run(run.run_log)

    async def _loop(self, run: _Run, tools: list[Tool], tool_choice: str | None) -> str:
        choice = tool_choice or self.tool_choice
        definitions = [t.definition for t in tools]
        hook = self._permission_hook(run, tools)
        by_name = tool_index(tools)
        risks = {name: risk_of(tool) for name, tool in by_name.items()}
        host = AgentRunHost(
            approvals=self.approvals,
            confirm=self.confirm,
            host_answers=self._host_answers,
            run_id=run.run_id,
            emit=lambda event: self._emit(run, event),
            llm=self.llm,
            budget=self.budget,
            account=lambda completion: self._account(run, completion),
        )
        base_ctx = ToolContext(
            signal=run.signal,
            overrides=self.dependency_overrides,
            emit=lambda event: self._emit(run, event),
            deps={RUN_HOST.id: host},
        )
        pauses = 0
        paused_texts: list[str] = []
        for _ in range(self.max_iterations):
            if (reached := self.budget.check()) is not None:
                return await self._end_for_budget(run, reached)
            self._trim()
            completion = await self._invoke(run, definitions or None, choice)
            self.history.extend(completion.messages)
            reply = self._collect(run, completion)
            if completion.stop_kind == "pause" and not reply.calls:
                # The API paused a long server-tool reply: its blocks are in the history, and
                # asking again with them as the last assistant turn resumes it.
                if pauses < MAX_PAUSE_CONTINUATIONS:
                    pauses += 1
                    paused_texts.extend(reply.texts)
                    continue
                reply.texts.append(PAUSE_LIMIT_NOTE.format(count=pauses))
            note = None if reply.calls else self._stop_note(completion, answered=bool(reply.texts))
            if note is not None:
                reply.texts.append(note)
            texts = [*paused_texts, *reply.texts]
            paused_texts = []
            if reply.calls or self.require_done_tool:
                for index, text in enumerate(texts):
                    last = index == len(texts) - 1
                    self._emit(
                        run,
                        ev.TextEvent(
                            content=text, citations=(reply.citations or None) if last else None
                        ),
                    )
            if not reply.calls:
                await self._maybe_compact(run, mid_turn=self.require_done_tool)
                if not self.require_done_tool:
                    final = "\n".join(texts).strip()
                    self._emit(run, ev.FinalEvent(content=final, citations=reply.citations or None))
                    return final
                continue
            for step, call in enumerate(reply.calls, start=1):
                # Checked between calls only: a budget never stops a tool halfway.
                if (reached := self.budget.check()) is not None:
                    self.history.extend(not_run_messages(reply.calls[step - 1 :], reached))
                    return await self._end_for_budget(run, reached)
                finished = await self._run_call(run, call, step, by_name, risks, hook, base_ctx)
                if finished is not None:
                    final = finished if finished else "\n".join(texts).strip()
                    self._emit(run, ev.FinalEvent(content=final))
                    return final
            await self._maybe_compact(run, mid_turn=True)
            if time.monotonic() - run.last_save >= _SAVE_INTERVAL_S:
                self._save_state(run)
        final = MAX_ITERATIONS_PREFIX + await self._summary(run, MAX_ITERATIONS_PROMPT)
        self._emit(run, ev.FinalEvent(content=final))
        return final

    async def _end_for_budget(self, run: _Run, reached: BudgetReached) -> str:
        self._emit(run, budget_event(self.budget, reached))
        summary = await self._summary(run, BUDGET_PROMPT.format(reason=reached.reason))
        final = BUDGET_PREFIX.format(reason=reached.reason) + summary
        self._emit(run, ev.FinalEvent(content=final))
        return final

    def _collect(self, run: _Run, completion: ChatInvokeCompletion) -> _Reply:
        reply = _Reply()
        joining = False  # consecutive text blocks are one passage (the API splits at citations)
        for message in completion.messages:
            if isinstance(message, ReasoningMessage):
                if message.content:
                    self._emit(run, ev.ReasoningEvent(content=message.content))
                joining = False
            elif isinstance(message, AssistantMessage):
                text = answer_text(message.content)
                if message.refusal:
                    text = f"{text}\n{message.refusal}" if text else message.refusal
                if text and joining:
                    reply.texts[-1] += text
                elif text:
                    reply.texts.append(text)
                joining = bool(text)
                reply.add_citations(citations_of(message.content))
                reply.calls.extend(message.tool_calls or [])
        return reply

    def _stop_note(self, completion: ChatInvokeCompletion, *, answered: bool) -> str | None:
        """What to say under an answer a limit or a filter ended, so it is not taken as
        complete (None for an answer that simply ended)."""
        kind = completion.stop_kind
        limit = self._output_limit()
        limit_text = f", {limit}" if limit else ""
        if kind == "output_limit" and not answered:
            return NO_ANSWER_AT_LIMIT.format(limit=limit_text)
        note = _STOP_NOTES.get(kind or "")
        return note.format(limit=limit_text) if note is not None else None

    def _output_limit(self) -> str | None:
        """``max_tokens=4096``: the chat model's output limit; None when the server's own
        limit applies (none was sent)."""
        limit = getattr(self.llm, "max_tokens", None)
        return f"max_tokens={limit}" if isinstance(limit, int) else None

    def _cut_off_message(self, call: ToolCall) -> ToolMessage:
        """The answer to a call the output limit cut off: an error, none of the call run."""
        text = CUT_OFF_RESULT.format(
            tool=call.function.name,
            limit=f" ({limit})" if (limit := self._output_limit()) else "",
            chars=len(call.function.arguments),
        )
        return ToolMessage(
            tool_call_id=call.id, tool_name=call.function.name, content=text, is_error=True
        )

    async def _run_call(
        self,
        run: _Run,
        call: ToolCall,
        step: int,
        tools: ToolIndex,
        risks: dict[str, ToolRisk],
        hook: Any,
        base_ctx: ToolContext,
    ) -> str | None:
        """Execute one call (or refuse a cut-off one); returns the final message when it ends
        the turn, else None."""
        name = call.function.name
        self._emit(run, ev.StepStartEvent(step_id=call.id, title=name, step_number=step))
        self._emit(
            run,
            ev.ToolCallEvent(
                tool=name,
                args=_event_args(call.function.arguments),
                raw_args=call.function.arguments,
                tool_call_id=call.id,
                display_name=_display_name(tools, name),
            ),
        )
        started = time.monotonic()
        data = COMPLETED
        if call.cut_off:
            # Half-written arguments would run as a complete-looking call (a truncated write).
            raw, done, final_message = self._cut_off_message(call), False, None
            data = _CUT_OFF
        else:
            # The executor turns every failure, the permission hook's included, into a message.
            execution = await execute_tool_call(call, tools, base_ctx, can_execute_tool=hook)
            self.budget.add_tool_call()
            raw = _redact_message(execution.message)
            done, final_message = execution.done, execution.final_message
            data = execution.result_data
        risk = risks.get(name, UNDECLARED)
        processed = (
            self.output_cache.process(raw, cut=risk.output_cut)
            if self.output_cache is not None
            else raw
        )
        self.history.append(processed)
        result_text = text_projection(processed.content)
        ref = processed.output_ref.id if processed.output_ref else None
        self._record(
            run,
            "tool.output",
            tool=name,
            tool_call_id=call.id,
            result_raw=_clip_for_log(text_projection(raw.content)),
            is_error=raw.is_error,
            output_ref=processed.output_ref.dump() if processed.output_ref else None,
        )
        parts = (
            [p.dump() for p in processed.content]
            if isinstance(processed.content, list) and has_non_text_part(processed.content)
            else None
        )
        self._emit(
            run,
            ev.ToolResultEvent(
                tool=name,
                result=result_text,
                tool_call_id=call.id,
                is_error=raw.is_error,
                parts=parts,
                output_ref=ref,
                data=data,
            ),
        )
        waited = run.approval_waits.pop(call.id, None)
        elapsed = time.monotonic() - started - (waited or 0.0)
        status: Literal["completed", "error"] = "error" if raw.is_error else "completed"
        self._emit(
            run,
            ev.StepCompleteEvent(
                step_id=call.id,
                status=status,
                duration_ms=max(0, js_round(elapsed * 1000)),
                approval_wait_ms=None if waited is None else max(0, js_round(waited * 1000)),
            ),
        )
        if self.budget.active:
            self._emit(run, budget_event(self.budget))
        if done:
            return final_message or ""
        return None

    def _permission_hook(self, run: _Run, tools: list[Tool]) -> Any:
        if self.permissions is None:
            return None
        return PermissionHookBuilder(
            policy=self.permissions,
            confirm=self.confirm,
            approvals=self.approvals,
            host_answers=self._host_answers,
            run_id=run.run_id,
            tools=tools,
            emit=lambda event: self._emit(run, event),
            approval_waits=run.approval_waits,
        ).hook

    def _trim(self) -> None:
        if self.output_cache is None:
            return
        trimmed = self.output_cache.trim(self.history, context_limit=self.llm.context_limit())
        if trimmed is not None:
            self.history = trimmed

    # ----------------------------------------------------------------------------- model calls

    async def _invoke(
        self, run: _Run, tools: list[Any] | None, choice: str | None
    ) -> ChatInvokeCompletion:
        self.invoke_seq += 1
        seq = self.invoke_seq
        new = self.history[self._logged_upto :]
        self._logged_upto = len(self.history)
        self._record(
            run,
            "llm.request",
            seq=seq,
            model={"provider": self.llm.provider, "name": self.llm.model},
            input={
                "new_messages": [m.dump() for m in new],
                "message_count": len(self.history),
                "tools": [t.name for t in tools or []],
                "tool_choice": choice,
            },
        )
        completion = await self._invoke_with_retries(run, self.history, tools, choice)
        self._logged_upto += len(completion.messages)
        self._record(
            run,
            "llm.response",
            seq=seq,
            output={
                "messages": [m.dump() for m in completion.messages],
                "usage": completion.usage.dump() if completion.usage else None,
                "stop_reason": completion.stop_reason,
            },
        )
        self._account(run, completion)
        return completion

    async def _invoke_with_retries(
        self,
        run: _Run,
        messages: list[Any],
        tools: list[Any] | None,
        choice: str | None,
        *,
        stream: bool = True,
    ) -> ChatInvokeCompletion:
        attempts = max(1, self.retry.max_attempts)
        streamed = False

        def on_text(delta: str) -> None:
            nonlocal streamed
            streamed = True
            self._emit(run, ev.TextDeltaEvent(delta=delta))

        for attempt in range(1, attempts + 1):
            streamed = False
            # A new redactor per attempt: what a failed attempt still held back is dropped with it.
            text = _DeltaStream(on_text)
            reasoning = _DeltaStream(lambda d: self._emit(run, ev.ReasoningDeltaEvent(delta=d)))
            try:
                completion = await self.llm.ainvoke(
                    list(messages),
                    tools=tools,
                    tool_choice=choice,
                    on_text_delta=text.feed if stream else None,
                    on_reasoning_delta=reasoning.feed if stream else None,
                    signal=run.signal,
                )
            except LlmError as exc:
                if streamed:
                    # The reply broke off mid-stream: what was shown of it will never complete.
                    self._emit(run, ev.TextDiscardedEvent())
                if not exc.retryable or attempt == attempts:
                    raise AgentRunError(
                        _llm_failure_text(exc, attempt), kind=exc.kind, status=exc.status
                    ) from exc
                delay, source = self.retry.delay(attempt, exc)
                self._emit(
                    run,
                    ev.LlmRetryEvent(
                        provider=self.llm.provider,
                        failure_kind=exc.kind if exc.kind in _RETRY_KINDS else "provider",
                        next_attempt=attempt + 1,
                        max_attempts=attempts,
                        delay_ms=js_round(delay * 1000),
                        delay_source=source,
                        status=exc.status,
                        message=str(exc),
                    ),
                )
                await asyncio.sleep(delay)
            else:
                text.flush()
                reasoning.flush()
                return completion
        raise AssertionError("unreachable")  # pragma: no cover

    def _account(self, run: _Run, completion: ChatInvokeCompletion) -> None:
        usage = completion.usage
        if usage is None:
            return
        cached = usage.input_cached_tokens or 0
        created = usage.input_cache_creation_tokens or 0
        self.usage.add(usage.input_tokens, usage.output_tokens, cached, created)
        self.usage.web_search_requests += usage.web_search_requests or 0
        self.usage.web_fetch_requests += usage.web_fetch_requests or 0
        self.usage.last_total_tokens = usage.total_tokens
        cost = self.llm.cost_usd(usage) if run.priced else None
        # An unpriced call spends nothing of a cost budget (its tokens still count).
        self.budget.add_usage(usage.input_tokens + usage.output_tokens, cost if run.priced else 0.0)
        if run.priced and cost is None:
            self.usage.cost_usd = None
        elif cost is not None and self.usage.cost_usd is not None:
            self.usage.cost_usd += cost
        limit = self.llm.context_limit(usage.model) or self.llm.context_limit()
        left: int | None = None
        if limit:
            left = (
                100 if usage.total_tokens <= 0 else js_round((1 - usage.total_tokens / limit) * 100)
            )
            left = min(100, max(0, left))
        self._emit(
            run,
            ev.UsageEvent(
                model=usage.model,
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
                cache_read_tokens=cached,
                cache_write_tokens=created,
                total_input_tokens=self.usage.input_tokens,
                total_output_tokens=self.usage.output_tokens,
                cost_usd=cost,
                total_cost_usd=self.usage.cost_usd,
                context_limit=limit,
                context_left_percent=left,
                web_search_requests=usage.web_search_requests,
                web_fetch_requests=usage.web_fetch_requests,
            ),
        )
        if self.budget.active:
            self._emit(run, budget_event(self.budget))

    async def _maybe_compact(self, run: _Run, *, mid_turn: bool, force: bool = False) -> bool:
        """Summarise the history when the last call filled the context window (see _compaction),
        or now when ``force`` (then with the default settings if compaction is off).
        True when the history was replaced."""
        config = self.compaction
        if force:
            config = config or CompactionConfig()
        elif config is None or not config.should_compact(
            self.usage.last_total_tokens, self.llm.context_limit()
        ):
            return False
        self._emit(run, ev.CompactionStartEvent())
        request = prepare_request(repair_history(self.history), config)
        compacted = False
        if request is not None:
            try:
                completion = await self._invoke_with_retries(
                    run, request, None, "none", stream=False
                )
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("compaction failed; keeping the full history")
            else:
                self._account(run, completion)
                reply = "\n".join(
                    answer_text(m.content)
                    for m in completion.messages
                    if isinstance(m, AssistantMessage) and m.content
                )
                retain, summary = parse_reply(reply)
                if summary:
                    self.history = rebuild(self.history, retain, summary, config)
                    if mid_turn and not isinstance(self.history[-1], UserMessage):
                        self.history.append(UserMessage(content=CONTINUE_PROMPT))
                    self._logged_upto = len(self.history)
                    self.usage.last_total_tokens = 0
                    compacted = True
        self._emit(run, ev.CompactionCompleteEvent(compacted=compacted))
        return compacted

    async def _summary(self, run: _Run, prompt: str) -> str:
        messages = [*repair_history(self.history), UserMessage(content=prompt)]
        try:
            completion = await self._invoke_with_retries(run, messages, None, "none")
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("end-of-turn summary failed")
            return SUMMARY_UNAVAILABLE
        self._account(run, completion)
        texts = [
            answer_text(m.content)
            for m in completion.messages
            if isinstance(m, AssistantMessage) and m.content
        ]
        return "\n".join(texts).strip() or SUMMARY_UNAVAILABLE


_RETRY_KINDS = ("rate_limit", "overloaded", "timeout", "network", "provider")

_STOP_NOTES: dict[str, str] = {
    "output_limit": "(This answer was cut off at the output limit{limit}.)",
    "context_window": (
        "(This answer was cut off: the conversation filled the model's context window.)"
    ),
    "content_filter": (
        "(The provider's content filter stopped this answer, so it may be incomplete.)"
    ),
}
"""Said under an answer that ended because a limit or a filter stopped it (keyed by the
completion's ``stop_kind``), so it is not taken as complete."""

NO_ANSWER_AT_LIMIT = (
    "(No answer: the model reached its output limit{limit} before writing one; a reasoning "
    "model can spend all of it on reasoning. Raise max_tokens (in a notebook: "
    "%config Codelia.max_tokens = ...) and ask again.)"
)

CUT_OFF_RESULT = (
    "Not run: this {tool} call was cut off at the output limit{limit} before its arguments "
    "were complete (only {chars} characters of them arrived), so nothing was executed or "
    "written. Make the change in smaller steps: write a short first version of a long file, "
    "then extend it with edit or apply_patch calls of a few hundred lines each."
)


@dataclass
class _Reply:
    """What one model reply says: its text passages, their citations, the calls it makes."""

    texts: list[str] = field(default_factory=list)
    citations: list[ev.Citation] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)

    def add_citations(self, raw: list[dict[str, Any]]) -> None:
        seen = {(c.url, c.title) for c in self.citations}
        for item in raw:
            citation = ev.Citation(
                title=_str_or_none(item.get("title") or item.get("document_title")),
                url=_str_or_none(item.get("url")),
                cited_text=_str_or_none(item.get("cited_text")),
            )
            key = (citation.url, citation.title)
            if key != (None, None) and key not in seen:
                seen.add(key)
                self.citations.append(citation)


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


async def _drain(queue: asyncio.Queue[Any], task: asyncio.Future[Any]) -> AsyncIterator[Any]:
    """Yield queued events until ``task`` ends, then re-raise its exception if any."""
    while True:
        if queue.empty() and task.done():
            break
        getter = asyncio.ensure_future(queue.get())
        done, _ = await asyncio.wait({getter, task}, return_when=asyncio.FIRST_COMPLETED)
        if getter in done:
            yield getter.result()
        else:
            getter.cancel()
    while not queue.empty():
        yield queue.get_nowait()
    task.result()


class _DeltaStream:
    """Passes streamed deltas on redacted; a secret split across two deltas is held back until
    it is whole, so the deltas never carry it and still add up to the redacted text."""

    def __init__(self, emit: Callable[[str], None]) -> None:
        self._emit = emit
        self._redactor = StreamRedactor()

    def feed(self, delta: str) -> None:
        safe = self._redactor.feed(delta)
        if safe:
            self._emit(safe)

    def flush(self) -> None:
        rest = self._redactor.flush()
        if rest:
            self._emit(rest)


def _user_message(prompt: str | list[ContentPart], context: tuple[TextPart, ...]) -> UserMessage:
    """The turn's user message: the prompt, then each context block as a text part of its own."""
    if not context:
        return UserMessage(content=prompt)
    parts: list[ContentPart] = [TextPart(text=prompt)] if isinstance(prompt, str) else [*prompt]
    parts.extend(context)
    return UserMessage(content=parts)


def _redact_message(message: ToolMessage) -> ToolMessage:
    """Mask secrets in a tool's output before the model, the UI or any log sees it."""
    content = message.content
    if isinstance(content, str):
        clean: str | list[Any] = redact_secrets(content)
    else:
        clean = [
            p.model_copy(update={"text": redact_secrets(p.text)}) if isinstance(p, TextPart) else p
            for p in content
        ]
    return message if clean == content else message.model_copy(update={"content": clean})


def _display_name(tools: ToolIndex, name: str) -> str | None:
    """How front ends title a call: a tool's ``display_name`` (an MCP tool names its server)."""
    tool = find_tool(tools, name)
    label = getattr(tool, "display_name", None) if tool is not None else None
    return label if isinstance(label, str) and label else None


def _event_args(raw: str) -> dict[str, Any]:
    """The ``tool_call`` event's args: the parsed object, else ``{"_raw": raw}``."""
    args = parse_tool_args(raw)
    return args if args is not None else {"_raw": raw}


def _clip_for_log(text: str) -> str:
    clipped = clip_utf8(text, _RAW_LOG_LIMIT)
    return clipped if clipped is text else clipped + "\n[clipped]"


def _title_of(history: list[Any]) -> str | None:
    """The session's title: the first line the person typed (context blocks are not theirs)."""
    for message in history:
        if isinstance(message, UserMessage):
            lines = prompt_text(message.content).strip().splitlines()
            if lines:
                return lines[0][:80]
    return None


def _llm_failure_text(exc: Exception, attempts: int) -> str:
    tried = f" after {attempts} attempts" if attempts > 1 else ""
    return f"The model request failed{tried}: {exc}"


def _default_output_cache(
    tools: ToolSet, output_store: ToolOutputCacheStore | None
) -> ToolOutputCache | None:
    """Save results in the explicit store, else the one the tools share (a ToolSet's, or the
    one the ``tool_output_cache`` reader tools read), so the refs the model gets are readable."""
    from ..cache import ToolOutputCache, ToolOutputCacheStore
    from ..standard_tools.output_cache import CacheReaderTool

    shared = tools.output_store
    if shared is not None and not isinstance(shared, ToolOutputCacheStore):
        raise TypeError(
            f"the tool set's output_store must be a ToolOutputCacheStore, not {type(shared)!r}"
        )
    store = output_store or shared
    if store is None:
        store = next((t.output_store for t in tools if isinstance(t, CacheReaderTool)), None)
    return ToolOutputCache(store)
