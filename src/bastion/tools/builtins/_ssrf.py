"""Server-side request forgery guard: which addresses an outbound fetch may connect to.

A host name is resolved once, every address it resolves to is checked, and the fetch then
connects to the checked address itself (never resolving again), so a DNS answer that
changes between the check and the connection (DNS rebinding) cannot point it elsewhere.
Refused unless explicitly allowed: loopback, private (RFC 1918, unique local), shared
carrier-grade NAT, link-local (which holds the cloud metadata service 169.254.169.254),
multicast, reserved and unspecified addresses, and IPv4 addresses hidden in IPv6 forms.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from bastion.core import UserError

__all__ = ["AddressPolicy", "BlockedAddress", "Resolver", "system_resolver"]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
Resolver = Callable[[str, int], Awaitable[list[str]]]
"""Resolves ``(host, port)`` to IP address strings."""

_METADATA = frozenset(
    ipaddress.ip_address(a)
    for a in ("169.254.169.254", "169.254.170.2", "100.100.100.200", "fd00:ec2::254")
)


class BlockedAddress(Exception):
    """The fetch would reach an address the policy refuses."""


async def system_resolver(host: str, port: int) -> list[str]:
    """Resolve with the system resolver, without blocking the event loop."""
    infos = await asyncio.get_running_loop().getaddrinfo(
        host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP
    )
    seen: list[str] = []
    for info in infos:
        address = str(info[4][0])
        if address not in seen:
            seen.append(address)
    return seen


@dataclass(frozen=True, slots=True)
class AddressPolicy:
    """Which addresses are refused, and the networks allowed anyway.

    Args:
        allow: IP addresses or CIDR networks permitted even if internal (e.g.
            ``"127.0.0.1/32"`` for a local test server, ``"10.1.0.0/16"`` for an intranet).

    Raises:
        UserError: An entry of ``allow`` is not an address or a network.
    """

    allow: tuple[IPNetwork, ...] = ()

    @classmethod
    def of(cls, allow: Sequence[str]) -> AddressPolicy:
        """Parse ``allow`` entries.

        Raises:
            UserError: An entry is not an IP address or CIDR network.
        """
        if isinstance(allow, str):
            raise UserError(f"allow must be a list of networks, got the string {allow!r}.")
        networks: list[IPNetwork] = []
        for entry in allow:
            try:
                networks.append(ipaddress.ip_network(entry, strict=False))
            except (TypeError, ValueError):
                raise UserError(
                    f"allow entry {entry!r} is not an IP address or CIDR network "
                    "(e.g. '127.0.0.1/32', '10.0.0.0/8')."
                ) from None
        return cls(tuple(networks))

    def reason(self, address: str) -> str | None:
        """Why ``address`` is refused, or ``None`` when it may be reached."""
        try:
            ip = ipaddress.ip_address(address.split("%", 1)[0])
        except ValueError:
            return "not an IP address"
        if any(ip in network for network in self.allow):
            return None
        return _category(ip)

    def check(self, host: str, addresses: Sequence[str]) -> str:
        """The address to connect to: the first, once every one has been checked.

        Every address must pass: a name resolving to one public and one internal address
        is refused, so the choice of address cannot be steered to the internal one.

        Raises:
            BlockedAddress: One is refused, or there is none.
        """
        if not addresses:
            raise BlockedAddress(f"{host!r} did not resolve to any address.")
        for address in addresses:
            why = self.reason(address)
            if why is not None:
                shown = host if host == address else f"{host!r} ({address})"
                raise BlockedAddress(
                    f"Refused to fetch from {shown}: it is a {why} address, which could "
                    "reach internal services. Only public addresses are allowed unless "
                    "the tool's allow list names this network."
                )
        return addresses[0]


def _category(ip: IPAddress) -> str | None:
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = ip.ipv4_mapped or ip.sixtofour or (ip.teredo[1] if ip.teredo else None)
        if embedded is not None:
            return _category(embedded)
        if ip in ipaddress.ip_network("64:ff9b::/96"):  # NAT64: the IPv4 address inside
            return _category(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
    if ip in _METADATA:
        return "cloud metadata"
    if ip.is_loopback:
        return "loopback"
    if ip.is_link_local:
        return "link-local"
    if ip.is_unspecified:
        return "unspecified"
    if ip.is_multicast:
        return "multicast"
    if ip.is_private:
        return "private"
    if ip.is_reserved or not ip.is_global:
        return "reserved or non-public"
    return None
