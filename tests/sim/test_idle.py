"""Simulated time in which nothing happens costs (almost) nothing: an idle day of a cluster
neither writes to the store nor wakes its components second by second, and what happens after
a long idle time (a node failing) happens at the times v1.32 gives, as after a short one."""

from __future__ import annotations

from typing import Any

from pinnace.api import catalog
from pinnace.clock import parse_time
from pinnace.sim import Simulation

HOUR = 3600.0
DAY = 24 * HOUR
NODES = catalog.kind("", "nodes")
PODS = catalog.kind("", "pods")
EVENTS = catalog.kind("", "events")
LEASES = catalog.kind("coordination.k8s.io", "leases")
FAILED = "pool-3"


def scenario(nodes: int = 20, fail_at: float | None = None) -> dict[str, Any]:
    """`nodes` nodes in two zones, a Deployment of four pods and a pod on FAILED; that node
    fails at `fail_at` seconds, if given."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "bound", "namespace": "default"},
        "spec": {"nodeName": FAILED, "containers": [{"name": "c", "image": "nginx"}]},
    }
    labels = {"app": "web"}
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "replicas": 4,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    }
    timeline = [] if fail_at is None else [{"at": f"{fail_at:.0f}s", "failNode": {"node": FAILED}}]
    return {
        "apiVersion": "sim.pinnace.dev/v1alpha1",
        "kind": "Scenario",
        "metadata": {"name": "idle"},
        "spec": {
            "cluster": {
                "nodePools": [
                    {"name": "pool", "count": nodes, "capacity": {"cpu": "4", "memory": "8Gi"}}
                ]
            },
            "objects": [pod, deployment],
            "timeline": timeline,
            "metrics": {"interval": "1h"},
        },
    }


def test_an_idle_day_writes_nothing_and_wakes_the_cluster_only_now_and_then() -> None:
    with Simulation(scenario()) as sim:
        sim.advance(2 * HOUR)  # settled, and the Events of the start expired
        revision, callbacks = sim.store.revision, sim.loop.events_processed
        sim.advance(2 * HOUR + DAY)
        written = sim.store.revision - revision
        woken = sim.loop.events_processed - callbacks
    assert written == 0
    # A pass every 5 s of the node lifecycle controller alone would be 17,280; a heartbeat
    # wheel turning every second, 86,400. What is left: compaction every 5 minutes, the pods'
    # service account tokens refreshed hourly, a metrics sample an hour.
    assert woken < 2_000


def test_a_node_left_failed_for_a_day_is_not_looked_at_every_5_s_and_recovers() -> None:
    with Simulation(scenario(fail_at=30 * 60)) as sim:
        sim.advance(3 * HOUR)  # Unknown, tainted, its pod evicted
        callbacks = sim.loop.events_processed
        sim.advance(3 * HOUR + DAY)
        woken = sim.loop.events_processed - callbacks
        sim.run_coroutine(sim.plane.nodes.recover_node(FAILED))
        sim.advance(3 * HOUR + DAY + 60)
        node = sim.run_coroutine(sim.client.get(NODES, "", FAILED))
    assert woken < 2_000  # not a node lifecycle pass every 5 s
    ready = next(c for c in node["status"]["conditions"] if c["type"] == "Ready")
    assert ready["status"] == "True"
    assert not node["spec"].get("taints")


def test_a_lease_read_after_30_idle_days_shows_a_renewal_seconds_ago() -> None:
    with Simulation(scenario(nodes=3)) as sim:
        sim.advance(30 * DAY)
        lease = sim.run_coroutine(sim.client.get(LEASES, "kube-node-lease", "pool-2"))
        listed = sim.run_coroutine(sim.client.list(LEASES, "kube-node-lease"))["items"]
        now = sim.clock.now()
    # renewed every 10 s (renewInterval: a quarter of leaseDurationSeconds, 40 s)
    assert 0 < now - parse_time(lease["spec"]["renewTime"]) <= 10
    assert len(listed) == 3
    for item in listed:
        assert 0 < now - parse_time(item["spec"]["renewTime"]) <= 10


def failure(fail_at: float) -> dict[str, Any]:
    """What a user sees of FAILED and its pod, times counted from the failure."""
    with Simulation(scenario(fail_at=fail_at)) as sim:
        sim.advance(fail_at)
        failed_at = sim.clock.now()
        renewed = sim.plane.nodes.last_renewal(FAILED)
        assert renewed is not None
        sim.advance(fail_at + 10 * 60)
        node = sim.run_coroutine(sim.client.get(NODES, "", FAILED))
        pod = sim.run_coroutine(sim.client.get(PODS, "default", "bound"))
        events = sim.run_coroutine(sim.client.list(EVENTS, ""))["items"]

    def since(stamp: str) -> float:
        return parse_time(stamp) - failed_at

    ready = next(c for c in node["status"]["conditions"] if c["type"] == "Ready")
    return {
        "renewed": renewed - failed_at,
        "ready": (ready["status"], ready["reason"], since(ready["lastTransitionTime"])),
        "taints": sorted(
            (t["key"], t["effect"], since(t["timeAdded"])) for t in node["spec"]["taints"]
        ),
        "pod deleted": since(pod["metadata"]["deletionTimestamp"]),
        "events": sorted(
            (e["reason"], e["involvedObject"]["name"], since(e["lastTimestamp"]))
            for e in events
            if e["involvedObject"].get("name") in (FAILED, "bound")
            and since(e["lastTimestamp"]) >= 0
        ),
    }


def test_a_node_failing_after_30_idle_days_is_handled_at_v1_32s_times() -> None:
    soon, late = failure(30 * 60), failure(30 * DAY + 30 * 60)
    assert late == soon
    # Unknown once nodeMonitorGracePeriod (50 s) has passed since the pass (every 5 s) that
    # first saw the last renewal; the NoSchedule taint at once, the NoExecute one by the next
    # pass; the pod evicted when its default toleration (300 s) of it runs out
    status, reason, unknown = late["ready"]
    assert (status, reason) == ("Unknown", "NodeStatusUnknown")
    assert 50 < unknown - late["renewed"] <= 5 + 50 + 5
    tainted = unknown + 5
    assert late["taints"] == [
        ("node.kubernetes.io/unreachable", "NoExecute", tainted),
        ("node.kubernetes.io/unreachable", "NoSchedule", unknown),
    ]
    assert late["pod deleted"] == tainted + 300 + 30  # deleted with its 30 s of grace
    assert ("NodeNotReady", FAILED, unknown) in late["events"]
