"""Node-pressure eviction on a node agent, as a user observes it through the API: pods evicted
one at a time in the kubelet's order, Failed with reason Evicted and its message, the Evicted
and node events, the pressure condition held for its transition period, and pods refused while
the node is under pressure."""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from tests.controllers.lifecycle_cluster import LifecycleCluster
from tests.controllers.lifecycle_cluster import pod as lifecycle_pod
from tests.kubelet.conftest import EVENTS, LEASES, NODES, PODS, Node, pod

from pinnace.api.options import DeleteOptions
from pinnace.api.status import StatusError
from pinnace.clock import parse_time
from pinnace.kubelet import NodeConfig


def memory_pod(
    name: str, usage: str, *, request: str = "", limit: str = "", grace: int | None = None
) -> dict[str, Any]:
    body = pod(name, node="node-1", memory=usage)
    resources: dict[str, Any] = {}
    if request:
        resources["requests"] = {"memory": request}
    if limit:
        resources["limits"] = {"memory": limit, "cpu": "100m"}
        resources["requests"] = {"memory": request or limit, "cpu": "100m"}
    if resources:
        body["spec"]["containers"][0]["resources"] = resources
    if grace is not None:
        body["spec"]["terminationGracePeriodSeconds"] = grace
    return body


def pressed_node(**settings: Any) -> NodeConfig:
    """A 4Gi node, under memory pressure whenever less than 3.5Gi is free unless told."""
    return NodeConfig(
        name="node-1",
        capacity={"cpu": "2", "memory": "4Gi", "pods": "10", "ephemeral-storage": "20Gi"},
        eviction_pressure_transition_period=60,
        **{"eviction_hard": {"memory.available": "3.5Gi"}, **settings},
    )


@pytest.fixture
def node() -> Iterator[Node]:
    n = Node(pressed_node())
    yield n
    n.close()


def status(node: Node, name: str) -> dict[str, Any]:
    return node.get_pod(name)["status"]


def events(node: Node, reason: str) -> list[tuple[str, str, str]]:
    items = node.run(node.client.list(EVENTS, "default"))["items"]
    return [
        (e["involvedObject"]["name"], e["type"], e["message"])
        for e in sorted(items, key=lambda e: e["metadata"]["name"])
        if e["reason"] == reason
    ]


def condition(node: Node, kind: str) -> dict[str, Any]:
    got = node.run(node.client.get(NODES, "", "node-1"))
    return next(c for c in got["status"]["conditions"] if c["type"] == kind)


@pytest.fixture
def reclaiming() -> Iterator[Node]:
    """Under pressure below 1Gi free, and until 1Gi + 2Gi is free again."""
    n = Node(
        pressed_node(
            eviction_hard={"memory.available": "1Gi"},
            eviction_minimum_reclaim={"memory.available": "2Gi"},
        )
    )
    yield n
    n.close()


def test_memory_pressure_evicts_best_effort_then_burstable_then_guaranteed(
    reclaiming: Node,
) -> None:
    node = reclaiming
    names = ("guaranteed", "burstable", "best-effort")
    node.create_pod(memory_pod("guaranteed", "1200Mi", limit="1536Mi"))
    node.create_pod(memory_pod("burstable", "1Gi", request="100Mi"))
    node.create_pod(memory_pod("best-effort", "1Gi"))
    node.settle(8)  # all running, 800Mi free, before the first synchronization at 10 s
    assert {status(node, n)["phase"] for n in names} == {"Running"}
    finished: list[str] = []
    for _ in range(20):
        node.settle(1)
        finished += [n for n in names if n not in finished and status(node, n)["phase"] == "Failed"]
    assert finished == ["best-effort", "burstable", "guaranteed"]

    evicted = status(node, "burstable")
    assert evicted["reason"] == "Evicted"
    message = evicted["message"]
    assert message == (
        "The node was low on resource: memory. Threshold quantity: 1Gi, available: 1872Mi. "
        "Container app was using 1Gi, request is 100Mi, has larger consumption of memory. "
    )
    disruption = evicted["conditions"][-1]
    assert {k: disruption[k] for k in ("type", "status", "reason", "message")} == {
        "type": "DisruptionTarget",
        "status": "True",
        "reason": "TerminationByKubelet",
        "message": message,
    }
    terminated = evicted["containerStatuses"][0]["state"]["terminated"]
    assert terminated["exitCode"] == 0  # nginx shut down on SIGTERM, within its 1 s
    assert [(n, t) for n, t, _ in events(node, "Evicted")] == [
        ("best-effort", "Warning"),
        ("burstable", "Warning"),
        ("guaranteed", "Warning"),
    ]
    assert ("node-1", "Warning", "Attempting to reclaim memory") in events(
        node, "EvictionThresholdMet"
    )
    pressure = condition(node, "MemoryPressure")
    assert (pressure["status"], pressure["reason"], pressure["message"]) == (
        "True",
        "KubeletHasInsufficientMemory",
        "kubelet has insufficient memory available",
    )
    assert [m for _, _, m in events(node, "NodeHasInsufficientMemory")] == [
        "Node node-1 status is now: NodeHasInsufficientMemory"
    ]


