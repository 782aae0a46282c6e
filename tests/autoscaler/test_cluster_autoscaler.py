"""The cluster autoscaler on the virtual clock, run past every timer: bursts of pods add nodes
from the pool the expander chooses, after the provisioning delay; the nodes go again once
unneeded for 10 minutes; the blocking rules each keep a node; minSize and maxSize hold; the
same seed makes the same choices. Behaviour as kubernetes/autoscaler's cluster-autoscaler
(core/static_autoscaler.go, core/scaleup, core/scaledown, expander/*)."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import pairwise
from typing import Any

import pytest
import yaml
from tests.metrics.test_apiserver_metrics import call, samples, value
from tests.support import SimulatedCluster

from pinnace.api import catalog
from pinnace.autoscaler.options import AutoscalerOptions
from pinnace.cluster import ClusterOptions
from pinnace.kubelet.cluster_config import node_configs, parse

DEPLOYMENTS = catalog.kind("apps", "deployments")
DAEMON_SETS = catalog.kind("apps", "daemonsets")
NODES = catalog.kind("", "nodes")
PODS = catalog.kind("", "pods")
EVENTS = catalog.kind("", "events")
CONFIG_MAPS = catalog.kind("", "configmaps")
PDBS = catalog.kind("policy", "poddisruptionbudgets")
PRIORITY_CLASSES = catalog.kind("scheduling.k8s.io", "priorityclasses")

TWO_POOLS = """
apiVersion: pinnace.dev/v1alpha1
kind: Cluster
nodePools:
- {name: small, count: 1, capacity: {cpu: "2", memory: 4Gi}, minSize: 1, maxSize: 5, cost: 1}
- {name: large, count: 0, capacity: {cpu: "8", memory: 32Gi}, maxSize: 3, cost: 3}
"""


def start(pools_yaml: str, seed: int = 1, **options: Any) -> SimulatedCluster:
    pools = parse(pools_yaml)
    autoscaler = AutoscalerOptions(node_pools=pools, **options)
    return SimulatedCluster(
        ClusterOptions(nodes=node_configs(pools), cluster_autoscaler=autoscaler, seed=seed)
    )


@pytest.fixture
def clusters() -> Iterator[list[SimulatedCluster]]:
    started: list[SimulatedCluster] = []
    yield started
    for cluster in started:
        cluster.close()


def deployment(name: str, replicas: int, cpu: str, memory: str) -> dict[str, Any]:
    labels = {"app": name}
    requests = {"cpu": cpu, "memory": memory}
    container = {"name": "app", "image": "nginx", "resources": {"requests": requests}}
    template = {"metadata": {"labels": labels}, "spec": {"containers": [container]}}
    return {
        "metadata": {"name": name},
        "spec": {"replicas": replicas, "selector": {"matchLabels": labels}, "template": template},
    }


def node_names(cluster: SimulatedCluster) -> list[str]:
    return sorted(n["metadata"]["name"] for n in cluster.run(cluster.client.list(NODES))["items"])


SETTING = "Scale-up: setting group"
"""ScaledUpGroup as the group's size is set ("… group X size set to" once it is)."""
SOFT_TAINTED = {
    "tolerations": [{"key": "DeletionCandidateOfClusterAutoscaler", "operator": "Exists"}]
}
"""A pod spec's toleration of the soft taint an unneeded node gets, so that the scheduler does
not prefer other nodes to it."""
REMOVING = "Scale-down: removing"
"""ScaleDownEmpty and ScaleDown as a removal starts ("… removed" once the node is gone)."""


def events(cluster: SimulatedCluster, reason: str, prefix: str = "") -> list[dict[str, Any]]:
    """The cluster autoscaler's events of that reason whose message starts with `prefix`."""
    items = cluster.run(cluster.client.list(EVENTS, ""))["items"]
    return [
        e
        for e in items
        if e["reason"] == reason
        and (e.get("source") or {}).get("component") == "cluster-autoscaler"
        and e["message"].startswith(prefix)
    ]


def messages(cluster: SimulatedCluster, reason: str, prefix: str = "") -> list[str]:
    return sorted(e["message"] for e in events(cluster, reason, prefix))


def running(cluster: SimulatedCluster, app: str) -> int:
    pods = cluster.run(cluster.client.list(PODS, "default"))["items"]
    return sum(
        1
        for p in pods
        if (p["metadata"].get("labels") or {}).get("app") == app
        and (p.get("status") or {}).get("phase") == "Running"
    )


def metrics(cluster: SimulatedCluster) -> dict[Any, float]:
    """What `pinnace up` serves at /metrics/cluster-autoscaler."""
    code, text = cluster.run(call(cluster.plane.http_app(), "GET", "/metrics/cluster-autoscaler"))
    assert code == 200
    return samples(text)


