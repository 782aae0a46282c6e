"""A Deployment through `pinnace up --nodes 2` and kubectl, as a user runs one."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.http.conftest import Cluster, launch, stop
from tests.support import eventually


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    running = launch(tmp_path_factory.mktemp("pinnace-deployments"), flags=("--nodes", "2"))
    yield running
    stop(running)


def test_kubectl_creates_rolls_out_and_updates_a_deployment(cluster: Cluster) -> None:
    created = cluster.ok("create", "deployment", "web", "--image=nginx:1.27", "--replicas=3")
    assert created.strip() == "deployment.apps/web created"
    status = cluster.ok("rollout", "status", "deployment/web", "--timeout=60s")
    assert status.strip().endswith('deployment "web" successfully rolled out')
    rows = [line.split() for line in cluster.ok("get", "pods", "--no-headers").splitlines()]
    assert len(rows) == 3
    assert all(r[0].startswith("web-") and r[1:3] == ["1/1", "Running"] for r in rows)
    [deployment] = [line.split() for line in cluster.ok("get", "deployments").splitlines()[1:]]
    assert deployment[:4] == ["web", "3/3", "3", "3"]

    cluster.ok("set", "image", "deployment/web", "nginx=nginx:1.28")
    status = cluster.ok("rollout", "status", "deployment/web", "--timeout=60s")
    assert status.strip().endswith('deployment "web" successfully rolled out')
    listing = cluster.ok(
        "get",
        "pods",
        "-l",
        "app=web",
        "-o",
        "jsonpath={range .items[*]}{.spec.containers[0].image} {.status.phase}"
        " {.metadata.deletionTimestamp}{'\\n'}{end}",
    )
    current = [line.split() for line in listing.splitlines() if len(line.split()) == 2]
    assert current == [["nginx:1.28", "Running"]] * 3  # old pods, if any, are terminating
    history = cluster.ok("rollout", "history", "deployment/web")
    assert [line.split()[0] for line in history.splitlines()[2:] if line.strip()] == ["1", "2"]
    described = cluster.ok("describe", "deployment", "web")
    assert "Scaled up replica set web-" in described

    assert cluster.ok("rollout", "undo", "deployment/web").strip() == (
        "deployment.apps/web rolled back"
    )
    status = cluster.ok("rollout", "status", "deployment/web", "--timeout=60s")
    assert status.strip().endswith('deployment "web" successfully rolled out')
    image = cluster.ok("get", "deployment", "web", "-o", "jsonpath={..containers[0].image}")
    assert image == "nginx:1.27"
    history = cluster.ok("rollout", "history", "deployment/web")
    assert [line.split()[0] for line in history.splitlines()[2:] if line.strip()] == ["2", "3"]


ROLLING = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: rolling}
spec:
  replicas: 3
  minReadySeconds: 2
  strategy: {rollingUpdate: {maxSurge: 1, maxUnavailable: 0}}
  selector: {matchLabels: {app: rolling}}
  template:
    metadata: {labels: {app: rolling}}
    spec: {containers: [{name: app, image: "nginx:1.26"}]}
"""


def rows(cluster: Cluster, *args: str) -> list[list[str]]:
    return [line.split() for line in cluster.ok("get", *args).splitlines()]


def updated_replicas(cluster: Cluster) -> int:
    return int(
        cluster.ok("get", "deployment", "rolling", "-o", "jsonpath={.status.updatedReplicas}") or 0
    )


def settled_mid_rollout(cluster: Cluster) -> dict | None:
    """The deployment's status once a paused rollout's pods are all ready and available."""
    deploy = json.loads(cluster.ok("get", "deployment", "rolling", "-o", "json"))
    status = deploy["status"]
    settled = (
        status.get("observedGeneration") == deploy["metadata"]["generation"]
        and 0 < status.get("updatedReplicas", 0) < 3
        and status.get("readyReplicas") == status.get("availableReplicas") == status["replicas"]
    )
    return status if settled else None


