"""Read/grep limits of the cache store and their environment overrides.

Each limit may be overridden by ``JUPYTER_CODELIA_TOOL_OUTPUT_CACHE_<NAME>`` (for example
``..._MAX_READ_BYTES``). As in the reference, a value that is not a positive integer falls back
to the default; we log a warning naming the variable so the mistake is visible.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass

logger = logging.getLogger("jupyter_codelia.cache")

ENV_PREFIX = "JUPYTER_CODELIA_TOOL_OUTPUT_CACHE_"
DEFAULT_MAX_LINE_LENGTH = 1000
DEFAULT_MAX_READ_BYTES = 65536
DEFAULT_MAX_GREP_BYTES = 65536
DEFAULT_MAX_MATCHES = 50
DEFAULT_CHAR_LIMIT = 10000
MAX_CHAR_LIMIT = 100000
DEFAULT_MAX_DISK_BYTES = 1_000_000_000


def env_positive_int(name: str, default: int, environ: Mapping[str, str] | None = None) -> int:
    """``ENV_PREFIX + name`` as a positive int, else ``default`` (with a warning if it was set)."""
    env = os.environ if environ is None else environ
    variable = ENV_PREFIX + name
    raw = env.get(variable)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        value = 0
    if value <= 0:
        logger.warning(
            "%s=%r is not a positive integer; using the default %d", variable, raw, default
        )
        return default
    return value


@dataclass(frozen=True)
class CacheLimits:
    """Bounds on what one read or grep returns (graphemes for line length, UTF-8 bytes else)."""

    max_line_length: int = DEFAULT_MAX_LINE_LENGTH
    max_read_bytes: int = DEFAULT_MAX_READ_BYTES
    max_grep_bytes: int = DEFAULT_MAX_GREP_BYTES

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> CacheLimits:
        return cls(
            max_line_length=env_positive_int("MAX_LINE_LENGTH", DEFAULT_MAX_LINE_LENGTH, environ),
            max_read_bytes=env_positive_int("MAX_READ_BYTES", DEFAULT_MAX_READ_BYTES, environ),
            max_grep_bytes=env_positive_int("MAX_GREP_BYTES", DEFAULT_MAX_GREP_BYTES, environ),
        )
