"""The private-network guard of webfetch.

Owns the address classification (which IPs count as private, loopback, link-local, ...) and an
``httpcore2`` network backend that resolves every host itself, refuses the connection when any
resolved address is not public, and then connects to exactly the address it checked. Because the
check sits at the socket level it covers the first request and every redirect hop, and a DNS
answer cannot change between the check and the connect (no rebinding window).
"""

from __future__ import annotations

import asyncio
import functools
import ipaddress
import socket
import ssl
from collections.abc import Iterable
from typing import Any

import httpcore2
import httpx2

from ...errors import CodeliaError

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_UNIQUE_LOCAL = ipaddress.ip_network("fc00::/7")
_SITE_LOCAL = ipaddress.ip_network("fec0::/10")  # deprecated, yet still routed inside some sites
_NAT64 = ipaddress.ip_network("64:ff9b::/96")  # the well-known prefix; the last 32 bits are IPv4
_IPV4_COMPATIBLE = ipaddress.ip_network("::/96")  # deprecated ::a.b.c.d
_SHARED_ADDRESS_SPACE = ipaddress.ip_network("100.64.0.0/10")
ALLOW_HINT = "set WebConfig(allow_private_network=True) to allow them"


class PrivateNetworkError(CodeliaError):
    """A fetch target resolved to an address the guard refuses."""

    def __init__(self, host: str, address: str, category: str) -> None:
        self.host = host
        self.address = address
        self.category = category
        target = address if host == address else f"{host} ({address})"
        super().__init__(
            f"{target} is a {category} address; webfetch refuses private, loopback, link-local "
            f"and unique-local targets ({ALLOW_HINT})"
        )


def _parse(address: str | IPAddress) -> IPAddress:
    if isinstance(address, str):
        address = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def non_public_category(address: str | IPAddress) -> str | None:
    """Why ``address`` is not a public internet address (``None`` when it is public).

    Works on the address alone and never touches the network. IPv4-mapped IPv6 addresses are
    judged by the IPv4 address they carry.
    """
    ip = _parse(address)
    if ip.is_unspecified:
        return "unspecified"
    if ip.is_loopback:
        return "loopback"
    if ip.is_link_local:
        return "link-local"
    if isinstance(ip, ipaddress.IPv6Address):
        if ip in _UNIQUE_LOCAL:
            return "unique-local"
        if ip in _SITE_LOCAL:
            return "deprecated site-local"
        if ip in _IPV4_COMPATIBLE:
            return "deprecated IPv4-compatible"
        embedded = _embedded_ipv4(ip)
        if embedded is not None:
            # A relay or translator delivers to the IPv4 address inside: judge that one.
            kind, inner = embedded
            for address in inner:
                category = non_public_category(address)
                if category is not None:
                    return f"{kind} address carrying a {category}"
            return None
    if ip.is_private:
        return "private"
    if ip.is_multicast:
        return "multicast"
    if isinstance(ip, ipaddress.IPv4Address) and ip in _SHARED_ADDRESS_SPACE:
        return "shared (carrier-grade NAT)"
    if ip.is_reserved or not ip.is_global:
        return "reserved"
    return None


def _embedded_ipv4(
    ip: ipaddress.IPv6Address,
) -> tuple[str, list[ipaddress.IPv4Address]] | None:
    """The IPv4 addresses a 6to4, Teredo (server and client) or NAT64 address carries."""
    if ip.sixtofour is not None:
        return "6to4", [ip.sixtofour]
    if ip.teredo is not None:
        server, client = ip.teredo
        return "Teredo", [client, server]
    if ip in _NAT64:
        return "NAT64", [ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)]
    return None


def is_private_address(address: str | IPAddress) -> bool:
    """True for every address webfetch refuses by default (private, loopback, link-local, ...)."""
    return non_public_category(address) is not None


async def resolve_host(host: str, port: int) -> list[str]:
    """The addresses ``host`` resolves to, in resolver order, without duplicates."""
    literal = host.strip("[]")
    try:
        return [str(ipaddress.ip_address(literal.split("%", 1)[0]))]
    except ValueError:
        pass
    infos = await asyncio.get_running_loop().getaddrinfo(literal, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


class GuardedNetworkBackend(httpcore2.AsyncNetworkBackend):
    """Resolves, checks and pins every TCP connection of an httpcore2 pool."""

    def __init__(self, *, allow_private_network: bool, allowlist: Iterable[str] = ()) -> None:
        self.allow_private_network = allow_private_network
        self.allowlist = tuple(ipaddress.ip_network(entry, strict=False) for entry in allowlist)
        self._inner = httpcore2.AnyIOBackend()

    def _allowlisted(self, address: str) -> bool:
        ip = _parse(address)
        return any(ip.version == net.version and ip in net for net in self.allowlist)

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        try:
            addresses = await resolve_host(host, port)
        except OSError as exc:  # socket.gaierror and friends: keep the cause for classification
            raise httpcore2.ConnectError(str(exc)) from exc
        if not self.allow_private_network:
            for address in addresses:
                category = non_public_category(address)
                if category is not None and not self._allowlisted(address):
                    raise PrivateNetworkError(host, address, category)
        last_error: Exception = httpcore2.ConnectError(f"no address found for {host}")
        for address in addresses:
            try:
                return await self._inner.connect_tcp(
                    address,
                    port,
                    timeout=timeout,
                    local_address=local_address,
                    socket_options=socket_options,
                )
            except httpcore2.ConnectError as exc:
                last_error = exc
        raise last_error

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        raise httpcore2.ConnectError("webfetch does not connect to unix sockets")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


@functools.cache
def shared_ssl_context() -> ssl.SSLContext:
    # Loading the CA bundle costs ~0.1 s; one verifying context serves every fetch.
    return httpx2.create_ssl_context()


class GuardedTransport(httpx2.AsyncHTTPTransport):
    """An httpx2 transport whose connections all go through :class:`GuardedNetworkBackend`.

    Proxies from the environment are ignored on purpose: behind a proxy the guard could not see
    the address the proxy connects to.
    """

    def __init__(self, *, allow_private_network: bool, allowlist: Iterable[str] = ()) -> None:
        ssl_context = shared_ssl_context()
        super().__init__(verify=ssl_context, trust_env=False)
        # The pool is httpx2's only seam for a custom network backend.
        self._pool = httpcore2.AsyncConnectionPool(
            ssl_context=ssl_context,
            max_connections=10,
            max_keepalive_connections=5,
            network_backend=GuardedNetworkBackend(
                allow_private_network=allow_private_network, allowlist=allowlist
            ),
        )
