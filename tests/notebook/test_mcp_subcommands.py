"""``%codelia mcp add`` option parsing: every bad input gets a message that says the fix."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError

from jupyter_codelia.notebook._subcommands import _mcp_add_entry


def test_options_become_the_entry_other_clients_write() -> None:
    assert _mcp_add_entry(
        ["--env", "A=1", "--env", "B=x=y", "--timeout", "30", "--", "srv", "-v"]
    ) == {
        "command": "srv",
        "args": ["-v"],
        "env": {"A": "1", "B": "x=y"},
        "timeout": 30.0,
    }
    assert _mcp_add_entry(
        ["--header", "Authorization: Bearer t0k", "--sse", "--url", "http://127.0.0.1:1/sse"]
    ) == {
        "url": "http://127.0.0.1:1/sse",
        "type": "sse",
        "headers": {"Authorization": "Bearer t0k"},
    }
    assert _mcp_add_entry(["--startup-timeout", "5", "--", "srv"])["startup_timeout"] == 5.0


@pytest.mark.parametrize(
    ("words", "message"),
    [
        (["--header", "NoColon", "--url", "http://x"], "--header takes 'Name: value'"),
        (["--timeout", "soon", "--", "srv"], "--timeout takes seconds, got 'soon'"),
        (
            [
                "--",
            ],
            "Give the command after --",
        ),
        (["--verbose", "--", "srv"], "Unknown option '--verbose'"),
        (["--env"], "--env needs a value"),
        (["--env", "A=1"], "Usage: %codelia mcp add NAME"),
    ],
)
def test_bad_options_say_what_to_write(words: list[str], message: str) -> None:
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace(")", r"\)")):
        _mcp_add_entry(words)
