"""The pod IPs of one node, as the CNI host-local IPAM plugin a kubelet's network plugin calls
gives them out (containernetworking/plugins, plugins/ipam/host-local: allocator.go): each
sandbox gets the first free address of the node's pod CIDR (`NodeConfig.pod_cidr`, its .1
left to the gateway) after the last one given out, round the range, and hands it back when
the sandbox goes. So an address released waits its turn: a pod created just after another
was deleted does not get the deleted pod's IP. A restarted kubelet's pods keep the IPs their
status records (`reserve`), as host-local's reservations on disk outlive the kubelet; its
walk starts again at the range's start (host-local's last reserved address is on disk too).
"""

from __future__ import annotations

import ipaddress
import socket

PodIP = int | str
"""A pod's IP as its node agent gives it: one of the node's pod network as its offset in it (a
small int, which Python does not allocate), any other as its text."""

_FIRST = 2
"""The first address given out: .0 is the network, .1 the node's gateway."""


class PodIPs:
    """Which addresses of the node's pod network the pods hold."""

    # Slots: a simulated pool keeps one for every node.
    __slots__ = ("_base", "_held", "_next", "_size", "_version")

    def __init__(self, pod_cidr: str) -> None:
        network = ipaddress.ip_network(pod_cidr)
        # Its numbers, not the network: ipaddress works each out again on every read.
        self._base = int(network.network_address)
        self._size = network.num_addresses
        self._version = network.version
        self._next = _FIRST
        self._held = bytearray()
        """Which addresses are held, by offset (1: held): a byte per address up to the highest
        given out, not an entry per pod."""

    def allocate(self) -> int:
        """The first free address from the one after the last given out, held from now on."""
        size = self._size
        for _ in range(size):
            ip = self._next
            self._next = self._next + 1 if self._next < size - 2 else _FIRST
            if not self._is_held(ip):
                break
        self._hold(ip, True)
        return ip

    def reserve(self, ip: str) -> PodIP:
        """`ip` is a resumed pod's: no other pod gets it until it is released."""
        try:
            address = ipaddress.ip_address(ip)
        except ValueError:
            return ip
        offset = int(address) - self._base
        if address.version != self._version or not 0 <= offset < self._size:
            return ip  # not this node's to give out
        self._hold(offset, True)
        return offset

    def release(self, ip: PodIP) -> None:
        if type(ip) is int:
            self._hold(ip, False)

    def text(self, ip: PodIP) -> str:
        """The text of `ip`."""
        if isinstance(ip, str):
            return ip
        if self._version == 4:  # a pod's status is written often: 4 times quicker
            return socket.inet_ntoa((self._base + ip).to_bytes(4, "big"))
        return str(ipaddress.IPv6Address(self._base + ip))

    def _is_held(self, offset: int) -> bool:
        return offset < len(self._held) and bool(self._held[offset])

    def _hold(self, offset: int, held: bool) -> None:
        if offset >= len(self._held):
            self._held.extend(bytes(offset + 1 - len(self._held)))
        self._held[offset] = held