def status(cluster: SimulatedCluster) -> dict[str, Any]:
    cm = cluster.run(cluster.client.get(CONFIG_MAPS, "kube-system", "cluster-autoscaler-status"))
    assert "cluster-autoscaler.kubernetes.io/last-updated" in cm["metadata"]["annotations"]
    return yaml.safe_load(cm["data"]["status"])


def test_a_burst_grows_the_least_wasteful_pool_and_it_shrinks_ten_minutes_after(
    clusters: list[SimulatedCluster],
) -> None:
    cluster = start(TWO_POOLS, expander="least-waste", provisioning_delay=60)
    clusters.append(cluster)
    cluster.run(cluster.client.create(DEPLOYMENTS, "default", deployment("web", 6, "900m", "1Gi")))
    cluster.wait(30)  # the first loops see the pods Unschedulable and ask for nodes
    assert node_names(cluster) == ["small-1"]  # still provisioning
    triggered = events(cluster, "TriggeredScaleUp")
    # 4 pods left over need 2 small nodes (waste 0.1 cpu + 0.5 memory) or 1 large one (0.55 +
    # 0.875): least-waste takes the small pool.
    assert {e["message"] for e in triggered} == {"pod triggered scale-up: [{small 1->3 (max: 5)}]"}
    assert len(triggered) == 4
    assert status(cluster)["clusterWide"]["scaleUp"]["status"] == "InProgress"
    (scaled,) = events(cluster, "ScaledUpGroup", SETTING)
    assert scaled["involvedObject"]["name"] == "cluster-autoscaler-status"
    assert scaled["message"] == "Scale-up: setting group small size to 3 instead of 1 (max: 5)"
    assert messages(cluster, "ScaledUpGroup", "Scale-up: group") == [
        "Scale-up: group small size set to 3 instead of 1 (max: 5)"
    ]
    cluster.wait(60)
    assert node_names(cluster) == ["small-1", "small-2", "small-3"]
    cluster.wait(30)
    assert running(cluster, "web") == 6
    assert not events(cluster, "NotTriggerScaleUp")

    # The burst ends: the new nodes are unneeded, and go 10 minutes later, not before.
    cluster.wait(600)
    cluster.run(cluster.client.update_scale(DEPLOYMENTS, "default", "web", 1))
    ended = cluster.clock.now()
    cluster.wait(60)
    assert status(cluster)["clusterWide"]["scaleDown"]["status"] == "CandidatesPresent"
    cluster.wait(500)
    assert len(node_names(cluster)) == 3
    cluster.wait(120)
    # minSize 1 keeps one: the node of the pod the ReplicaSet kept (pod names are random)
    assert len(node_names(cluster)) == 1
    removed = events(cluster, "ScaleDownEmpty", REMOVING)
    assert len(removed) == 2
    assert all(e["message"].startswith('Scale-down: removing empty node "small-') for e in removed)
    assert min(_time(e) for e in removed) >= ended + 600
    gone = sorted(e["message"].split('"')[1] for e in removed)
    assert messages(cluster, "ScaleDownEmpty", "Scale-down: empty node") == [
        f"Scale-down: empty node {node} removed" for node in gone
    ]
    cluster.wait(1200)
    assert len(node_names(cluster)) == 1
    found = metrics(cluster)
    assert value(found, "cluster_autoscaler_scaled_up_nodes_total") == 2
    assert value(found, "cluster_autoscaler_scaled_down_nodes_total", reason="empty") == 2
    assert value(found, "cluster_autoscaler_nodes_count", state="ready") == 1
    assert value(found, "cluster_autoscaler_node_groups_count", node_group_type="autoscaled") == 2
    assert value(found, "cluster_autoscaler_cluster_safe_to_autoscale") == 1
    group = next(g for g in status(cluster)["nodeGroups"] if g["name"] == "small")
    assert group["health"]["cloudProviderTarget"] == 1
    assert (group["health"]["minSize"], group["health"]["maxSize"]) == (1, 5)


