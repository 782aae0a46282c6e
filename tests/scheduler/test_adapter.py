"""The scheduler as an API client, on the virtual loop beside an in-process API server: pods
get bound, unschedulable ones get the PodScheduled condition and FailedScheduling events with
kube-scheduler's messages, pods for another scheduler are left alone, a new node unblocks a
waiting pod, and a refused binding is retried."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from typing import Any

import pytest
from tests.client.conftest import EVENTS, NODES, PODS
from tests.support import SimulatedCluster

from pinnace.api import catalog
from pinnace.api.core.event import occurrences
from pinnace.api.objects import Object
from pinnace.api.options import DeleteOptions
from pinnace.api.status import StatusError
from pinnace.cluster import ClusterOptions
from pinnace.scheduler.config import parse

PRIORITY_CLASSES = catalog.kind("scheduling.k8s.io", "priorityclasses")
REPLICA_SETS = catalog.kind("apps", "replicasets")
STATEFUL_SETS = catalog.kind("apps", "statefulsets")
NAMESPACES = catalog.kind("", "namespaces")


def node(name: str, cpu: str = "2") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}},
    }


def pod(name: str, cpu: str = "100m", scheduler: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [{"name": "app", "image": "nginx", "resources": {"requests": {"cpu": cpu}}}]
    }
    if scheduler:
        spec["schedulerName"] = scheduler
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


class Running(SimulatedCluster):
    """The API server and the scheduler alone: nodes are API objects without kubelets, and no
    controller acts on them."""

    def __init__(self, config_text: str = "", seed: int = 0) -> None:
        config = parse(config_text) if config_text else None
        super().__init__(ClusterOptions(scheduler_config=config, controllers=False, seed=seed))
        assert self.plane.scheduler is not None
        self.scheduler = self.plane.scheduler

    def settle(self, seconds: float = 2.0) -> None:
        self.wait(seconds)
        self.run(self.scheduler.flush())

    def create(self, kind: Any, obj: dict[str, Any]) -> Object:
        return self.run(self.client.create(kind, "default" if kind is PODS else "", obj))

    def get_pod(self, name: str) -> Object:
        return self.run(self.client.get(PODS, "default", name))

    def events(self, name: str) -> list[tuple[str, str, str, str]]:
        listed = self.run(self.client.list(EVENTS, "default"))["items"]
        return [
            (e["type"], e["reason"], e["message"], e["reportingComponent"])
            for e in sorted(listed, key=lambda e: e["metadata"]["name"])
            if e["involvedObject"]["name"] == name
        ]

    def actions(self, name: str) -> list[tuple[str, str, str, str]]:
        """(reason, action, reportingInstance, related pod) of the Events about pod `name`."""
        listed = self.run(self.client.list(EVENTS, "default"))["items"]
        return [
            (
                e["reason"],
                e["action"],
                e["reportingInstance"],
                (e.get("related") or {}).get("name", ""),
            )
            for e in sorted(listed, key=lambda e: e["metadata"]["name"])
            if e["involvedObject"]["name"] == name
        ]


@pytest.fixture
def cluster() -> Iterator[Running]:
    running = Running()
    yield running
    running.close()


def pod_scheduled(pod: Object) -> dict[str, Any] | None:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == "PodScheduled"), None)


def test_pods_are_bound_and_get_the_scheduled_event(cluster: Running) -> None:
    cluster.create(NODES, node("n1"))
    for i in range(5):
        cluster.create(PODS, pod(f"web-{i}"))
    cluster.settle()
    for i in range(5):
        bound = cluster.get_pod(f"web-{i}")
        assert bound["spec"]["nodeName"] == "n1"
        assert pod_scheduled(bound)["status"] == "True"
        assert cluster.events(f"web-{i}") == [
            (
                "Normal",
                "Scheduled",
                f"Successfully assigned default/web-{i} to n1",
                "default-scheduler",
            )
        ]


def test_events_name_kube_schedulers_action_and_instance(cluster: Running) -> None:
    cluster.create(NODES, node("n1"))
    cluster.create(PODS, pod("web"))
    cluster.create(PODS, pod("big", cpu="3"))
    cluster.settle()
    assert cluster.actions("web") == [("Scheduled", "Binding", "default-scheduler-pinnace", "")]
    assert cluster.actions("big") == [
        ("FailedScheduling", "Scheduling", "default-scheduler-pinnace", "")
    ]
    [event] = [
        e
        for e in cluster.run(cluster.client.list(EVENTS, "default"))["items"]
        if e["involvedObject"]["name"] == "web"
    ]
    assert event["source"] == {} and "count" not in event and "firstTimestamp" not in event
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", event["eventTime"])


def test_an_unschedulable_pod_gets_the_condition_and_failed_scheduling(
    cluster: Running,
) -> None:
    cluster.create(NODES, node("n1"))
    cluster.create(NODES, node("n2"))
    cluster.create(PODS, pod("big", cpu="3"))
    cluster.settle()
    waiting = cluster.get_pod("big")
    assert "nodeName" not in waiting["spec"]
    message = (
        "0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are available: "
        "2 No preemption victims found for incoming pod.."
    )
    condition = pod_scheduled(waiting)
    assert condition == {
        "type": "PodScheduled",
        "status": "False",
        "lastTransitionTime": condition["lastTransitionTime"],
        "reason": "Unschedulable",
        "message": message,
    }
    assert cluster.events("big") == [("Warning", "FailedScheduling", message, "default-scheduler")]


def test_a_parked_pod_is_tried_again_after_five_minutes_with_nothing_else_happening(
    cluster: Running,
) -> None:
    cluster.create(NODES, node("n1"))
    cluster.create(PODS, pod("big", cpu="3"))
    cluster.wait(2.0)
    listed = cluster.run(cluster.client.list(EVENTS, "default"))["items"]
    assert [occurrences(e) for e in listed if e["reason"] == "FailedScheduling"] == [1]
    cluster.wait(297.0)  # no event a rejecting plugin registered for: parked
    listed = cluster.run(cluster.client.list(EVENTS, "default"))["items"]
    assert [occurrences(e) for e in listed if e["reason"] == "FailedScheduling"] == [1]
    cluster.wait(2.0)  # parked for more than 5 minutes: flushed back and tried again
    listed = cluster.run(cluster.client.list(EVENTS, "default"))["items"]
    # A new Event: the first one's regarding is the pod before its PodScheduled condition was
    # written, and an Event repeats (events.k8s.io's isomorphic key) only for the same version.
    assert [occurrences(e) for e in listed if e["reason"] == "FailedScheduling"] == [1, 1]
    cluster.wait(301.0)  # the third try: the pod unchanged since the second, its Event repeats
    listed = cluster.run(cluster.client.list(EVENTS, "default"))["items"]
    counts = [occurrences(e) for e in listed if e["reason"] == "FailedScheduling"]
    assert sorted(counts) == [1, 2]


def test_no_nodes_is_a_scheduler_error(cluster: Running) -> None:
    cluster.create(PODS, pod("lonely"))
    cluster.settle()
    condition = pod_scheduled(cluster.get_pod("lonely"))
    assert (condition["reason"], condition["message"]) == (
        "SchedulerError",
        "no nodes available to schedule pods",
    )
    assert cluster.events("lonely")[0][:3] == (
        "Warning",
        "FailedScheduling",
        "no nodes available to schedule pods",
    )


def test_a_node_added_later_unblocks_a_waiting_pod(cluster: Running) -> None:
    cluster.create(NODES, node("small", cpu="1"))
    cluster.create(PODS, pod("big", cpu="2"))
    cluster.settle()
    assert "nodeName" not in cluster.get_pod("big")["spec"]
    cluster.create(NODES, node("large", cpu="4"))
    cluster.settle()
    bound = cluster.get_pod("big")
    assert bound["spec"]["nodeName"] == "large"
    assert pod_scheduled(bound)["status"] == "True"
    assert [e[1] for e in cluster.events("big")] == ["FailedScheduling", "Scheduled"]


def test_a_pod_for_another_scheduler_stays_pending_and_untouched(cluster: Running) -> None:
    cluster.create(NODES, node("n1"))
    created = cluster.create(PODS, pod("elsewhere", scheduler="my-scheduler"))
    cluster.settle()
    after = cluster.get_pod("elsewhere")
    assert after["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    assert "nodeName" not in after["spec"]
    assert cluster.events("elsewhere") == []


def test_profiles_serve_their_scheduler_names() -> None:
    config = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
- schedulerName: packer
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
"""
    cluster = Running(config)
    try:
        cluster.create(NODES, node("a", cpu="4"))
        cluster.create(NODES, node("b", cpu="4"))
        cluster.create(PODS, pod("first", cpu="1", scheduler="packer"))
        cluster.settle()
        first = cluster.get_pod("first")["spec"]["nodeName"]
        cluster.create(PODS, pod("second", cpu="1", scheduler="packer"))
        cluster.settle()
        assert cluster.get_pod("second")["spec"]["nodeName"] == first  # packed together
        assert cluster.events("second")[0][3] == "packer"
    finally:
        cluster.close()


