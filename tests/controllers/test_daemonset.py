"""The DaemonSet controller against an in-process API server, scheduler and nodes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from tests.controllers.lifecycle_cluster import LifecycleCluster
from tests.controllers.lifecycle_cluster import pod as lifecycle_pod
from tests.controllers.workloads import PODS, Workloads, template

from pinnace.api.objects import Object, clone
from pinnace.client import Informer
from pinnace.controllers.daemonset import DAEMON_SETS, NODES
from pinnace.controllers.daemonset_update import RollingUpdatePlan, rolling_update
from pinnace.controllers.daemonset_util import (
    DaemonPlacement,
    FailedPodsBackoff,
    current_hash,
    target_node_name,
)
from pinnace.kubelet.config import SIMULATED_LABEL

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
    c.close()


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


def test_node_selector_and_affinity_choose_the_nodes(cluster: Workloads):
    patch_node(cluster, NODE_2, {"metadata": {"labels": {"role": "edge"}}})
    ds = daemon_set()
    ds["spec"]["template"]["spec"]["nodeSelector"] = {"role": "edge"}
    create(cluster, ds)
    assert placed(cluster) == {NODE_2: "Running"}
    assert status(cluster)["desiredNumberScheduled"] == 1

    patch_node(cluster, NODE_3, {"metadata": {"labels": {"role": "edge"}}})
    assert placed(cluster) == {NODE_2: "Running", NODE_3: "Running"}
    patch_node(cluster, NODE_2, {"metadata": {"labels": {"role": None}}})
    assert placed(cluster) == {NODE_3: "Running"}
    assert status(cluster)["desiredNumberScheduled"] == 1
    assert status(cluster)["numberMisscheduled"] == 0


def test_taints_keep_pods_off_unless_tolerated(cluster: Workloads):
    taint = {"key": "dedicated", "value": "db", "effect": "NoSchedule"}
    patch_node(cluster, NODE_1, {"spec": {"taints": [taint]}})
    create(cluster, daemon_set())
    assert placed(cluster) == {NODE_2: "Running", NODE_3: "Running"}

    tolerating = daemon_set("tolerant")
    tolerating["spec"]["template"]["spec"]["tolerations"] = [
        {"key": "dedicated", "operator": "Equal", "value": "db", "effect": "NoSchedule"}
    ]
    create(cluster, tolerating)
    assert set(placed(cluster, "tolerant")) == {NODE_1, NODE_2, NODE_3}


def test_a_no_schedule_taint_leaves_the_pod_and_a_no_execute_one_removes_it(cluster: Workloads):
    create(cluster, daemon_set())
    patch_node(cluster, NODE_1, {"spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]}})
    assert placed(cluster) == {NODE_1: "Running", NODE_2: "Running", NODE_3: "Running"}
    counts = status(cluster)
    assert (counts["desiredNumberScheduled"], counts["numberMisscheduled"]) == (2, 1)

    patch_node(cluster, NODE_1, {"spec": {"taints": [{"key": "k", "effect": "NoExecute"}]}})
    assert placed(cluster) == {NODE_2: "Running", NODE_3: "Running"}
    counts = status(cluster)
    assert (counts["desiredNumberScheduled"], counts["numberMisscheduled"]) == (2, 0)
    assert counts["currentNumberScheduled"] == 2


def test_daemon_pods_tolerate_node_problems_and_cordons(cluster: Workloads):
    problems = [
        {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"},
        {"key": "node.kubernetes.io/memory-pressure", "effect": "NoSchedule"},
        {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"},
    ]
    patch_node(cluster, NODE_1, {"spec": {"unschedulable": True, "taints": problems}})
    ds = daemon_set()
    ds["spec"]["template"]["spec"]["tolerations"] = [
        {
            "key": "node.kubernetes.io/not-ready",
            "operator": "Exists",
            "effect": "NoExecute",
            "tolerationSeconds": 300,
        },
        {"key": "example.com/other", "operator": "Exists"},
    ]
    create(cluster, ds)
    assert placed(cluster) == {NODE_1: "Running", NODE_2: "Running", NODE_3: "Running"}
    pod = cluster.pods(app="agent")[0]
    exists = {"operator": "Exists"}
    assert pod["spec"]["tolerations"] == [
        {"key": "node.kubernetes.io/not-ready", **exists, "effect": "NoExecute"},
        {"key": "example.com/other", **exists},
        {"key": "node.kubernetes.io/unreachable", **exists, "effect": "NoExecute"},
        {"key": "node.kubernetes.io/disk-pressure", **exists, "effect": "NoSchedule"},
        {"key": "node.kubernetes.io/memory-pressure", **exists, "effect": "NoSchedule"},
        {"key": "node.kubernetes.io/pid-pressure", **exists, "effect": "NoSchedule"},
        {"key": "node.kubernetes.io/unschedulable", **exists, "effect": "NoSchedule"},
    ]


def test_host_network_pods_also_tolerate_an_unavailable_network(cluster: Workloads):
    ds = daemon_set()
    ds["spec"]["template"]["spec"]["hostNetwork"] = True
    create(cluster, ds)
    tolerations = cluster.pods(app="agent")[0]["spec"]["tolerations"]
    assert tolerations[-1] == {
        "key": "node.kubernetes.io/network-unavailable",
        "operator": "Exists",
        "effect": "NoSchedule",
    }


def node(name: str, cpu: str = "4") -> Object:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {SIMULATED_LABEL: "true"}},
        "status": {"capacity": {"cpu": cpu, "memory": "8Gi", "pods": "20"}},
    }


def test_nodes_that_come_get_a_pod_and_an_unscheduled_pod_goes_with_its_node(cluster: Workloads):
    ds = daemon_set()
    ds["spec"]["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1"}}
    create(cluster, ds)
    cluster.run(cluster.client.create(NODES, "", node("extra")))
    cluster.settle()
    assert placed(cluster)["extra"] == "Running"
    assert status(cluster)["desiredNumberScheduled"] == 4

    cluster.run(cluster.client.create(NODES, "", node("small", cpu="500m")))
    cluster.settle()
    [pending] = [p for p in cluster.pods(app="agent") if not p["spec"].get("nodeName")]
    assert target_node_name(pending) == "small"
    counts = status(cluster)
    assert (counts["desiredNumberScheduled"], counts["currentNumberScheduled"]) == (5, 5)
    assert (counts["numberReady"], counts["numberUnavailable"]) == (4, 1)

    cluster.run(cluster.client.delete(NODES, "", "small"))
    cluster.settle()
    names = {p["metadata"]["name"] for p in cluster.pods(app="agent")}
    assert pending["metadata"]["name"] not in names
    assert f"Deleted pod: {pending['metadata']['name']}" in cluster.events("SuccessfulDelete")
    counts = status(cluster)
    assert counts["desiredNumberScheduled"] == 4 and "numberUnavailable" not in counts


def test_a_failed_pod_is_deleted_and_replaced(cluster: Workloads):
    create(cluster, daemon_set())
    [pod] = [p for p in cluster.pods(app="agent") if p["spec"]["nodeName"] == NODE_1]
    victim = clone(pod)
    victim["status"]["phase"] = "Failed"
    cluster.run(cluster.client.update_status(PODS, victim))
    cluster.settle(40)
    pods = [p for p in cluster.pods(app="agent") if p["spec"]["nodeName"] == NODE_1]
    assert [p["status"]["phase"] for p in pods] == ["Running"]
    assert pods[0]["metadata"]["name"] != victim["metadata"]["name"]
    name = f"default/{victim['metadata']['name']}"
    assert cluster.events("FailedDaemonPod") == [
        f"Found failed daemon pod {name} on node {NODE_1}, will try to kill it"
    ]


def test_failed_pod_deletions_back_off_per_node():
    backoff = FailedPodsBackoff()
    assert not backoff.in_backoff("n", 0.0)
    backoff.next("n", 0.0)
    assert backoff.in_backoff("n", 0.5) and not backoff.in_backoff("n", 1.0)
    backoff.next("n", 1.0)
    assert backoff.delay("n") == 2.0 and backoff.in_backoff("n", 2.9)
    for t in range(2, 20):
        backoff.next("n", float(t))
    assert backoff.delay("n") == 15 * 60.0
    backoff.next("n", 19 + 30 * 60.0 + 1)  # left alone for twice the maximum: starts over
    assert backoff.delay("n") == 1.0


def test_extra_pods_on_a_node_are_adopted_and_the_newest_deleted(cluster: Workloads):
    create(cluster, daemon_set())
    orphan = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "stray", "labels": {"app": "agent"}},
        "spec": {"nodeName": NODE_2, "containers": [{"name": "c", "image": "nginx"}]},
    }
    cluster.run(cluster.client.create(PODS, "default", orphan))
    cluster.settle(40)
    names = [p["metadata"]["name"] for p in cluster.pods(app="agent")]
    assert "stray" not in names and len(names) == 3
    assert "Deleted pod: stray" in cluster.events("SuccessfulDelete")


def test_a_pod_that_stops_matching_is_released_and_replaced(cluster: Workloads):
    create(cluster, daemon_set())
    [pod] = [p for p in cluster.pods(app="agent") if p["spec"]["nodeName"] == NODE_3]
    name = pod["metadata"]["name"]
    cluster.run(cluster.client.patch(PODS, "default", name, {"metadata": {"labels": {"app": "x"}}}))
    cluster.settle()
    released = cluster.run(cluster.client.get(PODS, "default", name))
    assert not released["metadata"].get("ownerReferences"), released["metadata"]
    assert placed(cluster) == {NODE_1: "Running", NODE_2: "Running", NODE_3: "Running"}


def set_image(cluster: Workloads, image: str, name: str = "agent") -> None:
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "nginx", "image": image}]}}}}
    cluster.run(cluster.client.patch(DAEMON_SETS, "default", name, patch))


def serving(pods: list[Object]) -> dict[str, str]:
    """Node -> image of its ready pod not being deleted."""
    return {
        p["spec"]["nodeName"]: p["spec"]["containers"][0]["image"]
        for p in pods
        if p["spec"].get("nodeName")
        and not p["metadata"].get("deletionTimestamp")
        and any(
            c["type"] == "Ready" and c["status"] == "True"
            for c in p["status"].get("conditions") or []
        )
    }


def roll(cluster: Workloads, image: str) -> tuple[list[dict[str, str]], int]:
    """Set the image; what serves after each change of a pod until the rollout is done, and
    the most pods not being deleted at any one time."""
    pods = Informer(cluster.client, PODS, "default", label_selector="app=agent")
    seen: list[dict[str, str]] = []
    most = 0

    def changed(*_: Object) -> None:
        nonlocal most
        seen.append(serving(pods.list()))
        most = max(most, sum(not p["metadata"].get("deletionTimestamp") for p in pods.list()))

    pods.add_event_handler(on_add=changed, on_update=changed, on_delete=changed)
    pods.start()
    cluster.run(pods.wait_for_sync())
    seen.clear()
    set_image(cluster, image)
    cluster.settle(60)
    cluster.run(pods.stop())
    return seen, most


def test_rolling_update_replaces_one_pod_at_a_time(cluster: Workloads):
    create(cluster, daemon_set())
    before = {p["metadata"]["name"] for p in cluster.pods(app="agent")}
    seen, most = roll(cluster, "nginx:1.28")
    assert seen[-1] == dict.fromkeys((NODE_1, NODE_2, NODE_3), "nginx:1.28")
    assert min(len(s) for s in seen) == 2  # never more than maxUnavailable=1 down
    assert most == 3
    pods = cluster.pods(app="agent")
    assert not before & {p["metadata"]["name"] for p in pods}
    assert {p["metadata"]["labels"]["pod-template-generation"] for p in pods} == {"2"}
    ds = cluster.get(DAEMON_SETS, "agent")
    assert ds["status"]["observedGeneration"] == 2
    assert {p["metadata"]["labels"]["controller-revision-hash"] for p in pods} == {current_hash(ds)}


def test_max_unavailable_lets_more_pods_go_at_once(cluster: Workloads):
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "100%"}}
    create(cluster, daemon_set(updateStrategy=strategy))
    seen, _ = roll(cluster, "nginx:1.28")
    assert min(len(s) for s in seen) == 0


def test_max_surge_starts_the_new_pod_before_the_old_one_goes(cluster: Workloads):
    surge = {"maxSurge": 1, "maxUnavailable": 0}
    create(cluster, daemon_set(updateStrategy={"type": "RollingUpdate", "rollingUpdate": surge}))
    seen, most = roll(cluster, "nginx:1.28")
    assert all(len(s) == 3 for s in seen)
    assert most == 4  # one new pod beside an old one at a time
    assert seen[-1] == dict.fromkeys((NODE_1, NODE_2, NODE_3), "nginx:1.28")
    assert len(cluster.pods(app="agent")) == 3


def test_on_delete_replaces_only_the_pods_a_user_deletes(cluster: Workloads):
    create(cluster, daemon_set(updateStrategy={"type": "OnDelete"}))
    set_image(cluster, "nginx:1.28")
    cluster.settle(10)
    assert serving(cluster.pods()) == dict.fromkeys((NODE_1, NODE_2, NODE_3), "nginx:1.27")
    assert status(cluster)["observedGeneration"] == 2
    assert "updatedNumberScheduled" not in status(cluster)
    [pod] = [p for p in cluster.pods(app="agent") if p["spec"]["nodeName"] == NODE_2]
    cluster.run(cluster.client.delete(PODS, "default", pod["metadata"]["name"]))
    cluster.settle(40)
    assert serving(cluster.pods())[NODE_2] == "nginx:1.28"
    assert status(cluster)["updatedNumberScheduled"] == 1


def test_pods_count_as_available_after_min_ready_seconds(cluster: Workloads):
    create(cluster, daemon_set(minReadySeconds=30))
    counts = status(cluster)
    assert (counts["numberReady"], counts["numberUnavailable"]) == (3, 3)
    assert "numberAvailable" not in counts
    cluster.settle(40)
    counts = status(cluster)
    assert (counts["numberReady"], counts["numberAvailable"]) == (3, 3)
    assert "numberUnavailable" not in counts


def plan_for(rolling: Object, pods: dict[str, list[Object]]) -> RollingUpdatePlan:
    ds = daemon_set(updateStrategy={"type": "RollingUpdate", "rollingUpdate": rolling})
    ds["metadata"].update(uid="u", annotations={"deprecated.daemonset.template.generation": "2"})
    nodes = [{"metadata": {"name": n}} for n in (NODE_1, NODE_2, NODE_3)]
    return rolling_update(ds, nodes, pods, DaemonPlacement.of(ds), "new", now=100.0)


def daemon_pod(name: str, generation: str, ready: bool = True) -> Object:
    condition = {"type": "Ready", "status": "True" if ready else "False"}
    return {
        "metadata": {"name": name, "labels": {"pod-template-generation": generation}},
        "spec": {},
        "status": {"conditions": [condition]},
    }


def test_a_rolling_update_step_replaces_unavailable_old_pods_first():
    old = {n: [daemon_pod(f"old-{i}", "1")] for i, n in enumerate((NODE_1, NODE_2, NODE_3))}
    assert plan_for({"maxUnavailable": 1}, old) == RollingUpdatePlan(delete=["old-0"])
    old[NODE_3] = [daemon_pod("old-2", "1", ready=False)]
    assert plan_for({"maxUnavailable": 1}, old) == RollingUpdatePlan(delete=["old-2"])
    old[NODE_1] = [daemon_pod("new-0", "2", ready=False)]
    assert plan_for({"maxUnavailable": 2}, old) == RollingUpdatePlan(delete=["old-2"])
    assert plan_for({"maxUnavailable": "50%"}, {NODE_1: old[NODE_2]}).delete == []


def test_a_surging_step_starts_new_pods_and_retires_old_ones_once_replaced():
    old = {n: [daemon_pod(f"old-{i}", "1")] for i, n in enumerate((NODE_1, NODE_2, NODE_3))}
    surge = {"maxSurge": 1, "maxUnavailable": 0}
    assert plan_for(surge, old) == RollingUpdatePlan(create=[NODE_1])
    old[NODE_1].append(daemon_pod("new-0", "2", ready=False))
    assert plan_for(surge, old) == RollingUpdatePlan()
    old[NODE_1][1] = daemon_pod("new-0", "2")
    assert plan_for(surge, old) == RollingUpdatePlan(delete=["old-0"], create=[NODE_2])


def test_a_matching_orphan_is_adopted_in_place_of_a_new_pod(cluster: Workloads):
    orphan = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "early", "labels": {"app": "agent"}},
        "spec": {"nodeName": NODE_1, "containers": [{"name": "nginx", "image": "nginx:1.27"}]},
    }
    cluster.run(cluster.client.create(PODS, "default", orphan))
    cluster.settle()
    ds = create(cluster, daemon_set(updateStrategy={"type": "OnDelete"}))
    adopted = cluster.get(PODS, "early")
    assert adopted["metadata"]["ownerReferences"][0]["uid"] == ds["metadata"]["uid"]
    assert placed(cluster) == {NODE_1: "Running", NODE_2: "Running", NODE_3: "Running"}
    counts = status(cluster)
    assert (counts["currentNumberScheduled"], counts["updatedNumberScheduled"]) == (3, 2)


def test_deleting_the_daemon_set_deletes_its_pods(cluster: Workloads):
    create(cluster, daemon_set())
    cluster.run(cluster.client.delete(DAEMON_SETS, "default", "agent"))
    cluster.settle(40)
    assert cluster.pods(app="agent") == []


def test_daemon_pods_outlast_an_unreachable_node_that_evicts_other_pods():
    plane = LifecycleCluster({"a": 2}, scheduler=True)
    try:
        plane.run(plane.client.create(DAEMON_SETS, "default", daemon_set()))
        plane.run(plane.client.create(PODS, "default", lifecycle_pod("plain", "a-0")))

        def live_on_a0() -> list[str]:
            pods = plane.run(plane.client.list(PODS, "default"))["items"]
            return sorted(
                p["metadata"]["name"].split("-")[0]
                for p in pods
                if p["spec"].get("nodeName") == "a-0" and not p["metadata"].get("deletionTimestamp")
            )

        plane.wait(5)
        assert live_on_a0() == ["agent", "plain"]
        plane.run(plane.pool.fail_node("a-0"))
        plane.wait(50 + 300 + 30)
        assert "node.kubernetes.io/unreachable:NoExecute" in plane.taints("a-0")
        assert live_on_a0() == ["agent"]  # the plain pod tolerated it for 300 s only
    finally:
        plane.close()


def test_eligibility_follows_node_name_affinity_and_taint_effects():
    ds = daemon_set()
    spec = ds["spec"]["template"]["spec"]
    required = {
        "nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]}
        ]
    }
    spec["affinity"] = {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}
    }
    spec["tolerations"] = [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]
    placement = DaemonPlacement.of(ds)

    def node_(name: str, zone: str, *taints: tuple[str, str]) -> Object:
        spec = {"taints": [{"key": k, "effect": e} for k, e in taints]}
        return {"metadata": {"name": name, "labels": {"zone": zone}}, "spec": spec}

    assert placement.should_run(node_("n1", "a")) == (True, True)
    assert placement.should_run(node_("n2", "c")) == (False, False)
    assert placement.should_run(node_("n3", "b", ("gpu", "NoSchedule"))) == (True, True)
    assert placement.should_run(node_("n4", "b", ("ssd", "PreferNoSchedule"))) == (True, True)
    assert placement.should_run(node_("n5", "b", ("ssd", "NoSchedule"))) == (False, True)
    assert placement.should_run(node_("n6", "b", ("ssd", "NoExecute"))) == (False, False)
    unreachable = ("node.kubernetes.io/unreachable", "NoExecute")
    assert placement.should_run(node_("n7", "a", unreachable)) == (True, True)

    spec["nodeName"] = "n1"
    pinned = DaemonPlacement.of(ds)
    assert pinned.should_run(node_("n1", "a")) == (True, True)
    assert pinned.should_run(node_("n8", "a")) == (False, False)


def test_a_pod_the_kubelet_keeps_refusing_is_replaced_with_growing_delays(cluster: Workloads):
    ds = daemon_set()
    spec = ds["spec"]["template"]["spec"]
    spec["nodeName"] = NODE_1  # straight to the kubelet, which has too little cpu
    spec["containers"][0]["resources"] = {"requests": {"cpu": "8"}}
    create(cluster, ds)
    cluster.settle(60)
    failures = len(cluster.events("FailedDaemonPod"))
    assert failures == 6  # deleted at 0, 1, 3, 7, 15 and 31 s: the delay doubles
    refused = [p for p in cluster.pods(app="agent") if p["status"].get("phase") == "Failed"]
    assert refused and refused[0]["status"]["reason"] == "OutOfcpu"
