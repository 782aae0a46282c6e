"""A node agent as the API shows it: its Node, its Lease, its pods' lives."""

from __future__ import annotations

from typing import Any

import pytest
from tests.client.conftest import CONFIG_MAPS, config_map
from tests.kubelet.conftest import EVENTS, LEASES, NODES, PODS, Node, pod

from pinnace.clock import parse_time
from pinnace.kubelet.worker import PodWorker


def test_node_registers_with_allocatable_from_its_config(node: Node) -> None:
    registered = node.run(node.client.get(NODES, "", "node-1"))
    status = registered["status"]
    # Every page size of the machine, none pre-allocated.
    assert status["capacity"] == {
        "cpu": "2",
        "ephemeral-storage": "20Gi",
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
        "memory": "4Gi",
        "pods": "10",
    }
    # memory: 4Gi - 256Mi kube-reserved - 100Mi hard eviction; storage: 20Gi - 10% (in float32)
    assert status["allocatable"] == {
        "cpu": "2",
        "ephemeral-storage": "19327352800",
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
        "memory": "3740Mi",
        "pods": "10",
    }
    conditions = {c["type"]: (c["status"], c["reason"]) for c in status["conditions"]}
    assert conditions == {
        "NetworkUnavailable": ("False", "SimulatedNetworkIsUp"),
        "MemoryPressure": ("False", "KubeletHasSufficientMemory"),
        "DiskPressure": ("False", "KubeletHasNoDiskPressure"),
        "PIDPressure": ("False", "KubeletHasSufficientPID"),
        "Ready": ("True", "KubeletReady"),
    }
    assert status["nodeInfo"]["kubeletVersion"].startswith("v1.32.")
    labels = registered["metadata"]["labels"]
    assert labels["kubernetes.io/hostname"] == "node-1"
    assert labels["pinnace.dev/simulated"] == "true"
    assert {"type": "Hostname", "address": "node-1"} in status["addresses"]


def test_lease_is_renewed_every_10_seconds_and_status_every_5_minutes(node: Node) -> None:
    def renewed() -> float:
        lease = node.run(node.client.get(LEASES, "kube-node-lease", "node-1"))
        assert lease["spec"]["holderIdentity"] == "node-1"
        assert lease["spec"]["leaseDurationSeconds"] == 40
        assert lease["metadata"]["ownerReferences"][0]["kind"] == "Node"
        return parse_time(lease["spec"]["renewTime"])

    def heartbeat() -> float:
        ready = node.run(node.client.get(NODES, "", "node-1"))["status"]["conditions"][-1]
        assert ready["type"] == "Ready"
        return parse_time(ready["lastHeartbeatTime"])

    first, first_heartbeat = renewed(), heartbeat()
    times = []
    for _ in range(3):
        node.settle(10)
        times.append(renewed())
    assert [round(t - first) for t in times] == [10, 20, 30]
    assert heartbeat() == first_heartbeat  # nothing changed: no status post yet
    node.settle(300)
    assert 0 < heartbeat() - first_heartbeat <= 310


def test_bound_pod_runs_with_the_status_the_kubelet_reports(node: Node) -> None:
    created = node.create_pod(pod("web", cpu="500m"))
    node.run(node.client.bind(created, "node-1"))
    node.settle()
    running = node.get_pod("web")
    status = running["status"]
    assert status["phase"] == "Running"
    assert status["qosClass"] == "Burstable"
    assert status["hostIP"] == "10.0.0.1"
    assert status["podIP"].startswith("10.128.1.")
    assert status["podIPs"] == [{"ip": status["podIP"]}]
    assert "startTime" in status
    assert [(c["type"], c["status"]) for c in status["conditions"]] == [
        ("PodReadyToStartContainers", "True"),
        ("Initialized", "True"),
        ("Ready", "True"),
        ("ContainersReady", "True"),
        ("PodScheduled", "True"),
    ]
    [container] = status["containerStatuses"]
    assert container["name"] == "app"
    assert container["ready"] is True
    assert container["started"] is True
    assert container["restartCount"] == 0
    assert container["image"] == "docker.io/library/nginx:1.27"
    assert container["imageID"].startswith("docker.io/library/nginx@sha256:")
    assert container["containerID"].startswith("containerd://")
    assert list(container["state"]) == ["running"]
    assert container["lastState"] == {}


def test_pod_with_node_name_asking_too_much_cpu_is_rejected_out_of_cpu(node: Node) -> None:
    node.create_pod(pod("small", node="node-1", cpu="500m"))
    node.settle()
    node.create_pod(pod("big", node="node-1", cpu="2"))
    node.settle()
    rejected = node.get_pod("big")["status"]
    assert rejected["phase"] == "Failed"
    assert rejected["reason"] == "OutOfcpu"
    assert rejected["message"] == (
        "Pod was rejected: Node didn't have enough resource: cpu, requested: 2000, used: 500, "
        "capacity: 2000"
    )
    assert node.get_pod("small")["status"]["phase"] == "Running"
    node.run(node.agent.recorder.flush())
    events = node.run(node.client.list(EVENTS, "default", field_selector="reason=OutOfcpu"))
    [event] = events["items"]
    assert event["involvedObject"]["name"] == "big"
    assert event["type"] == "Warning"
    assert event["source"] == {"component": "kubelet", "host": "node-1"}


