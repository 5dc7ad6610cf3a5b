"""Session data: the resume snapshot, its list summary, the errors and the id rules.

Owns what a saved session looks like and how ids and timestamps are spelled, so the store, the
run logs and the index agree byte for byte.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..errors import CodeliaError

SCHEMA_VERSION = 1

# Ids become file names: no separators, no leading dot, bounded length.
_ID_PATTERN = re.compile(r"[A-Za-z0-9_\-][A-Za-z0-9_.\-]{0,127}")

# A huge pasted prompt must not bloat the index, which is rewritten on every save.
_SUMMARY_TEXT_LIMIT = 500


class SessionNotFound(CodeliaError, KeyError):  # noqa: N818 (the name is public API)
    """The session has no snapshot (``load_state``), or neither a snapshot nor a run log
    (``run_log_paths``, ``transcript``)."""

    def __init__(self, session_id: str) -> None:
        super().__init__(session_id)
        self.session_id = session_id

    def __str__(self) -> str:
        return f"session not found: {self.session_id}"


class SessionLoadError(CodeliaError):
    """A snapshot exists but cannot be read; the message starts with ``session load failed:``."""

    def __init__(self, session_id: str, reason: str) -> None:
        super().__init__(f"session load failed: {session_id}: {reason}")
        self.session_id = session_id


class SessionConflictError(CodeliaError):
    """Another process saved the session since this writer loaded or last saved it."""

    def __init__(self, session_id: str, on_disk: int, expected: int) -> None:
        super().__init__(
            f"session {session_id} was saved by another process meanwhile (generation {on_disk}, "
            f"this writer expected {expected})"
        )
        self.session_id = session_id
        self.on_disk = on_disk
        self.expected = expected


class InvalidSessionIdError(CodeliaError, ValueError):
    """A session or run id that cannot name a file in the store."""

    def __init__(self, kind: str, value: object) -> None:
        super().__init__(
            f"invalid {kind} {value!r}: use 1-128 letters, digits, '_', '-' or '.' "
            "(not starting with '.'); new ids come from SessionStore.new_session_id()"
        )


def check_id(kind: str, value: object) -> str:
    """``value`` if it is a valid ``kind`` id (``"session id"`` or ``"run id"``), else raise."""
    if not isinstance(value, str) or _ID_PATTERN.fullmatch(value) is None:
        raise InvalidSessionIdError(kind, value)
    return value


def iso_now() -> str:
    """The current UTC time as ``2026-01-31T12:34:56.789Z``."""
    return format_utc(datetime.now(timezone.utc))


def format_utc(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse_utc(text: str) -> datetime:
    """Parse an ISO-8601 timestamp with an offset (``Z`` allowed); ValueError otherwise."""
    # datetime.fromisoformat only learnt "Z" in Python 3.11.
    normalized = text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text
    try:
        moment = datetime.fromisoformat(normalized)
    except ValueError:
        raise ValueError(
            f"invalid timestamp {text!r}: expected ISO-8601 UTC like 2026-01-31T12:34:56.789Z"
        ) from None
    if moment.tzinfo is None:
        raise ValueError(
            f"timestamp {text!r} has no UTC offset: expected ISO-8601 UTC like "
            "2026-01-31T12:34:56.789Z"
        )
    return moment


class SessionState(BaseModel):
    """The resume snapshot of one session: rewritten whole on every save."""

    # Readers ignore fields they do not know, so older versions read newer snapshots.
    model_config = ConfigDict(extra="ignore")

    schema_version: int = Field(default=SCHEMA_VERSION, ge=1)
    session_id: str
    updated_at: str = Field(default_factory=iso_now)
    run_id: str | None = None
    invoke_seq: int = Field(default=0, ge=0)
    # Bumped by every save; a writer that expected another one lost a race with another process.
    # Kept before ``messages`` so a save can read it from the head of the file.
    generation: int = Field(default=0, ge=0)
    messages: list[dict[str, Any]] = Field(default_factory=list)
    meta: dict[str, Any] = Field(default_factory=dict)
    title: str | None = None

    @field_validator("session_id")
    @classmethod
    def _valid_session_id(cls, value: str) -> str:
        return check_id("session id", value)

    @field_validator("updated_at")
    @classmethod
    def _canonical_timestamp(cls, value: str) -> str:
        # One spelling for every timestamp, so the index can order them as strings.
        return format_utc(parse_utc(value))


class SessionSummary(BaseModel):
    """One row of :meth:`SessionStore.list_sessions`."""

    session_id: str
    updated_at: str
    message_count: int
    last_user_message: str | None = None
    title: str | None = None


def summary_of(snapshot: dict[str, Any]) -> SessionSummary:
    """The list summary of a snapshot in its saved (JSON, already redacted) form.

    Built from the redacted form on purpose: clipping first could cut a secret in half and
    leave its prefix unrecognisable to the redactor.
    """
    messages = snapshot["messages"]
    return SessionSummary(
        session_id=snapshot["session_id"],
        updated_at=snapshot["updated_at"],
        message_count=len(messages),
        last_user_message=last_user_text(messages),
        title=snapshot.get("title"),
    )


def last_user_text(messages: list[dict[str, Any]]) -> str | None:
    """What the person last typed: the newest user message with text of theirs (its text parts
    joined, context blocks the agent added left out), clipped for the list view."""
    for message in reversed(messages):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            text = content
        elif isinstance(content, list):
            text = "".join(
                part["text"]
                for part in content
                if isinstance(part, dict)
                and part.get("type") == "text"
                and isinstance(part.get("text"), str)
                and part.get("context") is None
            )
        else:
            continue
        text = text.strip()
        if not text:
            continue  # a reminder of the agent's own, or only images
        if len(text) > _SUMMARY_TEXT_LIMIT:
            text = text[: _SUMMARY_TEXT_LIMIT - 1] + "…"
        return text
    return None