def test_most_pods_and_priority_choose_other_pools(clusters: list[SimulatedCluster]) -> None:
    pools = """
apiVersion: pinnace.dev/v1alpha1
kind: Cluster
nodePools:
- {name: base, count: 1, capacity: {cpu: "1", memory: 1Gi}}
- {name: small, count: 0, capacity: {cpu: "2", memory: 4Gi}, maxSize: 1}
- {name: large, count: 0, capacity: {cpu: "8", memory: 32Gi}, maxSize: 1}
"""
    most = start(pools, expander="most-pods")
    clusters.append(most)
    most.run(most.client.create(DEPLOYMENTS, "default", deployment("web", 4, "900m", "1Gi")))
    most.wait(120)
    assert node_names(most) == ["base-1", "large-1"]  # 4 pods on it, 2 on a small one

    priority = start(pools, expander="priority")
    clusters.append(priority)
    priorities = {"10": ["^sm.*"], "50": ["nothing"]}
    body = {
        "metadata": {"name": "cluster-autoscaler-priority-expander", "namespace": "kube-system"},
        "data": {"priorities": "\n".join(f"{k}:\n  - {v[0]}" for k, v in priorities.items())},
    }
    priority.run(priority.client.create(CONFIG_MAPS, "kube-system", body))
    # 2 pods fit on either pool: the priority decides
    priority.run(
        priority.client.create(DEPLOYMENTS, "default", deployment("web", 2, "900m", "1Gi"))
    )
    priority.wait(120)
    assert node_names(priority) == ["base-1", "small-1"]
    warnings = events(priority, "PriorityConfigMapNotMatchedGroup")
    assert warnings and warnings[0]["message"] == (
        "Priority expander: node group large not found in priority expander configuration. "
        "The group won't be used."
    )


def test_max_size_caps_the_growth_and_the_rest_is_told_why(
    clusters: list[SimulatedCluster],
) -> None:
    pools = """
apiVersion: pinnace.dev/v1alpha1
kind: Cluster
nodePools:
- {name: work, count: 1, capacity: {cpu: "2", memory: 4Gi}, maxSize: 2}
- {name: gpu, count: 0, capacity: {cpu: "2", memory: 4Gi}, maxSize: 2,
   taints: [{key: gpu, effect: NoSchedule}]}
"""
    cluster = start(pools, provisioning_delay=30)
    clusters.append(cluster)
    cluster.run(cluster.client.create(DEPLOYMENTS, "default", deployment("web", 8, "900m", "1Gi")))
    cluster.wait(300)
    assert node_names(cluster) == ["work-1", "work-2"]
    assert running(cluster, "web") == 4
    told = {e["message"] for e in events(cluster, "NotTriggerScaleUp")}
    assert told == {
        "pod didn't trigger scale-up: 1 max node group size reached, "
        "1 node(s) had untolerated taint {gpu: }"
    }


