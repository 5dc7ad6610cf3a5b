"""Secret redaction for everything that leaves the agent.

Owns the rule for what a secret is and the one function that masks secrets in outgoing data:
tool outputs, events, run-log records and session snapshots all pass through
:func:`redact_secrets`.

A secret is

* the value (at least 8 characters) of any environment variable whose *name* contains ``KEY``,
  ``TOKEN``, ``SECRET`` or ``PASSWORD`` (case-insensitive), read live from ``os.environ``;
* any value registered with :func:`register_secret` (e.g. an ``api_key=`` passed in code);
* anything shaped like a well-known credential (``sk-ant-...``, ``sk-...``, ``ghp_...``,
  ``github_pat_...``, ``AKIA...``, ``xoxb-...``, ``hf_...``, ``AIza...``), even when it is not
  in the environment.

Every occurrence is replaced by ``[REDACTED]``, also where a secret is spelled inside a JSON
string (escaped quotes and backslashes) or percent-encoded (a password in a connection URL).

Speed matters: this runs on every event and record, and an ``llm.request`` record carries the
whole history. Measured on this machine, Python's regex engine scans an alternation of literals
(``secret1|secret2|sk-ant-...``) at ~130 ns per character, while ``in``/``str.replace`` and a
regex that starts with a literal scan at ~1 ns. So a string longer than 256 characters is
scanned with one ``in``/``replace`` per secret and one literal-prefixed regex per key pattern
(17 MB: ~0.1-0.3 s instead of ~2 s), while shorter ones (most event fields) are first tested
with one compiled alternation of every secret and pattern, which costs about a microsecond and
is the faster test at that size. Nothing is compiled per call: the key patterns are compiled at
import and the alternation only when the set of secrets changes; noticing an environment change
costs one dict comparison (~3 µs).
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import quote

from pydantic import BaseModel

__all__ = ["REDACTED", "StreamRedactor", "redact_secrets", "register_secret"]

REDACTED = "[REDACTED]"

#: Secrets shorter than this are ignored: masking every "abc" would mangle ordinary text.
MIN_SECRET_LENGTH = 8

_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD", re.IGNORECASE)

# Up to this length the combined alternation is the faster "anything here?" test; beyond it the
# per-secret scans win (measured break-even, see the module docstring).
_SMALL_TEXT = 256


@dataclass(frozen=True)
class _KeyPattern:
    """A credential shape; ``pattern`` starts with a literal so the regex engine scans fast."""

    pattern: re.Pattern[str]
    # Random keys mix character classes; requiring that keeps words like "sk-learn-..." intact.
    needs_mixed_classes: bool


def _key(source: str, *, needs_mixed_classes: bool = False) -> _KeyPattern:
    return _KeyPattern(re.compile(source), needs_mixed_classes)


_KEY_PATTERNS: tuple[_KeyPattern, ...] = (
    _key(r"sk-ant-[A-Za-z0-9_\-]{10,}"),
    _key(r"sk-[A-Za-z0-9_\-]{20,}", needs_mixed_classes=True),
    _key(r"gh[pousr]_[A-Za-z0-9]{30,}"),
    _key(r"github_pat_[A-Za-z0-9_]{22,}"),
    _key(r"AKIA[0-9A-Z]{16}"),
    _key(r"xox[abposr]-[A-Za-z0-9\-]{10,}"),
    _key(r"hf_[A-Za-z0-9]{30,}", needs_mixed_classes=True),
    _key(r"AIza[0-9A-Za-z_\-]{35}"),
)


def _is_word_char(char: str) -> bool:
    return char.isalnum() or char == "_"


def _has_mixed_classes(token: str) -> bool:
    return (
        any(c.isdigit() for c in token)
        and any(c.isupper() for c in token)
        and any(c.islower() for c in token)
    )


def _pattern_replacer(key: _KeyPattern, *, after_word: bool) -> Callable[[re.Match[str]], str]:
    """The replacement for ``key``'s matches; with ``after_word`` the text continues a word
    (a stream's piece after a word character), so a match at its very start is no token."""

    def replace(match: re.Match[str]) -> str:
        text = match.string
        start, end = match.span()
        # Prefixes like "sk-" also occur inside words ("task-", "ask-ant-"): a key must be a
        # whole token. Checked here, not in a lookbehind, which makes the scan 25x slower.
        word_before = _is_word_char(text[start - 1]) if start > 0 else after_word
        if word_before or (end < len(text) and _is_word_char(text[end])):
            return match.group(0)
        if key.needs_mixed_classes and not _has_mixed_classes(match.group(0)):
            return match.group(0)
        return REDACTED

    return replace


_PATTERN_REPLACERS = {
    after_word: tuple(
        (key.pattern, _pattern_replacer(key, after_word=after_word)) for key in _KEY_PATTERNS
    )
    for after_word in (False, True)
}


def _literal_starts(source: str) -> tuple[str, ...]:
    """The literal text every match of a key pattern starts with (``gh[pousr]_`` gives five)."""
    found = re.match(r"([A-Za-z_-]*)(?:\[([a-z]+)\]([_-]))?", source)
    assert found is not None  # the pattern above matches every string
    head, choices, separator = found.groups()
    if choices is None:
        return (head,)
    return tuple(head + choice + separator for choice in choices)


#: Every key starts with one of these; a stream that pauses on a prefix of one holds it back.
_KEY_STARTS = tuple(
    start for key in _KEY_PATTERNS for start in _literal_starts(key.pattern.pattern)
)


@dataclass(frozen=True)
class _Redactor:
    """The compiled form of one set of secrets."""

    secrets: frozenset[str]
    # Longest first, so a secret that contains another is masked whole.
    ordered: tuple[str, ...]
    # The longest spelling: a stream must hold back this much to never split one.
    longest: int
    # Every secret and key pattern in one alternation: the fast "anything here?" test.
    combined: re.Pattern[str]

    @classmethod
    def build(cls, secrets: frozenset[str]) -> _Redactor:
        ordered = tuple(sorted(secrets, key=lambda s: (-len(s), s)))
        alternatives = [re.escape(s) for s in ordered]
        alternatives += [key.pattern.pattern for key in _KEY_PATTERNS]
        return cls(
            secrets=secrets,
            ordered=ordered,
            longest=len(ordered[0]) if ordered else 0,
            combined=re.compile("|".join(alternatives)),
        )

    def text(self, text: str, *, after_word: bool = False) -> str:
        if len(text) < MIN_SECRET_LENGTH:
            return text
        if len(text) <= _SMALL_TEXT and self.combined.search(text) is None:
            return text
        redacted = text
        for secret in self.ordered:
            if secret in redacted:
                redacted = redacted.replace(secret, REDACTED)
        for pattern, replacer in _PATTERN_REPLACERS[after_word]:
            redacted = pattern.sub(replacer, redacted)
        return redacted


@dataclass(frozen=True)
class _Cache:
    redactor: _Redactor
    registered_version: int
    # A copy of os.environ's backing dict; comparing it to the live one is ~3 µs.
    environ_copy: dict[Any, Any] | None


_lock = threading.Lock()
_registered: set[str] = set()
_registered_version = 0
_cache: _Cache | None = None


def register_secret(value: str) -> None:
    """Treat ``value`` as a secret from now on (process-wide).

    Values shorter than 8 characters are ignored, the same rule as for environment variables:
    masking every occurrence of a short string would corrupt ordinary text.
    """
    global _registered_version
    if not isinstance(value, str):
        raise TypeError(f"register_secret expects a str, got {type(value).__name__}")
    with _lock:
        added = _variants(value) - _registered
        if added:
            _registered.update(added)
            _registered_version += 1


def _environment_secrets() -> set[str]:
    found: set[str] = set()
    for name, value in os.environ.items():
        if _SECRET_NAME.search(name) is None:
            continue
        found |= _variants(value)
    return found


def _variants(value: str) -> set[str]:
    """The spellings a secret takes in text we write: as is, trimmed, inside a JSON string
    (a password with a quote or backslash) and percent-encoded (in a connection URL)."""
    variants: set[str] = set()
    for plain in (value, value.strip()):
        if len(plain) >= MIN_SECRET_LENGTH:
            variants |= {plain, json.dumps(plain, ensure_ascii=False)[1:-1], quote(plain, safe="")}
    return variants


def _live_environ() -> dict[Any, Any] | None:
    # os.environ keeps its contents in ``_data`` on every CPython platform; every mutation through
    # os.environ goes through it, so an equal dict means an unchanged environment.
    data = getattr(os.environ, "_data", None)
    return data if isinstance(data, dict) else None


def _current_redactor() -> _Redactor:
    global _cache
    cache = _cache
    live = _live_environ()
    if (
        cache is not None
        and live is not None
        and cache.registered_version == _registered_version
        and cache.environ_copy == live
    ):
        return cache.redactor
    with _lock:
        secrets = frozenset(_environment_secrets() | _registered)
        if cache is not None and cache.redactor.secrets == secrets:
            redactor = cache.redactor
        else:
            redactor = _Redactor.build(secrets)
        _cache = _Cache(
            redactor=redactor,
            registered_version=_registered_version,
            environ_copy=dict(live) if live is not None else None,
        )
        return redactor


T = TypeVar("T")


def redact_secrets(value: T) -> T:
    """``value`` with every secret replaced by ``[REDACTED]``.

    Walks ``str``, ``dict`` (keys and values), ``list``, ``tuple`` and pydantic models (a model is
    rebuilt with ``model_copy``); other values are returned as they are. The input is never
    mutated: when nothing needs masking the very same object is returned, otherwise a copy.
    """
    redacted: T = _walk(value, _current_redactor())
    return redacted


def _walk(value: Any, redactor: _Redactor) -> Any:
    if isinstance(value, str):
        return redactor.text(value)
    if isinstance(value, dict):
        return _walk_dict(value, redactor)
    if isinstance(value, list):
        items = _walk_items(value, redactor)
        return value if items is None else items
    if isinstance(value, tuple):
        items = _walk_items(value, redactor)
        if items is None:
            return value
        make = getattr(value, "_make", None)  # namedtuple
        return make(items) if make is not None else tuple(items)
    if isinstance(value, BaseModel):
        return _walk_model(value, redactor)
    return value


def _walk_items(values: Iterable[Any], redactor: _Redactor) -> list[Any] | None:
    """The redacted items, or None when none changed."""
    out: list[Any] = []
    changed = False
    for item in values:
        new = _walk(item, redactor)
        changed = changed or new is not item
        out.append(new)
    return out if changed else None


def _walk_dict(value: dict[Any, Any], redactor: _Redactor) -> dict[Any, Any]:
    out: dict[Any, Any] = {}
    changed = False
    for key, item in value.items():
        new_key = redactor.text(key) if isinstance(key, str) else key
        new_item = _walk(item, redactor)
        changed = changed or new_key is not key or new_item is not item
        out[new_key] = new_item
    return out if changed else value


def _walk_model(model: BaseModel, redactor: _Redactor) -> BaseModel:
    update: dict[str, Any] = {}
    for name in type(model).model_fields:
        current = getattr(model, name)
        new = _walk(current, redactor)
        if new is not current:
            update[name] = new
    for name, current in (model.__pydantic_extra__ or {}).items():
        new = _walk(current, redactor)
        if new is not current:
            update[name] = new
    return model.model_copy(update=update) if update else model


#: Every key pattern is a run of these characters; a stream is never cut inside such a run.
_TOKEN_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"
#: A run of token characters longer than this is cut anyway (no credential is that long), so a
#: stream without separators cannot make the redactor hold unbounded text.
MAX_TOKEN_RUN = 64 * 1024


class StreamRedactor:
    """Masks secrets in text that arrives in pieces (streamed tokens, a command's output).

    :meth:`feed` returns the redacted text that is safe to pass on and holds back a tail: at
    least as long as the longest secret, and never ending inside a run of key characters, so a
    secret split across two pieces is masked whole. :meth:`flush` returns the rest. For a
    stream of pieces, ``"".join(fed) + flush()`` equals ``redact_secrets`` of the whole text
    (up to credential-shaped tokens longer than :data:`MAX_TOKEN_RUN`, which are cut).
    """

    def __init__(self) -> None:
        self._held = ""
        # Where the run of token characters at the end of ``_held`` starts.
        self._run_start = 0
        # Whether the text passed on so far ends in a word character: then a key pattern at
        # the start of the held text is inside a word ("ta" + "sk-ant-...") and no key.
        self._after_word = False

    def _pass_on(self, text: str, redactor: _Redactor) -> str:
        if not text:
            return ""
        redacted = redactor.text(text, after_word=self._after_word)
        self._after_word = _is_word_char(text[-1])
        return redacted

    def feed(self, piece: str) -> str:
        if not piece:
            return ""
        base = len(self._held)
        held = self._held + piece
        # rstrip runs in C: a separator-free stream costs no Python loop per character.
        before_run = len(piece.rstrip(_TOKEN_CHARS))
        if before_run:
            self._run_start = base + before_run
        redactor = _current_redactor()
        cut = len(held) - redactor.longest
        if len(held) - self._run_start <= MAX_TOKEN_RUN:
            cut = min(cut, self._run_start)
        cut = _safe_cut(held, cut, redactor)
        if cut <= 0:
            self._held = held
            return ""
        self._held = held[cut:]
        self._run_start = max(0, self._run_start - cut)
        return self._pass_on(held[:cut], redactor)

    @property
    def holding(self) -> bool:
        """Whether text is held back (a flush would return something)."""
        return bool(self._held)

    def release(self) -> str:
        """What :meth:`feed` held back that is safe to show now, before the stream goes on.

        For a reader that looks at a stream while it pauses (a job's last line on a card): all
        the held text, redacted, except a tail that could still become a secret with the next
        piece, which stays held however long the pause: a proper prefix of a known secret, or
        a run of key characters that begins like a credential (``sk-...``, ``ghp_...``) or
        could still grow into such a start (``gh``, ``githu``).
        """
        held = self._held
        if not held:
            return ""
        redactor = _current_redactor()
        cut = min(_secret_start(held, redactor), _key_start(held))
        if cut <= 0:
            return ""
        self._held = held[cut:]
        self._run_start = max(0, self._run_start - cut)
        return self._pass_on(held[:cut], redactor)

    def flush(self) -> str:
        """The redacted rest of the stream; the redactor is then empty and can be reused."""
        rest, self._held, self._run_start = self._held, "", 0
        redacted = self._pass_on(rest, _current_redactor())
        self._after_word = False
        return redacted


def _safe_cut(text: str, cut: int, redactor: _Redactor) -> int:
    """``cut`` moved back so it splits neither a run of token characters nor a known secret."""
    if cut <= 0:
        return 0
    if cut < len(text) and text[cut] in _TOKEN_CHARS:
        floor = max(0, cut - MAX_TOKEN_RUN)
        cut = floor + len(text[floor:cut].rstrip(_TOKEN_CHARS))
    moved = True
    while moved and cut > 0:
        moved = False
        for secret in redactor.ordered:
            start = text.find(secret, max(0, cut - len(secret) + 1), cut + len(secret) - 1)
            if start != -1 and start < cut:
                cut, moved = start, True
    return cut


#: A run of key characters longer than this at the end of a paused stream is released except
#: for its last this-many characters (no credential is longer).
_LONGEST_KEY = 512


def _secret_start(text: str, redactor: _Redactor) -> int:
    """Where the longest tail of ``text`` that is a proper prefix of a known secret starts."""
    start = len(text)
    for secret in redactor.ordered:
        first = secret[0]
        position = text.find(first, max(0, len(text) - len(secret) + 1))
        while position != -1 and position < start:
            if secret.startswith(text[position:]):
                start = position
                break
            position = text.find(first, position + 1)
    return start


def _key_start(text: str) -> int:
    """Where a credential that ``text`` may end in the middle of starts (``len(text)``: none)."""
    run_start = len(text.rstrip(_TOKEN_CHARS))
    floor = max(run_start, len(text) - _LONGEST_KEY)
    position = floor
    while position < len(text):
        # A key is a whole token: it starts where the run starts or after a "-" inside it.
        if position == run_start or not _is_word_char(text[position - 1]):
            tail = text[position:]
            for start in _KEY_STARTS:
                if tail.startswith(start) or start.startswith(tail):
                    return position
        following = text.find("-", position, len(text) - 1)
        if following == -1:
            break
        position = following + 1
    return len(text)
