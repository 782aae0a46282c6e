"""pods/exec over plain SPDY/3.1 in process, through the ASGI app with the connection handed
over as `pinnace up` hands it: the X-Stream-Protocol-Version handshake and its refusals, the
streams the client opens by `streamType`, and the Status on the error stream by protocol."""

from __future__ import annotations

import asyncio
import json
import struct
from typing import Any

from tests.http.test_spdy import Client
from tests.http.test_streaming import EXEC, PODS, Echo

from pinnace.apiserver.bootstrap import bootstrap
from pinnace.apiserver.http.app import APIApp
from pinnace.apiserver.http.connections import UPGRADE
from pinnace.apiserver.http.spdy import FLAG_FIN
from pinnace.apiserver.server import APIServer
from pinnace.clock import Clock, Randomness
from pinnace.store import MemoryStore

SPDY_HEADERS = [(b"connection", b"Upgrade"), (b"upgrade", b"SPDY/3.1")]


class Handed:
    """The connection as the app gets it: the client's bytes, then nothing until the server
    closes it (a client reads to the end)."""

    def __init__(self, wire: bytes) -> None:
        self.incoming = wire
        self.sent = b""
        self.closed = False
        self._closing = asyncio.Event()

    async def read(self) -> bytes:
        data, self.incoming = self.incoming, b""
        if not data:
            await self._closing.wait()
        return data

    async def write(self, data: bytes) -> None:
        self.sent += data

    def close(self) -> None:
        self.closed = True
        self._closing.set()


def request(query: str, headers: list[tuple[bytes, bytes]], wire: bytes = b"") -> dict[str, Any]:
    """What the server answers a SPDY upgrade: status, headers, body, the frames it sent."""
    answer: dict[str, Any] = {"frames": []}
    handed = Handed(wire)

    def upgrade(status: int, head: list[tuple[bytes, bytes]]) -> Handed:
        answer.update(status=status, headers=head)
        return handed

    async def scenario() -> None:
        server = APIServer(MemoryStore(), Clock(asyncio.get_running_loop()), Randomness(1))
        await bootstrap(server)
        server.stream_source = Echo()
        spec = {"nodeName": "n1", "containers": [{"name": "app", "image": "busybox"}]}
        await server.create(PODS, "default", {"metadata": {"name": "web"}, "spec": spec})
        scope: dict[str, Any] = {"type": "http", "method": "POST", "path": EXEC}
        scope |= {"query_string": query.encode()}
        scope |= {"headers": headers, "extensions": {UPGRADE: upgrade}}

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                answer.update(status=message["status"], headers=message["headers"])
            else:
                answer["body"] = message["body"]

        await APIApp(server, Randomness(1))(scope, receive, send)

    asyncio.run(scenario())
    assert handed.closed == ("body" not in answer)
    answer["frames"] = frames(handed.sent)
    return answer


def frames(data: bytes) -> list[tuple[str, int, int, bytes]]:
    client, read = Client(), []
    while data:
        length = 8 + int.from_bytes(data[5:8], "big")
        frame, data = data[:length], data[length:]
        if frame[0] & 0x80 and frame[3] == 7:  # GOAWAY: the last stream taken
            read.append(("goaway", struct.unpack(">I", frame[8:12])[0], 0, b""))
        else:
            read.append(client.read(frame))
    return read


def opening(*kinds: str) -> tuple[Client, bytes]:
    client = Client()
    wire = b"".join(client.syn_stream(1 + 2 * i, {"streamtype": k}) for i, k in enumerate(kinds))
    return client, wire


def test_exec_waits_for_its_streams_and_ends_with_a_v4_status() -> None:
    # stdin's data and end come before stdout is open: the command runs only once it is.
    client, wire = opening("error", "stdin")
    wire += struct.pack(">II", 3, (FLAG_FIN << 24) | 3) + b"hi\n"
    wire += client.syn_stream(5, {"streamtype": "stdout"})
    protocols = (b"x-stream-protocol-version", b"v5.channel.k8s.io, v4.channel.k8s.io")
    answer = request(
        "command=cat&command=7&stdin=true&stdout=true", [*SPDY_HEADERS, protocols], wire
    )
    assert (answer["status"], answer["headers"]) == (
        101,
        [
            (b"X-Stream-Protocol-Version", b"v4.channel.k8s.io"),
            (b"Connection", b"Upgrade"),
            (b"Upgrade", b"SPDY/3.1"),
        ],
    )
    *streams, status, fin_error, fin_stdin, fin_stdout, goaway = answer["frames"]
    assert [f[:2] for f in streams[:3]] == [("reply", 1), ("reply", 3), ("reply", 5)]
    assert streams[3:] == [("data", 5, 0, b"hi\n")]
    assert json.loads(status[3]) == {
        "metadata": {},
        "status": "Failure",
        "message": "command terminated with non-zero exit code: "
        "error executing command [cat 7], exit code 7",
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": "7"}]},
    }
    assert status[:2] == ("data", 1)
    assert [fin_error, fin_stdin, fin_stdout] == [("data", s, FLAG_FIN, b"") for s in (1, 3, 5)]
    assert goaway == ("goaway", 5, 0, b"")


def test_before_v4_the_error_stream_carries_the_message_and_success_nothing() -> None:
    _, wire = opening("error", "stdout")
    protocols = (b"x-stream-protocol-version", b"v3.channel.k8s.io")
    answer = request("command=true&command=0&stdout=1", [*SPDY_HEADERS, protocols], wire)
    assert dict(answer["headers"])[b"X-Stream-Protocol-Version"] == b"v3.channel.k8s.io"
    assert [f for f in answer["frames"] if f[0] == "data"] == [
        ("data", 1, FLAG_FIN, b""),
        ("data", 3, FLAG_FIN, b""),
    ]


def test_a_handshake_it_cannot_complete_is_the_kubelets_plain_answer() -> None:
    missing = request("command=true&stdout=1", SPDY_HEADERS)
    assert (missing["status"], missing["body"]) == (
        400,
        b"unable to upgrade: X-Stream-Protocol-Version is required\n",
    )
    v5 = request("command=true&stdout=1", [*SPDY_HEADERS, (b"x-stream-protocol-version", b"v5")])
    assert v5["status"] == 403
    assert v5["body"] == (
        b"unable to upgrade: unable to negotiate protocol: client supports [v5], server "
        b"accepts [v4.channel.k8s.io v3.channel.k8s.io v2.channel.k8s.io channel.k8s.io]\n"
    )
    accepted = [v for k, v in v5["headers"] if k == b"x-accepted-stream-protocol-versions"]
    assert accepted[0] == b"v4.channel.k8s.io"
