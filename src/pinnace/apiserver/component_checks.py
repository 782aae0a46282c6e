"""The checks behind ComponentStatuses (`pinnace.api.core.componentstatus`), as kube-apiserver
v1.32 makes them (pkg/registry/core/componentstatus/validator.go): a component it does not run
itself is probed where v1.32 probes it, GET https://127.0.0.1:<its secure port>/healthz with
no certificate check, the answer's body the message of a 2xx or 3xx; a probe that gets no
answer fails with the Go client's error as its message, one answered otherwise with
"HTTP probe failed with statuscode: N"."""

from __future__ import annotations

import asyncio
import ssl

from pinnace.api.core.componentstatus import ComponentHealth

__all__ = ["CONTROLLER_MANAGER_PORT", "SCHEDULER_PORT", "healthy", "probe_healthz"]

SCHEDULER_PORT = 10259
"""kube-scheduler's default --secure-port."""
CONTROLLER_MANAGER_PORT = 10257
"""kube-controller-manager's default --secure-port."""
PROBE_TIMEOUT = 20.0
"""componentstatus' probeTimeOut, seconds."""
_BODY_LIMIT = 10 * 1024
"""The most of an answer's body the prober reads."""


def healthy(name: str) -> ComponentHealth:
    """A component that answers its /healthz with ok."""
    return ComponentHealth(name, "True", "ok")


async def probe_healthz(name: str, port: int, timeout: float = PROBE_TIMEOUT) -> ComponentHealth:
    """`name`'s health as its /healthz on 127.0.0.1:`port` tells it."""
    url = f"https://127.0.0.1:{port}/healthz"
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    try:
        async with asyncio.timeout(timeout):
            reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context)
            try:
                request = f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                writer.write((request + "Connection: close\r\n\r\n").encode())
                answer = await reader.read()
            finally:
                writer.close()
    except ConnectionRefusedError:
        failed = f"dial tcp 127.0.0.1:{port}: connect: connection refused"
        return ComponentHealth(name, "False", f'Get "{url}": {failed}')
    except TimeoutError:
        failed = "context deadline exceeded (Client.Timeout exceeded while awaiting headers)"
        return ComponentHealth(name, "False", f'Get "{url}": {failed}')
    except (OSError, ssl.SSLError) as e:
        return ComponentHealth(name, "False", f'Get "{url}": {e}')
    head, _, body = answer.partition(b"\r\n\r\n")
    words = head.split(b" ", 2)
    code = int(words[1]) if len(words) > 1 and words[1].isdigit() else 0
    if not 200 <= code < 400:
        return ComponentHealth(name, "False", f"HTTP probe failed with statuscode: {code}")
    return ComponentHealth(name, "True", body[:_BODY_LIMIT].decode(errors="replace"))
