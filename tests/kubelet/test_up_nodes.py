"""`pinnace up --nodes 2` as a user sees it through kubectl: two Ready nodes, and a pod bound
to one of them that runs."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.http.conftest import KUBECTL, Cluster, launch, stop
from tests.support import eventually

from pinnace.cli.main import main

BINDING = json.dumps(
    {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "web"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "pinnace-node-2"},
    }
)
"""What a scheduler posts to pods/binding (kubectl --raw sends the body as JSON, as is)."""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    running = launch(
        tmp_path_factory.mktemp("pinnace-up-nodes"), flags=("--nodes", "2", "--node-cpu", "8")
    )
    yield running
    stop(running)


def running_row(cluster: Cluster, pod: str) -> list[str]:
    """The pod's row of `kubectl get pods -o wide`, once it is Running."""
    row = cluster.ok("get", "pods", pod, "-o", "wide", "--no-headers").split()
    assert row[2] == "Running", row
    return row


def test_kubectl_get_nodes_shows_two_ready_nodes(cluster: Cluster) -> None:
    lines = cluster.ok("get", "nodes").splitlines()
    assert lines[0].split() == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    rows = [line.split() for line in lines[1:]]
    assert [(r[0], r[1], r[2], r[4]) for r in rows] == [
        ("pinnace-node-1", "Ready", "<none>", "v1.32.0"),
        ("pinnace-node-2", "Ready", "<none>", "v1.32.0"),
    ]
    cpu = cluster.ok("get", "node", "pinnace-node-1", "-o", "jsonpath={.status.allocatable.cpu}")
    assert cpu == "8"
    described = cluster.ok("describe", "node", "pinnace-node-1")
    assert "Kubelet Version:            v1.32.0" in described
    assert "Starting kubelet." in described
    assert "Node pinnace-node-1 status is now: NodeReady" in described


def test_pod_bound_with_a_binding_goes_running(cluster: Cluster) -> None:
    # A scheduler name no scheduler serves: the Binding below is what places it.
    manual = json.dumps({"apiVersion": "v1", "spec": {"schedulerName": "by-hand"}})
    cluster.ok(
        "run",
        "web",
        "--image=nginx:1.27",
        f"--overrides={manual}",
        "--annotations=sim.pinnace.dev/log=listening on :80",
    )
    cluster.ok(
        "create", "-f", "-", "--raw", "/api/v1/namespaces/default/pods/web/binding", stdin=BINDING
    )
    row = eventually(lambda: running_row(cluster, "web"), timeout=20)
    assert row[:3] == ["web", "1/1", "Running"]
    assert row[6] == "pinnace-node-2"
    assert row[5].startswith("10.128.2.")
    assert cluster.ok("logs", "web") == "listening on :80\n"
    # kubectl waits until the node agent has stopped the containers and removed the pod.
    assert cluster.ok("delete", "pod", "web").strip() == 'pod "web" deleted'
    missing = cluster.kubectl("get", "pod", "web")
    assert 'pods "web" not found' in missing.stderr


def test_a_node_shape_that_is_not_a_quantity_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit:
        main(["up", "--nodes", "1", "--node-memory", "lots"])
    assert exit.value.code == 2
    error = capsys.readouterr().err
    assert 'argument --node-memory: invalid quantity "lots"' in error
    assert "Traceback" not in error


def test_nodes_come_back_ready_after_a_restart_on_the_same_data(tmp_path: Path) -> None:
    data = ("--data-dir", str(tmp_path / "data"))
    first = launch(tmp_path, *data, flags=("--nodes", "1"))
    stop(first)
    second = launch(tmp_path, *data, flags=("--nodes", "1"))
    try:
        rows = [line.split() for line in second.ok("get", "nodes", "--no-headers").splitlines()]
        assert [(r[0], r[1]) for r in rows] == [("pinnace-node-1", "Ready")]
        assert "Traceback" not in (tmp_path / "server.log").read_text()
    finally:
        stop(second)


def test_a_pod_the_scheduler_places_runs_on_its_simulated_node(cluster: Cluster) -> None:
    container = {"name": "placed", "image": "nginx:1.27", "resources": {"requests": {"cpu": "7"}}}
    overrides = json.dumps({"apiVersion": "v1", "spec": {"containers": [container]}})
    cluster.ok("run", "placed", "--image=nginx:1.27", f"--overrides={overrides}")
    row = eventually(lambda: running_row(cluster, "placed"), timeout=20)
    assert row[:3] == ["placed", "1/1", "Running"]
    assert row[6] in ("pinnace-node-1", "pinnace-node-2")