def test_blocking_rules_each_keep_a_node(clusters: list[SimulatedCluster]) -> None:
    pools = """
apiVersion: pinnace.dev/v1alpha1
kind: Cluster
nodePools:
- {name: work, count: 9, capacity: {cpu: "4", memory: 8Gi}, maxSize: 9}
"""
    cluster = start(pools, scale_down_unneeded_time=120)
    clusters.append(cluster)
    client = cluster.client
    budget = {
        "metadata": {"name": "tight"},
        "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"app": "budgeted"}}},
    }
    cluster.run(client.create(PDBS, "default", budget))
    _label(
        cluster,
        "work-6",
        annotations={"cluster-autoscaler.kubernetes.io/scale-down-disabled": "true"},
    )
    for name in ("work-7", "work-8"):
        _label(cluster, name, labels={"spare": "yes"})
    bare = _pod("bare", "default", {})
    bare["spec"]["nodeName"] = "work-1"
    cluster.run(client.create(PODS, "default", bare))
    unsafe = {"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"}
    pinned = [
        ("default", _pinned("unsafe", "work-2", annotations=unsafe)),
        ("kube-system", _pinned("system", "work-3")),
        ("default", _pinned("scratch", "work-4", volumes=[{"name": "tmp", "emptyDir": {}}])),
        ("default", _pinned("budgeted", "work-5")),
        ("default", _pinned("full", "work-7", cpu="3")),  # 75 %: not underutilised
    ]
    for namespace, body in pinned:
        cluster.run(client.create(DEPLOYMENTS, namespace, body))
    cluster.wait(30)
    # both tolerate the soft taint the empty work-8 has, so they go to the emptier node
    movable = deployment("movable", 1, "500m", "256Mi")
    movable["spec"]["template"]["spec"] |= {"nodeSelector": {"spare": "yes"}, **SOFT_TAINTED}
    cluster.run(client.create(DEPLOYMENTS, "default", movable))
    # local storage, but safe to evict: it moves
    scratch = deployment("scratch-ok", 1, "100m", "128Mi")
    template = scratch["spec"]["template"]
    template["metadata"]["annotations"] = {"cluster-autoscaler.kubernetes.io/safe-to-evict": "true"}
    template["spec"] |= {
        "nodeSelector": {"spare": "yes"},
        "volumes": [{"name": "tmp", "emptyDir": {}}],
        **SOFT_TAINTED,
    }
    cluster.run(client.create(DEPLOYMENTS, "default", scratch))
    cluster.wait(30)
    assert _node_of(cluster, "movable") == "work-8"  # the emptier of the two
    assert _node_of(cluster, "scratch-ok") == "work-8"
    cluster.wait(900)
    # work-9 was empty, work-8's pod could move to work-7: both gone; the others held.
    assert node_names(cluster) == [f"work-{i}" for i in range(1, 8)]
    autoscaler = cluster.plane.cluster_autoscaler
    assert autoscaler is not None
    assert autoscaler.planner.unremovable == {  # cluster-autoscaler's UnremovableReasons
        "work-1": "NotReplicated",
        "work-2": "NotSafeToEvictAnnotation",
        "work-3": "UnmovableKubeSystemPod",
        "work-4": "LocalStorageRequested",
        "work-5": "NotEnoughPdb",
        "work-6": "ScaleDownDisabledAnnotation",
        "work-7": "NotUnderutilized",
    }
    assert _node_of(cluster, "movable") == _node_of(cluster, "scratch-ok") == "work-7"
    assert running(cluster, "movable") == running(cluster, "scratch-ok") == 1
    evicted = [e for e in events(cluster, "ScaleDown") if e["involvedObject"]["kind"] == "Pod"]
    assert sorted(e["involvedObject"]["name"].rsplit("-", 2)[0] for e in evicted) == [
        "movable",
        "scratch-ok",
    ]
    assert {e["message"] for e in evicted} == {"deleting pod for node scale down"}
    drained = [
        e
        for e in events(cluster, "ScaleDown", REMOVING)
        if e["involvedObject"]["kind"] == "ConfigMap"
    ]
    assert [e["message"].split(",")[0] for e in drained] == ["Scale-down: removing node work-8"]
    moved = sorted(f"default/{e['involvedObject']['name']}" for e in evicted)
    assert sorted(drained[0]["message"].split("pods to reschedule: ")[1].split(",")) == moved
    assert messages(cluster, "ScaleDown", "Scale-down: node") == [
        "Scale-down: node work-8 removed with drain"
    ]
    (empty,) = events(cluster, "ScaleDownEmpty", REMOVING)
    assert empty["message"] == 'Scale-down: removing empty node "work-9"'
    assert messages(cluster, "ScaleDownEmpty", "Scale-down: empty") == [
        "Scale-down: empty node work-9 removed"
    ]
    found = metrics(cluster)
    unremovable = "cluster_autoscaler_unremovable_nodes_count"
    assert value(found, unremovable, reason="NotReplicated") == 1
    assert value(found, unremovable, reason="NotUnderutilized") == 1
    assert value(found, "cluster_autoscaler_evicted_pods_total", eviction_result="succeeded") == 2
    down = "cluster_autoscaler_scaled_down_nodes_total"
    assert value(found, down, reason="underutilized") == value(found, down, reason="empty") == 1


def test_no_scale_down_for_ten_minutes_after_a_scale_up(clusters: list[SimulatedCluster]) -> None:
    cluster = start(TWO_POOLS, expander="least-waste", scale_down_unneeded_time=60)
    clusters.append(cluster)
    cluster.run(cluster.client.create(DEPLOYMENTS, "default", deployment("web", 6, "900m", "1Gi")))
    cluster.wait(90)
    (scaled,) = events(cluster, "ScaledUpGroup", SETTING)
    cluster.run(cluster.client.update_scale(DEPLOYMENTS, "default", "web", 1))
    cluster.wait(400)  # unneeded for more than a minute, but --scale-down-delay-after-add holds
    assert len(node_names(cluster)) == 3
    cluster.wait(300)
    assert node_names(cluster) == ["small-1"]
    removed = events(cluster, "ScaleDownEmpty")
    assert min(_time(e) for e in removed) >= _time(scaled) + 600


def test_an_unneeded_node_gets_the_soft_taint_until_it_is_needed_again(
    clusters: list[SimulatedCluster],
) -> None:
    pools = """
apiVersion: pinnace.dev/v1alpha1
kind: Cluster
nodePools:
- {name: work, count: 2, capacity: {cpu: "2", memory: 4Gi}, maxSize: 3}
"""
    cluster = start(pools)
    clusters.append(cluster)
    cluster.run(cluster.client.create(DEPLOYMENTS, "default", _pinned("busy", "work-1", "1500m")))
    cluster.wait(25)
    # work-1 is used past the threshold; work-2, empty, is unneeded: new pods should go
    # elsewhere (cluster-autoscaler's UpdateSoftDeletionTaints)
    assert _soft_taints(cluster) == {"work-2": "PreferNoSchedule"}
    (taint,) = [t for t in _node(cluster, "work-2")["spec"]["taints"]]
    assert cluster.clock.now() - 25 <= int(taint["value"]) <= cluster.clock.now()
    cluster.run(cluster.client.create(DEPLOYMENTS, "default", _pinned("more", "work-2", "1500m")))
    cluster.wait(25)
    assert _soft_taints(cluster) == {}
    assert node_names(cluster) == ["work-1", "work-2"]


