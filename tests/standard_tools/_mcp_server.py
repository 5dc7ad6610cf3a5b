"""A real MCP server for the tests, written with the SDK's server API, hostile where asked.

``python _mcp_server.py stdio`` serves over stdin/stdout; ``python _mcp_server.py http PORT``
serves streamable HTTP on 127.0.0.1:PORT/mcp, ``sse PORT`` the legacy SSE transport and
``oauth-http PORT [TTL]`` streamable HTTP behind OAuth (access tokens lasting TTL seconds). The
other modes are broken servers: ``hang-init`` never answers ``initialize``, ``leak-secret``
prints a token on stderr and dies, ``when FLAGFILE`` fails to start until the file exists.
"""

from __future__ import annotations

import base64
import io
import json
import os
import random
import sys
import time

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import (
    BlobResourceContents,
    EmbeddedResource,
    ImageContent,
    TextContent,
    TextResourceContents,
    ToolAnnotations,
)
from pydantic import BaseModel

PNG_1PX = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)

server = MCPServer("codelia-test")


@server.tool()
def echo(text: str, times: int = 1) -> str:
    """Repeat the text."""
    return text * times


@server.tool()
def plot(title: str) -> list[TextContent | ImageContent]:
    """A caption and a one-pixel PNG."""
    image = ImageContent(data=base64.b64encode(PNG_1PX).decode(), mime_type="image/png")
    return [TextContent(text=f"Figure: {title}"), image]


@server.tool()
def resources() -> list[EmbeddedResource]:
    """An embedded text resource and an embedded PNG blob."""
    return [
        EmbeddedResource(
            resource=TextResourceContents(
                uri="file:///notes.txt", text="hello", mime_type="text/plain"
            )
        ),
        EmbeddedResource(
            resource=BlobResourceContents(
                uri="file:///dot.png",
                blob=base64.b64encode(PNG_1PX).decode(),
                mime_type="image/png",
            )
        ),
    ]


@server.tool()
def crash() -> str:
    """Die mid-call, as a buggy server would."""
    print("about to crash: segfault simulated", file=sys.stderr, flush=True)
    os._exit(3)


@server.tool()
def hang() -> str:
    """Never answer."""
    time.sleep(3600)
    return "unreachable"


@server.tool()
def fail(reason: str) -> str:
    """Raise an error the server reports as an error result."""
    raise ToolError(reason)


@server.tool(name="a.b")
def dotted() -> str:
    """Sanitises to a_b, as the next tool's name is."""
    return "from a.b"


@server.tool(name="a_b")
def underscored() -> str:
    """Its name is a_b already."""
    return "from a_b"


@server.tool(name="x" * 70 + "1")
def long_one() -> str:
    """A name past 64 characters."""
    return "long 1"


@server.tool(name="x" * 70 + "2")
def long_two() -> str:
    """Another name past 64 characters, with the same first 64."""
    return "long 2"


@server.tool()
def minified(kilobytes: int = 200) -> str:
    """One line of minified JSON, about ``kilobytes`` KB."""
    rows = [{"id": i, "name": f"row{i}", "value": i * 0.5} for i in range(kilobytes * 25)]
    return json.dumps(rows, separators=(",", ":"))


@server.tool()
def huge(megabytes: int = 200) -> str:
    """A result of ``megabytes`` MB of text on one line (the JSON-RPC line is that long)."""
    return ("0123456789abcdef" * 64 * 1024)[: 1024 * 1024] * megabytes


@server.tool()
def big_image(megabytes: int = 50) -> ImageContent:
    """A PNG of random pixels, about ``megabytes`` MB (noise does not compress)."""
    from PIL import Image

    side = int((megabytes * 1024 * 1024 / 3) ** 0.5)
    noise = random.Random(7).randbytes(side * side * 3)
    buffer = io.BytesIO()
    Image.frombytes("RGB", (side, side), noise).save(buffer, "PNG", compress_level=0)
    return ImageContent(data=base64.b64encode(buffer.getvalue()).decode(), mime_type="image/png")


@server.tool()
def text_blob() -> EmbeddedResource:
    """A text document sent as a base64 blob (as servers do for files they read as bytes)."""
    data = base64.b64encode(b"name,total\nalice,3\n").decode()
    return EmbeddedResource(
        resource=BlobResourceContents(uri="file:///report.csv", blob=data, mime_type="text/csv")
    )


@server.tool()
def binary_blob() -> EmbeddedResource:
    """A gzip archive as a blob: binary, so it is described, not decoded."""
    import gzip

    data = base64.b64encode(gzip.compress(b"payload" * 100)).decode()
    return EmbeddedResource(
        resource=BlobResourceContents(
            uri="file:///data.gz", blob=data, mime_type="application/gzip"
        )
    )


class Weather(BaseModel):
    city: str
    celsius: float


@server.tool()
def weather(city: str) -> Weather:
    """Structured output with an output schema."""
    return Weather(city=city, celsius=21.5)


@server.tool(annotations=ToolAnnotations(title="Look up", read_only_hint=True))
def lookup(key: str) -> str:
    """A tool its server calls read-only."""
    return f"value of {key}"


@server.tool(annotations=ToolAnnotations(destructive_hint=True, open_world_hint=True))
def wipe() -> str:
    """A tool its server calls destructive."""
    return "wiped"


@server.tool()
async def slow_steps(ctx: Context, steps: int = 3) -> str:
    """Reports progress and a log line per step."""
    import warnings

    for step in range(steps):
        await ctx.report_progress(step + 1, steps, f"step {step + 1}")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            await ctx.log("info", f"did step {step + 1}")
    return "done"


