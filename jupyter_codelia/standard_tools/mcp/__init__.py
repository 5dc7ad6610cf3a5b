"""MCP servers as a tool source, through the official ``mcp`` SDK.

A :class:`McpServers` holds the configured servers (the ``mcpServers`` map other MCP clients
use: ``{"name": {"command": ..., "args": [...], "env": {...}}}`` or ``{"name": {"url": ...}}``)
and keeps their connections on one private event-loop thread. Each listed tool becomes an
:class:`McpTool` named ``<server>__<tool>``; permission rules match that name or a whole server
as ``<server>__*``.

The package, by concept:

* ``config``: the map, other clients' keys, ``${VAR}`` expansion, per-entry problems;
* ``naming``: unique, stable, provider-safe tool names;
* ``transport``: stdio (bounded-memory reader, redacted stderr), streamable HTTP, legacy SSE;
* ``_bigline``: one oversized stdio line scanned into a small message with spooled strings;
* ``server``: one connection's lifecycle (timeouts, retry with backoff, crash restart);
* ``asks``: what the server asks of us (roots, sampling, elicitation, progress, logging, list
  changes), answered for the call that is running;
* ``results``: MCP content → our content parts (blobs decoded, images downscaled);
* ``tools``: :class:`McpTool` with its annotations, and the resource tools;
* ``oauth``: OAuth for HTTP servers, tokens kept ``0600`` under the codelia home;
* ``servers``: :class:`McpServers`, the loop thread, concurrent starts, the listing.
"""

from .config import (
    DEFAULT_CALL_TIMEOUT_S,
    DEFAULT_START_TIMEOUT_S,
    TOOL_SEPARATOR,
    McpConfigError,
    McpServerConfig,
    ParsedServers,
    parse_mcp_servers,
    parse_one_server,
)
from .naming import tool_name, unique_tool_names
from .results import content_parts
from .server import McpServer, McpServerError
from .servers import McpServers
from .tools import McpTool, ToolHints

__all__ = [
    "DEFAULT_CALL_TIMEOUT_S",
    "DEFAULT_START_TIMEOUT_S",
    "TOOL_SEPARATOR",
    "McpConfigError",
    "McpServer",
    "McpServerConfig",
    "McpServerError",
    "McpServers",
    "McpTool",
    "ParsedServers",
    "ToolHints",
    "content_parts",
    "parse_mcp_servers",
    "parse_one_server",
    "tool_name",
    "unique_tool_names",
]
