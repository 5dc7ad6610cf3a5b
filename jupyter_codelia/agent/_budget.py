"""Budgets: limits on what a run and a session may spend, and the meter that checks them.

Four measures are limited, each per run and per session: cost in USD, tokens (input plus output
of every model call), tool calls and wall-clock seconds. The agent checks the budget only at safe
points, before a model call and before each tool call, so a limit never cuts a tool in half;
once reached, the run ends with a summary call (which may spend a little beyond the limit) and a
``budget`` event saying which limit was reached.

A cost limit with a model whose price is unknown cannot be checked: it is reported as reached at
the first check rather than silently ignored.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ..llm.messages import ToolCall, ToolMessage
from .events import BudgetEvent

Scope = Literal["run", "session"]
MEASURES = ("max_cost_usd", "max_tokens", "max_tool_calls", "max_wall_seconds")

BUDGET_PROMPT = (
    "The budget for this work has been reached ({reason}). Without calling any tools, write a "
    "concise summary for the user: what was done, what is still pending, and what to do next."
)
BUDGET_PREFIX = "[Budget Reached: {reason}]\n\n"
TOOL_NOT_RUN = "Not run: the {reason}. The run is ending."


class BudgetLimits(BaseModel):
    """Limits of one scope; None means unlimited."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_cost_usd: float | None = Field(default=None, gt=0)
    max_tokens: int | None = Field(default=None, gt=0)
    max_tool_calls: int | None = Field(default=None, gt=0)
    max_wall_seconds: float | None = Field(default=None, gt=0)

    def is_unlimited(self) -> bool:
        return all(getattr(self, name) is None for name in MEASURES)

    def as_dict(self) -> dict[str, float]:
        return {name: float(v) for name in MEASURES if (v := getattr(self, name)) is not None}


@dataclass
class Spend:
    cost_usd: float | None = 0.0
    tokens: int = 0
    tool_calls: int = 0
    started: float = field(default_factory=time.monotonic)
    wall_before: float = 0.0  # seconds of earlier runs (session scope)
    running: bool = False

    def wall_seconds(self) -> float:
        live = time.monotonic() - self.started if self.running else 0.0
        return self.wall_before + live

    def as_dict(self) -> dict[str, float | None]:
        return {
            "cost_usd": None if self.cost_usd is None else round(self.cost_usd, 6),
            "tokens": self.tokens,
            "tool_calls": self.tool_calls,
            "wall_seconds": round(self.wall_seconds(), 3),
        }


@dataclass(frozen=True)
class BudgetReached:
    scope: Scope
    measure: str
    spent: float | None
    limit: float

    @property
    def reason(self) -> str:
        labels: dict[str, tuple[str, Callable[[float], str]]] = {
            "max_cost_usd": ("cost", lambda v: f"${v:.4f}"),
            "max_tokens": ("tokens", lambda v: f"{int(v):,}"),
            "max_tool_calls": ("tool calls", lambda v: f"{int(v)}"),
            "max_wall_seconds": ("wall time", lambda v: f"{v:.1f} s"),
        }
        label, fmt = labels[self.measure]
        if self.spent is None:
            return (
                f"{self.scope} budget of {fmt(self.limit)} {label} cannot be checked: the "
                "model's price is unknown"
            )
        return f"{self.scope} budget of {fmt(self.limit)} {label} reached ({fmt(self.spent)})"


class BudgetMeter:
    """Spend of the current run and of the session against their limits."""

    def __init__(self) -> None:
        self.run_limits = BudgetLimits()
        self.session_limits = BudgetLimits()
        self.run = Spend()
        self.session = Spend()

    def configure(
        self, *, run: BudgetLimits | None = None, session: BudgetLimits | None = None
    ) -> None:
        self.run_limits = run or BudgetLimits()
        self.session_limits = session or BudgetLimits()

    @property
    def active(self) -> bool:
        return not (self.run_limits.is_unlimited() and self.session_limits.is_unlimited())

    def start_run(self) -> None:
        now = time.monotonic()
        self.run = Spend(started=now, running=True)
        self.session.started = now
        self.session.running = True

    def end_run(self) -> None:
        self.session.wall_before = self.session.wall_seconds()
        self.session.running = False
        self.run.wall_before = self.run.wall_seconds()
        self.run.running = False

    def add_usage(self, tokens: int, cost_usd: float | None) -> None:
        for spend in (self.run, self.session):
            spend.tokens += tokens
            if cost_usd is None:
                spend.cost_usd = None
            elif spend.cost_usd is not None:
                spend.cost_usd += cost_usd

    def add_tool_call(self) -> None:
        self.run.tool_calls += 1
        self.session.tool_calls += 1

    def check(self) -> BudgetReached | None:
        """The first limit reached (run before session), or None."""
        scopes: tuple[tuple[Scope, BudgetLimits, Spend], ...] = (
            ("run", self.run_limits, self.run),
            ("session", self.session_limits, self.session),
        )
        for scope, limits, spend in scopes:
            values: dict[str, float | None] = {
                "max_cost_usd": spend.cost_usd,
                "max_tokens": spend.tokens,
                "max_tool_calls": spend.tool_calls,
                "max_wall_seconds": spend.wall_seconds(),
            }
            for measure in MEASURES:
                limit = getattr(limits, measure)
                if limit is None:
                    continue
                spent = values[measure]
                if spent is None or spent >= limit:
                    return BudgetReached(scope, measure, spent, float(limit))
        return None


def budget_event(meter: BudgetMeter, reached: BudgetReached | None = None) -> BudgetEvent:
    return BudgetEvent(
        run_spent=meter.run.as_dict(),
        run_limits=meter.run_limits.as_dict(),
        session_spent=meter.session.as_dict(),
        session_limits=meter.session_limits.as_dict(),
        reached=reached.reason if reached is not None else None,
    )


def not_run_messages(calls: list[ToolCall], reached: BudgetReached) -> list[ToolMessage]:
    """Results for the calls of a reply that the budget stopped before they ran."""
    return [
        ToolMessage(
            tool_call_id=call.id,
            tool_name=call.function.name,
            content=TOOL_NOT_RUN.format(reason=reached.reason),
            is_error=True,
        )
        for call in calls
    ]
