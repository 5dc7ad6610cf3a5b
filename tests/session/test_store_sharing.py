"""Stores shared between hosts: SQLite's index uses the rollback journal there, not WAL."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from jupyter_codelia.session import SessionState, SessionStore
from jupyter_codelia.session._sharing import (
    SharedStoreSettingError,
    filesystem_type,
    shared_between_hosts,
)

MOUNTINFO = """\
22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
40 22 0:40 / /mnt/team rw,relatime shared:20 - nfs4 server:/export/team rw,vers=4.2
41 40 0:41 / /mnt/team/local-cache rw - tmpfs tmpfs rw
42 22 0:42 / /mnt/sshfs\\040dir rw,nosuid - fuse.sshfs me@host:/data rw
"""

WRITER = """
import sys
from jupyter_codelia.session import SessionState, SessionStore
store = SessionStore(sys.argv[1])
for i in range(10):
    sid = sys.argv[2] + "-" + str(i)
    with store.open_run_log(run_id="run-" + sid, session_id=sid, header={}) as log:
        log.append("run.end", outcome="completed")
    store.save_state(SessionState(session_id=sid, messages=[{"role": "user", "content": sid}]))
"""


@pytest.fixture
def mountinfo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("JUPYTER_CODELIA_SHARED_STORE", raising=False)
    path = tmp_path / "mountinfo"
    path.write_text(MOUNTINFO)
    return path


@pytest.mark.parametrize(
    ("directory", "fs_type", "shared"),
    [
        ("/mnt/team/alice/codelia/sessions", "nfs4", True),
        ("/mnt/team", "nfs4", True),
        ("/mnt/teammate/codelia", "ext4", False),  # a prefix of the name is not a parent
        ("/mnt/team/local-cache/codelia", "tmpfs", False),  # the deepest mount wins
        ("/mnt/sshfs dir/codelia", "fuse.sshfs", True),
        ("/home/jovyan/.local/share/jupyter/codelia", "ext4", False),
    ],
)
def test_the_filesystem_type_decides(
    mountinfo: Path, directory: str, fs_type: str, shared: bool
) -> None:
    assert filesystem_type(Path(directory), mountinfo=mountinfo) == fs_type
    assert shared_between_hosts(Path(directory), mountinfo=mountinfo) is shared


def test_the_environment_overrides_detection(
    mountinfo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JUPYTER_CODELIA_SHARED_STORE", "0")
    assert shared_between_hosts(Path("/mnt/team/x"), mountinfo=mountinfo) is False
    monkeypatch.setenv("JUPYTER_CODELIA_SHARED_STORE", "yes")
    assert shared_between_hosts(Path("/home/x"), mountinfo=mountinfo) is True
    monkeypatch.setenv("JUPYTER_CODELIA_SHARED_STORE", "sometimes")
    with pytest.raises(SharedStoreSettingError) as caught:
        shared_between_hosts(Path("/home/x"), mountinfo=mountinfo)
    assert str(caught.value) == (
        "$JUPYTER_CODELIA_SHARED_STORE must be 1 (the store is shared between hosts) or 0 "
        "(one host), got 'sometimes'; unset it to detect this from the filesystem type"
    )


def test_unreadable_mounts_mean_one_host(tmp_path: Path, mountinfo: Path) -> None:
    assert filesystem_type(tmp_path, mountinfo=tmp_path / "missing") is None
    assert shared_between_hosts(tmp_path, mountinfo=tmp_path / "missing") is False


def _journal_mode(store: SessionStore) -> str:
    with sqlite3.connect(store.sessions_dir / "index.db") as db:
        return str(db.execute("PRAGMA journal_mode").fetchone()[0])


def test_a_shared_store_uses_the_rollback_journal_across_processes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JUPYTER_CODELIA_SHARED_STORE", "1")
    home = tmp_path / "shared"
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(home), f"host{n}"],
            stderr=subprocess.PIPE,
            text=True,
            env=dict(os.environ),
        )
        for n in range(3)
    ]
    for writer in writers:
        _, err = writer.communicate(timeout=120)
        assert writer.returncode == 0, err

    store = SessionStore(home)
    try:
        listed = store.list_sessions()
        assert len(listed) == 30
        assert _journal_mode(store) == "delete"
        # No shared-memory index that would have to span hosts.
        assert not (store.sessions_dir / "index.db-shm").exists()
        assert not (store.sessions_dir / "index.db-wal").exists()
    finally:
        store.close()


def test_a_store_on_one_host_keeps_wal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUPYTER_CODELIA_SHARED_STORE", "0")
    store = SessionStore(tmp_path / "home")
    try:
        store.save_state(SessionState(session_id="s", messages=[]))
        assert _journal_mode(store) == "wal"
    finally:
        store.close()
