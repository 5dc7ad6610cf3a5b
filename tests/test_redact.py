"""Secret redaction: what counts as a secret, the deep walk, the cached regex."""

from __future__ import annotations

import json
from collections import namedtuple
from urllib.parse import quote

import pytest

from jupyter_codelia import _redact
from jupyter_codelia._redact import REDACTED, redact_secrets, register_secret
from jupyter_codelia.agent.events import TextEvent

FAKE_KEY = "sk-ant-api03-FAKEfake0123456789abcdefXYZ"


@pytest.fixture
def fake_key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    return FAKE_KEY


def test_env_secret_is_masked_everywhere_in_nested_data(fake_key: str) -> None:
    value = {
        "text": f"the key is {fake_key}!",
        "list": [1, None, f"{fake_key}{fake_key}", {"deep": (fake_key, 2.5)}],
        fake_key: "as a key",
    }
    out = redact_secrets(value)
    assert out == {
        "text": f"the key is {REDACTED}!",
        "list": [1, None, REDACTED + REDACTED, {"deep": (REDACTED, 2.5)}],
        REDACTED: "as a key",
    }
    # The input is never mutated.
    assert value["text"] == f"the key is {fake_key}!"


def test_nothing_to_mask_returns_the_same_object(fake_key: str) -> None:
    value = {"a": ["plain", ("text", 1)], "b": {"c": "more"}}
    assert redact_secrets(value) is value
    assert redact_secrets("short") == "short"
    assert redact_secrets(42) == 42


