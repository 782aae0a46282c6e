"""The cluster autoscaler as a user meets it: `pinnace up --config pools.yaml
--cluster-autoscaler` with short timers, driven by kubectl. A Deployment scaled beyond the
cluster's capacity gets nodes from the autoscaled pool; scaled back, the nodes go again."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from tests.http.conftest import Cluster, launch, stop
from tests.support import eventually

POOLS = """
apiVersion: pinnace.dev/v1alpha1
kind: Cluster
nodePools:
- {name: base, count: 1, capacity: {cpu: "2", memory: 4Gi}}
- {name: burst, count: 0, capacity: {cpu: "2", memory: 4Gi}, maxSize: 2, cost: 0.1}
"""


@pytest.fixture(scope="module")
def autoscaled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    workdir = tmp_path_factory.mktemp("pinnace-up-autoscaler")
    pools = Path(workdir / "pools.yaml")
    pools.write_text(POOLS)
    flags = (
        "--config", str(pools), "--cluster-autoscaler", "--scan-interval", "1s",
        "--node-provisioning-delay", "1s", "--scale-down-unneeded-time", "3s",
        "--scale-down-delay-after-add", "3s", "--unremovable-node-recheck-timeout", "1s",
    )  # fmt: skip
    running = launch(workdir, flags=flags)
    yield running
    stop(running)


def nodes(cluster: Cluster) -> list[str]:
    return sorted(cluster.ok("get", "nodes", "-o", "name").split())


def test_a_deployment_beyond_capacity_gets_nodes_and_gives_them_back(autoscaled: Cluster) -> None:
    autoscaled.ok("create", "deployment", "web", "--image=nginx:1.27", "--replicas=1")
    autoscaled.ok("set", "resources", "deployment", "web", "--requests=cpu=900m,memory=64Mi")
    autoscaled.ok("scale", "deployment", "web", "--replicas=5")
    eventually(lambda: nodes(autoscaled) == ["node/base-1", "node/burst-1", "node/burst-2"])
    eventually(
        lambda: (
            autoscaled.ok("get", "deployment", "web", "-o", "jsonpath={.status.readyReplicas}")
            == "5"
        )
    )
    triggered = autoscaled.ok(
        "get", "events", "--field-selector", "reason=TriggeredScaleUp",
        "-o", "jsonpath={.items[*].message}",
    )  # fmt: skip
    assert "pod triggered scale-up: [{burst 0->2 (max: 2)}]" in triggered
    text = autoscaled.ok(
        "get", "configmap", "-n", "kube-system", "cluster-autoscaler-status",
        "-o", "jsonpath={.data.status}",
    )  # fmt: skip
    status = yaml.safe_load(text)
    (burst,) = status["nodeGroups"]
    assert (burst["name"], burst["health"]["maxSize"]) == ("burst", 2)
    # as gopkg.in/yaml.v2 writes cluster-autoscaler's structs: zero omitempty fields left out,
    # metav1.Time in RFC 3339 with its fraction, double-quoted
    assert "candidates: 0" not in text and "beingDeleted: 0" not in text, text
    assert re.search(r'\n    lastProbeTime: "\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z"\n', text)
    # cluster-autoscaler's two words on the group's size: as it is set, and once it is
    assert autoscaler_log(autoscaled, "ScaledUpGroup") == [
        "Scale-up: group burst size set to 2 instead of 0 (max: 2)",
        "Scale-up: setting group burst size to 2 instead of 0 (max: 2)",
    ]

    autoscaled.ok("scale", "deployment", "web", "--replicas=1")
    eventually(lambda: nodes(autoscaled) == ["node/base-1"], timeout=90)
    removed = autoscaler_log(autoscaled, "ScaleDownEmpty") + autoscaler_log(autoscaled, "ScaleDown")
    # as each removal starts, and once each node is gone (empty, or the pod the ReplicaSet
    # kept moved off it)
    for node in ("burst-1", "burst-2"):
        assert f'Scale-down: removing empty node "{node}"' in removed or any(
            m.startswith(f"Scale-down: removing node {node}, ") for m in removed
        )
        assert (
            f"Scale-down: empty node {node} removed" in removed
            or f"Scale-down: node {node} removed with drain" in removed
        )


def autoscaler_log(cluster: Cluster, reason: str) -> list[str]:
    """The messages, sorted, of the events of that reason on the status ConfigMap."""
    found = cluster.ok(
        "get", "events", "-n", "kube-system", "--field-selector",
        f"reason={reason},involvedObject.name=cluster-autoscaler-status",
        "-o", "jsonpath={range .items[*]}{.message}{'\\n'}{end}",
    )  # fmt: skip
    return sorted(found.splitlines())


WORK_POOL = """
apiVersion: pinnace.dev/v1alpha1
kind: Cluster
nodePools:
- {name: work, count: 2, capacity: {cpu: "2", memory: 4Gi}, maxSize: 2}
"""


@pytest.fixture(scope="module")
def slow_scale_down(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """Two empty autoscaled nodes that stay unneeded for the default 10 minutes."""
    workdir = tmp_path_factory.mktemp("pinnace-up-soft-taint")
    pools = Path(workdir / "pools.yaml")
    pools.write_text(WORK_POOL)
    flags = ("--config", str(pools), "--cluster-autoscaler", "--scan-interval", "1s")
    running = launch(workdir, flags=flags)
    yield running
    stop(running)


def soft_taints(cluster: Cluster) -> dict[str, str]:
    found = cluster.ok(
        "get", "nodes", "-o",
        "jsonpath={range .items[*]}{.metadata.name} {.spec.taints[*].key}"
        ":{.spec.taints[*].effect}{'\\n'}{end}",
    )  # fmt: skip
    return {
        name: effect
        for name, taint in (line.split(" ", 1) for line in found.splitlines())
        for key, effect in [taint.split(":")]
        if key == "DeletionCandidateOfClusterAutoscaler"
    }


def test_unneeded_nodes_get_the_soft_taint_until_they_are_needed(
    slow_scale_down: Cluster,
) -> None:
    eventually(
        lambda: (
            soft_taints(slow_scale_down)
            == {"work-1": "PreferNoSchedule", "work-2": "PreferNoSchedule"}
        )
    )
    described = slow_scale_down.ok("describe", "node", "work-1")
    assert "DeletionCandidateOfClusterAutoscaler=" in described
    slow_scale_down.ok(
        "run", "busy", "--image=nginx:1.27",
        '--overrides={"spec": {"nodeName": "work-1", "containers": [{"name": "busy", '
        '"image": "nginx:1.27", "resources": {"requests": {"cpu": "1500m"}}}]}}',
    )  # fmt: skip
    eventually(lambda: soft_taints(slow_scale_down) == {"work-2": "PreferNoSchedule"})


@pytest.fixture(scope="module")
def capped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """The `base` and `burst` pools with --max-nodes-total 2: room for one burst node."""
    workdir = tmp_path_factory.mktemp("pinnace-up-max-nodes-total")
    pools = Path(workdir / "pools.yaml")
    pools.write_text(POOLS)
    flags = (
        "--config", str(pools), "--cluster-autoscaler", "--scan-interval", "1s",
        "--node-provisioning-delay", "1s", "--max-nodes-total", "2",
    )  # fmt: skip
    running = launch(workdir, flags=flags)
    yield running
    stop(running)


def test_max_nodes_total_caps_the_scale_up_and_the_pods_stay_pending(capped: Cluster) -> None:
    capped.ok("create", "deployment", "web", "--image=nginx:1.27", "--replicas=1")
    capped.ok("set", "resources", "deployment", "web", "--requests=cpu=900m,memory=64Mi")
    capped.ok("scale", "deployment", "web", "--replicas=5")

    def ready() -> str:
        ready = capped.ok("get", "deployment", "web", "-o", "jsonpath={.status.readyReplicas}")
        assert ready == "4"  # two on base-1, two on the one burst node the limit leaves room for
        return ready

    eventually(ready, timeout=60)
    assert nodes(capped) == ["node/base-1", "node/burst-1"]
    # the estimate stops at the limit, below the group's maxSize
    assert autoscaler_log(capped, "ScaledUpGroup") == [
        "Scale-up: group burst size set to 1 instead of 0 (max: 2)",
        "Scale-up: setting group burst size to 1 instead of 0 (max: 2)",
    ]
    metrics = capped.ok("get", "--raw", "/metrics/cluster-autoscaler")
    assert "\ncluster_autoscaler_max_nodes_count 2.0\n" in metrics
    # Loops go on at the limit (scan interval 1 s) and try no scale-up: no second one, and as
    # cluster-autoscaler 1.32 nothing more said to the pod left pending.
    before = told(capped)
    time.sleep(5)
    assert nodes(capped) == ["node/base-1", "node/burst-1"]
    assert len(autoscaler_log(capped, "ScaledUpGroup")) == 2
    pending = capped.ok("get", "pods", "--field-selector", "status.phase=Pending", "-o", "name")
    assert len(pending.split()) == 1
    assert told(capped) == before


def told(cluster: Cluster) -> int:
    """How many times pods were told they did not trigger a scale-up (repeats included)."""
    counts = cluster.ok(
        "get", "events", "--field-selector", "reason=NotTriggerScaleUp",
        "-o", "jsonpath={.items[*].count}",
    )  # fmt: skip
    return sum(int(c) for c in counts.split())
