"""Owner-only storage: created 0700/0600 whatever the umask; loose stores are tightened."""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from jupyter_codelia import _private
from jupyter_codelia.agent.permissions import PermissionPolicy
from jupyter_codelia.cache import ToolOutputCacheStore
from jupyter_codelia.session import SessionState, SessionStore
from jupyter_codelia.tools import ToolRisk


def loose_paths(root: Path) -> list[str]:
    """Everything under ``root`` (itself included) that is not a 0700 dir or a 0600 file."""
    bad = []
    for directory, _dirs, files in os.walk(root):
        if stat.S_IMODE(os.stat(directory).st_mode) != 0o700:
            bad.append(f"{directory}/ {oct(os.stat(directory).st_mode)}")
        for name in files:
            mode = stat.S_IMODE(os.lstat(os.path.join(directory, name)).st_mode)
            if mode != 0o600:
                bad.append(f"{directory}/{name} {oct(mode)}")
    return bad


@pytest.fixture(params=[0o022, 0o000], ids=["umask022", "umask000"])
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    old = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(old)


@pytest.fixture(autouse=True)
def _forget_tightened(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_private, "_tightened", set())


def use_every_store(home: Path) -> None:
    cache = ToolOutputCacheStore(home / "cache" / "tool-output", max_bytes=3000)
    for i in range(6):  # passes the cap: .usage, eviction and its tombstones
        cache.save(tool_call_id=f"call_{i}", tool_name="shell", content="x\n" * 400)
    with cache.writer(tool_call_id="streamed", tool_name="shell") as writer:
        writer.write("line\n" * 10)
    cache.list_entries()
    sessions = SessionStore(home)
    with sessions.open_run_log(run_id="r1", session_id="s1", header={}) as log:
        log.append("run.start", session_id="s1")
    sessions.save_state(SessionState(session_id="s1", updated_at="2026-11-20T09:30:00.000Z"))
    assert [s.session_id for s in sessions.list_sessions()] == ["s1"]
    sessions.close()
    policy = PermissionPolicy(mode="minimal", config_path=home / "permissions.json")
    shell = ToolRisk(kind="run_code", command_arg="command")
    policy.remember(policy.remember_rules("shell", {"command": "make deploy"}, shell))
    assert (home / "permissions.json").exists()


def test_every_file_and_directory_is_private_whatever_the_umask(tmp_path: Path, umask: int) -> None:
    home = tmp_path / "new" / "home"
    use_every_store(home)
    names = {p.name for p in home.rglob("*")}
    assert {".usage", ".lock", "index.db", "permissions.json", "r1.jsonl"} <= names
    assert any(name.endswith(".evicted") for name in names)
    assert loose_paths(tmp_path / "new") == []


def test_a_loose_store_is_tightened_on_first_use_with_one_log_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    home = tmp_path / "home"
    use_every_store(home)
    for directory, _dirs, files in os.walk(home):
        os.chmod(directory, 0o755)
        for name in files:
            os.chmod(os.path.join(directory, name), 0o644)
    link = home / "link-to-outside"
    outside = tmp_path / "outside.txt"
    outside.write_text("not ours to change")
    os.chmod(outside, 0o644)
    link.symlink_to(outside)
    _private._tightened.clear()
    with caplog.at_level(logging.WARNING, logger="jupyter_codelia"):
        SessionStore(home).list_sessions()
        ToolOutputCacheStore(home / "cache" / "tool-output").list_entries()
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1
    assert lines[0].startswith(f"codelia store {home}: removed group/other access from ")
    link.unlink()
    assert loose_paths(home) == []
    assert stat.S_IMODE(outside.stat().st_mode) == 0o644


def test_make_private_dirs_refuses_a_file_in_the_way(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(NotADirectoryError, match=r"Not a directory: .*file"):
        _private.make_private_dirs(blocker)