def test_a_refused_binding_forgets_the_pod_and_retries(cluster: Running) -> None:
    cluster.create(NODES, node("n1"))
    real_bind = cluster.scheduler.client.bind
    refusals = []

    async def refuse_once(pod: Object, node_name: str) -> None:
        if not refusals:
            refusals.append(node_name)
            raise StatusError(409, "Conflict", "Operation cannot be fulfilled: try again")
        await real_bind(pod, node_name)

    cluster.scheduler.client.bind = refuse_once  # type: ignore[method-assign]
    cluster.create(PODS, pod("web", cpu="2"))  # takes the whole node: forgotten or stuck
    cluster.settle(5.0)
    assert refusals == ["n1"]
    bound = cluster.get_pod("web")
    assert bound["spec"]["nodeName"] == "n1"
    assert [e[:3] for e in cluster.events("web")] == [
        (
            "Warning",
            "FailedScheduling",
            'running Bind plugin "DefaultBinder": Operation cannot be fulfilled: try again',
        ),
        ("Normal", "Scheduled", "Successfully assigned default/web to n1"),
    ]


def test_each_refused_binding_doubles_the_pods_back_off(cluster: Running) -> None:
    cluster.create(NODES, node("n1"))
    real_bind = cluster.scheduler.client.bind
    attempts: list[float] = []

    async def refuse_thrice(pod: Object, node_name: str) -> None:
        attempts.append(cluster.loop.time())
        if len(attempts) <= 3:
            raise StatusError(409, "Conflict", "Operation cannot be fulfilled: try again")
        await real_bind(pod, node_name)

    cluster.scheduler.client.bind = refuse_thrice  # type: ignore[method-assign]
    cluster.create(PODS, pod("web"))
    cluster.settle(20.0)
    assert cluster.get_pod("web")["spec"].get("nodeName") == "n1"
    waits = [round(b - a) for a, b in itertools.pairwise(attempts)]
    assert waits == [1, 2, 4], "1 s doubling per failed attempt, as kube-scheduler backs off"


