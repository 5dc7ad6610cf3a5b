"""Delivering one run's events: to its widget panel and, as JSON envelopes, to the listeners.

Text deltas are coalesced for the listeners (the comm bridge) the same way the panel coalesces
its widget updates: at most one message per interval, so a long answer costs messages in
proportion to its duration, not its token count.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from ..agent import events as ev

if TYPE_CHECKING:
    from .panel import RunPanel
    from .results import RunStatus

Envelope = dict[str, Any]
Listener = Callable[[Envelope], None]


class Broadcaster(Protocol):
    listeners: list[Listener]

    def broadcast(self, envelope: Envelope) -> None: ...


@dataclass
class ActiveRun:
    run_id: str
    session_id: str
    prompt: str
    source: Literal["magic", "panel"]
    signal: Any  # tools.CancelSignal (imported lazily with the agent)
    mode: Literal["blocking", "background"]

    def cancel(self, reason: str) -> None:
        self.signal.cancel(reason)


class EventSink:
    """Delivers one run's events to its panel and to the listeners, coalescing text deltas."""

    def __init__(
        self, owner: Broadcaster, run: ActiveRun, panel: RunPanel | None, interval: float
    ) -> None:
        self.owner = owner
        self.run = run
        self.panel = panel
        self.interval = interval
        self._delta: list[str] = []
        self._delta_seq: int | None = None
        self._last_sent = float("-inf")

    def event(self, event: Any) -> None:
        if self.run.signal.is_set() and not isinstance(event, ev.FinalEvent):
            return  # nothing is delivered for a run after its cancel (spec §3)
        if self.panel is not None:
            self.panel.handle(event)
        if isinstance(event, ev.TextDeltaEvent):
            self._delta.append(event.delta)
            self._delta_seq = event.seq
            self.tick()
            return
        if isinstance(event, ev.TextDiscardedEvent):
            self._delta = []  # void text not sent yet never needs sending
        self._send_delta()
        self._broadcast_event(event)

    def tick(self) -> None:
        """Called by the driver's clock: flush coalesced text to the panel and the listeners."""
        if self.panel is not None:
            self.panel.flush_pending()
        if self._delta and time.monotonic() - self._last_sent >= self.interval:
            self._send_delta()

    def _send_delta(self) -> None:
        if not self._delta:
            return
        # The merged delta carries the number of the last delta in it, so numbers stay the agent's.
        merged = ev.TextDeltaEvent(delta="".join(self._delta), seq=self._delta_seq)
        self._delta = []
        self._last_sent = time.monotonic()
        self._broadcast_event(merged)

    def _broadcast_event(self, event: Any) -> None:
        if not self.owner.listeners:
            return
        payload = ev.event_to_json(event)
        self.owner.broadcast(
            {"type": "agent.event", "run_id": self.run.run_id, "seq": event.seq, "event": payload}
        )
        if isinstance(event, ev.PermissionRequestEvent):
            self.owner.broadcast(
                {
                    "type": "permission.request",
                    "run_id": self.run.run_id,
                    "permission_request_id": event.request_id,
                    "tool": event.tool,
                    "tool_call_id": event.tool_call_id,
                    "title": event.title,
                    "message": event.message,
                    "args": event.args,
                    "remember_rules": event.remember_rules,
                }
            )
            self.status("awaiting_ui", "waiting for confirmation")
        elif isinstance(event, ev.PermissionResolvedEvent):
            resolved: Envelope = {
                "type": "permission.resolved",
                "run_id": self.run.run_id,
                "permission_request_id": event.request_id,
                "decision": event.decision,
            }
            if event.reason:
                resolved["reason"] = event.reason
            self.owner.broadcast(resolved)
            self.status("running")
        elif isinstance(event, ev.TodosUpdatedEvent):
            self.owner.broadcast(
                {
                    "type": "todos.updated",
                    "session_id": event.session_id or self.run.session_id,
                    "todos": payload["todos"],
                }
            )

    def status(self, status: str, message: str | None = None) -> None:
        envelope: Envelope = {"type": "run.status", "run_id": self.run.run_id, "status": status}
        if message:
            envelope["message"] = message
        self.owner.broadcast(envelope)

    def finish(self, status: RunStatus, message: str | None) -> None:
        self._send_delta()
        if self.panel is not None:
            if message and status == "error":
                self.panel.show_error(message)
            self.panel.finish(status)
        self.status(status, message)


async def tick_forever(sink: EventSink, interval: float) -> None:
    while True:
        await asyncio.sleep(interval)
        sink.tick()
