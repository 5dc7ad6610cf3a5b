"""Resume snapshots: round trip, fresh-process resume, crash safety, errors."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from pydantic import ValidationError

from jupyter_codelia.session import (
    InvalidSessionIdError,
    SessionLoadError,
    SessionNotFound,
    SessionState,
    SessionStore,
    default_home,
)

RunPython = Callable[[str], "subprocess.CompletedProcess[str]"]

MESSAGES = [
    {"role": "user", "content": "Plot the data in df"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "toolu_1",
                "type": "function",
                "function": {"name": "python", "arguments": '{"code":"df.plot()"}'},
            }
        ],
    },
    {
        "role": "tool",
        "tool_call_id": "toolu_1",
        "tool_name": "python",
        "content": [
            {"type": "text", "text": 'ünïcode ✓ and "quotes"\nnew line'},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
        ],
    },
    {"role": "assistant", "content": "Done."},
]
META = {
    "codelia_todos": [{"id": "1", "content": "plot", "status": "completed"}],
    "codelia_resume_context": {"schema_version": 1, "workspace_root": "/w", "nested": [1.5, None]},
}


def test_save_then_load_round_trips(store: SessionStore) -> None:
    sid = store.new_session_id()
    state = SessionState(
        session_id=sid, run_id="run-9", invoke_seq=7, messages=MESSAGES, meta=META, title="Plots"
    )
    store.save_state(state)
    loaded = store.load_state(sid)
    assert loaded == state.model_copy(update={"generation": 1})
    assert loaded.updated_at.endswith("Z")


def test_snapshot_resumes_in_a_fresh_process(store: SessionStore, run_python: RunPython) -> None:
    sid = store.new_session_id()
    store.save_state(SessionState(session_id=sid, invoke_seq=3, messages=MESSAGES, meta=META))
    result = run_python(
        f"""
        import json
        from jupyter_codelia.session import SessionStore
        state = SessionStore({str(store.home)!r}).load_state({sid!r})
        print(json.dumps({{"messages": state.messages, "meta": state.meta,
                          "invoke_seq": state.invoke_seq}}))
        """
    )
    assert result.returncode == 0, result.stderr
    resumed = json.loads(result.stdout)
    assert resumed == {"messages": MESSAGES, "meta": META, "invoke_seq": 3}


def test_saving_again_replaces_the_snapshot(store: SessionStore) -> None:
    sid = store.new_session_id()
    store.save_state(SessionState(session_id=sid, messages=MESSAGES[:1]))
    store.save_state(SessionState(session_id=sid, messages=MESSAGES, invoke_seq=2))
    loaded = store.load_state(sid)
    assert loaded.messages == MESSAGES
    assert loaded.invoke_seq == 2


def test_a_crash_mid_write_leaves_the_previous_snapshot_readable(store: SessionStore) -> None:
    sid = store.new_session_id()
    store.save_state(SessionState(session_id=sid, meta={"version": 0}))
    writer = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import sys
                from jupyter_codelia.session import SessionState, SessionStore
                store = SessionStore({str(store.home)!r})
                big = [{{"role": "user", "content": "x" * 200_000}}] * 10
                version = 0
                while True:
                    version += 1
                    store.save_state(SessionState(
                        session_id={sid!r}, messages=big, meta={{"version": version}}))
                    if version == 3:
                        print("saving", flush=True)
                """
            ),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert writer.stdout is not None
        assert writer.stderr is not None
        if writer.stdout.readline().strip() != "saving":
            pytest.fail(f"the writer process failed: {writer.stderr.read()}")
        for _ in range(5):  # let it get into further writes, then kill it without warning
            store.load_state(sid)
    finally:
        os.kill(writer.pid, signal.SIGKILL)
        writer.wait(timeout=60)
    assert writer.returncode == -signal.SIGKILL

    loaded = store.load_state(sid)
    assert loaded.meta["version"] >= 3
    assert len(loaded.messages) == 10
    # The next save works and clears whatever temp file the killed writer left.
    store.save_state(SessionState(session_id=sid, meta={"version": "after"}))
    assert store.load_state(sid).meta == {"version": "after"}
    assert list((store.sessions_dir / "state" / ".tmp").iterdir()) == []


