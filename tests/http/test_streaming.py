"""pods/exec over WebSockets in process, through the ASGI app with a scripted client: the
subprotocols kubectl (v5) and the Python client (v4) ask for, the channels, v5's close
signal, the Status on the error channel, and what fails before the upgrade."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from pinnace.api import catalog
from pinnace.api.streams import (
    STDOUT,
    Forward,
    Session,
    StreamError,
    StreamIO,
    StreamOptions,
)
from pinnace.apiserver.bootstrap import bootstrap
from pinnace.apiserver.http.app import APIApp
from pinnace.apiserver.http.streaming import SESSION_START
from pinnace.apiserver.server import APIServer
from pinnace.clock import Clock, Randomness
from pinnace.store import MemoryStore

PODS = catalog.kind("", "pods")
EXEC = "/api/v1/namespaces/default/pods/web/exec"


class Echo:
    """A node that runs every command as: print stdin back (to its end, or its first chunk
    for `once`), then exit with the number the command ends with; or refuses, when told."""

    def __init__(self, refusal: str = "") -> None:
        self.refusal = refusal
        self.asked: list[StreamOptions] = []

    def exec(self, pod: dict[str, Any], options: StreamOptions) -> Session:
        self.asked.append(options)
        if self.refusal:
            raise StreamError(self.refusal)

        async def session(io: StreamIO) -> int:
            while data := await io.read():
                await io.write(STDOUT, data)
                if options.command[0] == "once":
                    break
            return int(options.command[-1])

        return session

    def port_forward(self, pod: dict[str, Any], port: int) -> Forward:
        if port != 80:
            raise StreamError(f"nothing on {port}")

        async def forward(io: StreamIO) -> None:
            await io.write(STDOUT, b"answer to " + await io.read())

        return forward


async def exchange(
    app: APIApp,
    path: str,
    query: str,
    protocols: list[str],
    client: list[bytes | str],
    times: list[float] | None = None,
) -> list[dict[str, Any]]:
    """What the server sends to a WebSocket client that sends `client`'s messages (then
    waits for the server to close); `times` gets the loop's time of each message sent."""
    incoming: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    incoming.put_nowait({"type": "websocket.connect"})
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return await incoming.get()

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)
        if times is not None:
            times.append(asyncio.get_running_loop().time())
        if message["type"] == "websocket.accept":
            for data in client:
                key = "bytes" if isinstance(data, bytes) else "text"
                incoming.put_nowait({"type": "websocket.receive", key: data})
        if message["type"] == "websocket.close":
            incoming.put_nowait({"type": "websocket.disconnect", "code": 1000})

    scope = {"type": "websocket", "path": path, "query_string": query.encode()}
    scope |= {"headers": [], "subprotocols": protocols}
    await app(scope, receive, send)
    return sent


def serve(
    node: Echo,
    query: str,
    protocols: list[str],
    client: list[bytes | str] = (),  # type: ignore[assignment]
    pod: dict[str, Any] | None = None,
    path: str = EXEC,
    apps: list[APIApp] | None = None,
    times: list[float] | None = None,
) -> list[dict[str, Any]]:
    """What the server sends (`apps` gets the app, for its metrics; `times`, when each
    message went)."""

    async def scenario() -> list[dict[str, Any]]:
        server = APIServer(MemoryStore(), Clock(asyncio.get_running_loop()), Randomness(1))
        await bootstrap(server)
        server.stream_source = node
        spec = {"nodeName": "n1", "containers": [{"name": "app", "image": "busybox"}]}
        await server.create(PODS, "default", pod or {"metadata": {"name": "web"}, "spec": spec})
        app = APIApp(server, Randomness(1))
        if apps is not None:
            apps.append(app)
        return await exchange(app, path, query, protocols, client, times)

    return asyncio.run(scenario())


def messages(sent: list[dict[str, Any]]) -> list[bytes | str]:
    return [m.get("bytes") or m.get("text") for m in sent if m["type"] == "websocket.send"]


def refusal(sent: list[dict[str, Any]]) -> tuple[int, bytes]:
    start, body = sent
    assert start["type"] == "websocket.http.response.start"
    return start["status"], body["body"]


def test_kubectl_gets_v5_the_streams_and_the_exit_code_as_a_status() -> None:
    node = Echo()
    query = "command=sh&command=3&stdin=true&stdout=true&stderr=true"
    protocols = ["v5.channel.k8s.io", "v4.channel.k8s.io"]
    sent = serve(node, query, protocols, [b"\x00hi\n", b"\x04{}", b"\xff\x00", b"\x00late"])
    assert sent[0] == {"type": "websocket.accept", "subprotocol": "v5.channel.k8s.io"}
    first, echoed, error = messages(sent)
    assert (first, echoed) == (b"\x01", b"\x01hi\n")  # the streams are open; stdin back
    assert json.loads(error[1:]) == {  # type: ignore[index]
        "metadata": {},
        "status": "Failure",
        "message": "command terminated with non-zero exit code: command terminated with exit "
        "code 3",
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": "3"}]},
    }
    assert error[:1] == b"\x03"  # type: ignore[index]
    assert sent[-1] == {"type": "websocket.close", "code": 1000}
    assert node.asked == [StreamOptions("app", ("sh", "3"), True, True, True, False)]


