"""The scheduler's view of a pod resized in place (InPlacePodVerticalScaling on), on the
virtual clock: as v1.32's PodRequests with UseStatusResources, a pod counts the larger of its
spec and what its containers run with, and only the latter while its resize is Infeasible."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from tests.support import SimulatedCluster

from pinnace.api import catalog
from pinnace.api.features import FeatureGates
from pinnace.api.patch import PatchType
from pinnace.cluster import ClusterOptions
from pinnace.kubelet import node_configs

PODS = catalog.kind("", "pods")
CAPACITY = {"cpu": "2", "memory": "4Gi", "pods": "110", "ephemeral-storage": "20Gi"}


@pytest.fixture
def cluster() -> Iterator[SimulatedCluster]:
    options = ClusterOptions(
        nodes=node_configs(1, CAPACITY),
        features=FeatureGates(in_place_pod_vertical_scaling=True),
        seed=1,
    )
    c = SimulatedCluster(options)
    yield c
    c.close()


def create(cluster: SimulatedCluster, name: str, cpu: str) -> None:
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "containers": [
                {"name": "app", "image": "nginx", "resources": {"requests": {"cpu": cpu}}}
            ]
        },
    }
    cluster.run(cluster.client.create(PODS, "default", body))
    cluster.wait(5)


def get(cluster: SimulatedCluster, name: str) -> dict[str, Any]:
    pod: dict[str, Any] = cluster.run(cluster.client.get(PODS, "default", name))
    return pod


def resize(cluster: SimulatedCluster, name: str, cpu: str) -> None:
    patch = {"spec": {"containers": [{"name": "app", "resources": {"requests": {"cpu": cpu}}}]}}
    cluster.run(
        cluster.client.patch(
            PODS, "default", name, patch, PatchType.STRATEGIC_MERGE, subresource="resize"
        )
    )
    cluster.wait(5)


def test_the_scheduler_counts_what_a_resized_pod_runs_with(cluster: SimulatedCluster) -> None:
    create(cluster, "big", "1")
    resize(cluster, "big", "3")
    assert get(cluster, "big")["status"]["resize"] == "Infeasible"
    # The node still has 1 CPU free: the 3 the spec asks for are not held.
    create(cluster, "small", "800m")
    assert get(cluster, "small")["spec"].get("nodeName") == "pinnace-node-1"
    resize(cluster, "big", "1200m")
    big = get(cluster, "big")
    assert "resize" not in big["status"]
    assert big["status"]["containerStatuses"][0]["resources"]["requests"] == {"cpu": "1200m"}
    create(cluster, "more", "100m")
    assert "nodeName" not in get(cluster, "more")["spec"]
