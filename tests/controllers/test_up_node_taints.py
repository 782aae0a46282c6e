"""`pinnace up` runs the node lifecycle controller: kubectl cordon shows as a taint."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.http.conftest import Cluster, launch, stop
from tests.support import eventually

TAINTS = "jsonpath={.spec.taints[*].key}:{.spec.taints[*].effect}"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    running = launch(tmp_path_factory.mktemp("pinnace-up"), flags=("--nodes", "1"))
    yield running
    stop(running)


def taints_become(cluster: Cluster, wanted: str) -> None:
    def taints() -> str:
        found = cluster.ok("get", "node", "pinnace-node-1", "-o", TAINTS)
        assert found == wanted
        return found

    eventually(taints, timeout=10)


def test_cordon_taints_the_node_unschedulable_and_uncordon_lifts_it(cluster: Cluster) -> None:
    taints_become(cluster, ":")
    assert cluster.ok("cordon", "pinnace-node-1").strip() == "node/pinnace-node-1 cordoned"
    wanted = "node.kubernetes.io/unschedulable:NoSchedule"
    taints_become(cluster, wanted)
    described = cluster.ok("describe", "node", "pinnace-node-1")
    assert "Taints:             node.kubernetes.io/unschedulable:NoSchedule" in described
    assert cluster.ok("uncordon", "pinnace-node-1").strip() == "node/pinnace-node-1 uncordoned"
    taints_become(cluster, ":")
