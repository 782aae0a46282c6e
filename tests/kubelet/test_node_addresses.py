"""`pinnace agent --node-addresses`: each node's kubelet at an address of its own, derived from
its index as its InternalIP is, and a request without a Pinnace-Node header answered for the
node whose address it came to (as a Prometheus scraping each kubelet sends it)."""

from __future__ import annotations

import asyncio
import ipaddress
import socket

import pytest

from pinnace.cli.agent import node_addresses
from pinnace.kubelet import NodeConfig
from pinnace.kubelet.server import KubeletServer, node_of

NETWORK = ipaddress.ip_network("127.1.0.0/16")


def test_node_i_has_the_i_th_address_of_the_network() -> None:
    configs = [NodeConfig("far-1", index=1), NodeConfig("far-300", index=300)]
    assert node_addresses(NETWORK, configs) == {"far-1": "127.1.0.1", "far-300": "127.1.1.44"}


def test_an_index_beyond_the_network_is_refused() -> None:
    configs = [NodeConfig("far-4", index=4)]
    with pytest.raises(ValueError) as refused:
        node_addresses(ipaddress.ip_network("127.1.0.0/30"), configs)
    assert (
        str(refused.value)
        == "--node-addresses 127.1.0.0/30 has no address for node far-4 (index 4)"
    )


def scope(local: str, header: str | None = None) -> dict[str, object]:
    headers = [] if header is None else [(b"pinnace-node", header.encode())]
    return {"type": "http", "server": (local, 10250), "headers": headers}


def test_the_header_names_the_node_else_the_address_the_request_came_to() -> None:
    at = {"127.1.0.1": "far-1", "127.1.0.2": "far-2"}
    assert node_of(scope("127.1.0.1"), at) == "far-1"
    assert node_of(scope("127.1.0.2"), at) == "far-2"
    assert node_of(scope("127.1.0.1", header="far-2"), at) == "far-2"  # the API server's
    assert node_of(scope("127.0.0.1"), at) == ""  # one endpoint for all: no address is a node's
    assert node_of({"type": "http", "headers": []}, at) == ""


def test_each_node_is_served_at_its_address_on_one_port() -> None:
    own = {"far-1": "127.1.0.1", "far-2": "127.1.0.2"}
    kubelet = KubeletServer("127.0.0.1", 0, None, own)
    try:
        port = kubelet.port
        assert kubelet.endpoint("far-1") == ("127.1.0.1", port)
        assert kubelet.endpoint("far-2") == ("127.1.0.2", port)
        for address in own.values():  # listening there, before it serves
            socket.create_connection((address, port), timeout=5).close()
        with pytest.raises(OSError) as taken:
            KubeletServer("127.0.0.1", port, None, {"near-2": "127.1.0.2"})
        assert taken.value.filename == f"127.1.0.2:{port}"
    finally:
        asyncio.run(kubelet.stop())  # never started: its sockets closed
