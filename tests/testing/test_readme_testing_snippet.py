"""The README's ScriptedAnthropicServer example runs as written (wrapped in a coroutine)."""

from __future__ import annotations

import asyncio
import re
import textwrap
from pathlib import Path
from typing import Any

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_example_runs() -> None:
    section = README.read_text(encoding="utf-8").split(
        "### Testing offline with ScriptedAnthropicServer", 1
    )[1]
    code = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert code is not None
    body = textwrap.indent(code.group(1), "    ")
    namespace: dict[str, Any] = {}
    exec(
        compile(f"async def example():\n{body}\n    return completion, server", "README", "exec"),
        namespace,
    )
    completion, server = asyncio.run(namespace["example"]())
    assert completion.messages[0].content == "Let me look."
    assert server.requests[0].headers["authorization"] == "[redacted]"
    assert server.remaining == 2  # the 429 and the last reply were not needed by one call
