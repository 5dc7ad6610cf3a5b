"""``codelia-acp``: the in-kernel agent as an ACP agent (Agent Client Protocol, over stdio).

Jupyter AI's chat, Zed and other ACP clients start it; it finds the Jupyter server, picks the
kernel of the notebook a prompt is about and drives codelia there through the side panel's
comm protocol (``_agent`` says how). Like ``server/`` it is a top layer: it never imports the
kernel side (``notebook/``), only speaks to it.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys


def main(argv: list[str] | None = None) -> None:
    """The ``codelia-acp`` console script."""
    parser = argparse.ArgumentParser(
        prog="codelia-acp",
        description="Run codelia as an ACP agent on stdio, in the kernels of a Jupyter server.",
    )
    parser.add_argument("--server-url", help="the Jupyter server (default: found, see README)")
    parser.add_argument("--token", help="the server's token (default: from its runtime file)")
    parser.add_argument("--log-level", default="WARNING", help="stderr log level")
    args = parser.parse_args(argv)
    # stdout carries the protocol: every log line goes to stderr.
    logging.basicConfig(stream=sys.stderr, level=args.log_level.upper())
    asyncio.run(_serve(args.server_url, args.token))


async def _serve(server_url: str | None, token: str | None) -> None:
    from typing import cast

    from acp import Agent, run_agent

    from ._agent import CodeliaAcpAgent

    agent = CodeliaAcpAgent(server_url=server_url, token=token)
    try:
        # The SDK routes only the methods an agent has; codelia has no modes or config options.
        await run_agent(cast(Agent, agent))
    finally:
        await agent.close()
