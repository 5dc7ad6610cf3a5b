"""OAuth for HTTP servers, through the SDK's client support; tokens kept private on disk.

An HTTP (or SSE) server without an ``Authorization`` header of its own gets the SDK's
``OAuthClientProvider``: nothing happens until the server answers 401, then the SDK discovers
the authorization server, registers this client, and asks us to send the person to the sign-in
URL. We print that URL into the output of the cell that is running (``McpServers.show_sign_in``) and
listen on ``127.0.0.1`` for the redirect that carries the code; the SDK exchanges it for
tokens, and refreshes them when they expire. Tokens (with the time the access token expires)
and the client registration are stored in ``<codelia home>/mcp-oauth/<server>.json``, ``0600``
in a ``0700`` directory, so the next kernel signs in silently, refreshing an expired token.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from threading import Thread
from typing import Any
from urllib.parse import parse_qs, urlparse

from ..._private import make_private_dirs, write_private

SIGN_IN_TIMEOUT_S = 300.0
_EXPIRY_MARGIN_S = 30.0
"""A stored access token this close to its expiry is refreshed rather than sent."""
_CLIENT_NAME = "jupyter-codelia"


class FileTokenStorage:
    """The SDK's ``TokenStorage`` over one private JSON file per server."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _write(self, key: str, value: Any) -> None:
        data = self._read()
        data[key] = value
        self._save(data)

    def _save(self, data: dict[str, Any]) -> None:
        make_private_dirs(self.path.parent)
        write_private(self.path, json.dumps(data, indent=1).encode())

    async def get_tokens(self) -> Any:
        from mcp.shared.auth import OAuthToken

        data = self._read()
        raw = data.get("tokens")
        if not raw:
            return None
        tokens = OAuthToken.model_validate(raw)
        expires_at = data.get("expires_at")
        if isinstance(expires_at, (int, float)) and time.time() >= expires_at - _EXPIRY_MARGIN_S:
            # The SDK takes loaded tokens as valid whatever their age; without an access token
            # it refreshes with the refresh token (and signs in again only if that fails).
            return tokens.model_copy(update={"access_token": ""})
        return tokens

    async def set_tokens(self, tokens: Any) -> None:
        data = self._read()
        data["tokens"] = tokens.model_dump(mode="json", exclude_none=True)
        data.pop("expires_at", None)
        if tokens.expires_in is not None:
            data["expires_at"] = time.time() + int(tokens.expires_in)
        self._save(data)

    async def get_client_info(self) -> Any:
        from mcp.shared.auth import OAuthClientInformationFull

        raw = self._read().get("client_info")
        return OAuthClientInformationFull.model_validate(raw) if raw else None

    async def set_client_info(self, client_info: Any) -> None:
        self._write("client_info", client_info.model_dump(mode="json", exclude_none=True))


class _Redirects:
    """A one-shot loopback HTTP listener for the authorization redirect, opened on demand."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.server: ThreadingHTTPServer | None = None
        self.result: asyncio.Future[tuple[str, str | None, str | None]] | None = None

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.port}/callback"

    def open(self) -> None:
        loop = asyncio.get_running_loop()
        result = self.result = loop.create_future()

        def settle(outcome: tuple[str, str | None, str | None]) -> None:
            if not result.done():
                result.set_result(outcome)

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                query = parse_qs(urlparse(self.path).query)
                code = _first(query, "code")
                error = _first(query, "error")
                body = (
                    b"Signed in: you can close this tab and go back to the notebook."
                    if code
                    else b"Sign-in failed: " + (error or "no code").encode()
                )
                self.send_response(200 if code else 400)
                self.send_header("Content-Type", "text/plain; charset=utf-8")
                self.end_headers()
                self.wfile.write(body)
                outcome = (code or "", _first(query, "state"), error)
                loop.call_soon_threadsafe(settle, outcome)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        Thread(target=self.server.serve_forever, name="codelia-oauth", daemon=True).start()

    def close(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None


def _first(query: dict[str, list[str]], key: str) -> str | None:
    values = query.get(key)
    return values[0] if values else None


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _registered_port(storage: FileTokenStorage) -> int | None:
    """The loopback port of a stored registration (its redirect URI must stay the same)."""
    info = storage._read().get("client_info") or {}
    for uri in info.get("redirect_uris") or []:
        parsed = urlparse(str(uri))
        if parsed.hostname == "127.0.0.1" and parsed.port:
            return parsed.port
    return None


def oauth_provider(
    server_name: str, url: str, token_dir: Path, show_url: Callable[[str, str], None]
) -> Any:
    """The SDK's OAuth provider for one server (``show_url(server, url)`` shows the sign-in)."""
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata

    storage = FileTokenStorage(token_file(token_dir, server_name))
    redirects = _Redirects(_registered_port(storage) or _free_port())

    async def redirect(authorization_url: str) -> None:
        redirects.open()
        show_url(server_name, authorization_url)

    async def callback() -> Any:
        from .server import McpServerError

        assert redirects.result is not None
        try:
            code, state, error = await asyncio.wait_for(
                asyncio.shield(redirects.result), SIGN_IN_TIMEOUT_S
            )
        except asyncio.TimeoutError:
            raise McpServerError(
                f"MCP server {server_name!r}: nobody signed in within {SIGN_IN_TIMEOUT_S:g} s"
            ) from None
        finally:
            redirects.close()
        if error or not code:
            raise McpServerError(f"MCP server {server_name!r}: sign-in failed ({error})")
        return AuthorizationCodeResult(code=code, state=state)

    metadata = OAuthClientMetadata(
        client_name=_CLIENT_NAME,
        redirect_uris=[redirects.uri],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
    )
    return OAuthClientProvider(
        server_url=url,
        client_metadata=metadata,
        storage=storage,
        redirect_handler=redirect,
        callback_handler=callback,
    )


def token_file(token_dir: Path, server_name: str) -> Path:
    return token_dir / f"{server_name}.json"


def remove_tokens(token_dir: Path, server_name: str) -> bool:
    """Forget a server's sign-in (``%codelia mcp logout NAME``); False when there was none."""
    try:
        os.unlink(token_file(token_dir, server_name))
    except FileNotFoundError:
        return False
    return True
