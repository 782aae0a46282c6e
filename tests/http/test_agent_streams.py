"""Interactive exec, attach and port-forward to the pods of a `pinnace agent` process's node,
through real kubectl against `pinnace up --tls`: the API server proxies the upgraded
connection to the agent's kubelet endpoint and relays its bytes both ways as they come
(WebSocket by default, plain SPDY/3.1 when kubectl is told not to use WebSockets)."""

from __future__ import annotations

import base64
import http.client
import os
import re
import selectors
import ssl
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from kubernetes import client, config
from kubernetes.stream import stream
from prometheus_client.parser import text_string_to_metric_families
from tests.http.conftest import KUBECTL, Cluster, launch, stop
from tests.http.test_component_processes import Process, eventually, ready_nodes

WAIT = "60s"
NODE = '--overrides={"spec": {"nodeName": "far-1"}}'


@pytest.fixture(scope="module")
def agent_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Cluster, Process]]:
    workdir = tmp_path_factory.mktemp("agent-streams")
    data = workdir / "data"
    flags = ("--tls", "--authorization-mode=Node,RBAC")
    cluster = launch(workdir, "--data-dir", str(data), flags=flags)
    agent = Process(workdir, "agent", "agent", "--kubeconfig", str(data / "agent.conf"),
                    "--nodes", "1", "--port", "0", "--name-prefix", "far")  # fmt: skip
    try:
        eventually("the agent's node is Ready", lambda: ready_nodes(cluster) == ["far-1"])
        ticking = "while true; do echo tick; sleep 1; done"
        for name, image, command in (
            ("box", "busybox", ("sleep", "1d")),
            ("ticker", "busybox", ("sh", "-c", ticking)),
            ("web", "nginx:1.27", ()),
        ):
            cluster.ok(
                "run", name, f"--image={image}", NODE, *(("--", *command) if command else ())
            )
        cluster.ok("wait", "--for=condition=Ready", "pod/box", "pod/ticker", "pod/web",
                   f"--timeout={WAIT}")  # fmt: skip
        yield cluster, agent
    finally:
        if agent.popen.poll() is None:
            agent.popen.kill()
            agent.popen.wait()
        stop(cluster)


@pytest.fixture
def cluster(agent_cluster: tuple[Cluster, Process]) -> Cluster:
    return agent_cluster[0]


def kubectl(cluster: Cluster, *args: str, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [KUBECTL, "--kubeconfig", str(cluster.kubeconfig), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **env},
    )


def line(process: subprocess.Popen[str]) -> str:
    """The next line kubectl prints, waiting for it no longer than 30 s."""
    assert process.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        assert selector.select(timeout=30), "kubectl printed nothing"
    return process.stdout.readline()


def ended(process: subprocess.Popen[str]) -> None:
    process.terminate()
    process.communicate(timeout=20)


@pytest.mark.parametrize("websockets", ["true", "false"])  # false: plain SPDY
def test_exec_i_feeds_stdin_and_output_comes_as_it_is_printed(
    cluster: Cluster, websockets: str
) -> None:
    env = {"KUBECTL_REMOTE_COMMAND_WEBSOCKETS": websockets}
    echoed = kubectl(cluster, "exec", "-i", "box", "--", "cat", **env)
    assert echoed.communicate("hello\nworld\n", timeout=60) == ("hello\nworld\n", "")
    assert echoed.returncode == 0
    # The shell runs each line as it comes: what it prints reaches kubectl before its next
    # line is sent.
    shell = kubectl(cluster, "exec", "-i", "box", "--", "sh", **env)
    assert shell.stdin is not None
    shell.stdin.write("echo one\n")
    shell.stdin.flush()
    assert line(shell) == "one\n"
    assert shell.communicate("echo two >&2\nexit 3\n", timeout=60) == ("", "two\n" + (
        "command terminated with exit code 3\n"))  # fmt: skip
    assert shell.returncode == 3