def test_no_soft_taint_while_scale_down_is_in_cooldown(clusters: list[SimulatedCluster]) -> None:
    cluster = start(TWO_POOLS, expander="least-waste", scale_down_unneeded_time=60)
    clusters.append(cluster)
    cluster.run(cluster.client.create(DEPLOYMENTS, "default", deployment("web", 6, "900m", "1Gi")))
    cluster.wait(90)
    cluster.run(cluster.client.update_scale(DEPLOYMENTS, "default", "web", 1))
    cluster.wait(400)  # two nodes unneeded, but --scale-down-delay-after-add holds
    assert len(node_names(cluster)) == 3
    # (small-1 may keep the one it got, empty, in the loop before the pods came)
    assert not set(_soft_taints(cluster)) & {"small-2", "small-3"}


def test_a_node_not_ready_goes_after_the_unready_time(clusters: list[SimulatedCluster]) -> None:
    pools = """
apiVersion: pinnace.dev/v1alpha1
kind: Cluster
nodePools:
- {name: work, count: 2, capacity: {cpu: "2", memory: 4Gi}, maxSize: 2}
"""
    cluster = start(pools)
    clusters.append(cluster)
    cluster.run(cluster.plane.nodes.fail_node("work-2"))
    cluster.wait(700)  # both empty since the start: the Ready one goes after 10 minutes
    assert node_names(cluster) == ["work-2"]
    cluster.wait(400)
    assert node_names(cluster) == ["work-2"]
    cluster.wait(200)  # the other after 20 (--scale-down-unready-time)
    assert node_names(cluster) == []


def test_daemon_set_pods_take_room_on_the_new_nodes(clusters: list[SimulatedCluster]) -> None:
    pools = """
apiVersion: pinnace.dev/v1alpha1
kind: Cluster
nodePools:
- {name: work, count: 1, capacity: {cpu: "2", memory: 4Gi}, maxSize: 10}
"""
    cluster = start(pools, provisioning_delay=30)
    clusters.append(cluster)
    agent = deployment("agent", 1, "500m", "64Mi")
    agent["spec"].pop("replicas")
    cluster.run(cluster.client.create(DAEMON_SETS, "default", agent))
    cluster.wait(10)
    cluster.run(cluster.client.create(DEPLOYMENTS, "default", deployment("web", 6, "900m", "1Gi")))
    cluster.wait(30)
    # 500m for the agent and 900m each: one web pod a node, not two
    (scaled,) = events(cluster, "ScaledUpGroup", SETTING)
    assert scaled["message"] == "Scale-up: setting group work size to 6 instead of 1 (max: 10)"
    cluster.wait(90)
    assert running(cluster, "web") == 6
    assert running(cluster, "agent") == 6


def test_a_node_the_pool_cannot_remove_is_untainted_again(
    clusters: list[SimulatedCluster],
) -> None:
    pools = """
apiVersion: pinnace.dev/v1alpha1
kind: Cluster
nodePools:
- {name: work, count: 1, capacity: {cpu: "2", memory: 4Gi}, maxSize: 3}
"""
    cluster = start(pools)
    clusters.append(cluster)
    # A Node of the pool's label that no simulated kubelet runs: the pool cannot delete it.
    stray = {"metadata": {"name": "work-9", "labels": {"pinnace.dev/node-pool": "work"}}}
    cluster.run(cluster.client.create(NODES, "", stray))
    cluster.wait(1300)  # work-1, empty, goes after 10 minutes; work-9, not Ready, after 20
    (failed,) = events(cluster, "ScaleDownFailed")
    assert failed["involvedObject"]["name"] == "work-9"
    assert failed["message"].startswith("failed to delete empty node: ")
    node = cluster.run(cluster.client.get(NODES, "", "work-9"))
    taints = [t["key"] for t in node["spec"].get("taints") or []]
    assert "ToBeDeletedByClusterAutoscaler" not in taints
    assert node_names(cluster) == ["work-9"]


