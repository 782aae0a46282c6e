"""A pod's life as kubectl and the `kubernetes` Python client see it through `pinnace up
--nodes 1`, in real time: sidecars (init containers with restartPolicy Always, beta and on in
v1.32) restarted after a failed probe in computeInitContainerActions' words and stopped only
once the app containers have (kuberuntime's terminationOrdering), and PodReadyToStartContainers
following the pod's sandbox."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client, config, watch
from tests.http.conftest import Cluster, launch, stop
from tests.support import eventually

WAIT = 30.0

LIVENESS = """
apiVersion: v1
kind: Pod
metadata:
  name: mesh
  annotations:
    sim.pinnace.dev/liveness-fails-after.proxy: "2s"
spec:
  initContainers:
  - name: proxy
    image: nginx:1.27
    restartPolicy: Always
    livenessProbe:
      tcpSocket:
        port: 80
      periodSeconds: 1
      failureThreshold: 1
  containers:
  - name: app
    image: nginx:1.27
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    running = launch(tmp_path_factory.mktemp("pinnace-lifecycle"), flags=("--nodes", "1"))
    yield running
    stop(running)


@pytest.fixture(scope="module")
def core(cluster: Cluster) -> Iterator[client.CoreV1Api]:
    api_client = config.new_client_from_config(str(cluster.kubeconfig))
    yield client.CoreV1Api(api_client)
    api_client.close()


def test_a_sidecar_failing_its_liveness_probe_is_restarted_as_an_init_container(
    cluster: Cluster,
) -> None:
    cluster.ok("apply", "-f", "-", stdin=LIVENESS)

    def killed() -> str:
        text = cluster.ok("describe", "pod", "mesh")
        return text if "Killing" in text else ""

    text = eventually(killed, timeout=WAIT)
    assert "Init container proxy failed liveness probe" in text
    assert "will be restarted" not in text
    assert "Liveness probe failed: dial tcp" in text

    def restarted() -> bool:
        statuses = cluster.ok(
            "get", "pod", "mesh", "-o", "jsonpath={.status.initContainerStatuses[0].restartCount}"
        )
        return int(statuses or 0) >= 1

    eventually(restarted, timeout=WAIT)


def terminating_pod() -> dict[str, Any]:
    """An app that takes 3 s to stop on SIGTERM beside a sidecar that takes 2 s."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "drain",
            "annotations": {
                "sim.pinnace.dev/stop-seconds.app": "3",
                "sim.pinnace.dev/stop-seconds.proxy": "2",
            },
        },
        "spec": {
            "terminationGracePeriodSeconds": 30,
            "initContainers": [
                {"name": "proxy", "image": "envoyproxy/envoy:v1.31", "restartPolicy": "Always"}
            ],
            "containers": [{"name": "app", "image": "busybox", "command": ["sleep", "3600"]}],
        },
    }


def test_a_deleted_pods_sidecar_stops_after_its_app_container(
    core: client.CoreV1Api,
) -> None:
    core.create_namespaced_pod("default", terminating_pod())

    def running() -> bool:
        return core.read_namespaced_pod("drain", "default").status.phase == "Running"

    eventually(running, timeout=WAIT)
    start = core.read_namespaced_pod("drain", "default").metadata.resource_version
    last: Any = None
    stream = watch.Watch()
    core.delete_namespaced_pod("drain", "default")
    for event in stream.stream(
        core.list_namespaced_pod,
        "default",
        field_selector="metadata.name=drain",
        resource_version=start,
        timeout_seconds=int(WAIT),
    ):
        if event["type"] == "DELETED":
            break
        last = event["object"]
    stream.stop()
    assert last is not None
    [proxy] = last.status.init_container_statuses
    [app] = last.status.container_statuses
    app_done, proxy_done = app.state.terminated, proxy.state.terminated
    assert app_done is not None and proxy_done is not None
    # The app gets SIGTERM at once and exits 3 s later; only then is the sidecar told to
    # stop, and it takes 2 s more.
    assert (proxy_done.finished_at - app_done.finished_at).total_seconds() >= 1
    assert (app_done.exit_code, proxy_done.exit_code) == (143, 143)


MISSING_VOLUME = """
apiVersion: v1
kind: Pod
metadata:
  name: unmounted
spec:
  containers:
  - name: app
    image: nginx:1.27
    volumeMounts:
    - name: config
      mountPath: /etc/app
  volumes:
  - name: config
    configMap:
      name: not-there-yet
