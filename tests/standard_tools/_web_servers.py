"""A real HTTP server on 127.0.0.1 with scripted routes, for the search and webfetch tests."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from urllib.parse import parse_qs, urlsplit


@dataclass
class Reply:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | Iterable[bytes] = b""
    chunk_delay_s: float = 0.0
    send_length: bool = True


@dataclass
class Seen:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes


Route = Callable[[Seen], Reply]


class LoopbackServer:
    """``with LoopbackServer({"/page": lambda req: Reply(...)}) as server: server.url("/page")``."""

    def __init__(self, routes: dict[str, Route] | None = None, host: str = "127.0.0.1") -> None:
        self.routes: dict[str, Route] = dict(routes or {})
        self.requests: list[Seen] = []
        self._stop = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                pass

            def _handle(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                parts = urlsplit(self.path)
                seen = Seen(
                    method=self.command,
                    path=parts.path,
                    query=parse_qs(parts.query),
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=self.rfile.read(length) if length else b"",
                )
                outer.requests.append(seen)
                route = outer.routes.get(parts.path)
                reply = route(seen) if route else Reply(404, {"content-type": "text/plain"}, b"nf")
                self.send_response(reply.status)
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                if isinstance(reply.body, bytes):
                    if reply.send_length:
                        self.send_header("content-length", str(len(reply.body)))
                    self.send_header("connection", "close")
                    self.end_headers()
                    self.wfile.write(reply.body)
                    return
                self.send_header("connection", "close")
                self.end_headers()
                try:
                    for chunk in reply.body:
                        if outer._stop.is_set():
                            return
                        self.wfile.write(chunk)
                        self.wfile.flush()
                        if reply.chunk_delay_s and outer._stop.wait(reply.chunk_delay_s):
                            return
                except (BrokenPipeError, ConnectionResetError):
                    return

            def do_GET(self) -> None:
                self._handle()

            def do_POST(self) -> None:
                self._handle()

        self._server = ThreadingHTTPServer((host, 0), Handler)
        self._server.daemon_threads = True
        self._server.block_on_close = False
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def base(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def url(self, path: str) -> str:
        return self.base + path

    def __enter__(self) -> LoopbackServer:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._server.shutdown()
        self._server.server_close()


def slow_chunks(first: bytes, then: bytes, count: int) -> Iterable[bytes]:
    yield first
    for _ in range(count):
        yield then


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound then released)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    return port
