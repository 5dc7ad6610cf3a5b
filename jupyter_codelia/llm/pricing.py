"""Model prices and context windows, looked up in ``genai-prices`` (never guessed).

``genai-prices`` is the maintained price database (cache reads and writes included) and also
knows each model's context window; a short table of current Claude models backs the window up
when the database does not list a model. Unknown models give None: the UI shows "unknown".
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from .messages import ChatInvokeUsage

# Maximum input tokens of current Claude models (anthropic.types.Model, checked 2026-11-29),
# used only when genai-prices does not know the model.
CLAUDE_CONTEXT_WINDOWS: dict[str, int] = {
    "claude-opus-5-5": 1_000_000,
    "claude-sonnet-5-5": 1_000_000,
    "claude-haiku-5-5": 1_000_000,
    "claude-opus-5": 1_000_000,
    "claude-sonnet-5": 1_000_000,
    "claude-opus-4-8": 1_000_000,
    "claude-opus-4-7": 1_000_000,
    "claude-opus-4-6": 1_000_000,
    "claude-sonnet-4-6": 1_000_000,
    "claude-haiku-4-5": 200_000,
    "claude-opus-4-5": 200_000,
    "claude-sonnet-4-5": 200_000,
}


@lru_cache(maxsize=64)
def _model_info(model: str, provider: str) -> Any | None:
    from genai_prices.data_snapshot import get_snapshot

    try:
        _provider, info = get_snapshot().find_provider_model(model, None, provider, None)
    except LookupError:
        return None
    return info


def context_limit(model: str, provider: str = "anthropic") -> int | None:
    """Maximum input tokens of ``model``, or None when neither source knows it."""
    info = _model_info(model, provider)
    window = getattr(info, "context_window", None) if info is not None else None
    if isinstance(window, int) and window > 0:
        return window
    if model in CLAUDE_CONTEXT_WINDOWS:
        return CLAUDE_CONTEXT_WINDOWS[model]
    # Dated snapshots ("claude-haiku-4-5-20251001") share their family's window.
    for known, size in CLAUDE_CONTEXT_WINDOWS.items():
        if model.startswith(known + "-") and model[len(known) + 1 :].isdigit():
            return size
    return None


def cost_usd(usage: ChatInvokeUsage, provider: str = "anthropic") -> float | None:
    """Price of one call's usage in US dollars, or None when the model's price is unknown.

    ``usage.input_tokens`` already includes cache reads and writes, which is what genai-prices
    expects of ``input_tokens``.
    """
    from genai_prices import Usage, calc_price

    priced = Usage(
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cache_read_tokens=usage.input_cached_tokens or None,
        cache_write_tokens=usage.input_cache_creation_tokens or None,
    )
    try:
        price = calc_price(priced, model_ref=usage.model, provider_id=provider)
    except (LookupError, ValueError):  # unknown model, or no price for this kind of usage
        return None
    return float(price.total_price)


__all__ = ["CLAUDE_CONTEXT_WINDOWS", "context_limit", "cost_usd"]
