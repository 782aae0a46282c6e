"""`pinnace plan fit`: answers worked out by hand on small clusters."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from tests.plan.manifests import deployment, job, pod, pool, priority_class, snapshot

from pinnace.plan import fit

NO_VICTIMS = "preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."


def test_three_nodes_of_4_cpus_hold_six_pods_of_1500m_not_eight(tmp_path: Path) -> None:
    cluster = snapshot(tmp_path, pool("general", 3))
    plan = fit(cluster, [deployment("web", 8, "1500m")]).document
    assert not plan["fits"]
    assert plan["pods"] == {"new": 8, "placed": 6, "unschedulable": 2, "preempted": 0}
    assert plan["workloads"] == [
        {"workload": "Deployment default/web", "pods": 8, "placed": 6, "unschedulable": 2}
    ]
    # kube-scheduler's FailedScheduling message, its doubled full stop included
    messages = {f["message"] for f in plan["unschedulable"]}
    assert messages == {f"0/3 nodes are available: 3 Insufficient cpu. {NO_VICTIMS}."}
    assert Counter(p["node"] for p in plan["placements"]) == {
        "general-1": 2,
        "general-2": 2,
        "general-3": 2,
    }
    left = {n["name"]: n["requested"]["cpu"] for n in plan["nodes"]}
    assert left == {"general-1": "3", "general-2": "3", "general-3": "3"}


def test_several_shapes_at_once(tmp_path: Path) -> None:
    cluster = snapshot(tmp_path, pool("general", 2))
    workloads = [deployment("web", 2, "1"), job("batch", 2, "1"), pod("one", "1"), pod("big", "5")]
    plan = fit(cluster, workloads).document
    by_workload = {w["workload"]: (w["pods"], w["placed"]) for w in plan["workloads"]}
    assert by_workload == {
        "Deployment default/web": (2, 2),
        "Job default/batch": (2, 2),
        "Pod default/one": (1, 1),
        "Pod default/big": (1, 0),
    }
    (big,) = plan["unschedulable"]
    assert big["pod"] == "default/big"
    assert big["message"] == (
        "0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are available: "
        "2 No preemption victims found for incoming pod.."
    )


def test_untolerated_taints_are_the_reason(tmp_path: Path) -> None:
    taint = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
    cluster = snapshot(tmp_path, pool("gpu", 3, taints=[taint]))
    plan = fit(cluster, [pod("web", "100m")]).document
    (failed,) = plan["unschedulable"]
    assert failed["message"].startswith(
        "0/3 nodes are available: 3 node(s) had untolerated taint {dedicated: gpu}."
    )


def test_a_daemonset_gets_a_pod_on_each_node(tmp_path: Path) -> None:
    cluster = snapshot(tmp_path, pool("general", 3))
    agent = deployment("agent", 1, "100m")
    agent["kind"] = "DaemonSet"
    del agent["spec"]["replicas"]
    plan = fit(cluster, [agent]).document
    assert plan["fits"]
    assert sorted(p["node"] for p in plan["placements"]) == ["general-1", "general-2", "general-3"]


def test_a_higher_priority_pod_preempts_and_the_victim_is_replaced(tmp_path: Path) -> None:
    running = deployment("low", 2, "3")
    cluster = snapshot(
        tmp_path, pool("general", 2), objects=[priority_class("high", 1000), running]
    )
    assert len(cluster.bound_pods()) == 2
    plan = fit(cluster, [pod("urgent", "2", priorityClassName="high")]).document
    assert plan["pods"]["placed"] == 1
    (preemption,) = plan["preemptions"]
    assert preemption["preemptor"] == "default/urgent"
    assert preemption["victim"].startswith("default/low-")
    assert preemption["replacement"].startswith("default/low-")
    assert preemption["replacementNode"] == ""  # no room left for the victim's replacement
    assert not plan["fits"]


def test_every_preemption_decided_is_carried_out(tmp_path: Path) -> None:
    # Two nodes each full of a bare pod of priority 0: the first 1 CPU pod of priority 1000
    # preempts one, three more join it there, and the fifth preempts the other.
    bare = [pod(f"bare-{i}", "4") for i in range(2)]
    cluster = snapshot(tmp_path, pool("general", 2), objects=[priority_class("high", 1000), *bare])
    plan = fit(cluster, [deployment("web", 8, "1", priorityClassName="high")]).document
    assert plan["fits"]
    assert sorted(p["victim"] for p in plan["preemptions"]) == ["default/bare-0", "default/bare-1"]
    assert all(p["replacement"] == "" for p in plan["preemptions"])  # bare pods are lost


def test_the_clusters_pending_pods_are_placed_first(tmp_path: Path) -> None:
    waiting = pod("waiting", "3")
    waiting["spec"]["nodeSelector"] = {"disk": "ssd"}
    cluster = snapshot(tmp_path, pool("general", 1), objects=[waiting])
    assert [p["metadata"]["name"] for p in cluster.pending_pods()] == ["waiting"]
    plan = fit(cluster, [pod("web", "1")]).document
    assert plan["fits"]
    (pending,) = plan["clusterPending"]
    assert pending["pod"] == "default/waiting"
    assert pending["message"].startswith(
        "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector."
    )


def _web(name: str, **spec: object) -> dict[str, object]:
    made = pod(name, "100m", **spec)
    made["metadata"]["labels"] = {"app": "web"}  # type: ignore[index]
    return made


def test_a_service_spreads_its_pods_as_kube_scheduler_does(tmp_path: Path) -> None:
    # Three pods behind the Service crowd general-1; a big pod fills general-2, so resource
    # scoring alone would put the new pod beside its siblings. The Service's selector makes
    # PodTopologySpread's default constraints count them, and spread it.
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]},
    }
    crowd = [_web(f"web-{i}", nodeName="general-1") for i in range(3)]
    big = pod("batch", "3", nodeName="general-2")
    without = snapshot(tmp_path, pool("general", 2), objects=[*crowd, big])
    assert [p["node"] for p in fit(without, [_web("new")]).document["placements"]] == ["general-1"]
    with_service = snapshot(tmp_path, pool("general", 2), objects=[*crowd, big, service])
    plan = fit(with_service, [_web("new")]).document
    assert [p["node"] for p in plan["placements"]] == ["general-2"]
    assert plan["skipped"] == []