def test_a_stale_temp_file_is_ignored_and_cleaned_up(store: SessionStore) -> None:
    sid = store.new_session_id()
    store.save_state(SessionState(session_id=sid, meta={"ok": True}))
    stale = store.sessions_dir / "state" / ".tmp" / f"{sid}.abc123.tmp"
    stale.write_bytes(b'{"schema_version":1,"session_id":"' + sid.encode() + b'","mess')
    assert store.load_state(sid).meta == {"ok": True}
    assert [s.session_id for s in store.list_sessions()] == [sid]
    store.save_state(SessionState(session_id=sid, meta={"ok": "again"}))
    assert not stale.exists()


def test_snapshot_files_are_private(store: SessionStore) -> None:
    sid = store.new_session_id()
    store.save_state(SessionState(session_id=sid))
    mode = (store.sessions_dir / "state" / f"{sid}.json").stat().st_mode & 0o777
    assert mode == 0o600
    assert store.sessions_dir.stat().st_mode & 0o777 == 0o700


def test_missing_session_raises_session_not_found(store: SessionStore) -> None:
    with pytest.raises(SessionNotFound) as info:
        store.load_state("no-such-session")
    assert str(info.value) == "session not found: no-such-session"
    assert isinstance(info.value, KeyError)
    assert info.value.session_id == "no-such-session"


def write_snapshot(store: SessionStore, sid: str, raw: bytes) -> Path:
    path = store.sessions_dir / "state" / f"{sid}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(raw)
    return path


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b'{"schema_version": 1, "session_id": "s1", "messa', r"is not valid JSON \(.*\); move"),
        (b"[1, 2]", r"holds a JSON list, not an object; move the file aside"),
        (
            b'{"session_id": "s1", "messages": "oops"}',
            r"does not match the session format \(messages: Input should be a valid list\)",
        ),
        (
            b'{"schema_version": 2, "session_id": "s1"}',
            r"was written by a newer jupyter-codelia \(schema_version 2; this version reads 1\);"
            r" upgrade jupyter-codelia",
        ),
        (b'{"session_id": "other"}', r"holds session 'other'; move the file aside"),
    ],
)
def test_corrupted_snapshot_raises_a_clear_load_error(
    store: SessionStore, raw: bytes, reason: str
) -> None:
    path = write_snapshot(store, "s1", raw)
    with pytest.raises(SessionLoadError) as info:
        store.load_state("s1")
    message = str(info.value)
    assert message.startswith(f"session load failed: s1: {path} ")
    assert re.search(reason, message), message


def test_unreadable_snapshot_raises_a_load_error(store: SessionStore) -> None:
    path = write_snapshot(store, "s2", b"")
    path.unlink()
    path.mkdir()  # a directory where the file should be: reading fails with an OSError
    with pytest.raises(SessionLoadError, match=r"^session load failed: s2: cannot read "):
        store.load_state("s2")


def test_invalid_ids_and_arguments_are_rejected(store: SessionStore) -> None:
    with pytest.raises(InvalidSessionIdError, match=r"^invalid session id '\.\./x': use 1-128"):
        store.load_state("../x")
    with pytest.raises(ValidationError, match=r"invalid session id '\.hidden'"):
        SessionState(session_id=".hidden")
    with pytest.raises(TypeError, match=r"^save_state expects a SessionState, got dict$"):
        store.save_state({"session_id": "x"})  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="invalid timestamp 'soon'"):
        SessionState(session_id="s", updated_at="soon")
    with pytest.raises(ValidationError, match="greater than or equal to 0"):
        SessionState(session_id="s", invoke_seq=-1)


