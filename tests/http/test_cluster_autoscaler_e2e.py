"""The cluster autoscaler as a user meets it: `pinnace up --config pools.yaml
--cluster-autoscaler` with short timers, driven by kubectl. A Deployment scaled beyond the
cluster's capacity gets nodes from the autoscaled pool; scaled back, the nodes go again."""

from __future__ import annotations

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

    autoscaled.ok("scale", "deployment", "web", "--replicas=1")
    eventually(lambda: nodes(autoscaled) == ["node/base-1"], timeout=90)
    removed = autoscaled.ok(
        "get", "events", "-n", "kube-system", "--field-selector", "reason=ScaleDownEmpty",
        "-o", "jsonpath={.items[*].message}",
    )  # fmt: skip
    assert 'Scale-down: removing empty node "burst-' in removed
