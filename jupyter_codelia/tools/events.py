"""Events: the base every run event derives from, and the events tools themselves send.

A tool sends an event through its context (``ctx.send``) while it runs: the todo tools announce
the new list this way, and a tool relaying a server's progress sends ``tool.progress``. They are
defined here, below the tools that send them; the agent's own events and the union of all of
them are in ``jupyter_codelia.agent.events``.
"""

from __future__ import annotations

import time
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


def now_ms() -> int:
    return int(time.time() * 1000)


class Event(BaseModel):
    """The base of every event a run reports (frozen, JSON with a ``type`` discriminator)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    # The event's number within its run, given once by the agent when it emits the event (every
    # event, streamed deltas included). Every channel - the cell panel, the comm, the run log and
    # a transcript replay - carries this same number, so a front end that joins mid-run or
    # replays history and then goes live can drop duplicates and keep order by ``seq`` alone.
    seq: int | None = None


class TodoItemView(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)
    id: str
    content: str
    status: Literal["pending", "in_progress", "completed"]
    priority: int = 3
    notes: str | None = None
    active_form: str | None = Field(default=None, alias="activeForm")


class TodosUpdatedEvent(Event):
    type: Literal["todos.updated"] = "todos.updated"
    session_id: str | None = None
    todos: list[TodoItemView]


class ToolProgressEvent(Event):
    """Progress or a log line of a running call, shown on its tool card (``tool.progress``)."""

    type: Literal["tool.progress"] = "tool.progress"
    tool_call_id: str | None = None
    progress: float | None = None
    total: float | None = None
    message: str | None = None
    level: str | None = None
    """Set for a log line (the server's level: debug, info, warning, error, ...)."""