def test_exec_streams_a_commands_output_before_it_ends(cluster: Cluster) -> None:
    done = cluster.kubectl("exec", "box", "--", "sh", "-c", "echo a; sleep 1; echo b")
    assert (done.returncode, done.stdout) == (0, "a\nb\n")
    running = kubectl(cluster, "exec", "box", "--", "sh", "-c", "echo a; sleep 3600; echo b")
    try:
        assert line(running) == "a\n"
    finally:
        ended(running)


def test_cp_copies_into_the_container_and_back_out(cluster: Cluster) -> None:
    local = cluster.workdir / "upload"
    local.mkdir()
    (local / "notes.txt").write_text("hello\n")
    cluster.ok("cp", str(local), "box:/srv/upload")
    cluster.ok("cp", "box:/srv/upload", str(cluster.workdir / "download"))
    assert (cluster.workdir / "download" / "notes.txt").read_text() == "hello\n"


def test_attach_prints_what_the_container_writes(cluster: Cluster) -> None:
    attached = kubectl(cluster, "attach", "ticker")
    try:
        assert [line(attached), line(attached)] == ["tick\n", "tick\n"]
    finally:
        ended(attached)


@pytest.mark.parametrize("websockets", ["true", "false"])  # false: plain SPDY
def test_port_forward_reaches_the_pods_port(cluster: Cluster, websockets: str) -> None:
    forwarding = kubectl(
        cluster, "port-forward", "pod/web", "0:80", KUBECTL_PORT_FORWARD_WEBSOCKETS=websockets
    )
    try:
        first = line(forwarding)
        port = re.search(r"127\.0\.0\.1:(\d+) -> 80", first)
        assert port, first
        with urllib.request.urlopen(f"http://127.0.0.1:{port.group(1)}/", timeout=10) as page:
            assert page.status == 200
            assert "<h1>Welcome to nginx!</h1>" in page.read().decode()
    finally:
        ended(forwarding)


def test_the_agent_lets_in_only_whom_rbac_allows_nodes_proxy(
    cluster: Cluster, tmp_path: Path
) -> None:
    """The API server's kubelet client certificate opened every session above; another of the
    cluster's CA, the scheduler's, gets the kubelet's 403."""
    scheduler = client_tls(cluster.workdir / "data" / "scheduler.conf", tmp_path)
    answer = spdy_upgrade(scheduler, agent_port(cluster), "/exec/default/box/box", SPDY_V4)
    forbidden = (
        "Forbidden (user=system:kube-scheduler, verb=create, resource=nodes, subresource=proxy)"
    )
    assert answer == (403, forbidden)


def test_the_agents_refusal_of_an_upgrade_is_relayed(cluster: Cluster, tmp_path: Path) -> None:
    admin = client_tls(cluster.kubeconfig, tmp_path)
    port = int(cluster.url.rsplit(":", 1)[1])
    path = "/api/v1/namespaces/default/pods/box/exec"
    missing = "unable to upgrade: X-Stream-Protocol-Version is required\n"
    assert spdy_upgrade(admin, port, path, {}) == (400, missing)


def test_the_python_clients_v4_exec_reaches_the_agent(cluster: Cluster) -> None:
    core = client.CoreV1Api(config.new_client_from_config(str(cluster.kubeconfig)))
    exec_ = core.connect_get_namespaced_pod_exec
    out = stream(exec_, "box", "default", command=["echo", "hi"], stderr=True, stdout=True)
    assert out == "hi\n"


def test_a_websocket_gets_the_subprotocol_the_agent_picked(
    cluster: Cluster, tmp_path: Path
) -> None:
    """The API server sends the client's offer on to the agent and relays its choice: a 101
    without it is no WebSocket session to kubectl, which would fall back to SPDY."""
    admin = client_tls(cluster.kubeconfig, tmp_path)
    port = int(cluster.url.rsplit(":", 1)[1])
    connection = http.client.HTTPSConnection("127.0.0.1", port, context=admin, timeout=30)
    handshake = {"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
                 "Sec-WebSocket-Key": base64.b64encode(os.urandom(16)).decode(),
                 "Sec-WebSocket-Protocol": "v5.channel.k8s.io, v4.channel.k8s.io"}  # fmt: skip
    try:
        path = "/api/v1/namespaces/default/pods/box/exec?command=true&stdout=true"
        connection.request("GET", path, headers=handshake)
        answer = connection.getresponse()
        assert answer.status == 101
        assert answer.getheader("Sec-WebSocket-Protocol") == "v5.channel.k8s.io"
    finally:
        connection.close()