def test_removals_are_spaced_by_the_delay_after_delete(clusters: list[SimulatedCluster]) -> None:
    pools = """
apiVersion: pinnace.dev/v1alpha1
kind: Cluster
nodePools:
- {name: work, count: 3, capacity: {cpu: "2", memory: 4Gi}, maxSize: 3}
"""
    cluster = start(pools, max_empty_bulk_delete=1, scale_down_delay_after_delete=120)
    clusters.append(cluster)
    cluster.wait(700)  # all three unneeded since the start: one goes at 10 minutes
    assert len(node_names(cluster)) == 2
    cluster.wait(120)
    assert len(node_names(cluster)) == 1
    cluster.wait(130)
    assert node_names(cluster) == []
    times = sorted(_time(e) for e in events(cluster, "ScaleDownEmpty", REMOVING))
    assert len(times) == 3
    assert all(120 <= b - a <= 130 for a, b in pairwise(times))


def test_a_pod_that_will_not_leave_fails_the_drain_and_delays_scale_down(
    clusters: list[SimulatedCluster],
) -> None:
    pools = """
apiVersion: pinnace.dev/v1alpha1
kind: Cluster
nodePools:
- {name: work, count: 2, capacity: {cpu: "2", memory: 4Gi}, maxSize: 2}
- {name: spare, count: 1, capacity: {cpu: "2", memory: 4Gi}}
"""
    # work-2 is looked at again each loop once its pinned pod goes
    cluster = start(pools, unremovable_node_recheck_timeout=10)
    clusters.append(cluster)
    client = cluster.client
    stuck = _on_work_1_or_spare("stuck")
    cluster.run(client.create(DEPLOYMENTS, "default", stuck))
    cluster.run(client.create(DEPLOYMENTS, "default", _pinned("temp", "work-2")))
    cluster.wait(30)
    assert _node_of(cluster, "stuck") == "work-1"
    (pod,) = [p for p in _pods(cluster) if p["metadata"]["labels"]["app"] == "stuck"]

    def hold(body: dict[str, Any]) -> dict[str, Any]:
        body["metadata"]["finalizers"] = ["example.com/hold"]
        return body

    cluster.run(client.modify(PODS, "default", pod["metadata"]["name"], hold))
    cluster.wait(600)  # work-1 unneeded for 10 minutes: its drain starts
    (drain,) = [
        e for e in events(cluster, "ScaleDown") if e["involvedObject"]["kind"] == "ConfigMap"
    ]
    # utilization.Info as %v prints it: cpu, memory, gpu, the larger's name, its share
    assert drain["message"].startswith(
        "Scale-down: removing node work-1, utilization: {0.05 0.03203203203203203 0 cpu 0.05}, "
    )
    started = _time(drain)
    cluster.wait(60)
    cluster.run(client.delete(DEPLOYMENTS, "default", "temp"))  # work-2 empty from now on
    cluster.wait(started + 600 - cluster.clock.now())
    assert "work-1" in node_names(cluster)  # the pod is still there, the deadline is not
    assert not events(cluster, "ScaleDownFailed")
    # --max-graceful-termination-sec 600 and 30 s of headroom: the drain fails
    cluster.wait(50)
    failed = [
        e for e in events(cluster, "ScaleDownFailed") if e["involvedObject"]["kind"] == "Node"
    ]
    assert [(e["involvedObject"]["name"], e["message"]) for e in failed] == [
        ("work-1", "failed to drain and delete node: "
                   "Failed to drain node /work-1: pods remaining after timeout")
    ]  # fmt: skip
    assert failed[0]["type"] == "Warning"
    assert started + 630 <= _time(failed[0]) <= started + 640
    node = cluster.run(client.get(NODES, "", "work-1"))
    assert "ToBeDeletedByClusterAutoscaler" not in [
        t["key"] for t in node["spec"].get("taints") or []
    ]
    # work-2, unneeded for 10 minutes since about started + 65, waits out
    # --scale-down-delay-after-failure (3 minutes) after the failure
    cluster.wait(_time(failed[0]) + 170 - cluster.clock.now())
    assert "work-2" in node_names(cluster)
    cluster.wait(20)
    assert "work-2" not in node_names(cluster)
    (empty,) = events(cluster, "ScaleDownEmpty", REMOVING)
    assert _time(empty) >= _time(failed[0]) + 180


