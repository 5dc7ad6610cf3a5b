"""What each Claude model can do, in one table: context window, output limit and thinking form.

The provider sizes ``max_tokens`` from the output limit, chooses the thinking request a model
accepts (``{"type": "enabled", "budget_tokens": N}`` or ``{"type": "adaptive"}`` with an effort),
and the notebook checks a ``--model`` id against :func:`known_models` before a run starts.

Every id of the installed SDK's ``anthropic.types.Model`` list has a row (a test holds us to
that). Dated snapshots (``claude-haiku-4-5-20251001``) share their family's row. An id we do not
know gets :data:`UNKNOWN_MODEL` — a conservative output limit, budget thinking, no known window —
and one log note per id, so a newer model than this table still works.

Pure data and the standard library: imported by ``%load_ext`` paths, so it stays cheap; the SDK
is imported only by :func:`known_models`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Literal

log = logging.getLogger("jupyter_codelia.llm")

ThinkingForm = Literal["adaptive", "budget"]
Effort = Literal["low", "medium", "high", "xhigh", "max"]

DEFAULT_MAX_TOKENS_CAP = 32_000
"""The default ``max_tokens`` is the model's output limit, capped here: the API counts
``max_tokens`` against the output-tokens-per-minute rate limit when a request starts, so asking
for the full 128k on every call would throttle a busy key for no gain (raise it per call or with
``%config Codelia.max_tokens``)."""


@dataclass(frozen=True)
class ModelCapabilities:
    """One model's limits.

    ``context_window``: maximum input tokens (None: unknown). ``max_output_tokens``: the largest
    ``max_tokens`` the model accepts. ``thinking``: ``"adaptive"`` models refuse a caller-set
    budget and take ``{"type": "adaptive"}`` (plus ``output_config.effort``); ``"budget"``
    models take ``{"type": "enabled", "budget_tokens": N}``. ``efforts``: the
    ``output_config.effort`` values the model accepts (empty: the setting is not sent).
    """

    context_window: int | None
    max_output_tokens: int
    thinking: ThinkingForm
    efforts: tuple[Effort, ...] = ()

    @property
    def default_max_tokens(self) -> int:
        return min(self.max_output_tokens, DEFAULT_MAX_TOKENS_CAP)


_EFFORTS: tuple[Effort, ...] = ("low", "medium", "high", "max")
_EFFORTS_XHIGH: tuple[Effort, ...] = ("low", "medium", "high", "xhigh", "max")

_ADAPTIVE_1M_128K = ModelCapabilities(1_000_000, 128_000, "adaptive", _EFFORTS_XHIGH)

# Current Claude models (checked against anthropic.types.Model of SDK 2.15 on 2026-12-01).
# Opus 4.6, Sonnet 4.6 and every later model think adaptively; Opus 4.7 onwards answer a
# ``budget_tokens`` request with HTTP 400, and the SDK warns about it for Opus 4.6.
CLAUDE_MODELS: dict[str, ModelCapabilities] = {
    "claude-fable-5-2": _ADAPTIVE_1M_128K,
    "claude-mythos-5-2": _ADAPTIVE_1M_128K,
    "claude-opus-5-5": _ADAPTIVE_1M_128K,
    "claude-sonnet-5-5": _ADAPTIVE_1M_128K,
    "claude-haiku-5-5": ModelCapabilities(1_000_000, 64_000, "adaptive", _EFFORTS),
    "claude-fable-5-1": _ADAPTIVE_1M_128K,
    "claude-mythos-5-1": _ADAPTIVE_1M_128K,
    "claude-fable-5": _ADAPTIVE_1M_128K,
    "claude-mythos-5": _ADAPTIVE_1M_128K,
    "claude-opus-5": _ADAPTIVE_1M_128K,
    "claude-sonnet-5": _ADAPTIVE_1M_128K,
    "claude-mythos-preview": _ADAPTIVE_1M_128K,
    "claude-opus-4-8": _ADAPTIVE_1M_128K,
    "claude-opus-4-7": _ADAPTIVE_1M_128K,
    "claude-opus-4-6": ModelCapabilities(1_000_000, 128_000, "adaptive", _EFFORTS),
    "claude-sonnet-4-6": ModelCapabilities(1_000_000, 64_000, "adaptive", _EFFORTS),
    "claude-opus-4-5": ModelCapabilities(200_000, 64_000, "budget", _EFFORTS),
    "claude-sonnet-4-5": ModelCapabilities(200_000, 64_000, "budget"),
    "claude-haiku-4-5": ModelCapabilities(200_000, 64_000, "budget"),
}

UNKNOWN_MODEL = ModelCapabilities(context_window=None, max_output_tokens=8_192, thinking="budget")
"""What an id missing from the table gets: 8,192 output tokens (every Claude model since 3.5
accepts that), budget thinking, no effort setting and no known window."""

_noted_unknown: set[str] = set()


def _family(model: str) -> str | None:
    """The table row a model id belongs to: itself, or the id without a ``-YYYYMMDD`` date."""
    if model in CLAUDE_MODELS:
        return model
    base, _, suffix = model.rpartition("-")
    if base in CLAUDE_MODELS and len(suffix) == 8 and suffix.isdigit():
        return base
    return None


def capabilities(model: str) -> ModelCapabilities:
    """The row of ``model``; :data:`UNKNOWN_MODEL` (noted once in the log) when none fits."""
    family = _family(model)
    if family is not None:
        return CLAUDE_MODELS[family]
    note_unknown_model(
        model,
        "model %r is not in jupyter_codelia's model table; using max_tokens=%d, budget "
        "thinking and an unknown context window",
        UNKNOWN_MODEL.max_output_tokens,
    )
    return UNKNOWN_MODEL


def note_unknown_model(model: str, message: str, *details: object) -> None:
    """Log ``message % (model, *details)`` the first time ``model`` is looked up, not again:
    a model newer than the tables works, and says once what it was given."""
    if model not in _noted_unknown:
        _noted_unknown.add(model)
        log.info(message, model, *details)


def known_models() -> list[str]:
    """Model ids a run may name: this table plus the installed SDK's ``anthropic.types.Model``."""
    from typing import get_args

    from anthropic.types import Model

    listed: list[str] = []
    for member in get_args(Model):
        listed.extend(arg for arg in get_args(member) if isinstance(arg, str))
    return sorted(set(CLAUDE_MODELS) | set(listed))


def is_known_model(model: str) -> bool:
    """True for a table or SDK id, or a dated snapshot of a table id."""
    return _family(model) is not None or model in known_models()


def effort_for_budget(budget: int) -> Effort:
    """A thinking budget in tokens → the ``output_config.effort`` adaptive models take instead."""
    if budget < 4_096:
        return "low"
    if budget < 16_384:
        return "medium"
    if budget < 32_768:
        return "high"
    return "max"


__all__ = [
    "CLAUDE_MODELS",
    "DEFAULT_MAX_TOKENS_CAP",
    "UNKNOWN_MODEL",
    "Effort",
    "ModelCapabilities",
    "ThinkingForm",
    "capabilities",
    "effort_for_budget",
    "is_known_model",
    "known_models",
    "note_unknown_model",
]
