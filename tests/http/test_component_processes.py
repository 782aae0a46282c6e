"""The control plane's components as processes of their own against one `pinnace apiserver
--tls`, each with the credentials it writes: two `pinnace agent`s hosting nodes as their
kubelets (serving their pods' logs, exec and their nodes' stats to the API server, and
taking their nodes' faults from it), `pinnace controller-manager` (signing a
CertificateSigningRequest with the cluster CA it is given), and two `pinnace
scheduler`s with leader election (one acts; kill -9 it mid-burst and the other takes over,
no pod bound twice). One cluster for all, as each process takes seconds to start."""

from __future__ import annotations

import json
import socket
import subprocess
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.csr_requests import csr, pem_request
from tests.http.conftest import KUBECTL, Cluster, Process, launch, stop

from pinnace.cli.main import main

SHORT_LEASE = (
    "--leader-elect-lease-duration=4s",
    "--leader-elect-renew-deadline=3s",
    "--leader-elect-retry-period=1s",
)
"""Leader election's timings cut down (15 s, 10 s, 2 s by default), so the test is short."""
WAIT = 60.0
BURST = 40


def eventually(what: str, check: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT
    while not check():
        assert time.monotonic() < deadline, f"not within {WAIT:g}s: {what}"
        time.sleep(0.5)


def items(cluster: Cluster, *args: str) -> list[dict]:
    return json.loads(cluster.ok("get", *args, "-o", "json"))["items"]


def pods(count: int) -> str:
    """A List of `count` pods, for one `kubectl create -f -`."""
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "List",
            "items": [
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": f"burst-{i}"},
                    "spec": {"containers": [{"name": "app", "image": "nginx"}]},
                }
                for i in range(count)
            ],
        }
    )


def ready_nodes(cluster: Cluster) -> list[str]:
    return sorted(
        n["metadata"]["name"]
        for n in items(cluster, "nodes")
        if any(c["type"] == "Ready" and c["status"] == "True" for c in n["status"]["conditions"])
    )


