"""Fixtures for the server-extension tests: a jupyter server with jupyter_codelia enabled
(pytest-jupyter, whose plugin tests/conftest.py declares) and a session store in a temporary
JUPYTER_CODELIA_HOME."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_codelia.session import SessionState, SessionStore


@pytest.fixture
def jp_server_config() -> dict[str, Any]:
    return {"ServerApp": {"jpserver_extensions": {"jupyter_codelia": True}}}


@pytest.fixture
def codelia_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "codelia-home"
    monkeypatch.setenv("JUPYTER_CODELIA_HOME", str(home))
    return home


@pytest.fixture
def store(codelia_home: Path) -> Iterator[SessionStore]:
    store = SessionStore(codelia_home)
    yield store
    store.close()


def record_run(
    store: SessionStore,
    session_id: str,
    prompt: str,
    events: list[dict[str, Any]],
    *,
    outcome: str = "completed",
) -> str:
    """Write one run's log as the agent does: run.start, agent events, status, run.end."""
    run_id = str(uuid.uuid4())
    with store.open_run_log(
        run_id=run_id, session_id=session_id, header={"model": {"name": "claude-sonnet-5-5"}}
    ) as log:
        log.append("run.start", session_id=session_id, input={"type": "text", "text": prompt})
        log.append("run.status", status="running")
        for seq, event in enumerate(events):
            log.append("agent.event", seq=seq, event=event)
        log.append("run.status", status=outcome)
        log.append("run.end", outcome=outcome, final=None)
    return run_id


def save_session(
    store: SessionStore, session_id: str, prompts: list[str], updated_at: str, title: str | None
) -> None:
    messages: list[dict[str, Any]] = []
    for prompt in prompts:
        messages.append({"role": "user", "content": prompt})
        messages.append({"role": "assistant", "content": f"answer to {prompt}"})
    store.save_state(
        SessionState(session_id=session_id, updated_at=updated_at, messages=messages, title=title)
    )