"""

ONE_SHOT = """
apiVersion: v1
kind: Pod
metadata:
  name: one-shot
spec:
  restartPolicy: Never
  containers:
  - name: app
    image: busybox
    command: ["sh", "-c", "sleep 1"]
"""


def conditions(cluster: Cluster, name: str) -> dict[str, str]:
    text = cluster.ok(
        "get",
        "pod",
        name,
        "-o",
        'jsonpath={range .status.conditions[*]}{.type}={.status}{"\\n"}{end}',
    )
    return dict(line.split("=") for line in text.split())


def test_pod_ready_to_start_containers_follows_the_sandbox(cluster: Cluster) -> None:
    """False while the volumes cannot be mounted (no sandbox yet), True once it runs, False
    again once the pod has finished and the kubelet has stopped its sandbox."""
    cluster.ok("apply", "-f", "-", stdin=MISSING_VOLUME + "---" + ONE_SHOT)

    def mount_failed() -> bool:
        return "FailedMount" in cluster.ok("describe", "pod", "unmounted")

    eventually(mount_failed, timeout=WAIT)
    assert conditions(cluster, "unmounted")["PodReadyToStartContainers"] == "False"
    cluster.ok("create", "configmap", "not-there-yet", "--from-literal=a=b")
    eventually(
        lambda: conditions(cluster, "unmounted")["PodReadyToStartContainers"] == "True",
        timeout=WAIT,
    )

    def completed() -> dict[str, str]:
        rows = cluster.ok("get", "pod", "one-shot", "--no-headers").split()
        return conditions(cluster, "one-shot") if rows[2] == "Completed" else {}

    assert eventually(completed, timeout=WAIT) == {
        "PodReadyToStartContainers": "False",
        "Initialized": "True",
        "Ready": "False",
        "ContainersReady": "False",
        "PodScheduled": "True",
    }


SLOW_SIDECAR = """
apiVersion: v1
kind: Pod
metadata:
  name: slow-mesh
  annotations:
    sim.pinnace.dev/startup-seconds.proxy: "4"
spec:
  initContainers:
  - name: proxy
    image: nginx:1.27
    restartPolicy: Always
    startupProbe:
      httpGet:
        port: 80
      periodSeconds: 1
      failureThreshold: 10
  containers:
  - name: app
    image: nginx:1.27
"""


def test_a_pod_is_initialized_once_its_sidecar_has_started(cluster: Cluster) -> None:
    cluster.ok("apply", "-f", "-", stdin=SLOW_SIDECAR)

    def running() -> bool:
        return cluster.ok("get", "pod", "slow-mesh", "-o", "jsonpath={.status.phase}") != ""

    eventually(running, timeout=WAIT)
    assert cluster.ok("get", "pod", "slow-mesh", "--no-headers").split()[2] == "Init:0/1"
    assert conditions(cluster, "slow-mesh")["Initialized"] == "False"
    eventually(lambda: conditions(cluster, "slow-mesh")["Initialized"] == "True", timeout=WAIT)
    assert cluster.ok("get", "pod", "slow-mesh", "--no-headers").split()[2] == "Running"


FAILING = """
apiVersion: v1
kind: Pod
metadata:
  name: failing
  annotations:
    sim.pinnace.dev/run-seconds: "1"
    sim.pinnace.dev/exit-code: "3"
spec:
  restartPolicy: Never
  containers:
  - name: app
    image: busybox:1.36
"""


def test_a_failed_pod_is_not_ready_for_the_reason_pod_failed(cluster: Cluster) -> None:
    """generate.go's terminal phase: Ready and ContainersReady False with the reason PodFailed
    and no message, not ContainersNotReady naming its containers."""
    cluster.ok("apply", "-f", "-", stdin=FAILING)

    def failed() -> bool:
        return cluster.ok("get", "pod", "failing", "-o", "jsonpath={.status.phase}") == "Failed"

    eventually(failed, timeout=WAIT)
    rows = cluster.ok(
        "get",
        "pod",
        "failing",
        "-o",
        "jsonpath={range .status.conditions[*]}{.type} {.status} {.reason} {.message}{'\\n'}{end}",
    )
    conditions = {row.split()[0]: row.split()[1:] for row in rows.splitlines()}
    assert conditions["Ready"] == ["False", "PodFailed"]
    assert conditions["ContainersReady"] == ["False", "PodFailed"]