def test_a_sessions_first_frame_leaves_kubectl_time_to_make_its_streams() -> None:
    """client-go's executor reads before it has made its streams and drops what arrives
    first; kube-apiserver's dial of the kubelet and the runtime's start leave it that time,
    and so does a session here, whether it runs or fails to start."""
    for node, query in (
        (Echo(), "command=once&command=0&stdin=true&stdout=true"),
        (Echo("no"), "stdout=1"),
    ):
        times: list[float] = []
        sent = serve(node, query, ["v5.channel.k8s.io"], [b"\x00hi\n"], times=times)
        kinds = [m["type"] for m in sent]
        assert kinds[:2] == ["websocket.accept", "websocket.send"]  # the empty frame
        assert messages(sent)[0] == b"\x01"
        assert times[2] - times[1] >= SESSION_START


def test_the_python_clients_v4_gets_success_as_json_and_text_frames_count_as_binary() -> None:
    query = "command=once&command=0&stdout=true&stdin=true"
    sent = serve(Echo(), query, ["v4.channel.k8s.io"], ["\x00hey"])
    assert sent[0]["subprotocol"] == "v4.channel.k8s.io"
    assert messages(sent) == [b"\x01", b"\x01hey", b'\x03{"metadata":{},"status":"Success"}']


def test_before_v4_the_error_channel_carries_only_the_message() -> None:
    sent = serve(Echo(), "command=1&stdout=true", ["channel.k8s.io"])
    assert messages(sent)[-1] == (
        b"\x03command terminated with non-zero exit code: error executing command [1], exit code 1"
    )
    base64 = serve(Echo(), "command=0&stdout=true", ["base64.channel.k8s.io"])
    assert messages(base64) == ["1"]  # success: nothing on the error channel


def test_what_fails_before_the_upgrade_is_kube_apiservers_answer() -> None:
    missing = EXEC.replace("web", "nope")
    status, body = refusal(serve(Echo(), "command=0&stdout=true", [], path=missing))
    assert status == 404 and json.loads(body)["message"] == 'pods "nope" not found'
    status, body = refusal(serve(Echo(), "container=db&command=0&stdout=true", []))
    assert (status, json.loads(body)["message"]) == (400, "container db is not valid for pod web")
    two = [{"name": "a", "image": "busybox"}, {"name": "b", "image": "busybox"}]
    pending: dict[str, Any] = {"metadata": {"name": "web"}, "spec": {"containers": two}}
    status, body = refusal(serve(Echo(), "command=0&stdout=true", [], pod=pending))
    assert json.loads(body)["message"] == (
        "a container name must be specified for pod web, choose one of: [a b]"
    )
    pending["spec"]["containers"] = two[:1]
    status, body = refusal(serve(Echo(), "command=0&stdout=true", [], pod=pending))
    assert (status, json.loads(body)["message"]) == (400, "pod web does not have a host assigned")


def test_a_node_that_cannot_start_it_answers_by_protocol() -> None:
    node = Echo(refusal='container not found ("app")')
    # Proxied to the kubelet (v4): its plain-text 500 instead of the upgrade.
    status, body = refusal(serve(node, "command=0&stdout=true", ["v4.channel.k8s.io"]))
    assert (status, body) == (500, b'container not found ("app")')
    # Translated by kube-apiserver (v5): upgraded, then an InternalError on the error channel.
    sent = serve(node, "command=0&stdout=true", ["v5.channel.k8s.io"])
    error = json.loads(messages(sent)[-1][1:])  # type: ignore[index]
    assert (error["code"], error["message"]) == (
        500,
        'Internal error occurred: unable to upgrade connection: container not found ("app")',
    )


def test_the_python_clients_port_forward_has_a_data_and_an_error_channel_per_port() -> None:
    path = EXEC.replace("exec", "portforward")
    sent = serve(Echo(), "ports=80,81", ["v4.channel.k8s.io"], [b"\x00GET /"], path=path)
    assert sent[0] == {"type": "websocket.accept", "subprotocol": "v4.channel.k8s.io"}
    received = messages(sent)
    assert received[:4] == [b"\x00\x50\x00", b"\x01\x50\x00", b"\x02\x51\x00", b"\x03\x51\x00"]
    assert b"\x00answer to GET /" in received
    (refusal,) = [m for m in received[4:] if m[:1] == b"\x03"]  # type: ignore[index]
    # The kubelet names the pod by its sandbox (here its uid).
    assert refusal.startswith(b"\x03error forwarding port 81 to pod ")  # type: ignore[union-attr]
    assert refusal.endswith(b", uid : nothing on 81")  # type: ignore[union-attr]
    assert sent[-1] == {"type": "websocket.close", "code": 1000}


def test_port_forward_without_ports_is_the_kubelets_plain_400() -> None:
    path = EXEC.replace("exec", "portforward")
    status, body = refusal(serve(Echo(), "", ["v4.channel.k8s.io"], path=path))
    assert (status, body) == (400, b'query parameter "port" is required')


def test_sessions_are_counted_as_connect_requests_long_running_until_they_end() -> None:
    apps: list[APIApp] = []
    serve(Echo(), "command=0&stdout=true", ["v5.channel.k8s.io"], apps=apps)
    serve(Echo(), "command=0", [], path=EXEC.replace("web", "nope"), apps=apps)
    labels = ("CONNECT", "", "", "v1", "pods", "exec", "namespace")
    upgraded, refused = (app.requests for app in apps)
    assert upgraded.requests == {(labels, "101"): 1}
    assert refused.requests == {(labels, "404"): 1}
    assert upgraded.longrunning == {labels: 0}