@server.tool()
async def ask_model(ctx: Context, times: int = 2) -> str:
    """Asks the client's model the same question ``times`` times (sampling), one line each."""
    import warnings

    from mcp.shared.exceptions import MCPError
    from mcp_types import SamplingMessage

    question = SamplingMessage(role="user", content=TextContent(type="text", text="a colour?"))
    answers = []
    for _ in range(times):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                result = await ctx.request_context.session.create_message([question], max_tokens=50)
            except MCPError as exc:
                answers.append(f"refused: {exc.error.message}")
                continue
        content = result.content
        answers.append(content.text if isinstance(content, TextContent) else str(content))
    return "\n".join(answers)


@server.tool()
async def add_tool(ctx: Context) -> str:
    """Adds a tool and says so (notifications/tools/list_changed)."""

    def added() -> str:
        """A tool that appeared later."""
        return "new"

    server.add_tool(added, name="added_later")
    await ctx.notify_tools_changed()
    return "added"


@server.prompt()
def review_code(code: str) -> str:
    """Ask for a code review."""
    return f"Please review this code:\n\n{code}"


def _oauth_server(port: int, ttl: int = 3600) -> MCPServer:
    """The same tools behind OAuth: an in-memory authorization server that approves at once
    (the "person" is the test, which opens the sign-in URL). Access tokens last ``ttl`` seconds;
    a refresh rotates the refresh token."""
    import secrets

    from mcp.server.auth.provider import (
        AccessToken,
        AuthorizationCode,
        RefreshToken,
        construct_redirect_uri,
    )
    from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
    from mcp.shared.auth import OAuthToken

    class Provider:
        def __init__(self) -> None:
            self.clients: dict[str, object] = {}
            self.codes: dict[str, AuthorizationCode] = {}
            self.tokens: dict[str, AccessToken] = {}
            self.refresh: dict[str, RefreshToken] = {}

        async def get_client(self, client_id: str) -> object:
            return self.clients.get(client_id)

        async def register_client(self, client_info: object) -> None:
            self.clients[client_info.client_id] = client_info  # type: ignore[attr-defined]

        async def authorize(self, client: object, params: object) -> str:
            code = secrets.token_hex(8)
            self.codes[code] = AuthorizationCode(
                code=code,
                scopes=params.scopes or [],  # type: ignore[attr-defined]
                expires_at=time.time() + 300,
                client_id=client.client_id,  # type: ignore[attr-defined]
                code_challenge=params.code_challenge,  # type: ignore[attr-defined]
                redirect_uri=params.redirect_uri,  # type: ignore[attr-defined]
                redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,  # type: ignore[attr-defined]
                resource=params.resource,  # type: ignore[attr-defined]
            )
            return construct_redirect_uri(
                str(params.redirect_uri),
                code=code,
                state=params.state,  # type: ignore[attr-defined]
            )

        async def load_authorization_code(self, client: object, code: str) -> object:
            return self.codes.get(code)

        def _issue(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
            access, refresh = secrets.token_hex(16), secrets.token_hex(16)
            self.tokens[access] = AccessToken(
                token=access, client_id=client_id, scopes=scopes, resource=resource,
                expires_at=int(time.time()) + ttl,
            )  # fmt: skip
            self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes)
            return OAuthToken(access_token=access, expires_in=ttl, refresh_token=refresh)

        async def exchange_authorization_code(self, client: object, code: object) -> OAuthToken:
            self.codes.pop(code.code, None)  # type: ignore[attr-defined]
            return self._issue(client.client_id, code.scopes, code.resource)  # type: ignore[attr-defined]

        async def load_refresh_token(self, client: object, token: str) -> object:
            return self.refresh.get(token)

        async def exchange_refresh_token(
            self, client: object, token: object, scopes: list[str]
        ) -> OAuthToken:
            self.refresh.pop(token.token, None)  # type: ignore[attr-defined]
            return self._issue(client.client_id, scopes, None)  # type: ignore[attr-defined]

        async def load_access_token(self, token: str) -> object:
            return self.tokens.get(token)

        async def revoke_token(self, token: object) -> None:
            pass

    base = f"http://127.0.0.1:{port}"
    guarded = MCPServer(
        "codelia-oauth-test",
        auth_server_provider=Provider(),
        auth=AuthSettings(
            issuer_url=base,
            resource_server_url=f"{base}/mcp",
            client_registration_options=ClientRegistrationOptions(enabled=True),
        ),
    )
    guarded.tool()(echo)
    return guarded


def _hang_in_initialize() -> None:
    sys.stdin.readline()  # the initialize request, never answered
    time.sleep(3600)


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "hang-init":
        _hang_in_initialize()
    elif mode == "leak-secret":
        print("starting with GITHUB_TOKEN=ghs_leakedTokenValue1234567890", file=sys.stderr)
        print("api_key: sk-live-notAKnownShape12345", file=sys.stderr, flush=True)
        sys.exit(4)
    elif mode == "when":
        if not os.path.exists(sys.argv[2]):
            print("not ready yet: the flag file is missing", file=sys.stderr, flush=True)
            sys.exit(5)
        server.run("stdio")
    elif mode == "stdio":
        server.run("stdio")
    elif mode == "oauth-http":
        port = int(sys.argv[2])
        ttl = int(sys.argv[3]) if len(sys.argv) > 3 else 3600
        _oauth_server(port, ttl).run("streamable-http", host="127.0.0.1", port=port)
    elif mode == "sse":
        server.run("sse", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
