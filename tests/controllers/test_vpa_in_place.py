"""The VPA updater's InPlaceOrRecreate mode (VPA 1.4's) with InPlacePodVerticalScaling on, on
the virtual clock: pods are resized in place, half the replicas at a time, without eviction;
a resize the node cannot take (Infeasible) falls back to eviction."""

from __future__ import annotations

from tests.controllers.test_vpa import RANGE, TARGET, UPDATER, Cluster, app

from pinnace.api.features import FeatureGates
from pinnace.cluster import ClusterOptions
from pinnace.kubelet import node_configs

IN_PLACE = {"updateMode": "InPlaceOrRecreate"}


class InPlaceCluster(Cluster):
    def __init__(self) -> None:
        nodes = node_configs(2, {"cpu": "16", "memory": "32Gi", "pods": "50"})
        options = ClusterOptions(
            nodes=nodes,
            seed=3,
            vertical_pod_autoscaler=UPDATER,
            features=FeatureGates(in_place_pod_vertical_scaling=True),
        )
        super(Cluster, self).__init__(options)


def test_in_place_or_recreate_resizes_running_pods_without_evicting_them() -> None:
    cluster = InPlaceCluster()
    try:
        cluster.deploy(replicas=2)
        names = sorted(p["metadata"]["name"] for p in cluster.pods())
        cluster.autoscale(RANGE, updatePolicy=IN_PLACE)
        cluster.wait(61)  # the first run: one of two replicas (eviction tolerance 0.5)
        assert len(cluster.events("InPlaceResizedByVPA")) == 1
        cluster.wait(60)
        resized = cluster.events("InPlaceResizedByVPA")
        assert {e["message"] for e in resized} == {"Pod was resized in place by VPA Updater."}
        assert len(resized) == 2
        pods = cluster.pods()
        assert sorted(p["metadata"]["name"] for p in pods) == names
        assert cluster.events("EvictedByVPA") == []
        for pod in pods:
            assert app(pod)["resources"] == {"requests": TARGET, "limits": {"cpu": "500m"}}
            status = pod["status"]["containerStatuses"][0]
            assert status["resources"]["requests"] == TARGET
            assert status["restartCount"] == 0
            assert pod["metadata"]["annotations"]["vpaInPlaceUpdated"] == "true"
    finally:
        cluster.close()


def test_an_infeasible_resize_falls_back_to_eviction() -> None:
    cluster = InPlaceCluster()
    try:
        cluster.deploy(replicas=1)
        huge = {"cpu": "20", "memory": "256Mi"}
        cluster.autoscale(
            {"target": huge, "lowerBound": huge, "upperBound": huge},
            updatePolicy={**IN_PLACE, "minReplicas": 1},
        )
        cluster.wait(61)
        [pod] = cluster.pods()
        assert pod["status"]["resize"] == "Infeasible"
        assert app(pod)["resources"]["requests"]["cpu"] == "20"
        assert cluster.events("EvictedByVPA") == []
        cluster.wait(60)
        assert len(cluster.events("EvictedByVPA")) == 1
    finally:
        cluster.close()


def test_without_the_gate_in_place_or_recreate_evicts() -> None:
    cluster = Cluster(UPDATER)
    try:
        cluster.deploy(replicas=2)
        cluster.autoscale(RANGE, updatePolicy=IN_PLACE)
        cluster.wait(61)
        assert len(cluster.events("EvictedByVPA")) == 1
        assert cluster.events("InPlaceResizedByVPA") == []
    finally:
        cluster.close()
