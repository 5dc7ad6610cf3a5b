"""Delivering one run's events: to its widget panel and, as JSON envelopes, to the listeners.

Text deltas are coalesced for the listeners (the comm bridge) the same way the panel coalesces
its widget updates: at most one message per interval, so a long answer costs messages in
proportion to its duration, not its token count.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from ...agent import events as ev
from ...wire import event_message, status_message
from .streamed import StreamedText

if TYPE_CHECKING:
    from ...wire import RunStatus as LiveStatus
    from ..ui.panel import RunPanel
    from .results import FinalStatus

Envelope = dict[str, Any]
Listener = Callable[[Envelope], None]


class Broadcaster(Protocol):
    listeners: list[Listener]

    def broadcast(self, envelope: Envelope) -> None: ...


@dataclass
class LiveRun:
    run_id: str
    session_id: str
    prompt: str
    source: Literal["magic", "panel"]
    signal: Any  # tools.CancelSignal (imported lazily with the agent)
    mode: Literal["blocking", "background"]
    streamed: StreamedText = field(default_factory=StreamedText)
    """What panels were sent of the reply in progress (a panel joining mid-run replays it)."""
    demo: bool = False
    """A scripted stand-in answers (the offline demo): the run's usage is never priced."""

    def cancel(self, reason: str) -> None:
        self.signal.cancel(reason)


class RunSink:
    """Delivers one run's events to its panel and to the listeners, coalescing text deltas."""

    def __init__(
        self, owner: Broadcaster, run: LiveRun, panel: RunPanel | None, interval: float
    ) -> None:
        self.owner = owner
        self.run = run
        self.panel = panel
        self.interval = interval
        self._delta: list[str] = []
        self._delta_first_seq: int | None = None
        self._delta_seq: int | None = None
        self._last_sent = float("-inf")

    def event(self, event: Any) -> None:
        if self.run.signal.is_set() and not isinstance(event, ev.FinalEvent):
            return  # nothing is delivered for a run after its cancel
        if self.panel is not None:
            self.panel.handle(event)
        if isinstance(event, ev.TextDeltaEvent):
            if not self._delta:
                self._delta_first_seq = event.seq
            self._delta.append(event.delta)
            self._delta_seq = event.seq
            self.tick()
            return
        if isinstance(event, ev.TextDiscardedEvent):
            self._delta = []  # void text not sent yet never needs sending
        self._send_delta()
        self.run.streamed.sent(event)
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
        self.run.streamed.sent(merged, first_seq=self._delta_first_seq)
        self._broadcast_event(merged)

    def _broadcast_event(self, event: Any) -> None:
        if not self.owner.listeners:
            return
        # Each update is sent once, as the agent event itself; a panel learns of approval
        # requests and todo lists from their events. Only the run's status is derived here.
        self.owner.broadcast(event_message(self.run.run_id, event.seq, ev.event_to_json(event)))
        if isinstance(event, ev.PermissionRequestEvent):
            self.status("awaiting_ui", "waiting for confirmation")
        elif isinstance(event, ev.PermissionResolvedEvent):
            self.status("running")

    def status(self, status: LiveStatus, message: str | None = None) -> None:
        self.owner.broadcast(status_message(self.run.run_id, status, message))

    def finish(self, status: FinalStatus, message: str | None) -> None:
        self._send_delta()
        if self.panel is not None:
            if message and status == "error":
                self.panel.show_error(message)
            self.panel.finish(status)
        self.status(status, message)


async def tick_forever(sink: RunSink, interval: float) -> None:
    while True:
        await asyncio.sleep(interval)
        sink.tick()
