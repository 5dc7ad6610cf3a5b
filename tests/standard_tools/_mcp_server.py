"""A real MCP server for the tests, written with the SDK's server API.

``python _mcp_server.py stdio`` serves over stdin/stdout; ``python _mcp_server.py http PORT``
serves streamable HTTP on 127.0.0.1:PORT/mcp.
"""

from __future__ import annotations

import base64
import os
import sys
import time

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import (
    BlobResourceContents,
    EmbeddedResource,
    ImageContent,
    TextContent,
    TextResourceContents,
)

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


if __name__ == "__main__":
    if sys.argv[1] == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
