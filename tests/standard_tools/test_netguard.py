"""The private-network guard of webfetch.

Address classification is checked on addresses alone (no connection is ever made to a
non-loopback address); the live tests use servers on 127.0.0.1 and 127.0.0.2 only.
"""

from __future__ import annotations

import ipaddress
import json
from typing import Any

import pydantic
import pytest
from _web_servers import LoopbackServer, Reply

from jupyter_codelia.standard_tools.web import WebConfig, web_tools
from jupyter_codelia.standard_tools.web._netguard import (
    is_private_address,
    non_public_category,
    resolve_host,
)
from jupyter_codelia.tools import ToolContext

PAGE = Reply(200, {"content-type": "text/plain"}, b"inside")


async def fetch(config: WebConfig, url: str) -> Any:
    tool = web_tools(config)[1]
    result = await tool.execute_raw(json.dumps({"url": url}), ToolContext())
    return result.value if result.type == "json" else result.text


@pytest.mark.parametrize(
    ("address", "category"),
    [
        ("10.0.0.1", "private"),
        ("10.255.255.255", "private"),
        ("172.16.0.1", "private"),
        ("172.31.255.254", "private"),
        ("192.168.0.1", "private"),
        ("192.168.255.255", "private"),
        ("169.254.169.254", "link-local"),
        ("169.254.0.1", "link-local"),
        ("127.0.0.1", "loopback"),
        ("127.5.6.7", "loopback"),
        ("::1", "loopback"),
        ("fc00::1", "unique-local"),
        ("fd12:3456:789a::1", "unique-local"),
        ("fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "unique-local"),
        ("fe80::1", "link-local"),
        ("fe80::1%eth0", "link-local"),
        ("::ffff:10.1.2.3", "private"),
        ("::ffff:127.0.0.1", "loopback"),
        ("0.0.0.0", "unspecified"),
        ("::", "unspecified"),
        ("100.64.1.1", "shared (carrier-grade NAT)"),
        ("224.0.0.251", "multicast"),
    ],
)
def test_non_public_addresses_are_classified_without_connecting(
    address: str, category: str
) -> None:
    assert non_public_category(address) == category
    assert is_private_address(address)


def _teredo(client: str, server: str = "65.54.227.120") -> str:
    """A Teredo address: prefix, server IPv4, flags, port, client IPv4 (both obfuscated)."""
    high = int(ipaddress.IPv6Address("2001::")) | int(ipaddress.IPv4Address(server)) << 64
    flags_port = 0x8000 << 48 | (0xFFFF ^ 40000) << 32
    obfuscated_client = 0xFFFFFFFF ^ int(ipaddress.IPv4Address(client))
    return str(ipaddress.IPv6Address(high | flags_port | obfuscated_client))


@pytest.mark.parametrize(
    ("address", "category"),
    [
        ("2002:7f00:1::", "6to4 address carrying a loopback"),
        ("2002:0a00:0001::1", "6to4 address carrying a private"),
        ("2002:a9fe:a9fe::", "6to4 address carrying a link-local"),
        (_teredo("10.0.0.1"), "Teredo address carrying a private"),
        (_teredo("127.0.0.1"), "Teredo address carrying a loopback"),
        (_teredo("8.8.8.8", server="192.168.1.1"), "Teredo address carrying a private"),
        ("fec0::1", "deprecated site-local"),
        ("feff:ffff::1", "deprecated site-local"),
        ("64:ff9b::a00:1", "NAT64 address carrying a private"),
        ("64:ff9b::7f00:1", "NAT64 address carrying a loopback"),
        ("64:ff9b::a9fe:a9fe", "NAT64 address carrying a link-local"),
        ("::127.0.0.1", "deprecated IPv4-compatible"),
        ("::8.8.8.8", "deprecated IPv4-compatible"),
        ("::10.0.0.1", "deprecated IPv4-compatible"),
    ],
)
def test_ipv6_forms_that_carry_or_reach_private_ipv4_are_refused(
    address: str, category: str
) -> None:
    assert non_public_category(address) == category
    assert is_private_address(address)


@pytest.mark.parametrize(
    "address", ["2002:0808:0808::1", _teredo("8.8.8.8"), "64:ff9b::808:808", "64:ff9b::101:101"]
)
def test_ipv6_forms_that_carry_a_public_ipv4_pass(address: str) -> None:
    """Judged by the IPv4 address inside, which is public."""
    assert non_public_category(address) is None


@pytest.mark.parametrize(
    "address",
    ["8.8.8.8", "1.1.1.1", "172.15.255.255", "172.32.0.0", "192.169.0.1", "2606:4700::1111"],
)
def test_public_addresses_pass(address: str) -> None:
    assert non_public_category(address) is None
    assert not is_private_address(address)


@pytest.mark.asyncio
async def test_resolve_host_takes_literals_without_dns() -> None:
    assert await resolve_host("127.0.0.1", 80) == ["127.0.0.1"]
    assert await resolve_host("[::1]", 80) == ["::1"]
    assert "127.0.0.1" in await resolve_host("localhost", 80)


@pytest.mark.asyncio
async def test_default_config_refuses_a_loopback_server_before_sending_anything() -> None:
    with LoopbackServer({"/": lambda req: PAGE}) as server:
        out = await fetch(WebConfig(), server.url("/"))
        assert out == (
            "Error fetching URL [private_network]: 127.0.0.1 is a loopback address; webfetch "
            "refuses private, loopback, link-local and unique-local targets (set "
            "WebConfig(allow_private_network=True) to allow them)"
        )
        port = server.base.rsplit(":", 1)[1]
        out = await fetch(WebConfig(), f"http://localhost:{port}/")
        assert out.startswith("Error fetching URL [private_network]: localhost (")
        assert server.requests == []
        allowed = await fetch(WebConfig(allow_private_network=True), server.url("/"))
        assert allowed["content"] == "inside"


@pytest.mark.asyncio
async def test_ipv6_loopback_literal_is_refused() -> None:
    out = await fetch(WebConfig(), "http://[::1]:9/")
    assert out.startswith("Error fetching URL [private_network]: ::1 is a loopback address")


@pytest.mark.asyncio
async def test_redirect_into_loopback_is_refused_on_the_redirect_hop() -> None:
    with (
        LoopbackServer({"/secret": lambda req: PAGE}) as inner,
        LoopbackServer(host="127.0.0.2") as outer,
    ):
        outer.routes["/go"] = lambda req: Reply(302, {"location": inner.url("/secret")})
        outer.routes["/page"] = lambda req: PAGE
        config = WebConfig(private_network_allowlist=("127.0.0.2/32",))
        assert (await fetch(config, outer.url("/page")))["content"] == "inside"
        out = await fetch(config, outer.url("/go"))
        assert out.startswith(
            "Error fetching URL [private_network]: 127.0.0.1 is a loopback address"
        )
        assert [r.path for r in outer.requests] == ["/page", "/go"]
        assert inner.requests == []
        opened = WebConfig(private_network_allowlist=("127.0.0.0/8",))
        assert (await fetch(opened, outer.url("/go")))["content"] == "inside"


def test_allowlist_entries_are_validated() -> None:
    with pytest.raises(pydantic.ValidationError) as info:
        WebConfig(private_network_allowlist=("10.0.0.0/8", "intranet.example"))
    assert (
        "private_network_allowlist entry 'intranet.example' is not an IP address or network "
        "(write e.g. '10.20.0.0/16' or '192.168.1.5')"
    ) in str(info.value)
    with pytest.raises(pydantic.ValidationError) as info:
        WebConfig(allow_private_network="sometimes")  # type: ignore[arg-type]
    assert "allow_private_network" in str(info.value)
    with pytest.raises(pydantic.ValidationError) as info:
        WebConfig(allow_private=True)  # type: ignore[call-arg]
    assert "allow_private" in str(info.value)