def test_kubectl_get_shows_a_rollout_half_way_as_kubectl_shows_it_on_a_cluster(
    cluster: Cluster,
) -> None:
    cluster.ok("apply", "-f", "-", stdin=ROLLING)
    cluster.ok("rollout", "status", "deployment/rolling", "--timeout=60s")
    cluster.ok("set", "image", "deployment/rolling", "app=nginx:1.27")
    # Paused once the new replica set has started (a paused deployment creates none).
    eventually(lambda: updated_replicas(cluster), timeout=45)
    cluster.ok("rollout", "pause", "deployment/rolling")
    status = eventually(lambda: settled_mid_rollout(cluster), timeout=45)
    total, updated = status["replicas"], status["updatedReplicas"]
    assert total in (3, 4)  # at most one surge pod

    assert rows(cluster, "deployment", "rolling")[0] == [
        "NAME",
        "READY",
        "UP-TO-DATE",
        "AVAILABLE",
        "AGE",
    ]
    assert rows(cluster, "deployment", "rolling")[1][:4] == [
        "rolling",
        f"{total}/3",
        str(updated),
        str(total),
    ]
    sets = {r[0]: r[1:4] for r in rows(cluster, "rs", "-l", "app=rolling", "--no-headers")}
    images = {
        rs["metadata"]["name"]: rs["spec"]["template"]["spec"]["containers"][0]["image"]
        for rs in json.loads(cluster.ok("get", "rs", "-l", "app=rolling", "-o", "json"))["items"]
    }
    [new] = [n for n, image in images.items() if image == "nginx:1.27"]
    [old] = [n for n in images if n != new]
    assert sets[new] == [str(updated)] * 3
    assert sets[old] == [str(total - updated)] * 3
    header = rows(cluster, "rs", "-l", "app=rolling", "-o", "wide")[0]
    assert header == [
        "NAME",
        "DESIRED",
        "CURRENT",
        "READY",
        "AGE",
        "CONTAINERS",
        "IMAGES",
        "SELECTOR",
    ]
    pods = [
        p
        for p in rows(cluster, "pods", "-l", "app=rolling", "--no-headers")
        if p[2] != "Terminating"
    ]
    assert len(pods) == total and all(p[1:4] == ["1/1", "Running", "0"] for p in pods)

    cluster.ok("rollout", "resume", "deployment/rolling")
    cluster.ok("rollout", "status", "deployment/rolling", "--timeout=60s")
    assert rows(cluster, "deployment", "rolling")[1][:4] == ["rolling", "3/3", "3", "3"]
    sets = {r[0]: r[1:4] for r in rows(cluster, "rs", "-l", "app=rolling", "--no-headers")}
    assert sets == {new: ["3", "3", "3"], old: ["0", "0", "0"]}


CRASH_LOOPING = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: never-ready}
spec:
  replicas: 1
  progressDeadlineSeconds: 3
  selector: {matchLabels: {app: never-ready}}
  template:
    metadata: {labels: {app: never-ready}}
    spec:
      containers:
      - {name: app, image: busybox:1.36, command: ["sh", "-c", "exit 1"]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: ran-once}
spec:
  replicas: 1
  progressDeadlineSeconds: 5
  selector: {matchLabels: {app: ran-once}}
  template:
    metadata: {labels: {app: ran-once}}
    spec:
      containers:
      - {name: app, image: busybox:1.36, command: ["sh", "-c", "sleep 4; exit 1"]}
"""


def test_crash_looping_deployments_past_their_deadlines_leave_the_server_responsive(
    tmp_path: Path,
) -> None:
    """One Deployment's pod never gets ready: it exceeds its progress deadline. The other's
    ran and completed its rollout; restarted at once after its first exit, it is unavailable
    from its second, past its deadline: v1.32 keeps re-checking it, and so must Pinnace,
    without holding the server (once it froze: /healthz timed out, SIGTERM was ignored)."""
    cluster = launch(tmp_path, flags=("--nodes", "1"))
    try:
        cluster.ok("apply", "-f", "-", stdin=CRASH_LOOPING)
        cluster.ok("rollout", "status", "deployment/ran-once", "--timeout=60s")
        cluster.ok(
            "wait", "deployment/ran-once", "--for=condition=Available=False", "--timeout=60s"
        )
        stalled = cluster.kubectl("rollout", "status", "deployment/never-ready", "--timeout=60s")
        assert stalled.returncode == 1
        assert 'deployment "never-ready" exceeded its progress deadline' in stalled.stderr
        assert cluster.ok("get", "--raw", "/healthz") == "ok"
    finally:
        try:
            stop(cluster)
        finally:
            if cluster.process.poll() is None:
                cluster.process.kill()
                cluster.process.wait()


UNDONE = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: undone}
spec:
  replicas: 1
  selector: {matchLabels: {app: undone}}
  template:
    metadata: {labels: {app: undone}}
    spec: {containers: [{name: app, image: "nginx:1.26"}]}
"""


def revisions(cluster: Cluster) -> list[str]:
    history = cluster.ok("rollout", "history", "deployment/undone")
    return [line.split()[0] for line in history.splitlines()[2:] if line.strip()]


def test_rollout_undo_to_a_revision_reuses_its_replica_set(cluster: Cluster) -> None:
    # The manifest states no resources; the stored template has `resources: {}` as
    # kube-apiserver's has, so the template kubectl sends back from revision 2's ReplicaSet
    # (a Go struct, with `resources: {}`) is that ReplicaSet's, not a new one.
    cluster.ok("apply", "-f", "-", stdin=UNDONE)
    resources = "jsonpath={.spec.template.spec.containers[0].resources}"
    assert cluster.ok("get", "deployment", "undone", "-o", resources) == "{}"
    for image in ("nginx:1.27", "nginx:1.28"):
        cluster.ok("rollout", "status", "deployment/undone", "--timeout=60s")
        cluster.ok("set", "image", "deployment/undone", f"app={image}")
    cluster.ok("rollout", "status", "deployment/undone", "--timeout=60s")
    assert revisions(cluster) == ["1", "2", "3"]

    cluster.ok("rollout", "undo", "deployment/undone", "--to-revision=2")
    cluster.ok("rollout", "status", "deployment/undone", "--timeout=60s")
    assert revisions(cluster) == ["1", "3", "4"]
    image = "jsonpath={.spec.template.spec.containers[0].image}"
    assert cluster.ok("get", "deployment", "undone", "-o", image) == "nginx:1.27"
    assert len(rows(cluster, "rs", "-l", "app=undone", "--no-headers")) == 3


