"""The Vertical Pod Autoscaler in a cluster on the virtual clock: its admission (recommended
requests at a pod's creation, limits in proportion, the policy's caps), its updater (eviction
outside the recommended range, min replicas, eviction tolerance, PodDisruptionBudgets) and its
recommender following the usage the simulated nodes report."""

from __future__ import annotations

from typing import Any

from tests.client.conftest import EVENTS
from tests.support import SimulatedCluster

from pinnace.api import catalog
from pinnace.api.objects import Object, clone
from pinnace.cluster import ClusterOptions
from pinnace.controllers.vpa import VPAOptions
from pinnace.controllers.vpa_model import RecommenderConfig
from pinnace.kubelet import node_configs
from pinnace.resources.lists import parse_quantity

PODS = catalog.kind("", "pods")
DEPLOYMENTS = catalog.kind("apps", "deployments")
PDBS = catalog.kind("policy", "poddisruptionbudgets")
VPAS = catalog.kind("autoscaling.k8s.io", "verticalpodautoscalers")
NEVER = 10.0**9
RESOURCES = {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"cpu": "200m"}}


class Cluster(SimulatedCluster):
    """Without the dashboard, whose usage history sampled the cluster every 10 s of these
    tests' hours; the cluster still keeps one for the VPA's prometheus storage."""

    def __init__(self, vpa: VPAOptions | None = None) -> None:
        nodes = node_configs(2, {"cpu": "16", "memory": "32Gi", "pods": "50"})
        options = ClusterOptions(nodes=nodes, seed=3, vertical_pod_autoscaler=vpa, dashboard=False)
        super().__init__(options)

    def deploy(
        self,
        name: str = "web",
        replicas: int = 1,
        annotations: dict[str, str] | None = None,
        resources: Object = RESOURCES,
    ) -> None:
        sidecar = {
            "name": "sidecar",
            "image": "busybox",
            "command": ["sleep", "infinity"],
            "resources": {},
        }
        app = {"name": "app", "image": "nginx", "resources": resources}
        template = {
            "metadata": {"labels": {"app": name}, "annotations": annotations or {}},
            "spec": {"containers": [app, sidecar]},
        }
        spec = {"replicas": replicas, "selector": {"matchLabels": {"app": name}}}
        body = {"metadata": {"name": name}, "spec": {**spec, "template": template}}
        self.run(self.client.create(DEPLOYMENTS, "default", body))
        self.wait(5)

    def autoscale(self, recommendation: dict[str, Any] | None = None, **spec: Any) -> None:
        target = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}
        body = {"metadata": {"name": "web"}, "spec": {"targetRef": target, **spec}}
        created = clone(self.run(self.client.create(VPAS, "default", body)))
        if recommendation is not None:
            entry = {"containerName": "app", **recommendation}
            created["status"] = {"recommendation": {"containerRecommendations": [entry]}}
            self.run(self.client.update_status(VPAS, created))

    def pods(self, app: str = "web") -> list[Object]:
        items = self.run(self.client.list(PODS, "default"))["items"]
        return [
            p
            for p in items
            if p["metadata"]["labels"].get("app") == app
            and not p["metadata"].get("deletionTimestamp")
        ]

    def vpa(self) -> Object:
        return self.run(self.client.get(VPAS, "default", "web"))

    def events(self, reason: str) -> list[Object]:
        items = self.run(self.client.list(EVENTS, "default"))["items"]
        return [e for e in items if e["reason"] == reason]

    def restart(self) -> None:
        """A new pod for each of the deployment's: the rollout admission sees."""
        for pod in self.pods():
            self.run(self.client.delete(PODS, "default", pod["metadata"]["name"]))
        self.wait(40)


TARGET = {"cpu": "250m", "memory": "256Mi"}
RANGE = {"target": TARGET, "lowerBound": TARGET, "upperBound": {"cpu": "1", "memory": "1Gi"}}


def app(pod: Object) -> Object:
    return pod["spec"]["containers"][0]