def test_pressure_condition_lasts_the_transition_period_after_recovery(node: Node) -> None:
    node.create_pod(memory_pod("hog", "700Mi", request="100Mi"))
    node.settle(12)  # evicted at the 10 s synchronization
    assert status(node, "hog")["reason"] == "Evicted"
    assert condition(node, "MemoryPressure")["status"] == "True"
    node.settle(50)  # last seen at 10 s; 60 s later it clears
    assert condition(node, "MemoryPressure")["status"] == "True"
    node.settle(10)
    cleared = condition(node, "MemoryPressure")
    assert (cleared["status"], cleared["reason"]) == ("False", "KubeletHasSufficientMemory")
    assert [m for _, _, m in events(node, "NodeHasSufficientMemory")][-1] == (
        "Node node-1 status is now: NodeHasSufficientMemory"
    )


def test_under_memory_pressure_best_effort_pods_are_rejected(node: Node) -> None:
    node.create_pod(memory_pod("hog", "700Mi", request="100Mi"))
    node.settle(12)  # evicted at 10 s; the pressure condition stays for its transition period
    assert condition(node, "MemoryPressure")["status"] == "True"
    node.create_pod(pod("late", node="node-1"))
    node.create_pod(memory_pod("late-burstable", "10Mi", request="10Mi"))
    node.settle(1)
    late = status(node, "late")
    assert (late["phase"], late["reason"], late["message"]) == (
        "Failed",
        "Evicted",
        "Pod was rejected: The node had condition: [MemoryPressure]. ",
    )
    assert events(node, "Evicted")[-1] == (
        "late",
        "Warning",
        "The node had condition: [MemoryPressure]. ",
    )
    assert status(node, "late-burstable")["phase"] == "Running"


