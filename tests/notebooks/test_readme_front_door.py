"""The README's front door: the offline_demo example works as written, the screenshot exists."""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_codelia.llm import ToolMessage, UserMessage
from jupyter_codelia.llm.anthropic import AnthropicChat
from jupyter_codelia.testing import end_demo

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text(encoding="utf-8")
VARIABLES = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL")


@pytest.fixture
def no_credentials() -> Iterator[None]:
    saved = {name: os.environ.pop(name) for name in (*VARIABLES, "JUPYTER_CODELIA_APPROVAL_MODE")
             if name in os.environ}  # fmt: skip
    yield
    end_demo()  # stop the server the example started
    for name in (*VARIABLES, "JUPYTER_CODELIA_APPROVAL_MODE"):
        os.environ.pop(name, None)
    os.environ.update(saved)


def test_readme_offline_demo_example_runs(no_credentials: None) -> None:
    section = README.split("## A tour in six notebooks", 1)[1].split("## How it compares")[0]
    code = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert code is not None
    namespace: dict[str, Any] = {}
    exec(compile(code.group(1), "README", "exec"), namespace)
    chat = AnthropicChat(model="claude-sonnet-5-5")  # the URL and the fake key come from env
    prompt = UserMessage(content="explain the dip in `sales`")
    completion = asyncio.run(chat.ainvoke([prompt]))
    assert completion.messages[0].content == "Checking."
    (call,) = completion.messages[1].tool_calls
    assert call.function.name == "python"

    def answer_after(result: str) -> str:
        shown = ToolMessage(tool_call_id=call.id, tool_name="python", content=result)
        reply = asyncio.run(chat.ainvoke([prompt, *completion.messages, shown]))
        return str(reply.messages[0].content)

    # The answer depends on what the tool returned; a result without what the call expects
    # ends the script with what came back instead.
    assert answer_after("revenue -37% in June") == "Revenue fell 37% in June."
    stopped = answer_after("NameError: name 'check' is not defined")
    assert "the script expected `python` to return '%'" in stopped and "NameError" in stopped


def test_readme_screenshot_and_notebook_links_resolve() -> None:
    screenshot = re.search(r"!\[[^\]]+\]\((docs/[^)]+\.png)\)", README)
    assert screenshot is not None
    image = REPO / screenshot.group(1)
    assert image.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert image.stat().st_size < 400_000  # keep the clone small
    for target in re.findall(r"\]\(((?:notebooks|docs)/[^)#]+)\)", README):
        assert (REPO / target).exists(), target


def test_readme_keeps_the_two_commands() -> None:
    assert "```bash\nbash scripts/lab\n```" in README
    assert "```bash\nbash scripts/test\n```" in README