def test_new_pods_get_the_target_and_limits_in_proportion() -> None:
    cluster = Cluster()
    try:
        cluster.autoscale(RANGE)
        cluster.deploy()
        [pod] = cluster.pods()
        # cpu 100m -> 250m, so its limit 200m -> 500m; memory had no limit to keep
        assert app(pod)["resources"] == {
            "requests": {"cpu": "250m", "memory": "256Mi"},
            "limits": {"cpu": "500m"},
        }
        assert pod["spec"]["containers"][1]["resources"] == {}  # no recommendation for it
        assert pod["metadata"]["annotations"] == {
            "vpaObservedContainers": "app, sidecar",
            "vpaUpdates": "Pod resources updated by web: container 0: cpu request, "
            "memory request, cpu limit",
        }
        cluster.deploy("other")
        assert app(cluster.pods("other")[0])["resources"] == RESOURCES  # not the target's
    finally:
        cluster.close()


def test_the_container_policy_shapes_what_pods_get() -> None:
    cluster = Cluster()
    try:
        policy = {
            "containerName": "*",
            "controlledValues": "RequestsOnly",
            "controlledResources": ["cpu"],
            "maxAllowed": {"cpu": "200m"},
        }
        cluster.autoscale(RANGE, resourcePolicy={"containerPolicies": [policy]})
        cluster.deploy()
        assert app(cluster.pods()[0])["resources"] == {
            "requests": {"cpu": "200m", "memory": "64Mi"},
            "limits": {"cpu": "200m"},
        }
    finally:
        cluster.close()


def test_update_mode_off_and_scaling_mode_off_change_nothing() -> None:
    for spec in (
        {"updatePolicy": {"updateMode": "Off"}},
        {"resourcePolicy": {"containerPolicies": [{"containerName": "app", "mode": "Off"}]}},
    ):
        cluster = Cluster()
        try:
            cluster.autoscale(RANGE, **spec)
            cluster.deploy()
            [pod] = cluster.pods()
            assert app(pod)["resources"] == RESOURCES
            assert "vpaUpdates" not in (pod["metadata"].get("annotations") or {})
        finally:
            cluster.close()


UPDATER = VPAOptions(recommender_interval=NEVER, updater_interval=60.0)


def test_the_updater_evicts_pods_outside_the_range_half_the_replicas_at_a_time() -> None:
    cluster = Cluster(UPDATER)
    try:
        cluster.deploy(replicas=4)
        cluster.autoscale(RANGE)
        cluster.wait(61)  # past the updater's first run
        evicted = cluster.events("EvictedByVPA")
        assert len(evicted) == 2  # eviction tolerance 0.5 of 4 replicas
        assert {e["message"] for e in evicted} == {
            "Pod was evicted by VPA Updater to apply resource recommendation."
        }
        assert len(cluster.events("EvictedPod")) == 2
        cluster.wait(120)  # the replacements run with the target; the other two go next
        assert len(cluster.events("EvictedByVPA")) == 4
        assert (
            sorted(app(p)["resources"]["requests"]["cpu"] for p in cluster.pods()) == ["250m"] * 4
        )
        cluster.wait(300)  # within the range now: no more evictions
        assert len(cluster.events("EvictedByVPA")) == 4
    finally:
        cluster.close()


def test_the_updater_leaves_a_single_replica_unless_min_replicas_allows_it() -> None:
    cluster = Cluster(UPDATER)
    try:
        cluster.deploy(replicas=1)
        cluster.autoscale(RANGE)
        cluster.wait(300)
        assert cluster.events("EvictedByVPA") == []
        updated = cluster.vpa()
        updated["spec"]["updatePolicy"] = {"minReplicas": 1}
        cluster.run(cluster.client.update(VPAS, updated))
        cluster.wait(61)
        assert len(cluster.events("EvictedByVPA")) == 1
    finally:
        cluster.close()