def test_every_component_a_process_and_a_killed_scheduler_leader_replaced(
    tmp_path: Path, processes: list[Process], capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    flags = ("--tls", "--authorization-mode=Node,RBAC")
    cluster = launch(tmp_path, "--data-dir", str(data), flags=flags, command="apiserver")

    def start(name: str, command: str, kubeconfig: str, *args: str) -> Process:
        process = Process(tmp_path, name, command, "--kubeconfig", str(data / kubeconfig), *args)
        processes.append(process)
        return process

    try:
        for prefix, first in (("east", 101), ("west", 201)):
            start(f"agent-{prefix}", "agent", "agent.conf", "--nodes", "2", "--port", "0",
                  "--name-prefix", prefix, "--first-index", str(first))  # fmt: skip
        start(
            "controller-manager",
            "controller-manager",
            "controller-manager.conf",
            *SHORT_LEASE,
            "--secure-port=0",
            # as kubeadm points kube-controller-manager at its CA
            f"--cluster-signing-cert-file={data / 'pki' / 'ca.crt'}",
            f"--cluster-signing-key-file={data / 'pki' / 'ca.key'}",
        )
        schedulers = [
            start(f"scheduler-{i}", "scheduler", "scheduler.conf", *SHORT_LEASE, "--secure-port=0")
            for i in (1, 2)
        ]
        acquired = "successfully acquired lease kube-system/kube-scheduler"
        eventually("a scheduler leads", lambda: any(s.said(acquired) for s in schedulers))
        leader, other = sorted(schedulers, key=lambda s: not s.said(acquired))
        assert not other.said(acquired)
        eventually("the agents' nodes are Ready", lambda: len(ready_nodes(cluster)) == 4)
        assert ready_nodes(cluster) == ["east-1", "east-2", "west-1", "west-2"]
        leases = items(cluster, "leases", "-n", "kube-node-lease")
        assert sorted(lease["metadata"]["name"] for lease in leases) == ready_nodes(cluster)
        address = "jsonpath={.status.addresses[0].address}"
        assert cluster.ok("get", "node", "west-1", "-o", address) == "10.0.0.201"

        burst = subprocess.Popen(
            [KUBECTL, "--kubeconfig", str(cluster.kubeconfig), "create", "-f", "-"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            text=True,
        )
        assert burst.stdin is not None
        burst.stdin.write(pods(BURST))
        burst.stdin.close()

        def bound() -> list[dict]:
            return [p for p in items(cluster, "pods") if p["spec"].get("nodeName")]

        eventually("the leader binds some pods", lambda: len(bound()) >= 5)
        leader.popen.kill()  # kill -9, while pods are being created and bound
        leader.popen.wait()
        eventually("the other scheduler takes over", lambda: other.said(acquired))
        assert burst.wait(timeout=WAIT) == 0
        eventually("every pod is bound", lambda: len(bound()) == BURST)
        scheduled = Counter(
            e["involvedObject"]["name"]
            for e in items(cluster, "events", "--field-selector", "reason=Scheduled")
        )
        assert max(scheduled.values()) == 1  # no pod bound twice
        # Recorded through events.k8s.io/v1 as v1.32's kube-scheduler records them; its leader
        # election through core/v1, as its first profile's schedulerName.
        recorded = items(cluster, "events", "--field-selector", "reason=Scheduled")
        assert {(e["action"], e["reportingInstance"]) for e in recorded} == {
            ("Binding", f"default-scheduler-{socket.gethostname()}")
        }
        elections = items(cluster, "events", "-n", "kube-system", "--field-selector",
                          "reason=LeaderElection,involvedObject.name=kube-scheduler")  # fmt: skip
        assert {e["source"]["component"] for e in elections} == {"default-scheduler"}
        lease = items(cluster, "leases", "-n", "kube-system", "--field-selector",
                      "metadata.name=kube-scheduler")[0]["spec"]  # fmt: skip
        assert lease["leaseTransitions"] == 1

        cluster.ok("create", "deployment", "web", "--image=nginx", "--replicas=2")
        eventually(
            "the controller manager's pods run on the agents' nodes",
            lambda: (
                sum(p["status"].get("phase") == "Running" for p in items(cluster, "pods"))
                == BURST + 2
            ),
        )

        # the controller manager signs an approved CertificateSigningRequest with the CA
        cluster.ok("create", "-f", "-", stdin=json.dumps(csr("jane", pem_request("jane"))))
        cluster.ok("certificate", "approve", "jane")
        certificate = "jsonpath={.status.certificate}"
        eventually(
            "the request is signed",
            lambda: bool(cluster.ok("get", "csr", "jane", "-o", certificate)),
        )

        # pods/log, metrics and the node proxy of an agent process's node: the API server
        # reaches its kubelet endpoint
        cluster.ok("run", "hello", "--image=busybox", "--command",
                   '--overrides={"spec": {"nodeName": "west-2"}}',
                   "--annotations=sim.pinnace.dev/cpu=250m",
                   "--annotations=sim.pinnace.dev/memory=100Mi",
                   "--", "sh", "-c", "echo hello; sleep 3600")  # fmt: skip
        cluster.ok("wait", "pod/hello", "--for=condition=Ready", f"--timeout={WAIT:g}s")
        assert cluster.ok("logs", "hello") == "hello\n"
        top = cluster.ok("top", "pod", "hello", "--no-headers")
        assert top.split() == ["hello", "250m", "100Mi"]
        assert cluster.ok("top", "node", "west-2", "--no-headers").split()[:2] == ["west-2", "250m"]
        summary = json.loads(cluster.ok("get", "--raw", "/api/v1/nodes/west-2/proxy/stats/summary"))
        assert "hello" in [pod["podRef"]["name"] for pod in summary["pods"]]
        # exec there: the API server proxies the session to the kubelet endpoint (more in
        # test_agent_streams.py)
        assert cluster.ok("exec", "hello", "--", "printenv", "HOSTNAME") == "hello\n"
        assert cluster.kubectl("exec", "hello", "--", "false").returncode == 1
        assert cluster.ok("exec", "-i", "hello", "--", "cat", stdin="hi\n") == "hi\n"

        # `pinnace node FAULT` of an agent process's node: the API server relays it there
        empty = tmp_path / "empty"
        empty.write_text("")
        slow = ("create", "--raw", "/pinnace/nodes/west-1/slow?factor=2", "-f", str(empty))
        slowed = json.loads(cluster.ok(*slow))
        assert slowed == {"node": "west-1", "state": "Running", "slowness": 2}

        def node(*args: str) -> tuple[int, str]:
            code = main(["node", *args, "--kubeconfig", str(cluster.kubeconfig)])
            out, err = capsys.readouterr()
            return code, out + err

        assert node("stop", "west-1") == (
            0,
            "node/west-1 stopped (heartbeats 2 times less often)\n",
        )
        assert node("partition", "west-1") == (
            1,
            'Error from server (Conflict): Operation cannot be fulfilled on nodes "west-1": '
            "its kubelet is stopped: start it first\n",
        )
        assert node("start", "west-1") == (0, "node/west-1 started\n")

        processes.remove(leader)
        for process in processes:
            assert process.terminate() == 0
            # system:kube-scheduler's roles sufficed; the Node authorizer allowed the nodes
            assert "Forbidden" not in process.log.read_text()
        # the agent processes are gone: pods/log is the API server's dial error
        port = cluster.ok("get", "node", "west-2", "-o",
                          "jsonpath={.status.daemonEndpoints.kubeletEndpoint.Port}")  # fmt: skip
        gone = cluster.kubectl("logs", "hello")
        url = f"https://127.0.0.1:{port}/containerLogs/default/hello/hello"
        refused = f"dial tcp 127.0.0.1:{port}: connect: connection refused"
        assert gone.stderr == f'Error from server: Get "{url}": {refused}\n'
        released = "jsonpath={.spec.holderIdentity}"
        assert (
            cluster.ok("get", "lease", "-n", "kube-system", "kube-scheduler", "-o", released) == ""
        )
    finally:
        stop(cluster)
