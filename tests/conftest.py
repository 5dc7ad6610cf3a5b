"""Suite-wide pytest configuration.

``pytest_plugins`` may only be declared here, at the top of the tests: the jupyter-server fixtures
(``jp_fetch`` and friends) are used by tests/server.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from jupyter_codelia.testing import (
    Recorded,
    RecordedRequest,
    ScriptedOpenAIServer,
    load_recording,
)

pytest_plugins = ["pytest_jupyter.jupyter_server"]

RECORDINGS_DIR = Path(__file__).parent / "llm" / "recordings"
"""Recorded API responses (file format: ``jupyter_codelia.testing.parse_recording``)."""


@pytest.fixture
def clean_anthropic_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Drop ANTHROPIC_* / OPENAI_* variables and point HOME at an empty dir (no SDK profiles)."""
    for name in list(os.environ):
        if name.startswith(("ANTHROPIC_", "OPENAI_")):
            monkeypatch.delenv(name)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))


@pytest.fixture
def recordings() -> Path:
    """The directory of recorded Messages API responses."""
    return RECORDINGS_DIR


@pytest.fixture
def streamed_blocks() -> Callable[[str], list[dict[str, Any]]]:
    """``name -> blocks``: a recorded reply's content blocks rebuilt from its SSE events with
    plain ``json``, independently of the provider's accumulator, so tests can hold it to them."""
    return _streamed_blocks


def _streamed_blocks(name: str) -> list[dict[str, Any]]:
    """The content blocks a recorded SSE reply builds, from its raw event JSON."""
    blocks: list[dict[str, Any]] = []
    inputs: dict[int, str] = {}
    for line in load_recording(RECORDINGS_DIR / name).body.splitlines():
        if not line.startswith("data: "):
            continue
        event = json.loads(line[len("data: ") :])
        if event["type"] == "content_block_start":
            blocks.append(event["content_block"])
        elif event["type"] == "content_block_delta":
            delta = event["delta"]
            block = blocks[event["index"]]
            if delta["type"] == "input_json_delta":
                inputs[event["index"]] = inputs.get(event["index"], "") + delta["partial_json"]
            elif delta["type"] == "text_delta":
                block["text"] += delta["text"]
            elif delta["type"] == "citations_delta":
                block["citations"].append(delta["citation"])
            elif delta["type"] == "thinking_delta":
                block["thinking"] += delta["thinking"]
            elif delta["type"] == "signature_delta":
                block["signature"] = delta["signature"]
    for index, text in inputs.items():
        blocks[index]["input"] = json.loads(text)
    return blocks


@pytest.fixture
def insisting_server() -> Callable[..., ScriptedOpenAIServer]:
    """``(first, answer, refused, accepts) -> ScriptedOpenAIServer`` replaying recordings the way
    a server that insists on what comes back answers: ``first`` to the opening request, then
    ``answer`` when ``accepts(assistant_turns)`` holds for the request's assistant messages,
    else ``refused`` (the provider's own 400)."""

    def make(
        first: str, answer: str, refused: str, accepts: Callable[[list[dict[str, Any]]], bool]
    ) -> ScriptedOpenAIServer:
        opening, accepted, refusal = (
            load_recording(RECORDINGS_DIR / name) for name in (first, answer, refused)
        )

        def play(request: RecordedRequest) -> Recorded:
            turns = [m for m in request.json["messages"] if m["role"] == "assistant"]
            if not turns:
                return opening
            return accepted if accepts(turns) else refusal

        return ScriptedOpenAIServer(play)

    return make
