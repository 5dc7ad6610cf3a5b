"""Retries of model calls, owned by the agent (the SDK client has ``max_retries=0``).

Rate limits, overload, timeouts, network drops and 5xx are retried with the provider's
``Retry-After`` when it gives one, else exponential backoff with jitter; everything else fails at
once with the provider's message.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, cast

from ..llm.base import RetrySource


@dataclass(frozen=True)
class RetryConfig:
    max_attempts: int = 3
    base_delay_s: float = 1.0
    max_delay_s: float = 60.0
    max_retry_after_s: float = 60.0
    jitter: float = 0.2
    random: random.Random = field(default_factory=random.Random, compare=False)

    def delay(self, attempt: int, error: Any) -> tuple[float, RetrySource]:
        """Seconds to wait after failed ``attempt`` (1-based) and where that figure came from."""
        retry_after = getattr(error, "retry_after_s", None)
        if retry_after is not None and retry_after >= 0:
            source = cast(RetrySource, getattr(error, "retry_source", None) or "retry-after")
            return min(float(retry_after), self.max_retry_after_s), source
        backoff = min(self.base_delay_s * (2 ** (attempt - 1)), self.max_delay_s)
        spread = backoff * self.jitter
        return max(0.0, backoff + self.random.uniform(-spread, spread)), "backoff"