def test_unserializable_state_is_rejected_and_the_old_snapshot_kept(store: SessionStore) -> None:
    store.save_state(SessionState(session_id="keep", meta={"v": 1}))
    bad = SessionState(session_id="keep", meta={"v": 2})
    bad.meta["handle"] = object()
    with pytest.raises(TypeError, match=r"^session keep state is not JSON-serializable"):
        store.save_state(bad)
    assert store.load_state("keep").meta == {"v": 1}


def test_updated_at_is_normalized_to_utc(store: SessionStore) -> None:
    state = SessionState(session_id="tz", updated_at="2026-01-02T03:04:05+02:00")
    assert state.updated_at == "2026-01-02T01:04:05.000Z"
    store.save_state(state)
    assert store.load_state("tz").updated_at == "2026-01-02T01:04:05.000Z"


def test_home_argument_errors(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"^SessionStore home must not be empty"):
        SessionStore("")
    with pytest.raises(TypeError, match=r"^SessionStore home must be a path, a str or None"):
        SessionStore(42)  # type: ignore[arg-type]
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("x")
    store = SessionStore(not_a_dir)
    with pytest.raises(NotADirectoryError, match=r"^session store home is not a directory: "):
        store.save_state(SessionState(session_id="s"))


def test_default_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("JUPYTER_CODELIA_HOME", str(tmp_path / "custom"))
    assert default_home() == tmp_path / "custom"
    assert SessionStore().home == tmp_path / "custom"
    monkeypatch.delenv("JUPYTER_CODELIA_HOME")
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "data"))
    assert default_home() == tmp_path / "data" / "codelia"
    monkeypatch.setenv("JUPYTER_CODELIA_HOME", "  ")  # blank means unset
    assert default_home() == tmp_path / "data" / "codelia"


def test_saves_from_several_threads_all_land(store: SessionStore) -> None:
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            for i in range(10):
                store.save_state(SessionState(session_id=f"t{n}", meta={"i": i}))
                store.save_state(SessionState(session_id="shared", meta={"by": n, "i": i}))
        except BaseException as exc:  # surfaced below, with the thread's own traceback
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert {s.session_id for s in store.list_sessions()} == {"t0", "t1", "t2", "t3", "shared"}
    for n in range(4):
        assert store.load_state(f"t{n}").meta == {"i": 9}
    assert store.load_state("shared").meta["i"] == 9


def test_the_store_imports_no_front_end_modules(run_python: RunPython) -> None:
    result = run_python(
        """
        import sys
        import jupyter_codelia._redact, jupyter_codelia.session
        front_ends = ("IPython", "ipywidgets", "jupyter_server", "anthropic")
        print([m for m in front_ends if m in sys.modules])
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_a_lock_held_elsewhere_times_out_with_a_clear_error(tmp_path: Path) -> None:
    store = SessionStore(tmp_path, lock_timeout=0.2)
    store.save_state(SessionState(session_id="s", meta={"v": 1}))
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, filelock\n"
            "with filelock.FileLock(sys.argv[1]):\n"
            "    print('held', flush=True)\n"
            "    sys.stdin.readline()\n",
            str(store.sessions_dir / ".lock"),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(TimeoutError) as info:
            store.save_state(SessionState(session_id="s", meta={"v": 2}))
        assert str(info.value) == (
            f"session store is locked by another process for over 0.2 s: "
            f"{store.sessions_dir / '.lock'}; if no other kernel is saving, delete the lock file"
        )
    finally:
        holder.communicate("\n", timeout=60)
    assert store.load_state("s").meta == {"v": 1}
    store.save_state(SessionState(session_id="s", meta={"v": 3}))  # free again
    assert store.load_state("s").meta == {"v": 3}


@pytest.mark.parametrize("timeout", [0, -1, "5"])
def test_bad_lock_timeouts_are_rejected(tmp_path: Path, timeout: object) -> None:
    with pytest.raises(ValueError, match=r"^lock_timeout must be a positive number of seconds"):
        SessionStore(tmp_path, lock_timeout=timeout)  # type: ignore[arg-type]
