"""Deployments, ReplicaSets, StatefulSets and DaemonSets through `pinnace up` and kubectl (and
the `kubernetes` client), compared field by field with what a v1.32 cluster shows."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from tests.http.conftest import Cluster, launch, stop
from tests.support import eventually


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    running = launch(tmp_path_factory.mktemp("pinnace-workloads"), flags=("--nodes", "2"))
    yield running
    stop(running)


def status_of(cluster: Cluster, resource: str) -> dict:
    return json.loads(cluster.ok("get", resource, "-o", "jsonpath={.status}") or "{}")


def test_a_deployment_status_leaves_out_its_zero_counters(cluster: Cluster) -> None:
    """apps/v1 DeploymentStatus' counters are omitempty: a rolled-out Deployment has no
    unavailableReplicas, and one scaled to zero keeps only observedGeneration and conditions."""
    cluster.ok("create", "deployment", "zeros", "--image=nginx:1.27", "--replicas=2")
    cluster.ok("rollout", "status", "deployment/zeros", "--timeout=60s")
    status = status_of(cluster, "deployment/zeros")
    assert "unavailableReplicas" not in status
    assert status["availableReplicas"] == status["replicas"] == 2

    cluster.ok("scale", "deployment/zeros", "--replicas=0")

    def scaled_down() -> dict:
        status = status_of(cluster, "deployment/zeros")
        return status if status.get("observedGeneration") == 2 and "replicas" not in status else {}

    status = eventually(scaled_down)
    assert sorted(status) == ["conditions", "observedGeneration"]
