"""The DaemonSet controller against an in-process API server, scheduler and nodes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from tests.controllers.workloads import Workloads, template

from pinnace.apiserver.objects import Object
from pinnace.controllers.daemonset import DAEMON_SETS, NODES

NODE_1, NODE_2, NODE_3 = (f"pinnace-node-{i}" for i in (1, 2, 3))


def daemon_set(name: str = "agent", **spec: Any) -> Object:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": template(app=name),
            **spec,
        },
    }


@pytest.fixture
def cluster() -> Iterator[Workloads]:
    c = Workloads(nodes=3)
    yield c
    c.stop()


def create(cluster: Workloads, ds: Object) -> Object:
    created = cluster.run(cluster.client.create(DAEMON_SETS, "default", ds))
    cluster.settle()
    return created


def placed(cluster: Workloads, app: str = "agent") -> dict[str, str]:
    """Node -> phase of the live pods of `app`."""
    return {
        p["spec"].get("nodeName", ""): p["status"].get("phase", "")
        for p in cluster.pods(app=app)
        if not p["metadata"].get("deletionTimestamp")
    }


def patch_node(cluster: Workloads, name: str, patch: Object) -> None:
    cluster.run(cluster.client.patch(NODES, "", name, patch))
    cluster.settle()


def status(cluster: Workloads, name: str = "agent") -> Object:
    return cluster.get(DAEMON_SETS, name)["status"]


def test_one_pod_per_node_owned_pinned_and_labelled(cluster: Workloads):
    ds = create(cluster, daemon_set())
    assert placed(cluster) == {NODE_1: "Running", NODE_2: "Running", NODE_3: "Running"}
    for pod in cluster.pods(app="agent"):
        assert pod["metadata"]["name"].startswith("agent-")
        assert pod["metadata"]["ownerReferences"] == [
            {
                "apiVersion": "apps/v1",
                "kind": "DaemonSet",
                "name": "agent",
                "uid": ds["metadata"]["uid"],
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
        node = pod["spec"]["nodeName"]
        term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
        required = {"nodeSelectorTerms": [term]}
        assert pod["spec"]["affinity"] == {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}
        }
        labels = pod["metadata"]["labels"]
        assert labels["pod-template-generation"] == "1"
        assert set(labels) == {"app", "pod-template-generation", "controller-revision-hash"}
    assert status(cluster) == {
        "currentNumberScheduled": 3,
        "desiredNumberScheduled": 3,
        "numberMisscheduled": 0,
        "numberReady": 3,
        "numberAvailable": 3,
        "updatedNumberScheduled": 3,
        "observedGeneration": 1,
    }
