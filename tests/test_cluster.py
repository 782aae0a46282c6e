"""The one assembly of the cluster, on the virtual clock: what its options leave out stays out."""

from __future__ import annotations

from tests.client.conftest import EVENTS, PODS, pod
from tests.support import SimulatedCluster

from pinnace.cluster import ClusterOptions
from pinnace.kubelet import node_configs


def test_without_the_scheduler_a_pod_stays_pending_and_untouched() -> None:
    cluster = SimulatedCluster(ClusterOptions(nodes=node_configs(1), scheduler=False))
    try:
        created = cluster.run(cluster.client.create(PODS, "default", pod("idle")))
        cluster.wait(600)
        idle = cluster.run(cluster.client.get(PODS, "default", "idle"))
        assert idle["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
        assert "nodeName" not in idle["spec"]
        about_idle = "involvedObject.name=idle"
        listed = cluster.run(cluster.client.list(EVENTS, "default", field_selector=about_idle))
        assert listed["items"] == []
    finally:
        cluster.close()