def test_a_pod_that_completes_frees_its_resources(node: Node) -> None:
    node.create_pod(pod("once", node="node-1", cpu="2", restart_policy="Never", run_seconds="5"))
    node.settle()
    assert node.get_pod("once")["status"]["phase"] == "Running"
    node.create_pod(pod("early", node="node-1", cpu="2"))
    node.settle(5)
    assert node.get_pod("early")["status"]["reason"] == "OutOfcpu"
    done = node.get_pod("once")["status"]
    assert done["phase"] == "Succeeded"
    terminated = done["containerStatuses"][0]["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (0, "Completed")
    assert [(c["type"], c["status"], c.get("reason")) for c in done["conditions"][2:4]] == [
        ("Ready", "False", "PodCompleted"),
        ("ContainersReady", "False", "PodCompleted"),
    ]
    node.create_pod(pod("later", node="node-1", cpu="2"))
    node.settle()
    assert node.get_pod("later")["status"]["phase"] == "Running"


def test_a_starting_node_records_the_kubelet_events(node: Node) -> None:
    node.run(node.agent.recorder.flush())
    events = node.run(
        node.client.list(EVENTS, "default", field_selector="involvedObject.kind=Node")
    )["items"]
    assert [(e["reason"], e["message"]) for e in events] == [
        ("Starting", "Starting kubelet."),
        ("NodeHasSufficientMemory", "Node node-1 status is now: NodeHasSufficientMemory"),
        ("NodeHasNoDiskPressure", "Node node-1 status is now: NodeHasNoDiskPressure"),
        ("NodeHasSufficientPID", "Node node-1 status is now: NodeHasSufficientPID"),
        ("NodeAllocatableEnforced", "Updated Node Allocatable limit across pods"),
        ("NodeReady", "Node node-1 status is now: NodeReady"),
    ]
    assert {e["involvedObject"]["uid"] for e in events} == {"node-1"}
    assert {e["source"]["host"] for e in events} == {"node-1"}


def test_a_cordoned_node_records_not_schedulable_then_schedulable(node: Node) -> None:
    def schedulable_events() -> list[tuple[str, str]]:
        node.run(node.agent.recorder.flush())
        events = node.run(
            node.client.list(EVENTS, "default", field_selector="involvedObject.kind=Node")
        )["items"]
        return [(e["reason"], e["message"]) for e in events if "Schedulable" in e["reason"]]

    node.run(node.client.patch(NODES, "", "node-1", {"spec": {"unschedulable": True}}))
    node.settle(10)  # the next node status update (nodeStatusUpdateFrequency)
    assert schedulable_events() == [
        ("NodeNotSchedulable", "Node node-1 status is now: NodeNotSchedulable")
    ]
    node.settle(20)
    assert len(schedulable_events()) == 1  # recorded when it changes only
    node.run(node.client.patch(NODES, "", "node-1", {"spec": {"unschedulable": None}}))
    node.settle(10)
    assert schedulable_events() == [
        ("NodeNotSchedulable", "Node node-1 status is now: NodeNotSchedulable"),
        ("NodeSchedulable", "Node node-1 status is now: NodeSchedulable"),
    ]


def test_the_kubelet_leaves_network_unavailable_to_the_network_plugin(node: Node) -> None:
    registered = node.run(node.client.get(NODES, "", "node-1"))
    broken = {
        "type": "NetworkUnavailable",
        "status": "True",
        "lastHeartbeatTime": "2026-01-01T00:00:00Z",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
        "reason": "NoRouteCreated",
        "message": "the route controller has not created a route",
    }
    conditions = [
        broken if c["type"] == "NetworkUnavailable" else c
        for c in registered["status"]["conditions"]
    ]
    node.run(
        node.client.update_status(
            NODES, {**registered, "status": {**registered["status"], "conditions": conditions}}
        )
    )
    node.settle(310)  # past the kubelet's periodic status post
    after = node.run(node.client.get(NODES, "", "node-1"))["status"]["conditions"]
    assert after[0] == broken
    assert after[-1]["type"] == "Ready"
    assert (
        after[-1]["lastHeartbeatTime"]
        != registered["status"]["conditions"][-1]["lastHeartbeatTime"]
    )


def test_a_replacement_pod_does_not_get_the_deleted_pods_ip(node: Node) -> None:
    # host-local IPAM hands out the address after the last one it gave, so a pod made just
    # after another went gets a new IP, not the one just released.
    node.create_pod(pod("old", node="node-1"))
    node.settle()
    old_ip = node.get_pod("old")["status"]["podIP"]
    node.run(node.client.delete(PODS, "default", "old"))
    node.settle(35)  # past its grace period: gone, its sandbox and IP with it
    assert [
        p["metadata"]["name"] for p in node.run(node.client.list(PODS, "default"))["items"]
    ] == []
    node.create_pod(pod("new", node="node-1"))
    node.settle()
    new_ip = node.get_pod("new")["status"]["podIP"]
    assert old_ip.startswith("10.128.1.") and new_ip.startswith("10.128.1.")
    assert new_ip != old_ip


def test_a_pod_the_agent_fails_on_is_reported_and_still_deletes(
    node: Node, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Whatever goes wrong with one pod (here the start of its containers) is that pod's: an
    # event says so, the node's other pods go on, and the pod can be deleted.
    start = PodWorker.start

    def start_or_fail(worker: PodWorker) -> None:
        if worker.name == "cursed":
            raise RuntimeError("the runtime is cursed")
        start(worker)

    monkeypatch.setattr(PodWorker, "start", start_or_fail)
    node.create_pod(pod("cursed", node="node-1"))
    node.settle()
    node.create_pod(pod("fine", node="node-1"))
    node.settle()
    assert node.get_pod("fine")["status"]["phase"] == "Running"
    events = node.run(node.client.list(EVENTS, "default", field_selector="reason=FailedSync"))
    assert [(e["involvedObject"]["name"], e["type"], e["message"]) for e in events["items"]] == [
        ("cursed", "Warning", "error syncing pod: RuntimeError: the runtime is cursed")
    ]
    node.run(node.client.delete(PODS, "default", "cursed"))
    node.settle()
    remaining = node.run(node.client.list(PODS, "default"))["items"]
    assert [p["metadata"]["name"] for p in remaining] == ["fine"]


def test_a_pod_timer_that_fails_is_the_pods_failure(
    node: Node, monkeypatch: pytest.MonkeyPatch
) -> None:
    def cursed(worker: PodWorker) -> None:
        raise RuntimeError("the deadline is cursed")

    monkeypatch.setattr(PodWorker, "_deadline_exceeded", cursed)
    body = pod("timed", node="node-1")
    body["spec"]["activeDeadlineSeconds"] = 5
    node.create_pod(body)
    node.settle(10)
    events = node.run(node.client.list(EVENTS, "default", field_selector="reason=FailedSync"))
    assert [(e["involvedObject"]["name"], e["message"]) for e in events["items"]] == [
        ("timed", "error syncing pod: RuntimeError: the deadline is cursed")
    ]
    node.run(node.client.delete(PODS, "default", "timed"))
    node.settle()
    assert node.run(node.client.list(PODS, "default"))["items"] == []


def test_a_probe_result_the_worker_fails_on_is_the_pods_failure(
    node: Node, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The probe passes as the container starts, then fails on a later tick of its own timer.
    probe_result = PodWorker._probe_result

    def cursed(worker: PodWorker, c: Any, prober: Any, success: bool) -> None:
        if not success:
            raise RuntimeError("the probe is cursed")
        probe_result(worker, c, prober, success)

    monkeypatch.setattr(PodWorker, "_probe_result", cursed)
    body = pod("probed", node="node-1", readiness_fails_after="30")
    body["spec"]["containers"][0]["readinessProbe"] = {"exec": {"command": ["true"]}}
    node.create_pod(body)
    node.settle(10)
    assert node.get_pod("probed")["status"]["containerStatuses"][0]["ready"] is True
    node.settle(60)
    events = node.run(node.client.list(EVENTS, "default", field_selector="reason=FailedSync"))
    assert [(e["involvedObject"]["name"], e["message"]) for e in events["items"]] == [
        ("probed", "error syncing pod: RuntimeError: the probe is cursed")
    ]


def test_a_config_map_change_one_pod_fails_on_is_that_pods_failure(
    node: Node, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two pods wait for the same ConfigMap; the first fails as it hears of it, the other
    # still hears of it and starts.
    source_changed = PodWorker.source_changed

    def cursed(worker: PodWorker) -> None:
        if worker.name == "cursed":
            raise RuntimeError("the config map is cursed")
        source_changed(worker)

    monkeypatch.setattr(PodWorker, "source_changed", cursed)
    ref = {"configMapKeyRef": {"name": "settings", "key": "level"}}
    for name in ("cursed", "fine"):
        body = pod(name, node="node-1")
        body["spec"]["containers"][0]["env"] = [{"name": "LEVEL", "valueFrom": ref}]
        node.create_pod(body)
    node.settle()
    node.run(node.client.create(CONFIG_MAPS, "default", config_map("settings", level="debug")))
    node.settle()
    assert node.get_pod("fine")["status"]["phase"] == "Running"
    events = node.run(node.client.list(EVENTS, "default", field_selector="reason=FailedSync"))
    assert [(e["involvedObject"]["name"], e["message"]) for e in events["items"]] == [
        ("cursed", "error syncing pod: RuntimeError: the config map is cursed")
    ]
