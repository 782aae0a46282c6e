"""A node that comes back after the node lifecycle controller gave up on it: its kubelet posts
Ready again, the controller takes the unreachable taints away, and the kubelet puts back the
pod statuses the controller marked not ready."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.controllers.lifecycle_cluster import MODE_IDS, MODES, PODS, LifecycleCluster, pod

TOLERATE_UNREACHABLE = {
    "key": "node.kubernetes.io/unreachable",
    "operator": "Exists",
    "effect": "NoExecute",
}


@pytest.fixture(params=MODES, ids=MODE_IDS)
def cluster(request: pytest.FixtureRequest) -> Iterator[LifecycleCluster]:
    c = LifecycleCluster({"a": 2}, simulated=request.param)
    yield c
    c.close()


def ready(conditions: list[dict[str, str]]) -> str:
    return next(c["status"] for c in conditions if c["type"] == "Ready")


def test_a_node_that_comes_back_is_ready_with_ready_pods(cluster: LifecycleCluster) -> None:
    cluster.run(cluster.client.create(PODS, "default", pod("web", "a-0", [TOLERATE_UNREACHABLE])))
    cluster.wait(12)
    assert ready(cluster.get_pod("web")["status"]["conditions"]) == "True"

    cluster.run(cluster.pool.fail_node("a-0"))
    cluster.wait(70)
    assert cluster.ready("a-0")["status"] == "Unknown"
    assert "node.kubernetes.io/unreachable:NoExecute" in cluster.taints("a-0")
    assert ready(cluster.get_pod("web")["status"]["conditions"]) == "False"

    cluster.run(cluster.pool.recover_node("a-0"))
    cluster.wait(20)
    assert cluster.ready("a-0")["status"] == "True"
    assert cluster.taints("a-0") == set()
    web = cluster.get_pod("web")["status"]
    assert (web["phase"], ready(web["conditions"])) == ("Running", "True")


def test_a_pod_marked_not_ready_while_its_kubelet_runs_is_put_back(
    cluster: LifecycleCluster,
) -> None:
    cluster.run(cluster.client.create(PODS, "default", pod("web", "a-1")))
    cluster.wait(12)
    status = cluster.get_pod("web")["status"]
    conditions = [
        {**c, "status": "False"} if c["type"] == "Ready" else c for c in status["conditions"]
    ]
    cluster.run(
        cluster.client.patch(
            PODS, "default", "web", {"status": {"conditions": conditions}}, subresource="status"
        )
    )
    cluster.wait(2)
    assert ready(cluster.get_pod("web")["status"]["conditions"]) == "True"
