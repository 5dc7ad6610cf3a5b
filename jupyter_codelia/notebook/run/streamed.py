"""The text the running turn streamed that its run log does not hold yet, for late panels.

The run log keeps every event but the streamed deltas: a model reply's text is logged once, as
a whole ``text`` event, after the reply ends. A side panel that connects in the middle of a
reply (a reloaded page, a panel opened mid-run) would replay the log and miss what was already
streamed. :class:`StreamedText` keeps exactly that missing part: the deltas sent to panels since
the last whole text (or reasoning) block, merged into stretches of consecutive numbers, so it
holds at most one reply's text. :func:`with_streamed` puts the stretches into a replayed
transcript at their place by ``seq``; a panel then goes live and drops by ``seq`` whatever it
already has, so nothing is shown twice and nothing is missing.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Literal

from ...agent import events as ev
from ...wire import event_message

StreamKind = Literal["text", "reasoning"]


@dataclass
class _Stretch:
    """Deltas of one kind with consecutive numbers ``first_seq`` … ``last_seq``, joined."""

    kind: StreamKind
    first_seq: int
    last_seq: int
    text: str


class StreamedText:
    """One run's streamed deltas not yet covered by a logged whole block (thread-safe: the
    run's sink adds, the comm bridge reads from a subshell)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stretches: list[_Stretch] = []

    def sent(self, event: Any, first_seq: int | None = None) -> None:
        """Note an event as panels receive it. ``first_seq``: the number of the first delta of a
        merged text delta (whose own ``seq`` is its last delta's)."""
        seq = getattr(event, "seq", None)
        if isinstance(event, ev.TextDeltaEvent | ev.ReasoningDeltaEvent):
            if not isinstance(seq, int):
                return
            kind: StreamKind = "text" if isinstance(event, ev.TextDeltaEvent) else "reasoning"
            self._add(kind, seq if first_seq is None else first_seq, seq, event.delta)
        elif isinstance(event, ev.TextEvent | ev.FinalEvent | ev.TextDiscardedEvent):
            self._drop("text")  # logged whole (or void): the log has it from here on
        elif isinstance(event, ev.ReasoningEvent):
            self._drop("reasoning")

    def _add(self, kind: StreamKind, first_seq: int, last_seq: int, text: str) -> None:
        with self._lock:
            last = self._stretches[-1] if self._stretches else None
            if last is not None and last.kind == kind and first_seq == last.last_seq + 1:
                last.text += text
                last.last_seq = last_seq
            else:
                self._stretches.append(_Stretch(kind, first_seq, last_seq, text))

    def _drop(self, kind: StreamKind) -> None:
        with self._lock:
            self._stretches = [s for s in self._stretches if s.kind != kind]

    def messages(self, run_id: str) -> list[dict[str, Any]]:
        """The stretches as ``agent.event`` messages, each numbered by its last delta."""
        with self._lock:
            stretches = list(self._stretches)
        out = []
        for stretch in stretches:
            delta: ev.TextDeltaEvent | ev.ReasoningDeltaEvent = (
                ev.TextDeltaEvent(delta=stretch.text, seq=stretch.last_seq)
                if stretch.kind == "text"
                else ev.ReasoningDeltaEvent(delta=stretch.text, seq=stretch.last_seq)
            )
            out.append(event_message(run_id, stretch.last_seq, ev.event_to_json(delta)))
        return out


def with_streamed(
    messages: list[dict[str, Any]], run_id: str, streamed: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """``messages`` (a replayed transcript) with the run's ``streamed`` deltas at their place:
    each after the run's last event numbered below it (or after the run's start)."""
    merged = list(messages)
    for delta in streamed:
        seq = delta["seq"]
        place = None
        for index, message in enumerate(merged):
            if message.get("run_id") != run_id:
                continue
            numbered = message.get("type") == "agent.event"
            if message.get("type") == "run.started" or (numbered and message["seq"] < seq):
                place = index + 1
        merged.insert(len(merged) if place is None else place, delta)
    return merged
