"""After a run that spills a secret in every way the tools allow, no channel carries it, and
every file the store holds is private to its owner, whatever the umask.

Channels swept: the kernel's iopub traffic (cell output, widget state, the side panel's comm
messages), the side panel's REST answers (a real jupyter server with the extension), and every
file under JUPYTER_CODELIA_HOME: run logs, snapshots, the session index, cache entries and the
full diffs saved there.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_codelia.testing import ScriptedAnthropicServer, reply, text, tool_use

from .test_notebook_bridge import FrontEnd

TOKEN = "tok-FAKE-sweep-0123456789abcdef"
FRAGMENTS = (TOKEN, TOKEN[:12], TOKEN[-12:], "test-key")
ENV_FILE = "".join(f"OPTION_{i}={TOKEN}\n" for i in range(300))

PRINT_IT = (
    "import os\n"
    "t = os.environ['SERVICE_TOKEN']\n"
    "print('\\n'.join(f'{i} {t}' for i in range(3000)))\n"
    f"print({TOKEN!r}[::-1][::-1])\n"
    "t"
)


@pytest.fixture
def jp_server_config() -> dict[str, Any]:
    return {"ServerApp": {"jpserver_extensions": {"jupyter_codelia": True}}}


@pytest.fixture(params=[0o022, 0o000], ids=["umask022", "umask000"])
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    old = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(old)


def script() -> list[Any]:
    return [
        reply(
            text(f"Your token is {TOKEN}, I will plan around it."),
            tool_use("todo_new", {"todos": [{"content": f"rotate {TOKEN}", "status": "pending"}]}),
        ),
        reply(tool_use("read", {"file_path": ".env"})),
        reply(tool_use("python", {"code": PRINT_IT}, id="call_py")),
        reply(tool_use("tool_output_cache", {"ref_id": "call_py", "offset": 2990})),
        reply(tool_use("tool_output_cache_grep", {"ref_id": "call_py", "pattern": "2999"})),
        reply(tool_use("write", {"file_path": ".env", "content": ENV_FILE.replace("=", ": ")})),
        reply(
            tool_use(
                "edit",
                {
                    "file_path": ".env",
                    "old_string": f"OPTION_7: {TOKEN}",
                    "new_string": f"OPTION_7: {TOKEN}-rotated",
                },
            )
        ),
        reply(tool_use("grep", {"pattern": "OPTION_1[0-9]:"})),
        reply(tool_use("glob", {"pattern": "*"})),
        reply(text(f"Done. The token {TOKEN} is everywhere in `.env`.")),
        # The side panel's run: a permission request whose arguments hold the token.
        reply(
            text(f"Checking {TOKEN} from the panel."),
            tool_use("python", {"code": f"secret = {TOKEN!r}\nprint(len(secret), secret)"}),
        ),
        reply(text(f"Done from the panel: {TOKEN}")),
    ]


def leaks(label: str, blob: str) -> list[str]:
    return [f"{label}: {fragment!r}" for fragment in FRAGMENTS if fragment in blob]


def sweep_store(home: Path) -> list[str]:
    """Leaks in every file of the store: run logs, snapshots, the index, cache entries, diffs."""
    files = [p for p in home.rglob("*") if p.is_file()]
    names = " ".join(p.name for p in files)
    assert ".jsonl" in names and "index.db" in names and ".idx" in names
    assert any("_diff_" in p.name for p in files), "the write's full diff went to the cache"
    found: list[str] = []
    for path in files:
        found += leaks(str(path.relative_to(home)), path.read_bytes().decode("latin-1"))
    return found


def loose_modes(home: Path) -> list[str]:
    bad = []
    for directory, _dirs, files in os.walk(home):
        mode = stat.S_IMODE(os.stat(directory).st_mode)
        if mode != 0o700:
            bad.append(f"{directory}/ {oct(mode)}")
        for name in files:
            mode = stat.S_IMODE(os.lstat(os.path.join(directory, name)).st_mode)
            if mode != 0o600:
                bad.append(f"{directory}/{name} {oct(mode)}")
    return bad


async def test_no_channel_carries_a_secret_and_the_store_is_private(
    start_kernel: Any,
    workspace: Path,
    codelia_home: Path,
    jp_fetch: Any,
    monkeypatch: pytest.MonkeyPatch,
    umask: int,
) -> None:
    os.chmod(codelia_home, 0o755)  # made by the fixture under the test's umask: tightened later
    (workspace / ".env").write_text(ENV_FILE, encoding="utf-8")
    with ScriptedAnthropicServer(script()) as server:
        kernel = start_kernel(server.url, SERVICE_TOKEN=TOKEN)
        assert kernel.execute("%load_ext jupyter_codelia").status == "ok"
        front = FrontEnd(kernel)
        front.wait(lambda d: d.get("type") == "hello")
        run = kernel.execute("%%codelia --approval-mode full-access\nlook after my token")
        assert run.status == "ok", run.reply["content"]
        assert server.remaining == 2
        started = front.request({"type": "run.start", "prompt": "check it from the panel"})
        assert started["ok"] is True, started
        asked = front.wait(
            lambda d: d.get("type") == "agent.event" and d["event"]["type"] == "permission.request"
        )["event"]
        assert asked["tool"] == "python" and "[REDACTED]" in json.dumps(asked["args"])
        front.request(
            {
                "type": "permission.respond",
                "permission_request_id": asked["request_id"],
                "decision": "allow",
            }
        )
        front.wait(lambda d: d.get("type") == "run.status" and d.get("status") == "completed")
        assert server.remaining == 0
        for request in (
            {"type": "todos.get"},
            {"type": "sessions.list"},
            {"type": "session.transcript", "session_id": started["result"]["session_id"]},
            {"type": "cache.list"},
            {"type": "cache.read", "ref_id": "call_py", "offset": 2995},
            {"type": "cache.grep", "ref_id": "call_py", "pattern": "2998"},
            {"type": "cache.line", "ref_id": "call_py", "line_number": 3001},
            {"type": "cache.parts", "ref_id": "toolu_2"},
        ):
            assert front.request(request)["ok"] is True, request
        kernel.execute("%codelia todos")
        kernel.execute("%codelia cache")
        kernel.execute("%codelia sessions")
        front.poll(0.5)
        session_id = (
            kernel.execute(
                "from jupyter_codelia.notebook import notebook_agent\n"
                "print(notebook_agent(get_ipython()).agent.session_id)"
            )
            .stream_text()
            .strip()
        )
        # The tools really saw the secret (otherwise this test proves nothing).
        model_saw = json.dumps([r.messages for r in server.requests])
        assert "[REDACTED]" in model_saw and "2999 [REDACTED]" in model_saw
        kernel.close()
    found: list[str] = []
    found += leaks("iopub (cell output, widgets, comm)", json.dumps(kernel.iopub, default=str))
    streamed = [d["event"]["type"] for d in front.received if d.get("type") == "agent.event"]
    assert {"text_delta", "text", "tool_call", "permission.request", "final"} <= set(streamed)
    found += leaks("comm messages", json.dumps(front.received))

    # Walked before the server touches the store too: its first use would tighten loose modes.
    assert loose_modes(codelia_home) == []
    monkeypatch.setenv("JUPYTER_CODELIA_HOME", str(codelia_home))
    sessions = await jp_fetch("codelia", "api", "sessions", method="GET")
    transcript = await jp_fetch(
        "codelia", "api", "sessions", session_id, "transcript", method="GET"
    )
    found += leaks("REST sessions", sessions.body.decode())
    found += leaks("REST transcript", transcript.body.decode())
    assert "look after my token" in transcript.body.decode()

    found += sweep_store(codelia_home)
    assert found == []
    assert loose_modes(codelia_home) == []
