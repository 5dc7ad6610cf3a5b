"""The errors of the ACP bridge: each names what to do about it.

The kernel link's own (the channel closed, the kernel refused) are the kernel peer's
(``server/kernel_peer.py``); :data:`BRIDGE_ERRORS` catches both kinds."""

from __future__ import annotations

from ..errors import CodeliaError
from ..server.kernel_peer import PeerError


class BridgeError(CodeliaError, RuntimeError):
    """The bridge cannot serve the ACP request; the message tells the person what to do."""


class ServerNotFoundError(BridgeError):
    """No running Jupyter server was found for this process (or the one named is unreachable)."""


BRIDGE_ERRORS = (BridgeError, PeerError)
"""What a prompt, an approval answer or a Stop can fail with: the bridge's errors and the
kernel link's."""
