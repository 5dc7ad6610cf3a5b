"""The side panel serves only its own user's store, and keeps that store 0700/0600."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from tornado.httpclient import HTTPClientError

from jupyter_codelia.session import SessionStore

from .conftest import save_session


def _foreign_home(tmp_path: Path) -> Path:
    """A directory owned by another user: chown-ed when we are root, else the root directory."""
    if os.geteuid() != 0:
        return Path("/")
    home = tmp_path / "someone-else"
    home.mkdir()
    os.chown(home, 65534, 65534)
    return home


async def test_a_store_owned_by_another_user_is_refused_with_its_owner_named(
    jp_fetch: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = _foreign_home(tmp_path)
    monkeypatch.setenv("JUPYTER_CODELIA_HOME", str(home))
    with pytest.raises(HTTPClientError) as caught:
        await jp_fetch("codelia", "api", "sessions", method="GET")
    assert caught.value.code == 403
    message = json.loads(caught.value.response.body)["message"]
    owner = home.stat().st_uid
    assert message.startswith(f"The codelia store {home} belongs to ")
    assert f"(uid {owner}), but this Jupyter server runs as " in message
    assert "Point JUPYTER_CODELIA_HOME at a directory of that user." in message
    assert not (home / "sessions").exists()


async def test_the_servers_own_store_is_served_and_its_index_is_private(
    jp_fetch: Any, codelia_home: Path, store: SessionStore
) -> None:
    old = os.umask(0)
    try:
        save_session(store, "s1", ["hello"], "2026-11-20T09:30:00.000Z", None)
        store.close()
        for name in ("index.db", "index.db-wal", "index.db-shm"):
            (codelia_home / "sessions" / name).unlink(missing_ok=True)
        response = await jp_fetch("codelia", "api", "sessions", method="GET")
    finally:
        os.umask(old)
    assert [s["session_id"] for s in json.loads(response.body)["sessions"]] == ["s1"]
    for name in ("index.db", "index.db-wal", "index.db-shm"):
        path = codelia_home / "sessions" / name
        if path.exists():
            assert stat.S_IMODE(path.stat().st_mode) == 0o600, name
    assert (codelia_home / "sessions" / "index.db").exists()
