"""A connection flood: many idle connections, half of them stalled in the middle of their
headers, opened below the server's connection cap (src/pinnace/apiserver/http/connections.py)
but past the usual soft limit of 1,024 open files, which the server raises to its hard limit.
`/readyz` still answers at once through another connection, and once the flood closes the
server's sockets return to what they were. Short: 1,100 connections; long: 6,000."""

from __future__ import annotations

import contextlib
import os
import socket
from pathlib import Path

from tests.faults.conftest import readyz_seconds, report, rss_mib, scale
from tests.http.conftest import Cluster, launch, stop
from tests.support import eventually

from pinnace.apiserver.http import connections

SETTLING_SOCKETS = 16


def open_sockets(cluster: Cluster) -> int:
    """The server's open sockets. Only sockets: its other descriptors come and go on their own
    (just after `Ready.` it may still be reading a module's source file)."""
    fds = f"/proc/{cluster.process.pid}/fd"
    links = []
    for fd in os.listdir(fds):
        with contextlib.suppress(FileNotFoundError):
            links.append(os.readlink(f"{fds}/{fd}"))
    return sum(link.startswith("socket:") for link in links)


def test_readyz_answers_through_a_flood_of_idle_connections(tmp_path: Path) -> None:
    count, hard = scale(1100, 6000), scale(4096, 8192)
    assert count < connections.connection_cap(hard)
    cluster = launch(tmp_path, limits={"RLIMIT_NOFILE": (1024, hard)})
    host, port = cluster.url.removeprefix("http://").rsplit(":", 1)
    flood: list[socket.socket] = []
    try:
        before = open_sockets(cluster)
        for index in range(count):
            conn = socket.create_connection((host, int(port)), timeout=20)
            if index % 2:
                conn.sendall(b"GET /readyz HTTP/1.1\r\nHost: x\r\n")
            flood.append(conn)
        eventually(lambda: open_sockets(cluster) >= before + count)
        worst_readyz = max(readyz_seconds(cluster) for _ in range(20))
        rss = rss_mib(cluster.process.pid)
        for conn in flood:
            conn.close()
        # Every flooding connection is let go; the server may hold a few more sockets of its
        # own meanwhile (a client's kept-alive connection), so a handful more than before.
        eventually(lambda: open_sockets(cluster) <= before + SETTLING_SOCKETS)
        worst_readyz = max(worst_readyz, readyz_seconds(cluster))
    finally:
        for conn in flood:
            conn.close()
        stop(cluster)
    report(
        "connection-flood",
        connections=count,
        open_file_limit=f"1024/{hard}",
        worst_readyz_s=worst_readyz,
        rss_mib=rss,
    )