def test_an_eviction_refused_past_the_max_pod_eviction_time_fails_the_drain(
    clusters: list[SimulatedCluster],
) -> None:
    pools = """
apiVersion: pinnace.dev/v1alpha1
kind: Cluster
nodePools:
- {name: work, count: 1, capacity: {cpu: "2", memory: 4Gi}, maxSize: 1}
- {name: spare, count: 1, capacity: {cpu: "2", memory: 4Gi}}
"""
    cluster = start(pools)
    clusters.append(cluster)
    client = cluster.client
    # Two budgets, each with room, cover the pod: the eviction API refuses it (500) every time.
    for name in ("first", "second"):
        budget = {
            "metadata": {"name": name},
            "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "twice"}}},
        }
        cluster.run(client.create(PDBS, "default", budget))
    cluster.run(client.create(DEPLOYMENTS, "default", _on_work_1_or_spare("twice")))
    cluster.wait(620)  # unneeded for 10 minutes: the drain starts
    (drain,) = [
        e for e in events(cluster, "ScaleDown") if e["involvedObject"]["kind"] == "ConfigMap"
    ]
    started = _time(drain)
    cluster.wait(started + 110 - cluster.clock.now())
    assert not events(cluster, "ScaleDownFailed")  # still retrying, every 10 s
    cluster.wait(20)
    failed = {e["involvedObject"]["kind"]: e for e in events(cluster, "ScaleDownFailed")}
    (pod,) = [p for p in _pods(cluster) if p["metadata"]["labels"]["app"] == "twice"]
    assert failed["Pod"]["involvedObject"]["name"] == pod["metadata"]["name"]
    assert failed["Pod"]["message"] == "failed to delete pod for ScaleDown"
    assert failed["Node"]["message"] == (
        "failed to drain and delete node: Failed to drain node /work-1, due to following "
        f"errors: [failed to evict pod default/{pod['metadata']['name']} within allowed timeout "
        "(last error: This pod has more than one PodDisruptionBudget, which the eviction "
        "subresource does not support.)]"
    )
    assert started + 120 <= _time(failed["Node"]) <= started + 125
    node = cluster.run(client.get(NODES, "", "work-1"))
    assert "ToBeDeletedByClusterAutoscaler" not in [
        t["key"] for t in node["spec"].get("taints") or []
    ]
    assert _node_of(cluster, "twice") == "work-1"
    found = metrics(cluster)
    assert value(found, "cluster_autoscaler_evicted_pods_total", eviction_result="failed") == 1


def test_max_nodes_total_caps_the_scale_up_and_then_it_stops_without_a_word(
    clusters: list[SimulatedCluster],
) -> None:
    cluster = start(TWO_POOLS, expander="least-waste", max_nodes_total=2)
    clusters.append(cluster)
    cluster.run(cluster.client.create(DEPLOYMENTS, "default", deployment("web", 6, "900m", "1Gi")))
    cluster.wait(30)
    # room for one node more: the estimator stops there
    assert (
        messages(cluster, "TriggeredScaleUp")
        == ["pod triggered scale-up: [{small 1->2 (max: 5)}]"] * 2
    )
    cluster.wait(60)  # the node has joined: as many nodes Ready as --max-nodes-total
    assert node_names(cluster) == ["small-1", "small-2"]
    before = _told(cluster)
    cluster.wait(300)
    # cluster-autoscaler 1.32 (static_autoscaler.go) gives up before the scale-up and tells
    # the pods nothing; the status ConfigMap has no second scale-up either
    assert running(cluster, "web") == 4
    assert _told(cluster) == before
    assert len(events(cluster, "ScaledUpGroup", SETTING)) == 1
    assert node_names(cluster) == ["small-1", "small-2"]


def test_a_pod_can_ask_to_wait_longer_before_a_scale_up(
    clusters: list[SimulatedCluster],
) -> None:
    cluster = start(TWO_POOLS)
    clusters.append(cluster)
    body = deployment("web", 3, "900m", "1Gi")
    body["spec"]["template"]["metadata"]["annotations"] = {
        "cluster-autoscaler.kubernetes.io/pod-scale-up-delay": "2m"
    }
    cluster.run(cluster.client.create(DEPLOYMENTS, "default", body))
    cluster.wait(110)
    assert not events(cluster, "ScaledUpGroup")
    cluster.wait(20)
    (scaled,) = events(cluster, "ScaledUpGroup", SETTING)
    assert _time(scaled) >= cluster.plane.clock.now() - 20


def test_expendable_pods_get_no_nodes(clusters: list[SimulatedCluster]) -> None:
    cluster = start(TWO_POOLS)
    clusters.append(cluster)
    low = {"metadata": {"name": "expendable"}, "value": -20}
    cluster.run(cluster.client.create(PRIORITY_CLASSES, "", low))
    body = deployment("batch", 6, "900m", "1Gi")
    body["spec"]["template"]["spec"]["priorityClassName"] = "expendable"
    cluster.run(cluster.client.create(DEPLOYMENTS, "default", body))
    cluster.wait(300)
    assert node_names(cluster) == ["small-1"]
    assert running(cluster, "batch") == 2
    assert not events(cluster, "TriggeredScaleUp") + events(cluster, "NotTriggerScaleUp")


