"""A `pinnace agent`'s kubelet endpoint that cannot serve says why when it starts, rather than
leaving a bound socket nobody accepts on (the API server's exec and logs would hang)."""

from __future__ import annotations

import asyncio
import ssl

import pytest

from pinnace.kubelet.server import KubeletServer


def test_an_endpoint_without_a_ca_to_verify_clients_by_fails_at_start() -> None:
    async def start() -> None:
        # a kubeconfig's trust without certificates it can list (the system's, say)
        kubelet = KubeletServer("127.0.0.1", 0, ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT))
        with pytest.raises(ssl.SSLError):
            await asyncio.wait_for(kubelet.start(), 30)
        await kubelet.stop()  # nothing left to stop: the socket closed as it failed

    asyncio.run(start())
