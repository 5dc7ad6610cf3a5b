"""Model prices and context windows, looked up in ``genai-prices`` (never guessed).

``genai-prices`` is the maintained price database (cache reads and writes, web searches
included) and also knows each model's context window; the model tables (:mod:`.models` for
Claude, :mod:`.openai.models` for the rest) back the window up when the database does not
list a model. Unknown prices give None: the UI shows
"unknown".
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from .anthropic import models
from .messages import ChatInvokeUsage


@lru_cache(maxsize=64)
def _model_info(model: str, provider: str) -> Any | None:
    from genai_prices.data_snapshot import get_snapshot

    try:
        _provider, info = get_snapshot().find_provider_model(model, None, provider, None)
    except LookupError:
        return None
    return info


def listed_context_window(model: str, provider: str) -> int | None:
    """The context window genai-prices lists for ``model``, or None."""
    info = _model_info(model, provider)
    window = getattr(info, "context_window", None) if info is not None else None
    return window if isinstance(window, int) and window > 0 else None


def context_limit(model: str, provider: str = "anthropic") -> int | None:
    """Maximum input tokens of a Claude ``model``, or None when neither source knows it."""
    window = listed_context_window(model, provider)
    return window if window is not None else models.capabilities(model).context_window


def cost_usd(usage: ChatInvokeUsage, provider: str = "anthropic") -> float | None:
    """Price of one call's usage in US dollars, or None when the model's price is unknown.

    ``usage.input_tokens`` already includes cache reads and writes, which is what genai-prices
    expects of ``input_tokens``; server-side web searches are billed per search.
    """
    from genai_prices import Usage, calc_price

    priced = Usage(
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cache_read_tokens=usage.input_cached_tokens or None,
        cache_write_tokens=usage.input_cache_creation_tokens or None,
        web_searches=usage.web_search_requests or None,
    )
    try:
        price = calc_price(priced, model_ref=usage.model, provider_id=provider)
    except (LookupError, ValueError):  # unknown model, or no price for this kind of usage
        return None
    return float(price.total_price)


__all__ = ["context_limit", "cost_usd", "listed_context_window"]