def test_secret_names_are_matched_case_insensitively(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("github_token", "ghtoken-value-123")
    monkeypatch.setenv("DB_Password", "correct horse battery")
    monkeypatch.setenv("MY_CLIENT_SECRET", "client-secret-xyz")
    monkeypatch.setenv("OPENAI_API_KEY", "openai-value-42")
    monkeypatch.setenv("SHORT_TOKEN", "abc1234")  # 7 chars: too short to mask safely
    monkeypatch.setenv("PLAIN_SETTING", "not-a-secret-value")
    text = (
        "ghtoken-value-123 correct horse battery client-secret-xyz openai-value-42 "
        "abc1234 not-a-secret-value"
    )
    assert redact_secrets(text) == (
        f"{REDACTED} {REDACTED} {REDACTED} {REDACTED} abc1234 not-a-secret-value"
    )


def test_environment_changes_are_picked_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LATE_TOKEN", raising=False)
    assert redact_secrets("late-token-value") == "late-token-value"
    monkeypatch.setenv("LATE_TOKEN", "late-token-value")
    assert redact_secrets("late-token-value") == REDACTED
    monkeypatch.delenv("LATE_TOKEN")
    assert redact_secrets("late-token-value") == "late-token-value"


def test_the_secret_set_is_rebuilt_only_when_it_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CACHE_TEST_KEY", "cache-test-value-1")
    first = _redact._current_redactor()
    redact_secrets("anything at all")
    assert _redact._current_redactor() is first
    # An unrelated variable changes the environment but not the secrets: nothing is rebuilt.
    monkeypatch.setenv("CACHE_TEST_UNRELATED", "whatever value")
    assert _redact._current_redactor() is first
    monkeypatch.setenv("CACHE_TEST_KEY", "cache-test-value-2")
    second = _redact._current_redactor()
    assert second is not first
    assert "cache-test-value-2" in second.secrets
    assert "cache-test-value-1" not in second.secrets


def test_registered_secrets_are_masked() -> None:
    register_secret("  registered-secret-0001  ")
    assert redact_secrets("x registered-secret-0001 y") == f"x {REDACTED} y"


def test_register_secret_rejects_non_strings_and_ignores_short_values() -> None:
    with pytest.raises(TypeError, match="register_secret expects a str, got int"):
        register_secret(12345678)  # type: ignore[arg-type]
    register_secret("tiny")
    assert redact_secrets("tiny tiny") == "tiny tiny"


def test_regex_metacharacters_in_secrets_are_literal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ODD_PASSWORD", "a+b(c)*[d]?.$^|x")
    assert redact_secrets("pw=a+b(c)*[d]?.$^|x;") == f"pw={REDACTED};"
    assert redact_secrets("aab(c)*[d]?.$^|x") == "aab(c)*[d]?.$^|x"


def test_a_secret_containing_another_is_masked_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INNER_TOKEN", "inner-value-12")
    monkeypatch.setenv("OUTER_TOKEN", "outer-inner-value-12-tail")
    assert redact_secrets("[outer-inner-value-12-tail]") == f"[{REDACTED}]"


@pytest.mark.parametrize(
    "credential",
    [
        "sk-ant-api03-AbCdEf0123456789_-xyz",
        "sk-proj-Abc123def456ghi789jkl0MNO",
        "ghp_0123456789abcdefghijABCDEFGHIJklmnop",
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstu",
        "AKIAIOSFODNN7EXAMPLE",
        "xoxb-1234567890-abcdefghij",
        "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
        "AIzaSyA-0123456789abcdefghijklmnopqrstu",
    ],
)
def test_well_known_key_shapes_are_masked_without_being_configured(credential: str) -> None:
    assert redact_secrets(f"key: {credential}\n") == f"key: {REDACTED}\n"
    assert redact_secrets(f'{{"k":"{credential}"}}') == f'{{"k":"{REDACTED}"}}'


@pytest.mark.parametrize(
    "ordinary",
    [
        "task-management-service-deployment-config",  # "sk-" inside a word
        "sk-learn-compatible-estimators-pipeline",  # no digits or capitals: not a random key
        "self.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",
        "AKIAIOSFODNN7EXAMPLEANDMORE",  # longer than an access key id
        "ask-ant-api-question",
    ],
)
def test_ordinary_text_resembling_keys_is_left_alone(ordinary: str) -> None:
    assert redact_secrets(ordinary) == ordinary


def test_large_strings_are_masked_at_any_position(fake_key: str) -> None:
    filler = "ordinary text with a task-list and numbers 12345\n" * 100_000  # ~5 MB
    text = fake_key + filler + fake_key + filler + "AKIAIOSFODNN7EXAMPLE"
    out = redact_secrets(text)
    assert fake_key not in out
    assert "AKIAIOSFODNN7EXAMPLE" not in out
    assert out == REDACTED + filler + REDACTED + filler + REDACTED
    assert redact_secrets(filler) is filler


def test_pydantic_models_are_rebuilt_with_masked_fields(fake_key: str) -> None:
    event = TextEvent(content=f"use {fake_key}", timestamp=1)
    out = redact_secrets(event)
    assert isinstance(out, TextEvent)
    assert out.content == f"use {REDACTED}"
    assert out.timestamp == 1
    assert event.content == f"use {fake_key}"
    clean = TextEvent(content="nothing here", timestamp=1)
    assert redact_secrets(clean) is clean


def test_namedtuples_keep_their_type(fake_key: str) -> None:
    Pair = namedtuple("Pair", "left right")
    out = redact_secrets(Pair(fake_key, "ok"))
    assert isinstance(out, Pair)
    assert out == Pair(REDACTED, "ok")


def test_json_escaped_and_percent_encoded_spellings_are_masked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    password = 'p@ss "word" \\ 42'
    monkeypatch.setenv("DB_PASSWORD", password)
    as_json = json.dumps({"password": password})
    assert redact_secrets(as_json) == f'{{"password": "{REDACTED}"}}'
    url = f"postgresql://me:{quote(password, safe='')}@db.local/app"
    assert redact_secrets(url) == f"postgresql://me:{REDACTED}@db.local/app"


def test_a_short_secret_is_not_masked_in_any_spelling(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHORT_SECRET", "a b c")  # percent-encoded it would be 11 characters
    assert redact_secrets("a%20b%20c and a b c") == "a%20b%20c and a b c"


@pytest.mark.parametrize("length", [40, 255, 256, 257, 300, 5000])
def test_short_and_long_strings_are_masked_alike(fake_key: str, length: int) -> None:
    # Short strings take the one-alternation test, long ones the per-secret scans.
    tail = " AKIAIOSFODNN7EXAMPLE"
    pad = "p" * max(0, length - len(fake_key) - len(tail) - 1)
    text = f"{fake_key} {pad}{tail}"
    assert redact_secrets(text) == f"{REDACTED} {pad} {REDACTED}"


def test_stream_redactor_masks_a_secret_split_at_every_position(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DB_PASSWORD", "correct horse battery")
    github = "ghp_" + "Ab1" * 12
    text = f"key {FAKE_KEY}, pw 'correct horse battery' and {github}; task-ant-abcdefghijklmn."
    whole = redact_secrets(text)
    assert FAKE_KEY not in whole and github not in whole and "horse" not in whole
    for cut in range(len(text) + 1):
        stream = _redact.StreamRedactor()
        pieces = [stream.feed(text[:cut]), stream.feed(text[cut:]), stream.flush()]
        assert "".join(pieces) == whole, cut
        for piece in pieces:
            # No piece carries a fragment of a secret.
            assert "sk-ant-api" not in piece and "ghp_Ab1" not in piece and "horse" not in piece


def test_stream_redactor_in_tiny_pieces_and_unbounded_token_runs(fake_key: str) -> None:
    stream = _redact.StreamRedactor()
    text = f"a {fake_key} b " * 50
    out = "".join(stream.feed(ch) for ch in text) + stream.flush()
    assert out == redact_secrets(text)
    # A separator-free run is passed on once longer than any credential, not held forever.
    stream = _redact.StreamRedactor()
    emitted = sum(len(stream.feed("x" * 4096)) for _ in range(64))
    assert emitted >= 64 * 4096 - _redact.MAX_TOKEN_RUN - 4096
    assert emitted + len(stream.flush()) == 64 * 4096


def test_stream_redactor_release_shows_a_paused_stream_but_never_half_a_secret(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SERVICE_TOKEN", "tok-FAKE-release-0123456789")
    stream = _redact.StreamRedactor()
    shown = stream.feed("epoch 3 loss=0.123")
    # feed() holds back a secret's length; a reader looking while the stream pauses sees all.
    assert shown + stream.release() == "epoch 3 loss=0.123"
    # A prefix of a known secret stays held, however short, until the stream goes on.
    assert stream.feed("\nvalue tok-FAKE-rel") + stream.release() == "\nvalue "
    assert stream.release() == ""  # held for as long as the pause lasts
    assert stream.feed("ease-0123456789 ok") + stream.release() == "[REDACTED] ok"
    # The start of a credential's shape is held too, and so is what could still grow into one
    # ("gh" could become "ghp_...", "githu" could become "github_pat_...").
    assert stream.feed(" key ghp_") + stream.release() == " key "
    assert stream.feed("Ab1" * 12 + " using gh") + stream.release() == "[REDACTED] using "
    assert stream.feed("oul") + stream.release() == "ghoul"
    assert stream.flush() == ""


def test_stream_redactor_release_at_every_split_keeps_the_whole_masked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DB_PASSWORD", "correct horse battery")
    github = "ghp_" + "Ab1" * 12
    text = f"key {FAKE_KEY}, pw 'correct horse battery' and {github}; task-ant-abcdefghijklmn."
    whole = redact_secrets(text)
    for cut in range(len(text) + 1):
        stream = _redact.StreamRedactor()
        pieces = [stream.feed(text[:cut]), stream.release()]
        pieces += [stream.feed(text[cut:]), stream.release(), stream.flush()]
        assert "".join(pieces) == whole, cut
        for piece in pieces:
            assert "sk-ant-api" not in piece and "Ab1Ab1" not in piece, (cut, piece)
            assert "horse" not in piece and "orse batt" not in piece, (cut, piece)
            assert "k-ant-api" not in piece and "p_Ab1" not in piece, (cut, piece)