RECREATED = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: recreated}
spec:
  replicas: 1
  strategy: {type: Recreate}
  selector: {matchLabels: {app: recreated}}
  template:
    metadata:
      labels: {app: recreated}
      annotations: {sim.pinnace.dev/stop-seconds: "600"}
    spec:
      terminationGracePeriodSeconds: 600
      containers: [{name: app, image: "nginx:1.27"}]
"""


def test_a_recreate_rollout_waiting_on_its_old_pods_times_out_naming_the_deployment(
    cluster: Cluster,
) -> None:
    """Until its old pods have stopped, a Recreate rollout has no new ReplicaSet to name:
    v1.32's syncRolloutStatus names the Deployment instead."""
    cluster.ok("apply", "-f", "-", stdin=RECREATED)
    cluster.ok("rollout", "status", "deployment/recreated", "--timeout=60s")
    cluster.ok("rollout", "pause", "deployment/recreated")
    cluster.ok("set", "image", "deployment/recreated", "app=nginx:1.28")
    cluster.ok("patch", "deployment", "recreated", "-p", '{"spec":{"progressDeadlineSeconds":1}}')
    cluster.ok("rollout", "resume", "deployment/recreated")
    progressing = "jsonpath={.status.conditions[?(@.type=='Progressing')]}"

    def timed_out() -> dict[str, str]:
        condition = json.loads(cluster.ok("get", "deployment", "recreated", "-o", progressing))
        return condition if condition["reason"] == "ProgressDeadlineExceeded" else {}

    condition = eventually(timed_out, timeout=30)
    assert condition["message"] == 'Deployment "recreated" has timed out progressing.'
    assert cluster.ok("get", "rs", "-l", "app=recreated", "-o", "name").count("\n") == 1


APART = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: apart}
spec:
  replicas: 2
  progressDeadlineSeconds: 2
  selector: {matchLabels: {app: apart}}
  template:
    metadata: {labels: {app: apart}}
    spec:
      containers: [{name: app, image: "nginx:1.27"}]
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - {labelSelector: {matchLabels: {app: apart}}, topologyKey: kubernetes.io/hostname}
"""


def progressing(cluster: Cluster) -> str:
    path = '{.status.conditions[?(@.type=="Progressing")]}'
    condition = json.loads(cluster.ok("get", "deployment", "apart", "-o", f"jsonpath={path}"))
    return f"{condition['status']} {condition['reason']}"


def test_a_completed_rollout_that_loses_a_pod_past_its_deadline_completes_when_it_runs_again(
    cluster: Cluster,
) -> None:
    """v1.32 never times out a rollout that completed once: short of a pod it cannot place,
    the Deployment is re-checked through the rate limiter, its Progressing condition stays
    NewReplicaSetAvailable, and it is Available again the moment the pod runs."""
    cluster.ok("apply", "-f", "-", stdin=APART)
    cluster.ok("rollout", "status", "deployment/apart", "--timeout=60s")
    placed = cluster.ok("get", "pods", "-l", "app=apart", "-o", "jsonpath={..nodeName}").split()
    assert sorted(placed) == ["pinnace-node-1", "pinnace-node-2"]
    on_second = cluster.ok(
        "get",
        "pods",
        "-l",
        "app=apart",
        "--field-selector=spec.nodeName=pinnace-node-2",
        "-o",
        "name",
    )
    cluster.ok("cordon", "pinnace-node-2")
    try:
        cluster.ok("delete", on_second.strip(), "--wait=false")
        cluster.ok("wait", "deployment/apart", "--for=condition=Available=False", "--timeout=30s")
        time.sleep(3)  # past the 2 s progress deadline
        # NewReplicaSetAvailable, or ProgressDeadlineExceeded when a sync saw the replica set
        # count its replacement pod (updatedReplicas 1 -> 2 is progress): both are v1.32's.
        assert progressing(cluster) in (
            "True NewReplicaSetAvailable",
            "False ProgressDeadlineExceeded",
        )
        ready = cluster.ok("get", "deployment", "apart", "-o", "jsonpath={.status.readyReplicas}")
        assert ready == "1"
        assert cluster.ok("get", "--raw", "/healthz") == "ok"
    finally:
        cluster.ok("uncordon", "pinnace-node-2")
    cluster.ok("wait", "deployment/apart", "--for=condition=Available=True", "--timeout=30s")
    status = cluster.ok("rollout", "status", "deployment/apart", "--timeout=30s")
    assert status.strip().endswith('deployment "apart" successfully rolled out')
    assert progressing(cluster) == "True NewReplicaSetAvailable"
