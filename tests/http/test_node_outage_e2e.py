"""A node outage as a platform engineer meets it on `pinnace up`, through kubectl and the
`kubernetes` Python client: `pinnace node stop` silences a kubelet; after the grace period the
node is NotReady with the unreachable taints, its pods are marked not ready, a pod tolerating
the outage for 3 s is evicted by the taint eviction controller (and stays Terminating, with no
kubelet to stop it), the others keep their 300 s. Started again, the node is Ready, its taints
go, the evicted pod goes for good and the others are ready again. Short kubelet and controller
timings keep it to seconds."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config
from tests.http.conftest import Cluster, launch, stop
from tests.support import eventually

from pinnace.cli.main import main

CLUSTER_FILE = """\
apiVersion: pinnace.dev/v1alpha1
kind: Cluster
nodePools:
- name: fast
  count: 2
  kubelet: {nodeLeaseDurationSeconds: 4, nodeStatusUpdateFrequency: 1s}
"""

PODS = """
apiVersion: v1
kind: Pod
metadata: {name: brief}
spec:
  nodeName: fast-1
  tolerations:
  - {key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute, tolerationSeconds: 3}
  containers: [{name: app, image: nginx:1.27}]
---
apiVersion: v1
kind: Pod
metadata: {name: patient}
spec:
  nodeName: fast-1
  containers: [{name: app, image: nginx:1.27}]
"""

UNREACHABLE = "node.kubernetes.io/unreachable"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    workdir = Path(tmp_path_factory.mktemp("pinnace-outage"))
    (workdir / "cluster.yaml").write_text(CLUSTER_FILE)
    flags = ("--config", "cluster.yaml", "--node-monitor-grace-period", "4s")
    running = launch(workdir, flags=(*flags, "--node-monitor-period", "1s", "--no-scheduler"))
    yield running
    stop(running)


@pytest.fixture(scope="module")
def core(cluster: Cluster) -> client.CoreV1Api:
    return client.CoreV1Api(config.new_client_from_config(str(cluster.kubeconfig)))


def node_fault(cluster: Cluster, fault: str, name: str) -> None:
    assert main(["node", fault, name, "--kubeconfig", str(cluster.kubeconfig)]) == 0


def ready(pod: Any) -> str:
    return next(c.status for c in pod.status.conditions if c.type == "Ready")


def test_an_unreachable_node_evicts_as_tolerations_allow_and_recovers(
    cluster: Cluster, core: client.CoreV1Api
) -> None:
    cluster.ok("apply", "-f", "-", stdin=PODS)
    cluster.ok("wait", "--for=condition=Ready", "pod/brief", "pod/patient", "--timeout=30s")
    node_fault(cluster, "stop", "fast-1")

    def tainted() -> list[tuple[str, str]]:
        taints = core.read_node("fast-1").spec.taints or []
        assert all(t.time_added is not None for t in taints)
        return sorted((t.key, t.effect) for t in taints)

    assert eventually(tainted, timeout=30) in (
        [(UNREACHABLE, "NoSchedule")],
        [(UNREACHABLE, "NoExecute"), (UNREACHABLE, "NoSchedule")],
    )
    eventually(lambda: len(tainted()) == 2, timeout=10)
    assert cluster.ok("get", "node", "fast-1", "--no-headers").split()[1] == "NotReady"
    described = cluster.ok("describe", "node", "fast-1")
    assert "NodeStatusUnknown      Kubelet stopped posting node status." in described
    assert "node.kubernetes.io/unreachable:NoExecute" in described
    assert "Node fast-1 status is now: NodeNotReady" in described

    patient = core.read_namespaced_pod("patient", "default")
    assert ready(patient) == "False"
    not_ready = core.list_namespaced_event(
        "default", field_selector="involvedObject.name=patient,reason=NodeNotReady"
    ).items
    assert [(e.type, e.message, e.source.component) for e in not_ready] == [
        ("Warning", "Node is not ready", "node-controller")
    ]

    brief = eventually(
        lambda: (
            core.read_namespaced_pod("brief", "default").metadata.deletion_timestamp
            and core.read_namespaced_pod("brief", "default")
        ),
        timeout=15,
    )
    [target] = [c for c in brief.status.conditions if c.type == "DisruptionTarget"]
    assert (target.status, target.reason, target.message) == (
        "True",
        "DeletionByTaintManager",
        "Taint manager: deleting due to NoExecute taint",
    )
    events = json.loads(
        cluster.ok("get", "events", "--field-selector", "reason=TaintManagerEviction", "-o", "json")
    )["items"]
    assert [(e["message"], e["involvedObject"]) for e in events] == [
        (
            "Marking for deletion Pod default/brief",
            {"apiVersion": "v1", "kind": "Pod", "name": "brief", "namespace": "default"},
        )
    ]
    # Without the pod's uid the event is not among those `kubectl describe pod` finds.
    assert "TaintManagerEviction" not in cluster.ok("describe", "pod", "brief")
    assert core.read_namespaced_pod("patient", "default").metadata.deletion_timestamp is None

    node_fault(cluster, "start", "fast-1")
    eventually(lambda: core.read_node("fast-1").spec.taints is None, timeout=30)
    assert cluster.ok("get", "node", "fast-1", "--no-headers").split()[1] == "Ready"
    eventually(lambda: "brief" not in cluster.ok("get", "pods", "-o", "name"), timeout=30)
    eventually(lambda: ready(core.read_namespaced_pod("patient", "default")) == "True")
    assert core.read_namespaced_pod("patient", "default").metadata.deletion_timestamp is None