def test_a_pod_bound_by_someone_else_is_not_bound_again(cluster: Running) -> None:
    cluster.create(NODES, node("n1"))
    cluster.create(NODES, node("n2"))
    cluster.create(PODS, {**pod("pinned"), "spec": {**pod("x")["spec"], "nodeName": "n2"}})
    cluster.create(PODS, pod("full", cpu="1900m"))
    cluster.settle()
    # n2 holds the pinned pod's 100m, so the 1.9-CPU pod can only go to n1.
    assert cluster.get_pod("full")["spec"]["nodeName"] == "n1"
    assert cluster.events("pinned") == []


PREEMPTION = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- plugins:
    postFilter:
      enabled:
      - name: DefaultPreemption
"""


def test_preemption_evicts_a_lower_priority_pod_and_nominates_the_node() -> None:
    cluster = Running(PREEMPTION)
    try:
        high = {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "high"},
            "value": 1000,
        }
        cluster.run(cluster.client.create(PRIORITY_CLASSES, "", high))
        cluster.create(NODES, node("n1"))
        cluster.create(PODS, pod("low", cpu="1500m"))
        cluster.settle()
        important = pod("important", cpu="1")
        important["spec"]["priorityClassName"] = "high"
        cluster.create(PODS, important)
        cluster.settle()
        uid = cluster.get_pod("important")["metadata"]["uid"]
        assert cluster.events("low")[1:] == [
            ("Normal", "Preempted", f"Preempted by pod {uid} on node n1", "default-scheduler")
        ]
        assert cluster.actions("low")[1:] == [
            ("Preempted", "Preempting", "default-scheduler-pinnace", "important")
        ]
        victim = cluster.get_pod("low")
        assert victim["metadata"]["deletionTimestamp"]  # graceful: its node agent finishes it
        assert victim["status"]["conditions"][0] == {
            "type": "DisruptionTarget",
            "status": "True",
            "reason": "PreemptionByScheduler",
            "message": "default-scheduler: preempting to accommodate a higher priority pod",
            "lastTransitionTime": victim["status"]["conditions"][0]["lastTransitionTime"],
        }
        # Preemption succeeded, so FailedScheduling carries no "preemption:" part.
        assert cluster.events("important") == [
            (
                "Warning",
                "FailedScheduling",
                "0/1 nodes are available: 1 Insufficient cpu.",
                "default-scheduler",
            )
        ]
        assert cluster.get_pod("important")["status"]["nominatedNodeName"] == "n1"
        no_grace = DeleteOptions(grace_period_seconds=0)  # no node agent here to finish it
        cluster.run(cluster.client.delete(PODS, "default", "low", no_grace))
        cluster.settle(5.0)
        assert cluster.get_pod("important")["spec"]["nodeName"] == "n1"
    finally:
        cluster.close()


def test_the_clusters_seed_chooses_among_equal_preemption_candidates() -> None:
    """Preemption visits the nodes from a random offset, and of equally good candidates takes
    the first it met: which node loses its pod is the run's seed's to decide, as every other
    random choice of the cluster is."""

    def victim_node(seed: int) -> str:
        cluster = Running(PREEMPTION, seed=seed)
        try:
            high = {"metadata": {"name": "high"}, "value": 1000}
            cluster.run(cluster.client.create(PRIORITY_CLASSES, "", high))
            for i in range(6):
                cluster.create(NODES, node(f"n{i}"))
                cluster.create(PODS, pod(f"low-{i}", cpu="2"))
            cluster.settle()
            important = pod("important", cpu="1")
            important["spec"]["priorityClassName"] = "high"
            cluster.create(PODS, important)
            cluster.settle()
            return str(cluster.get_pod("important")["status"]["nominatedNodeName"])
        finally:
            cluster.close()

    assert victim_node(3) == victim_node(3)
    assert len({victim_node(seed) for seed in range(6)}) > 1


def test_pod_affinity_namespace_selectors_see_the_namespaces_labels(cluster: Running) -> None:
    labelled = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}}
    labelled["metadata"]["labels"] = {"team": "a"}
    cluster.run(cluster.client.create(NAMESPACES, "", labelled))
    cluster.create(NODES, node("n1"))
    cluster.create(NODES, node("n2"))
    db = pod("db")
    db["metadata"]["labels"] = {"app": "db"}
    db["spec"]["nodeName"] = "n2"
    cluster.run(cluster.client.create(PODS, "team-a", db))
    web = pod("web")
    term = {
        "labelSelector": {"matchLabels": {"app": "db"}},
        "namespaceSelector": {"matchLabels": {"team": "a"}},
        "topologyKey": "kubernetes.io/hostname",
    }
    web["spec"]["affinity"] = {
        "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
    }
    for name in ("n1", "n2"):
        labels = {"metadata": {"labels": {"kubernetes.io/hostname": name}}}
        cluster.run(cluster.client.patch(NODES, "", name, labels))
    cluster.create(PODS, web)
    cluster.settle()
    assert cluster.get_pod("web")["spec"]["nodeName"] == "n2"


def _spread_by_default_constraints(cluster: Running, kind: Any, owner_kind: str) -> list[str]:
    """Six pods of a workload of `kind`, placed one at a time on a big node and two small
    ones: LeastAllocated alone puts 4 on the big node; the system default constraints
    (hostname maxSkew 3, ScheduleAnyway) spread the workload's pods evenly."""
    for name, cpu in (("big", "64"), ("n1", "4"), ("n2", "4")):
        labelled = node(name, cpu)
        labelled["metadata"]["labels"] = {"kubernetes.io/hostname": name}
        cluster.create(NODES, labelled)
    template = {"metadata": {"labels": {"app": "web"}}, "spec": pod("x")["spec"]}
    workload = {
        "apiVersion": "apps/v1",
        "kind": owner_kind,
        "metadata": {"name": "web"},
        "spec": {"replicas": 6, "selector": {"matchLabels": {"app": "web"}}, "template": template},
    }
    uid = cluster.run(cluster.client.create(kind, "default", workload))["metadata"]["uid"]
    owner = {"apiVersion": "apps/v1", "kind": owner_kind, "name": "web", "uid": uid}
    for i in range(6):
        replica = pod(f"web-{i}")
        replica["metadata"].update(
            labels={"app": "web"}, ownerReferences=[{**owner, "controller": True}]
        )
        cluster.create(PODS, replica)
        cluster.settle(0.5)
    return sorted(cluster.get_pod(f"web-{i}")["spec"]["nodeName"] for i in range(6))


def test_pods_of_a_replica_set_are_spread_by_the_default_constraints(cluster: Running) -> None:
    placed = _spread_by_default_constraints(cluster, REPLICA_SETS, "ReplicaSet")
    assert placed == ["big", "big", "n1", "n1", "n2", "n2"]


def test_pods_of_a_stateful_set_are_spread_by_the_default_constraints(cluster: Running) -> None:
    placed = _spread_by_default_constraints(cluster, STATEFUL_SETS, "StatefulSet")
    assert placed == ["big", "big", "n1", "n1", "n2", "n2"]