def reviews_answered(cluster: Cluster) -> float:
    """The SubjectAccessReviews the API server has answered so far, as its /metrics counts."""
    families = text_string_to_metric_families(cluster.ok("get", "--raw", "/metrics"))
    return sum(
        sample.value
        for family in families
        for sample in family.samples
        if sample.name == "apiserver_request_total"
        and sample.labels.get("resource") == "subjectaccessreviews"
    )


def test_the_agent_keeps_the_api_servers_answer_as_a_kubelet_does(cluster: Cluster) -> None:
    """A kubelet keeps an allowed SubjectAccessReview 5 minutes: execs in a row are asked
    about once at most (once when the answer of an earlier test's expired meanwhile)."""
    before = reviews_answered(cluster)
    for _ in range(3):
        assert cluster.ok("exec", "box", "--", "true") == ""
    assert reviews_answered(cluster) - before <= 1


SPDY_V4 = {"X-Stream-Protocol-Version": "v4.channel.k8s.io"}


def client_tls(kubeconfig: Path, workdir: Path) -> ssl.SSLContext:
    """TLS with the kubeconfig's client certificate, verifying no server."""
    user = yaml.safe_load(kubeconfig.read_text())["users"][0]["user"]
    pem = workdir / f"{kubeconfig.stem}.pem"
    pem.write_bytes(b"".join(base64.b64decode(user[f"client-{part}-data"])
                             for part in ("certificate", "key")))  # fmt: skip
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    context.load_cert_chain(pem)
    return context


def spdy_upgrade(
    tls: ssl.SSLContext, port: int, path: str, headers: dict[str, str]
) -> tuple[int, str]:
    """POST the SPDY upgrade of an exec of cat with stdin to `path` on 127.0.0.1:`port`: the
    answer's status and text."""
    connection = http.client.HTTPSConnection("127.0.0.1", port, context=tls, timeout=30)
    upgrade = {"Connection": "Upgrade", "Upgrade": "SPDY/3.1", **headers}
    try:
        connection.request("POST", f"{path}?command=cat&stdin=true&stdout=true", headers=upgrade)
        answer = connection.getresponse()
        return answer.status, answer.read().decode()
    finally:
        connection.close()


_UNKNOWN_STREAM = re.compile(
    r"^E\d{4} [\d:.]+ +\d+ websocket\.go:\d+\] Unknown stream id \d+, discarding message\n", re.M
)


def kubectl_said(stderr: str) -> str:
    """kubectl's stderr without client-go's log of a message on a stream it has not set up
    yet: kube-apiserver's translator (v5) sends an empty message on stdout as soon as the
    WebSocket is open, and kubectl's reader may see it before its streams exist (a race in
    client-go's websocket executor, not in what the server says)."""
    return _UNKNOWN_STREAM.sub("", stderr)


def agent_port(cluster: Cluster) -> int:
    port = "jsonpath={.status.daemonEndpoints.kubeletEndpoint.Port}"
    return int(cluster.ok("get", "node", "far-1", "-o", port))


def test_a_gone_agent_is_the_proxys_dial_error(agent_cluster: tuple[Cluster, Process]) -> None:
    cluster, agent = agent_cluster
    port = agent_port(cluster)
    assert agent.terminate() == 0
    refused = f"dial tcp 127.0.0.1:{port}: connect: connection refused"
    spdy = kubectl(cluster, "exec", "box", "--", "true", KUBECTL_REMOTE_COMMAND_WEBSOCKETS="false")
    assert (
        spdy.communicate(timeout=60)[1] == f"Error from server: error dialing backend: {refused}\n"
    )
    websocket = cluster.kubectl("exec", "box", "--", "true")
    assert kubectl_said(websocket.stderr) == f"error: Internal error occurred: {refused}\n"
