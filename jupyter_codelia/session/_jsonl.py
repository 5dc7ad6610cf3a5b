"""JSON Lines encoding and tolerant reading for run logs and snapshots.

Owns the byte format: every record is redacted, made JSON-ready (pydantic models, paths, sets,
datetimes are converted; NaN and infinities become null) and written as one UTF-8 line of
standard JSON. Reading skips what a crash or a stray
writer can leave behind (a torn last line, undecodable or non-object lines) instead of failing.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .._redact import redact_secrets


def to_json_ready(value: Any, *, what: str) -> Any:
    """``value`` as plain JSON data with secrets redacted; TypeError naming ``what`` otherwise."""
    from pydantic_core import PydanticSerializationError, to_jsonable_python

    try:
        # NaN/Infinity are not JSON: written as null, as JavaScript's JSON.stringify does, so
        # the side panel (a browser) can parse every record.
        plain = to_jsonable_python(value, inf_nan_mode="null")
    except PydanticSerializationError as exc:
        raise TypeError(
            f"{what} is not JSON-serializable ({exc}); pass plain data or pydantic models"
        ) from None
    return redact_secrets(plain)


def encode_json(value: Any) -> bytes:
    """Compact UTF-8 JSON of already JSON-ready data (no trailing newline)."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        # Lone surrogates (e.g. from undecodable tool output) cannot be UTF-8; escaped as \udXXX
        # they survive a round trip instead of corrupting the file.
        return json.dumps(value, ensure_ascii=True, separators=(",", ":")).encode("ascii")


def read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    """The JSON objects of a JSONL file, in order.

    Blank lines, a torn last line (a crash mid-write), lines that are not valid UTF-8 JSON and
    JSON values that are not objects are skipped: a damaged log stays readable.
    """
    with open(path, "rb") as file:
        for raw in file:
            if not raw.strip():
                continue
            try:
                record = json.loads(raw)
            except ValueError:  # includes UnicodeDecodeError
                continue
            if isinstance(record, dict):
                yield record
