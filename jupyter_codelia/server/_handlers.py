"""Tornado handlers of the side panel's REST API (authenticated, read-only, JSON).

The session store is opened per request at ``$JUPYTER_CODELIA_HOME`` (or the default home), so a
server started before the first session was written still sees it. Store calls do file and
SQLite I/O, so each request runs them in one worker thread, keeping the server's loop free.

These endpoints are a fast path: the kernel's store is the truth (its kernel may run on another
host, behind a gateway). ``GET /codelia/api/store`` reports the store id this server sees, and
the panel uses the other endpoints only when that id equals the one its kernel reports.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import tornado.web
from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join

from .._redact import redact_secrets
from ..wire import SessionsListResult, StoreInfo, TranscriptResult, transcript_messages

if TYPE_CHECKING:
    from ..session import SessionStore

T = TypeVar("T")


def _with_store(action: Callable[[SessionStore], T]) -> T:
    from ..session import SessionStore, default_home

    home = default_home()
    check_store_owner(home)
    store = SessionStore(home)
    try:
        return action(store)
    finally:
        store.close()


def check_store_owner(home: Path) -> None:
    """Refuse a store that belongs to another user: the server would read (and index into)
    someone else's conversations, or fail half-way on their 0700 directories."""
    if os.name != "posix":
        return
    me = os.geteuid()
    for path in (home, home / "sessions"):
        try:
            owner = path.stat().st_uid
        except FileNotFoundError:
            continue
        if owner != me:
            raise tornado.web.HTTPError(
                403,
                f"The codelia store {path} belongs to {_user_name(owner)} (uid {owner}), but "
                f"this Jupyter server runs as {_user_name(me)} (uid {me}); it serves only its "
                "own user's store. Point JUPYTER_CODELIA_HOME at a directory of that user.",
            )


def _user_name(uid: int) -> str:
    import pwd

    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return "an unknown user"


def parse_limit(raw: str | None) -> int | None:
    """The ``limit`` query argument: absent → no limit, else a positive integer."""
    if raw is None or raw == "":
        return None
    try:
        limit = int(raw)
    except ValueError:
        limit = 0
    if limit <= 0:
        raise tornado.web.HTTPError(
            400, f"limit must be a positive integer (e.g. ?limit=20), got {raw!r}"
        )
    return limit


class _CodeliaHandler(APIHandler):
    def reply(self, body: dict[str, Any]) -> None:
        self.set_header("Content-Type", "application/json")
        # The store redacts what it writes; this pass also covers files written by older versions.
        self.finish(json.dumps(redact_secrets(body), ensure_ascii=False))


class StoreHandler(_CodeliaHandler):
    """``GET /codelia/api/store`` → ``{"home", "store_id"}``: which store this server sees.

    ``store_id`` is null until some kernel has created the id file there; this handler never
    writes, so a server whose kernels run elsewhere leaves no trace in its own home.
    """

    @tornado.web.authenticated
    async def get(self) -> None:
        from ..session import default_home, read_store_id

        home = default_home()
        store_id = await asyncio.to_thread(read_store_id, home)
        self.reply(StoreInfo(home=str(home), store_id=store_id).dump())


class SessionsHandler(_CodeliaHandler):
    """``GET /codelia/api/sessions[?limit=N]`` → ``{"sessions": [...]}``, newest first."""

    @tornado.web.authenticated
    async def get(self) -> None:
        limit = parse_limit(self.get_query_argument("limit", None))
        summaries = await asyncio.to_thread(
            _with_store, lambda store: store.list_sessions(limit=limit)
        )
        self.reply(SessionsListResult(sessions=summaries).dump())


class TranscriptHandler(_CodeliaHandler):
    """``GET /codelia/api/sessions/<id>/transcript`` → ``{"session_id", "events": [...]}``.

    ``events`` are the envelopes a live ``codelia`` comm would have sent (``run.started``,
    ``agent.event``, ``run.status``); system prompts and raw model traffic stay on the server.
    """

    @tornado.web.authenticated
    async def get(self, session_id: str) -> None:
        from ..session import InvalidSessionIdError, SessionLoadError, SessionNotFound

        try:
            records = await asyncio.to_thread(
                _with_store, lambda store: store.transcript(session_id)
            )
        except InvalidSessionIdError as exc:
            raise tornado.web.HTTPError(400, str(exc)) from None
        except SessionNotFound:
            raise tornado.web.HTTPError(
                404,
                f"session not found: {session_id} (GET /codelia/api/sessions lists the saved ones)",
            ) from None
        except SessionLoadError as exc:
            raise tornado.web.HTTPError(500, str(exc)) from None
        events = transcript_messages(records, session_id)
        self.reply(TranscriptResult(session_id=session_id, events=events).dump())


def setup_handlers(web_app: Any) -> None:
    api = url_path_join(web_app.settings.get("base_url", "/"), "codelia", "api")
    base = url_path_join(api, "sessions")
    web_app.add_handlers(
        ".*$",
        [
            (url_path_join(api, "store"), StoreHandler),
            (base, SessionsHandler),
            (url_path_join(base, r"(?P<session_id>[^/]+)", "transcript"), TranscriptHandler),
        ],
    )