def test_kubectl_logs_follow_streams_until_the_container_exits(cluster: Cluster) -> None:
    cluster.ok(
        "run",
        "talker",
        "--image=busybox",
        "--restart=Never",
        "--",
        "sh",
        "-c",
        "echo hello; sleep 4",
    )
    cluster.ok("wait", "--for=condition=Ready", "pod/talker", "--timeout=30s")
    assert cluster.ok("logs", "-f", "talker") == "hello\n"
    finished = cluster.ok(
        "get", "pod", "talker", "-o", "jsonpath={.status.containerStatuses[0].state.terminated}"
    )
    assert finished, "logs -f returned before the container exited"
    assert cluster.ok("logs", "talker", "--limit-bytes=3") == "hel"


def test_a_deleted_nginx_pod_shuts_down_and_ends_completed(cluster: Cluster) -> None:
    # nginx handles SIGTERM: it shuts down and exits 0, so the pod ends Succeeded (kubectl
    # shows Completed) before it goes, where a program without a handler ends in Error.
    stopping = "--annotations=sim.pinnace.dev/stop-seconds=5"
    cluster.ok("run", "stopped", "--image=nginx:1.27", stopping)
    cluster.ok("wait", "--for=condition=Ready", "pod/stopped", "--timeout=30s")
    terminated = "{.status.containerStatuses[0].state.terminated.reason}"
    waiting = subprocess.Popen(
        [
            KUBECTL,
            "--kubeconfig",
            str(cluster.kubeconfig),
            "wait",
            f"--for=jsonpath={terminated}=Completed",
            "pod/stopped",
            "--timeout=30s",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # It reads the pod (Running) well within the 5 s nginx takes to stop, then watches.
    cluster.ok("delete", "pod", "stopped", "--wait=false")
    out, err = waiting.communicate(timeout=40)
    assert waiting.returncode == 0, err
    assert out.strip() == "pod/stopped condition met"


def test_a_deleted_sleep_pod_waits_out_its_grace_period_and_is_killed(cluster: Cluster) -> None:
    """busybox's sleep as PID 1 has no SIGTERM handler, so the kernel does not deliver it:
    `kubectl delete` leaves the pod Terminating with its container running until SIGKILL at
    the end of the grace period (137); a second delete with a shorter one brings that
    forward."""
    run = ("run", "sleeper", "--image=busybox", "--restart=Never", "--", "sleep", "3600")
    cluster.ok(*run)
    cluster.ok("wait", "--for=condition=Ready", "pod/sleeper", "--timeout=30s")
    cluster.ok("delete", "pod", "sleeper", "--wait=false")
    deleting = json.loads(cluster.ok("get", "pod", "sleeper", "-o", "json"))
    assert deleting["metadata"]["deletionGracePeriodSeconds"] == 30
    terminated = "{.status.containerStatuses[0].state.terminated.exitCode}"
    waiting = subprocess.Popen(
        [
            KUBECTL,
            "--kubeconfig",
            str(cluster.kubeconfig),
            "wait",
            f"--for=jsonpath={terminated}=137",
            "pod/sleeper",
            "--timeout=30s",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # Still running well within its 30 s: the wait reads it, then watches.
    assert list(deleting["status"]["containerStatuses"][0]["state"]) == ["running"]
    cluster.ok("delete", "pod", "sleeper", "--grace-period=2", "--wait=false")
    out, err = waiting.communicate(timeout=40)
    assert waiting.returncode == 0, err
    assert out.strip() == "pod/sleeper condition met"
    eventually(lambda: cluster.kubectl("get", "pod", "sleeper").returncode != 0)


OVERFLOWING = """\
apiVersion: v1
kind: Pod
metadata:
  name: greedy
  annotations:
    sim.pinnace.dev/cpu: "1e400"
spec:
  containers: [{name: app, image: nginx:1.27}]
"""


def test_an_overflowing_behaviour_annotation_is_a_config_error_and_the_pod_deletes(
    cluster: Cluster,
) -> None:
    cluster.ok("apply", "-f", "-", stdin=OVERFLOWING)
    reason = "jsonpath={.status.containerStatuses[0].state.waiting.reason}"
    waiting = eventually(lambda: cluster.ok("get", "pod", "greedy", "-o", reason), timeout=20)
    assert waiting == "CreateContainerConfigError"
    events = cluster.ok(
        "get", "events", "--field-selector", "involvedObject.name=greedy", "-o", "name"
    )
    described = cluster.ok("describe", "pod", "greedy")
    assert events and 'annotation sim.pinnace.dev/cpu: invalid value "1e400"' in described
    cluster.ok("delete", "pod", "greedy", "--timeout=20s")
    gone = cluster.kubectl("get", "pod", "greedy")
    assert 'pods "greedy" not found' in gone.stderr