def test_soft_threshold_evicts_only_after_its_grace_period() -> None:
    soft = pressed_node(
        eviction_hard={},
        eviction_soft={"memory.available": "3.5Gi"},
        eviction_soft_grace_period={"memory.available": 30.0},
        eviction_max_pod_grace_period=5,
    )
    node = Node(soft)
    try:
        web = memory_pod("web", "700Mi", request="100Mi", grace=60)
        web["metadata"]["annotations"]["sim.pinnace.dev/stop-seconds"] = "10"  # ignores TERM
        node.create_pod(web)
        node.settle(12)  # crossed at the 10 s synchronization: pressure, no eviction yet
        assert condition(node, "MemoryPressure")["status"] == "True"
        assert status(node, "web")["phase"] == "Running"
        node.settle(25)  # 30 s after it was first seen: 40 s
        assert status(node, "web")["phase"] == "Running"
        node.settle(3)  # evicted at 40 s with 5 s to stop (the maximum, shorter than its 60)
        stopping = status(node, "web")
        assert (stopping["phase"], stopping.get("reason")) == ("Running", None)
        assert [n for n, _, _ in events(node, "Evicted")] == ["web"]
        node.settle(5)  # killed at 45 s: now it shows Failed
        evicted = status(node, "web")
        assert (evicted["phase"], evicted["reason"]) == ("Failed", "Evicted")
        assert evicted["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 137
    finally:
        node.close()


def test_a_pod_growing_into_pressure_is_evicted_when_it_crosses(node: Node) -> None:
    node.create_pod(memory_pod("grower", "ramp 0 1Gi 100s", request="100Mi"))
    node.settle(55)  # 550Mi used at 50 s: 3.5Gi free, just enough
    assert condition(node, "MemoryPressure")["status"] == "False"
    assert status(node, "grower")["phase"] == "Running"
    node.settle(10)  # 614Mi at 60 s: less than 3.5Gi free
    grower = status(node, "grower")
    assert (grower["phase"], grower["reason"]) == ("Failed", "Evicted")
    assert condition(node, "MemoryPressure")["status"] == "True"


def test_memory_pressure_taints_the_node_while_the_condition_lasts() -> None:
    cluster = LifecycleCluster({"a": 1})  # a 16Gi node with the kubelet's default thresholds
    try:
        hog = lifecycle_pod("hog", "a-0")
        hog["metadata"]["annotations"] = {"sim.pinnace.dev/memory": "16334Mi"}  # 50Mi left
        cluster.run(cluster.client.create(PODS, "default", hog))
        cluster.wait(15)
        evicted = cluster.run(cluster.client.get(PODS, "default", "hog"))["status"]
        assert (evicted["phase"], evicted["reason"]) == ("Failed", "Evicted")
        assert cluster.taints("a-0") == {"node.kubernetes.io/memory-pressure:NoSchedule"}
        cluster.wait(300)  # the pressure transition period
        assert cluster.taints("a-0") == set()
    finally:
        cluster.close()


def disk_node(**settings: Any) -> Node:
    """A node of 20Gi of disk with the kubelet's default thresholds (imagefs below 15%,
    nodefs below 10%; one filesystem holds both)."""
    return Node(
        NodeConfig(
            name="node-1",
            capacity={"cpu": "2", "memory": "4Gi", "pods": "10", "ephemeral-storage": "20Gi"},
            **settings,
        )
    )


def test_disk_pressure_deletes_dead_containers_before_evicting_anyone() -> None:
    node = disk_node()
    try:
        done = pod("done", node="node-1", restart_policy="Never", run_seconds="2")
        done["metadata"]["annotations"]["sim.pinnace.dev/ephemeral-storage"] = "17Gi"
        node.create_pod(done)
        node.create_pod(pod("bystander", node="node-1"))
        node.settle(12)  # done exited at 2 s, its 17Gi writable layer left on disk
        assert status(node, "done")["phase"] == "Succeeded"
        assert status(node, "bystander")["phase"] == "Running"
        assert events(node, "Evicted") == []
        assert ("node-1", "Warning", "Attempting to reclaim ephemeral-storage") in events(
            node, "EvictionThresholdMet"
        )
        pressure = condition(node, "DiskPressure")
        assert (pressure["status"], pressure["reason"], pressure["message"]) == (
            "True",
            "KubeletHasDiskPressure",
            "kubelet has disk pressure",
        )
        # Under disk pressure every pod is refused, whatever its class.
        node.create_pod(memory_pod("late", "10Mi", request="10Mi"))
        node.settle(1)
        late = status(node, "late")
        assert (late["phase"], late["message"]) == (
            "Failed",
            "Pod was rejected: The node had condition: [DiskPressure]. ",
        )
    finally:
        node.close()


def test_disk_pressure_evicts_the_pod_writing_most() -> None:
    node = disk_node()
    try:
        writer = pod("writer", node="node-1")
        writer["metadata"]["annotations"]["sim.pinnace.dev/ephemeral-storage"] = "17Gi"
        node.create_pod(writer)
        node.create_pod(pod("bystander", node="node-1"))
        node.settle(12)
        evicted = status(node, "writer")
        assert (evicted["phase"], evicted["reason"]) == ("Failed", "Evicted")
        assert evicted["message"].startswith(
            "The node was low on resource: ephemeral-storage. Threshold quantity: "
        )
        assert evicted["message"].endswith(
            "Container app was using 17Gi, request is 0, has larger consumption of "
            "ephemeral-storage. "
        )
        assert status(node, "bystander")["phase"] == "Running"
    finally:
        node.close()


def test_a_pod_over_its_ephemeral_storage_limit_is_evicted_whatever_the_thresholds() -> None:
    node = disk_node(eviction_hard={})
    try:
        body = pod("filler", node="node-1")
        body["spec"]["containers"][0]["resources"] = {"limits": {"ephemeral-storage": "1Gi"}}
        body["metadata"]["annotations"]["sim.pinnace.dev/ephemeral-storage"] = "ramp 0 2Gi 20s"
        node.create_pod(body)
        node.settle(8)
        assert status(node, "filler")["phase"] == "Running"
        node.settle(15)  # past 1Gi at 10 s; seen at the 20 s pass at the latest
        filler = status(node, "filler")
        assert (filler["phase"], filler["reason"], filler["message"]) == (
            "Failed",
            "Evicted",
            "Pod ephemeral local storage usage exceeds the total limit of containers 1Gi. ",
        )
        assert "DisruptionTarget" not in {c["type"] for c in filler["conditions"]}
        assert condition(node, "DiskPressure")["status"] == "False"
    finally:
        node.close()


def test_pid_pressure_evicts_the_pod_running_most_processes() -> None:
    node = disk_node(eviction_hard={"pid.available": "4194000"})  # of 4194304
    try:
        forker = pod("forker", node="node-1", pids="500")
        node.create_pod(forker)
        node.create_pod(pod("quiet", node="node-1"))
        node.settle(12)
        evicted = status(node, "forker")
        assert (evicted["phase"], evicted["reason"]) == ("Failed", "Evicted")
        # The threshold as Kubernetes prints the quantity "4194000".
        assert evicted["message"] == (
            "The node was low on resource: pids. Threshold quantity: 4194k, available: 4193803. "
        )
        assert status(node, "quiet")["phase"] == "Running"
        pressure = condition(node, "PIDPressure")
        assert (pressure["status"], pressure["reason"], pressure["message"]) == (
            "True",
            "KubeletHasInsufficientPID",
            "kubelet has insufficient PID available",
        )
    finally:
        node.close()


# --- a pass that fails stops no loop ------------------------------------------------------------

NODE_STATUS_REPORT = 300
"""An unchanged node status is posted every nodeStatusReportFrequency (5 min)."""


def logging_pod(name: str, script: str) -> dict[str, Any]:
    body = pod(name, node="node-1")
    body["spec"]["containers"][0].update(image="busybox", command=["sh", "-c", script])
    return body


def heartbeat(node: Node) -> float:
    return parse_time(condition(node, "Ready")["lastHeartbeatTime"])


def renewed(node: Node) -> float:
    lease = node.run(node.client.get(LEASES, "kube-node-lease", "node-1"))
    return parse_time(lease["spec"]["renewTime"])


def heartbeats(node: Node, reports: int) -> tuple[list[float], list[float]]:
    """Ready's lastHeartbeatTime and the lease's renewTime after each of `reports` report
    periods."""
    beats, renewals = [], []
    for _ in range(reports):
        node.settle(NODE_STATUS_REPORT)
        beats.append(heartbeat(node))
        renewals.append(renewed(node))
    return beats, renewals


def advancing(times: list[float]) -> bool:
    return all(a < b for a, b in itertools.pairwise(times))


@pytest.mark.parametrize(
    "script", ["echo starting; sleep 5; echo done", "while true; do date; sleep 5; done"]
)
def test_a_pod_that_logs_leaves_node_status_and_eviction_going(
    node: Node, script: str, caplog: pytest.LogCaptureFixture
) -> None:
    node.create_pod(logging_pod("logger", script))
    beats, renewals = heartbeats(node, 3)
    assert advancing(beats) and advancing(renewals)
    node.create_pod(memory_pod("hog", "1Gi"))  # 3Gi free, under the 3.5Gi threshold
    node.settle(30)
    assert status(node, "hog")["reason"] == "Evicted"
    assert condition(node, "MemoryPressure")["status"] == "True"
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_eviction_goes_on_after_a_pod_that_logs_is_deleted(node: Node) -> None:
    node.create_pod(logging_pod("logger", "while true; do date; sleep 5; done"))
    node.settle(20)
    node.run(node.client.delete(PODS, "default", "logger"))
    node.settle(35)  # its shell, PID 1, ignores SIGTERM: killed when its grace period ends
    assert node.run(node.client.list(PODS, "default"))["items"] == []
    node.create_pod(memory_pod("hog", "1Gi"))
    node.settle(30)
    assert status(node, "hog")["reason"] == "Evicted"


def test_a_failing_eviction_pass_is_logged_once_and_stops_no_other_loop(
    node: Node, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(now: float) -> list[Any]:
        raise ValueError("a bad value")

    monkeypatch.setattr(node.agent.eviction, "synchronize", broken)
    node.create_pod(memory_pod("hog", "1Gi"))
    beats, renewals = heartbeats(node, 3)
    assert advancing(beats) and advancing(renewals)
    assert status(node, "hog")["phase"] == "Running"
    failures = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert [(r.levelname, r.getMessage()) for r in failures] == [
        (
            "ERROR",
            "node node-1: eviction manager failed, retried every period (logged once): "
            "ValueError: a bad value",
        )
    ]
    assert failures[0].exc_info is not None  # the traceback, once
    monkeypatch.undo()  # fixed: the next pass evicts
    node.settle(10)
    assert status(node, "hog")["reason"] == "Evicted"


def test_an_eviction_pass_unpacks_only_the_pod_it_evicts(node: Node) -> None:
    """Ranking and the storage-limit check read what the agent keeps of each pod at hand; the
    whole pod (kept packed) is unpacked only for the one evicted, for its grace period and
    message."""
    for i in range(6):
        node.create_pod(memory_pod(f"p{i}", f"{100 + i}Mi", request="50Mi"))
    node.settle(4)  # running, before the first synchronization at 10 s
    codec, unpacked = node.agent.codec, []
    unpack = codec.unpack

    def counted(packed: bytes | memoryview) -> dict[str, Any]:
        pod = unpack(packed)
        unpacked.append(pod["metadata"]["name"])
        return pod

    codec.unpack = counted  # type: ignore[method-assign]  # a spy on this codec only
    evictions = node.agent.eviction.synchronize(node.agent.clock.now())
    assert len(evictions) == 1
    assert unpacked == ["p5"]  # the largest use above its request goes first


def test_an_ephemeral_containers_use_counts_toward_pressure(node: Node) -> None:
    # The agent's ceiling of what its pods may use (which lets it skip eviction passes)
    # takes in an ephemeral container once it is added.
    from tests.kubelet.test_ephemeral import debug

    body = pod("web", node="node-1")
    body["metadata"]["annotations"]["sim.pinnace.dev/memory.debugger"] = "1Gi"
    node.create_pod(body)
    node.settle(30)
    assert status(node, "web")["phase"] == "Running"
    assert condition(node, "MemoryPressure")["status"] == "False"
    debug(node, "web", "debugger", "sleep", "3600", image="nginx:1.27")  # no image pulled
    node.settle(30)
    web = status(node, "web")
    assert (web["phase"], web["reason"]) == ("Failed", "Evicted")
    assert condition(node, "MemoryPressure")["status"] == "True"


def test_a_pod_being_deleted_is_still_a_candidate_and_is_killed_sooner(node: Node) -> None:
    # filterOutInactivePods keeps a pod whose termination is under way until its containers
    # have stopped: under pressure it is evicted again, with the eviction's shorter grace.
    hog = memory_pod("hog", "1Gi", request="100Mi", grace=300)
    hog["metadata"]["annotations"]["sim.pinnace.dev/stop-seconds"] = "300"  # ignores TERM
    node.create_pod(hog)
    node.create_pod(memory_pod("bystander", "10Mi", limit="100Mi"))
    node.settle(5)  # both running, before the first synchronization at 10 s
    node.run(node.client.delete(PODS, "default", "hog", DeleteOptions(grace_period_seconds=300)))
    node.settle(10)  # under pressure at 10 s: the hog, still stopping, is evicted with 1 s
    assert [n for n, _, _ in events(node, "Evicted")] == ["hog"]
    node.settle(5)  # killed after the kubelet's least grace period (2 s), then deleted
    with pytest.raises(StatusError):
        node.get_pod("hog")
    assert status(node, "bystander")["phase"] == "Running"


def sidecar_job(name: str, app_exit_code: str) -> dict[str, Any]:
    """A job whose app is done after 5 s, leaving its 1Gi sidecar to stop in its own good
    time (300 s) within the pod's 600 s grace period."""
    body = pod(name, node="node-1", restart_policy="Never")
    body["spec"]["terminationGracePeriodSeconds"] = 600
    body["spec"]["initContainers"] = [
        {"name": "proxy", "image": "envoy", "restartPolicy": "Always"},
    ]
    annotations = body["metadata"]["annotations"]
    annotations["sim.pinnace.dev/run-seconds.app"] = "5"
    annotations["sim.pinnace.dev/exit-code.app"] = app_exit_code
    annotations["sim.pinnace.dev/memory.proxy"] = "1Gi"
    annotations["sim.pinnace.dev/stop-seconds.proxy"] = "300"
    return body


@pytest.mark.parametrize(
    ("exit_code", "phase", "reason"), [("0", "Succeeded", None), ("1", "Failed", "Evicted")]
)
def test_a_done_pod_whose_sidecar_is_stopping_is_evicted_with_a_shorter_grace(
    node: Node, exit_code: str, phase: str, reason: str | None
) -> None:
    node.create_pod(sidecar_job("job", exit_code))
    node.settle(8)  # the app is done; the sidecar, stopping, still uses its memory
    assert status(node, "job")["phase"] == "Running"
    node.settle(4)  # the synchronization at 10 s evicts it: the sidecar is killed 2 s later
    assert [n for n, _, _ in events(node, "Evicted")] == ["job"]
    job = status(node, "job")
    [proxy] = job["initContainerStatuses"]
    assert proxy["state"]["terminated"]["exitCode"] == 137
    # The phase is worked out again from the containers once they have stopped: the
    # eviction's reason stays only on a failed pod, its DisruptionTarget condition on both.
    assert (job["phase"], job.get("reason")) == (phase, reason)
    assert job["conditions"][-1]["type"] == "DisruptionTarget"


def test_a_done_pod_whose_ephemeral_container_is_stopping_is_evicted(node: Node) -> None:
    from tests.kubelet.test_ephemeral import debug

    body = pod("job", node="node-1", restart_policy="Never", run_seconds="15")
    body["spec"]["terminationGracePeriodSeconds"] = 600
    annotations = body["metadata"]["annotations"]
    # the debugger takes 300 s to stop, and holds 1Gi from 20 s after it starts
    annotations["sim.pinnace.dev/memory.debugger"] = "spike 0 1Gi at 20s for 1h"
    annotations["sim.pinnace.dev/stop-seconds.debugger"] = "300"
    node.create_pod(body)
    node.settle(5)
    debug(node, "job", "debugger", "sleep", "3600", image="nginx:1.27")
    node.settle(20)  # the app is done; the debugger, stopping, holds its memory
    job = status(node, "job")
    assert job["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 0
    assert list(job["ephemeralContainerStatuses"][0]["state"]) == ["running"]
    node.settle(15)  # evicted at the next synchronization: the debugger is killed 2 s later
    assert [n for n, _, _ in events(node, "Evicted")] == ["job"]
    job = status(node, "job")
    [debugger] = job["ephemeralContainerStatuses"]
    assert debugger["state"]["terminated"]["exitCode"] == 137
    assert (job["phase"], job.get("reason")) == ("Succeeded", None)
    assert job["conditions"][-1]["type"] == "DisruptionTarget"
