"""The side panel's REST endpoints, served by a real jupyter server with the extension enabled.

The async tests carry no ``asyncio`` mark on purpose: pytest-jupyter runs unmarked coroutine
tests on the loop its server lives on (asyncio_mode is strict, so pytest-asyncio leaves them
alone); a pytest-asyncio loop would leave the server unserved and jp_fetch would time out.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from tornado.httpclient import HTTPClientError

from jupyter_codelia.session import STORE_ID_FILE, SessionStore, ensure_store_id

from .conftest import record_run, save_session


async def get_json(jp_fetch: Any, *path: str, **params: str) -> Any:
    response = await jp_fetch(*path, method="GET", params=params or None)
    assert response.code == 200
    assert response.headers["Content-Type"].startswith("application/json")
    return json.loads(response.body)


async def get_error(jp_fetch: Any, *path: str, **params: str) -> tuple[int, str]:
    with pytest.raises(HTTPClientError) as caught:
        await jp_fetch(*path, method="GET", params=params or None)
    body = json.loads(caught.value.response.body)
    return caught.value.code, body["message"]


async def test_lists_no_sessions_in_an_empty_home(jp_fetch: Any, codelia_home: Any) -> None:
    assert await get_json(jp_fetch, "codelia", "api", "sessions") == {"sessions": []}


async def test_lists_sessions_newest_first_with_their_summary(
    jp_fetch: Any, store: SessionStore
) -> None:
    save_session(store, "s-old", ["first question"], "2026-11-01T10:00:00.000Z", None)
    save_session(
        store, "s-new", ["load sales.csv", "plot revenue"], "2026-11-20T09:30:00.000Z", "Revenue"
    )

    body = await get_json(jp_fetch, "codelia", "api", "sessions")

    assert body["sessions"] == [
        {
            "session_id": "s-new",
            "updated_at": "2026-11-20T09:30:00.000Z",
            "message_count": 4,
            "last_user_message": "plot revenue",
            "title": "Revenue",
        },
        {
            "session_id": "s-old",
            "updated_at": "2026-11-01T10:00:00.000Z",
            "message_count": 2,
            "last_user_message": "first question",
            "title": None,
        },
    ]


async def test_limit_keeps_the_newest(jp_fetch: Any, store: SessionStore) -> None:
    for day in range(1, 4):
        save_session(store, f"s-{day}", [f"q{day}"], f"2026-11-0{day}T00:00:00.000Z", None)
    body = await get_json(jp_fetch, "codelia", "api", "sessions", limit="2")
    assert [row["session_id"] for row in body["sessions"]] == ["s-3", "s-2"]


@pytest.mark.parametrize("limit", ["0", "-3", "ten"])
async def test_a_bad_limit_is_a_clear_400(jp_fetch: Any, codelia_home: Any, limit: str) -> None:
    code, message = await get_error(jp_fetch, "codelia", "api", "sessions", limit=limit)
    assert code == 400
    assert message == f"limit must be a positive integer (e.g. ?limit=20), got {limit!r}"


async def test_transcript_replays_runs_as_comm_envelopes(
    jp_fetch: Any, store: SessionStore
) -> None:
    save_session(store, "s-1", ["plot revenue"], "2026-11-20T09:30:00.000Z", None)
    events = [
        {"type": "text_delta", "delta": "Plotting"},
        {"type": "tool_call", "tool": "python", "args": {"code": "1+1"}, "tool_call_id": "t1"},
        {"type": "tool_result", "tool": "python", "result": "2", "tool_call_id": "t1"},
        {"type": "final", "content": "Done."},
    ]
    run_id = record_run(store, "s-1", "plot revenue", events)

    body = await get_json(jp_fetch, "codelia", "api", "sessions", "s-1", "transcript")

    assert body["session_id"] == "s-1"
    envelopes = body["events"]
    assert envelopes[0] == {
        "type": "run.started",
        "run_id": run_id,
        "session_id": "s-1",
        "prompt": "plot revenue",
        "source": "magic",
        "demo": False,
    }
    agent_events = [e for e in envelopes if e["type"] == "agent.event"]
    assert [e["event"] for e in agent_events] == events
    assert [e["seq"] for e in agent_events] == [0, 1, 2, 3]
    assert all(e["run_id"] == run_id for e in envelopes)
    statuses = [e["status"] for e in envelopes if e["type"] == "run.status"]
    assert statuses == ["running", "completed"]
    # Only what a live comm would carry: no headers, model traffic or raw tool outputs.
    assert {e["type"] for e in envelopes} == {"run.started", "agent.event", "run.status"}


async def test_transcript_of_several_runs_is_oldest_first(
    jp_fetch: Any, store: SessionStore
) -> None:
    save_session(store, "s-1", ["one", "two"], "2026-11-20T09:30:00.000Z", None)
    first = record_run(store, "s-1", "one", [{"type": "final", "content": "1"}])
    second = record_run(store, "s-1", "two", [], outcome="cancelled")
    body = await get_json(jp_fetch, "codelia", "api", "sessions", "s-1", "transcript")
    started = [e for e in body["events"] if e["type"] == "run.started"]
    assert [(e["run_id"], e["prompt"]) for e in started] == [(first, "one"), (second, "two")]
    assert body["events"][-1] == {"type": "run.status", "run_id": second, "status": "cancelled"}


async def test_unknown_session_is_a_404_naming_it(jp_fetch: Any, store: SessionStore) -> None:
    save_session(store, "s-1", ["q"], "2026-11-20T09:30:00.000Z", None)
    code, message = await get_error(jp_fetch, "codelia", "api", "sessions", "nope", "transcript")
    assert code == 404
    assert message == "session not found: nope (GET /codelia/api/sessions lists the saved ones)"


async def test_an_invalid_session_id_is_a_400(jp_fetch: Any, codelia_home: Any) -> None:
    code, message = await get_error(jp_fetch, "codelia", "api", "sessions", ".hidden", "transcript")
    assert code == 400
    assert message.startswith("invalid session id '.hidden': use 1-128 letters")


async def test_no_secret_reaches_the_browser(
    jp_fetch: Any, store: SessionStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "sk-test-0123456789abcdef-secret"
    save_session(store, "s-1", ["q"], "2026-11-20T09:30:00.000Z", None)
    record_run(store, "s-1", "q", [{"type": "final", "content": "done"}])
    # A key that appears in the environment only after the session was written (so the store
    # could not redact it) is still masked on the way out.
    monkeypatch.setenv("ANTHROPIC_API_KEY", secret)
    path = next(store.sessions_dir.rglob("*.jsonl"))
    with path.open("a", encoding="utf-8") as handle:
        record = {"type": "agent.event", "run_id": path.stem, "seq": 99}
        record["event"] = {"type": "final", "content": f"the key is {secret}"}
        handle.write(json.dumps(record) + "\n")

    response = await jp_fetch("codelia", "api", "sessions", "s-1", "transcript", method="GET")

    text = response.body.decode()
    assert secret not in text
    assert "the key is [REDACTED]" in text


async def test_endpoints_require_authentication(
    jp_fetch: Any, jp_serverapp: Any, codelia_home: Any
) -> None:
    # jp_fetch sends the server's token; without it the handler refuses.
    with pytest.raises(HTTPClientError) as caught:
        await jp_fetch("codelia", "api", "sessions", method="GET", headers={"Authorization": ""})
    assert caught.value.code == 403


async def test_store_reports_no_id_until_a_kernel_created_one(
    jp_fetch: Any, codelia_home: Any
) -> None:
    body = await get_json(jp_fetch, "codelia", "api", "store")
    assert body == {"home": str(codelia_home), "store_id": None}
    # Read-only: asking did not create the home (a server whose kernels run elsewhere).
    assert not codelia_home.exists()


async def test_store_reports_the_id_a_kernel_wrote(jp_fetch: Any, codelia_home: Any) -> None:
    store_id = ensure_store_id(codelia_home)

    body = await get_json(jp_fetch, "codelia", "api", "store")

    assert body == {"home": str(codelia_home), "store_id": store_id}


async def test_store_treats_a_damaged_id_file_as_none(jp_fetch: Any, codelia_home: Any) -> None:
    codelia_home.mkdir()
    (codelia_home / STORE_ID_FILE).write_text("not an id\n")

    body = await get_json(jp_fetch, "codelia", "api", "store")

    assert body["store_id"] is None