def test_the_same_seed_makes_the_same_choices(clusters: list[SimulatedCluster]) -> None:
    pools = """
apiVersion: pinnace.dev/v1alpha1
kind: Cluster
nodePools:
- {name: base, count: 1, capacity: {cpu: "1", memory: 1Gi}}
- {name: a, count: 0, capacity: {cpu: "2", memory: 4Gi}, maxSize: 4}
- {name: b, count: 0, capacity: {cpu: "2", memory: 4Gi}, maxSize: 4}
- {name: c, count: 0, capacity: {cpu: "2", memory: 4Gi}, maxSize: 4}
"""
    picks = []
    for seed in (7, 7, 8, 9, 10):
        cluster = start(pools, seed=seed)
        clusters.append(cluster)
        for i in range(3):
            body = deployment(f"w{i}", 2, "900m", "1Gi")
            cluster.run(cluster.client.create(DEPLOYMENTS, "default", body))
            cluster.wait(120)
        picks.append(node_names(cluster))
        assert len(picks[-1]) == 4
    assert picks[0] == picks[1]
    assert len({tuple(p) for p in picks}) > 1  # the random expander does draw


def _pinned(name: str, node: str, cpu: str = "100m", annotations: Any = None, **spec: Any) -> Any:
    """A Deployment of one pod that runs on `node` only."""
    body = deployment(name, 1, cpu, "128Mi")
    template = body["spec"]["template"]
    template["spec"] |= {"nodeSelector": {"kubernetes.io/hostname": node}, **spec}
    if annotations:
        template["metadata"]["annotations"] = annotations
    return body


def _on_work_1_or_spare(name: str) -> dict[str, Any]:
    """A Deployment of one pod that prefers work-1 (soft-tainted or not) and may only move to
    spare-1."""
    body = deployment(name, 1, "100m", "128Mi")
    near = {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In",
                                  "values": ["work-1"]}]}  # fmt: skip
    either = {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In",
                                    "values": ["work-1", "spare-1"]}]}  # fmt: skip
    body["spec"]["template"]["spec"]["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [either]},
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 100, "preference": near}
            ],
        }
    }
    body["spec"]["template"]["spec"] |= SOFT_TAINTED
    return body


def _label(cluster: SimulatedCluster, name: str, **meta: dict[str, str]) -> None:
    node = cluster.run(cluster.client.get(NODES, "", name))
    for field, values in meta.items():
        node["metadata"].setdefault(field, {}).update(values)
    cluster.run(cluster.client.update(NODES, node))


def _told(cluster: SimulatedCluster) -> int:
    """How many times pods were told they did not trigger a scale-up (repeats included)."""
    return sum(int(e.get("count") or 1) for e in events(cluster, "NotTriggerScaleUp"))


def _node(cluster: SimulatedCluster, name: str) -> dict[str, Any]:
    return dict(cluster.run(cluster.client.get(NODES, "", name)))


def _soft_taints(cluster: SimulatedCluster) -> dict[str, str]:
    """Node -> the effect of its DeletionCandidateOfClusterAutoscaler taint, for those that
    have one."""
    nodes = cluster.run(cluster.client.list(NODES))["items"]
    return {
        n["metadata"]["name"]: t["effect"]
        for n in nodes
        for t in n["spec"].get("taints") or []
        if t["key"] == "DeletionCandidateOfClusterAutoscaler"
    }


def _node_of(cluster: SimulatedCluster, app: str) -> str:
    pods = cluster.run(cluster.client.list(PODS, "default"))["items"]
    (pod,) = [
        p
        for p in pods
        if (p["metadata"].get("labels") or {}).get("app") == app
        and not p["metadata"].get("deletionTimestamp")
    ]
    return pod["spec"].get("nodeName", "")


def _pods(cluster: SimulatedCluster) -> list[dict[str, Any]]:
    return list(cluster.run(cluster.client.list(PODS, "default"))["items"])


def _pod(name: str, namespace: str, meta: dict[str, Any], **spec: Any) -> dict[str, Any]:
    requests = {"cpu": "100m", "memory": "128Mi"}
    container = {"name": "app", "image": "nginx", "resources": {"requests": requests}}
    return {
        "metadata": {"name": name, "namespace": namespace, **meta},
        "spec": {"containers": [container], **spec},
    }


def _time(event: dict[str, Any]) -> float:
    from pinnace.clock.rfc3339 import parse_time

    return parse_time(event.get("lastTimestamp") or event["eventTime"])