def test_the_updater_respects_disruption_budgets_and_the_initial_mode() -> None:
    cluster = Cluster(UPDATER)
    try:
        cluster.deploy(replicas=2)
        pdb = {
            "metadata": {"name": "web"},
            "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"app": "web"}}},
        }
        cluster.run(cluster.client.create(PDBS, "default", pdb))
        cluster.autoscale(RANGE)
        cluster.wait(300)
        assert cluster.events("EvictedByVPA") == []
        assert [app(p)["resources"] for p in cluster.pods()] == [RESOURCES] * 2
    finally:
        cluster.close()
    cluster = Cluster(UPDATER)
    try:
        cluster.deploy(replicas=2)
        cluster.autoscale(RANGE, updatePolicy={"updateMode": "Initial"})
        cluster.wait(300)
        assert cluster.events("EvictedByVPA") == []
        cluster.restart()  # Initial: pods created now get the recommendation
        assert [app(p)["resources"]["requests"] for p in cluster.pods()] == [TARGET] * 2
    finally:
        cluster.close()


def test_the_recommendation_follows_the_usage() -> None:
    recommending = VPAOptions(
        recommender_interval=60.0,
        updater_interval=NEVER,
        recommendation=RecommenderConfig(confidence_interval_cpu=3600.0),
    )
    cluster = Cluster(recommending)
    try:
        cluster.deploy(
            replicas=2,
            annotations={
                "sim.pinnace.dev/cpu.app": "ramp 100m 900m 1200s",
                "sim.pinnace.dev/memory.app": "300Mi",
            },
            resources={"requests": {"cpu": "100m"}},  # no limit to hold the usage down
        )
        cluster.autoscale(updatePolicy={"updateMode": "Off"})
        targets = []
        for _ in range(4):
            cluster.wait(600)
            entries = cluster.vpa()["status"]["recommendation"]["containerRecommendations"]
            assert [e["containerName"] for e in entries] == ["app", "sidecar"]
            entry = entries[0]
            targets.append(entry["target"]["cpu"])
            assert set(entry) == {
                "containerName",
                "target",
                "lowerBound",
                "upperBound",
                "uncappedTarget",
            }
        millis = [int(t.removesuffix("m")) for t in targets]
        assert millis == sorted(millis) and millis[0] < 900 < millis[-1], millis
        # the sidecar uses nothing: each container gets half the pod's minimum, 25m
        assert entries[1]["target"] == {"cpu": "12m", "memory": "125Mi"}
        conditions = cluster.vpa()["status"]["conditions"]
        assert [(c["type"], c["status"]) for c in conditions] == [
            ("RecommendationProvided", "True")
        ]
    finally:
        cluster.close()


def test_eviction_requirements_pick_the_direction_of_change() -> None:
    for change, evicted in (("TargetLowerThanRequests", 0), ("TargetHigherThanRequests", 1)):
        cluster = Cluster(UPDATER)
        try:
            cluster.deploy(replicas=2)
            requirement = {"resources": ["cpu", "memory"], "changeRequirement": change}
            cluster.autoscale(RANGE, updatePolicy={"evictionRequirements": [requirement]})
            cluster.wait(61)  # the first run: the targets are above the requests
            assert len(cluster.events("EvictedByVPA")) == evicted, change
        finally:
            cluster.close()


def test_the_eviction_rate_limit_spaces_evictions() -> None:
    limited = VPAOptions(
        recommender_interval=NEVER,
        updater_interval=60.0,
        eviction_rate_limit=1 / 30,  # a pod every 30 s, a burst of one
        eviction_tolerance=1.0,
    )
    cluster = Cluster(limited)
    try:
        cluster.deploy(replicas=3)
        cluster.autoscale(RANGE)
        cluster.wait(61)  # the first run evicts one at once, then waits for a token
        assert len(cluster.events("EvictedByVPA")) == 1
        cluster.wait(30)
        assert len(cluster.events("EvictedByVPA")) == 2
    finally:
        cluster.close()


