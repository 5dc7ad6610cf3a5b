"""The bridge's pure parts: events → ACP updates, prompts → run text, finding the server."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from acp import text_block
from acp.schema import (
    EmbeddedResourceContentBlock,
    EnvVariable,
    HttpHeader,
    HttpMcpServer,
    ImageContentBlock,
    McpServerStdio,
    ResourceContentBlock,
    SseMcpServer,
    TextResourceContents,
)

from jupyter_codelia.acp._agent import mcp_entries, prompt_text, server_path
from jupyter_codelia.acp._aliases import SessionAliases
from jupyter_codelia.acp._errors import ServerNotFoundError
from jupyter_codelia.acp._jupyter import JupyterServer, find_server
from jupyter_codelia.acp._mapping import RunTranslator, permission_tool_call, tool_kind


def _texts(updates: list[object]) -> list[str]:
    return [u.content.text for u in updates]  # type: ignore[attr-defined]


def test_a_repeated_or_older_seq_is_dropped() -> None:
    run = RunTranslator()
    assert run.accept(0) and run.accept(3)
    assert not run.accept(3) and not run.accept(2)
    assert run.accept(4)


def test_a_block_after_its_deltas_sends_only_what_they_missed() -> None:
    run = RunTranslator()
    assert _texts(run.updates({"type": "text_delta", "delta": "Hel"})) == ["Hel"]
    assert _texts(run.updates({"type": "final", "content": "Hello"})) == ["lo"]
    # A block nobody streamed is sent whole; thinking works the same way.
    assert _texts(run.updates({"type": "text", "content": "Next."})) == ["Next."]
    assert _texts(run.updates({"type": "reasoning_delta", "delta": "hm"})) == ["hm"]
    (thought,) = run.updates({"type": "reasoning", "content": "hm, yes"})
    assert thought.session_update == "agent_thought_chunk" and thought.content.text == ", yes"


def test_discarded_text_is_marked_since_acp_cannot_take_it_back() -> None:
    run = RunTranslator()
    run.updates({"type": "text_delta", "delta": "half a rep"})
    (note,) = run.updates({"type": "text_discarded"})
    assert "retrying" in note.content.text
    assert _texts(run.updates({"type": "final", "content": "Whole reply"})) == ["Whole reply"]
    assert run.updates({"type": "text_discarded"}) == []


def test_tool_cards_have_their_kind_diff_and_images() -> None:
    run = RunTranslator()
    (write,) = run.updates(
        {
            "type": "tool_call",
            "tool": "write",
            "tool_call_id": "t1",
            "args": {"file_path": "a.py", "content": "x = 1\n"},
        }
    )
    assert write.kind == "edit" and write.locations[0].path == "a.py"
    (diff,) = write.content
    assert (diff.path, diff.old_text, diff.new_text) == ("a.py", None, "x = 1\n")
    (done,) = run.updates(
        {"type": "tool_result", "tool": "write", "tool_call_id": "t1", "result": "wrote a.py"}
    )
    assert [c.type for c in done.content] == ["diff", "content"]  # the diff stays on the card
    run.updates({"type": "tool_call", "tool": "python", "tool_call_id": "t2", "args": {}})
    (shown,) = run.updates(
        {
            "type": "tool_result",
            "tool": "python",
            "tool_call_id": "t2",
            "result": "plotted",
            "is_error": False,
            "parts": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBO"}}],
        }
    )
    assert shown.status == "completed"
    image = shown.content[1].content
    assert (image.type, image.mime_type, image.data) == ("image", "image/png", "iVBO")
    (failed,) = run.updates(
        {
            "type": "tool_result",
            "tool": "python",
            "tool_call_id": "t3",
            "result": "no",
            "is_error": True,
        }
    )
    assert failed.status == "failed"
    kinds = {t: tool_kind(t) for t in ("python", "shell", "edit", "read", "grep", "webfetch")}
    assert kinds == {
        "python": "execute",
        "shell": "execute",
        "edit": "edit",
        "read": "read",
        "grep": "search",
        "webfetch": "fetch",
    }
    assert tool_kind("github__create_issue") == "other"


def test_todos_are_a_plan_and_usage_a_usage_update() -> None:
    run = RunTranslator()
    (plan,) = run.updates(
        {
            "type": "todos.updated",
            "todos": [
                {"id": "1", "content": "a", "status": "completed", "priority": 1},
                {"id": "2", "content": "b", "status": "pending", "priority": 5},
            ],
        }
    )
    assert [(e.content, e.status, e.priority) for e in plan.entries] == [
        ("a", "completed", "high"),
        ("b", "pending", "low"),
    ]
    usage = {
        "type": "usage",
        "model": "m",
        "input_tokens": 100,
        "output_tokens": 20,
        "cache_read_tokens": 30,
        "total_input_tokens": 500,
        "total_output_tokens": 70,
        "total_cost_usd": 0.25,
        "context_limit": 1000,
    }
    (update,) = run.updates(usage)
    assert (update.used, update.size, update.cost.amount, update.cost.currency) == (
        150,
        1000,
        0.25,
        "USD",
    )
    assert run.usage is not None and run.usage.total_tokens == 570
    # Without a known context window there is nothing to show as a usage update.
    assert run.updates({**usage, "context_limit": None}) == []


def test_a_permission_request_shows_the_call_it_asks_about() -> None:
    asked = permission_tool_call(
        {
            "type": "permission.request",
            "request_id": "r1",
            "tool": "edit",
            "tool_call_id": "t9",
            "title": "Edit notes.txt?",
            "message": "edit notes.txt",
            "args": {"file_path": "notes.txt", "old_string": "a", "new_string": "b"},
        }
    )
    assert (asked.tool_call_id, asked.title, asked.kind, asked.status) == (
        "t9",
        "Edit notes.txt?",
        "edit",
        "pending",
    )
    assert [c.type for c in asked.content] == ["content", "diff"]


def test_prompt_blocks_become_the_runs_text(tmp_path: Path) -> None:
    server = JupyterServer("http://127.0.0.1:1/", "", tmp_path)
    blocks = [
        text_block("look at this"),
        ResourceContentBlock(
            type="resource_link", uri=(tmp_path / "nb" / "a.ipynb").as_uri(), name="a.ipynb"
        ),
        ResourceContentBlock(type="resource_link", uri=(tmp_path / "data.csv").as_uri(), name="d"),
        EmbeddedResourceContentBlock(
            type="resource",
            resource=TextResourceContents(uri=(tmp_path / "x.py").as_uri(), text="x = 1"),
        ),
        ImageContentBlock(type="image", data="AAAA", mime_type="image/png"),
    ]
    text, notebooks = prompt_text(blocks, server)
    assert notebooks == ["nb/a.ipynb"]
    assert "look at this" in text and "(Attached: data.csv)" in text
    assert "Attached x.py:\n```\nx = 1\n```" in text
    assert "image was left out" in text
    assert server_path("/elsewhere/f.txt", server) == "/elsewhere/f.txt"
    assert server_path("rel/f.txt", server) == "rel/f.txt"


def test_the_clients_mcp_servers_become_config_entries() -> None:
    entries = mcp_entries(
        [
            McpServerStdio(
                name="clock",
                command="uvx",
                args=["mcp-server-time"],
                env=[EnvVariable(name="A", value="1")],
            ),
            HttpMcpServer(
                type="http",
                name="web",
                url="http://127.0.0.1:9/mcp",
                headers=[HttpHeader(name="Authorization", value="Bearer t")],
            ),
            SseMcpServer(type="sse", name="old", url="http://127.0.0.1:9/sse", headers=[]),
        ]
    )
    assert entries == {
        "clock": {"command": "uvx", "args": ["mcp-server-time"], "env": {"A": "1"}},
        "web": {"url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer t"}},
        "old": {"url": "http://127.0.0.1:9/sse", "type": "sse"},
    }


def _runtime_file(runtime: Path, pid: int, port: int, root: Path) -> None:
    info = {
        "url": f"http://127.0.0.1:{port}/",
        "token": f"t{port}",
        "root_dir": str(root),
        "pid": pid,
    }
    (runtime / f"jpserver-{pid}.json").write_text(json.dumps(info))


def test_the_server_is_found_by_parent_process_then_by_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(runtime))
    for name in ("JUPYTER_CODELIA_SERVER_URL", "JUPYTER_CODELIA_SERVER_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    outer, inner = tmp_path / "outer", tmp_path / "outer" / "inner"
    inner.mkdir(parents=True)
    # Two live servers (this process and its parent stand in for them), one a dead one.
    _runtime_file(runtime, os.getpid(), 8001, outer)
    _runtime_file(runtime, 2**22 + 12345, 8002, inner)
    assert find_server(inner / "x").url == "http://127.0.0.1:8001/"  # the dead one is skipped
    _runtime_file(runtime, os.getppid(), 8003, tmp_path / "unrelated")
    parent = find_server(inner)
    assert (parent.url, parent.token) == ("http://127.0.0.1:8003/", "t8003")
    named = find_server(inner, "http://127.0.0.1:8001", None)
    assert (named.url, named.token, named.root_dir) == ("http://127.0.0.1:8001/", "t8001", outer)
    monkeypatch.setenv("JUPYTER_CODELIA_SERVER_URL", "http://127.0.0.1:9999/")
    assert find_server(inner).token == ""
    monkeypatch.delenv("JUPYTER_CODELIA_SERVER_URL")
    for file in runtime.iterdir():
        file.unlink()
    with pytest.raises(ServerNotFoundError, match="--server-url"):
        find_server(inner)


def test_session_aliases_survive_a_restart(tmp_path: Path) -> None:
    first = SessionAliases(tmp_path / "home" / "acp-sessions.json")
    acp_id = first.new_id()
    first.set(acp_id, "codelia-1")
    assert SessionAliases(first.path).get(acp_id) == "codelia-1"
    assert SessionAliases(first.path).get("unknown") is None
    assert oct(first.path.stat().st_mode & 0o777) == "0o600"
