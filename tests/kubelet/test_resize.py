"""The kubelet's in-place resize (InPlacePodVerticalScaling, alpha in v1.32) on the virtual
clock: a resize that fits is applied (Proposed, InProgress, then cleared), one that must wait
for room is Deferred until another pod goes, one larger than the node is Infeasible, and a
RestartContainer policy restarts the container."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from tests.kubelet.conftest import CONFIG, PODS, Node

from pinnace.api.features import FeatureGates
from pinnace.api.patch import PatchType
from pinnace.client import Informer

GATES = FeatureGates(
    in_place_pod_vertical_scaling=True, in_place_pod_vertical_scaling_allocated_status=True
)


@pytest.fixture
def node() -> Iterator[Node]:
    n = Node(CONFIG, GATES)
    yield n
    n.close()


def running_pod(
    node: Node, name: str, cpu: str, memory: str = "128Mi", **container: Any
) -> dict[str, Any]:
    resources = {"requests": {"cpu": cpu, "memory": memory}, "limits": {"memory": memory}}
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "nodeName": "node-1",
            "containers": [{"name": "app", "image": "nginx", "resources": resources, **container}],
        },
    }
    node.create_pod(body)
    node.settle()
    pod = node.get_pod(name)
    assert pod["status"]["phase"] == "Running"
    return pod


def resize(node: Node, name: str, resources: dict[str, Any]) -> None:
    patch = {"spec": {"containers": [{"name": "app", "resources": resources}]}}
    node.run(
        node.client.patch(
            PODS, "default", name, patch, PatchType.STRATEGIC_MERGE, subresource="resize"
        )
    )
    node.settle()


def app_status(pod: dict[str, Any]) -> dict[str, Any]:
    status: dict[str, Any] = pod["status"]["containerStatuses"][0]
    return status


def test_a_resize_that_fits_is_applied_in_place(node: Node) -> None:
    running_pod(node, "web", "500m")
    seen: list[str | None] = []
    informer = Informer(node.client, PODS)
    informer.add_event_handler(
        lambda pod: None, lambda old, new: seen.append(new["status"].get("resize")), None
    )
    informer.start()
    node.settle()
    resize(node, "web", {"requests": {"cpu": "1"}})
    pod = node.get_pod("web")
    assert "resize" not in pod["status"]
    assert app_status(pod)["resources"]["requests"] == {"cpu": "1", "memory": "128Mi"}
    assert app_status(pod)["allocatedResources"] == {"cpu": "1", "memory": "128Mi"}
    assert app_status(pod)["restartCount"] == 0
    assert [s for i, s in enumerate(seen) if i == 0 or s != seen[i - 1]] == [
        "Proposed",
        "InProgress",
        None,
    ]
    current = node.agent.workers[pod["metadata"]["uid"]].apps[0].current
    assert current is not None
    resources = node.agent.runtime.resources_of(current)
    assert resources is not None and resources.cpu_shares == 1024
    node.run(informer.stop())


def test_a_deferred_resize_is_applied_when_another_pod_goes(node: Node) -> None:
    running_pod(node, "web", "1")
    running_pod(node, "other", "800m")
    resize(node, "web", {"requests": {"cpu": "1500m"}})
    pod = node.get_pod("web")
    assert pod["status"]["resize"] == "Deferred"
    assert app_status(pod)["allocatedResources"]["cpu"] == "1"
    node.run(node.client.delete(PODS, "default", "other"))
    node.settle(40)
    pod = node.get_pod("web")
    assert "resize" not in pod["status"]
    assert app_status(pod)["resources"]["requests"]["cpu"] == "1500m"


def test_a_resize_beyond_the_node_is_infeasible(node: Node) -> None:
    running_pod(node, "web", "500m")
    resize(node, "web", {"requests": {"cpu": "3"}})
    pod = node.get_pod("web")
    assert pod["status"]["resize"] == "Infeasible"
    assert app_status(pod)["resources"]["requests"]["cpu"] == "500m"
    # Asking for what it has again ends it.
    resize(node, "web", {"requests": {"cpu": "500m"}})
    assert "resize" not in node.get_pod("web")["status"]


def test_restart_container_policy_restarts_it(node: Node) -> None:
    policy = [{"resourceName": "memory", "restartPolicy": "RestartContainer"}]
    running_pod(node, "web", "500m", resizePolicy=policy)
    resize(node, "web", {"requests": {"memory": "256Mi"}, "limits": {"memory": "256Mi"}})
    node.settle(40)
    pod = node.get_pod("web")
    assert "resize" not in pod["status"]
    assert app_status(pod)["restartCount"] == 1
    assert app_status(pod)["resources"]["limits"] == {"memory": "256Mi"}
    assert app_status(pod)["state"].get("running")