def test_a_pod_within_the_range_goes_once_it_has_lived_twelve_hours() -> None:
    cluster = Cluster(UPDATER)
    try:
        cluster.deploy(replicas=2)
        # the requests (100m, 64Mi) lie within the range, the target 50 % above them
        within = {
            "target": {"cpu": "150m", "memory": "96Mi"},
            "lowerBound": {"cpu": "50m", "memory": "32Mi"},
            "upperBound": {"cpu": "1", "memory": "1Gi"},
        }
        cluster.autoscale(within)
        cluster.wait(12 * 3600 - 120)
        assert cluster.events("EvictedByVPA") == []
        cluster.wait(600)  # past the pods' twelfth hour
        assert len(cluster.events("EvictedByVPA")) == 2
        assert [app(p)["resources"]["requests"] for p in cluster.pods()] == [within["target"]] * 2
    finally:
        cluster.close()


def _first_recommendation_after_an_hour(storage: str, sidecar: bool = False) -> dict[str, Object]:
    """A Deployment whose container `app` is busy from its 10th to its 30th minute (and, with
    `sidecar`, a second container using a steady 20m CPU and 50Mi), then a VPA created at its
    60th: its recommendation one recommender interval later, by container."""
    options = VPAOptions(updater_interval=NEVER, storage=storage, history_resolution=60.0)
    cluster = Cluster(options)
    try:
        annotations = {
            "sim.pinnace.dev/cpu.app": "spike 100m 900m at 10m for 20m",
            "sim.pinnace.dev/memory.app": "spike 100Mi 600Mi at 10m for 20m",
        }
        containers = [{"name": "app", "image": "nginx"}]
        if sidecar:
            annotations |= {"sim.pinnace.dev/cpu.log": "20m", "sim.pinnace.dev/memory.log": "50Mi"}
            containers.append({"name": "log", "image": "nginx"})
        template = {
            "metadata": {"labels": {"app": "web"}, "annotations": annotations},
            "spec": {"containers": containers},
        }
        spec = {"replicas": 1, "selector": {"matchLabels": {"app": "web"}}, "template": template}
        body = {"metadata": {"name": "web"}, "spec": spec}
        cluster.run(cluster.client.create(DEPLOYMENTS, "default", body))
        cluster.wait(3600)
        cluster.autoscale(updatePolicy={"updateMode": "Off"})
        cluster.wait(60)
        entries = cluster.vpa()["status"]["recommendation"]["containerRecommendations"]
        return {e["containerName"]: e for e in entries}
    finally:
        cluster.close()


def _target(entry: Object) -> tuple[int, int]:
    """The target's CPU (millicores) and memory (bytes)."""
    target = entry["target"]
    return parse_quantity(target["cpu"]).milli_value(), parse_quantity(target["memory"]).value()


def test_the_prometheus_storage_recommends_at_once_from_the_usage_history() -> None:
    """--storage=prometheus: the first recommendation of a VPA created after its workload ran
    an hour reflects that hour's usage, read from the cluster's history; the checkpoint
    storage's has only the one sample the recommender took."""
    (checkpoint,) = _first_recommendation_after_an_hour("checkpoint").values()
    (prometheus,) = _first_recommendation_after_an_hour("prometheus").values()
    cpu = {"checkpoint": _target(checkpoint)[0], "prometheus": _target(prometheus)[0]}
    memory = {"checkpoint": _target(checkpoint)[1], "prometheus": _target(prometheus)[1]}
    assert cpu["checkpoint"] < 200 and cpu["prometheus"] > 900, cpu
    assert memory["checkpoint"] < 300 * 2**20 < 600 * 2**20 < memory["prometheus"], memory


def test_the_prometheus_storage_reads_each_containers_own_history() -> None:
    """A pod of two containers using very different CPU: each container's first
    recommendation comes from its own past hour, as upstream's per-container queries give."""
    found = _first_recommendation_after_an_hour("prometheus", sidecar=True)
    assert set(found) == {"app", "log"}
    (app_cpu, app_memory), (log_cpu, log_memory) = _target(found["app"]), _target(found["log"])
    assert app_cpu > 900 and app_memory > 600 * 2**20, found["app"]  # its busy 20 minutes
    assert log_cpu < 100, found["log"]  # steady and small: 20m, and its memory the least a
    assert log_memory <= 125 * 2**20, found["log"]  # pod gets (250Mi) shared by two containers
