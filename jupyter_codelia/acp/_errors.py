"""The errors of the ACP bridge: each names what to do about it."""

from __future__ import annotations

from ..errors import CodeliaError


class BridgeError(CodeliaError, RuntimeError):
    """The bridge cannot serve the ACP request; the message tells the person what to do."""


class ServerNotFoundError(BridgeError):
    """No running Jupyter server was found for this process (or the one named is unreachable)."""


class ChannelClosedError(BridgeError):
    """The link to the kernel is gone (the kernel died, restarted or was shut down)."""


class KernelRequestError(BridgeError):
    """The kernel answered a request with ``ok: false``; the message is the kernel's."""
