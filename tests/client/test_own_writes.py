"""Objects a component of this process builds in decoded form (`Client.create_own`: the Events
it records; `Client.patch_own`: the kubelet's pod status; `Client.update_own`: its Lease
renewals; the kubelet's TokenRequests, `Client.grant_token`) are taken as they are, without
the API server decoding them again: every such write here is also decoded, and what is stored
(or answered) must be the decoded one, byte for byte (the JSON text the event log's digests and
every reader see). Every test of tests/kubelet checks the same (its conftest)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from typing import Any

import pytest
from tests.client.conftest import CONFIG_MAPS, EVENTS, PODS, Cluster, config_map, pod
from tests.client.own_writes import Checked, checking
from tests.kubelet.conftest import CONFIG, Node
from tests.sim import small_cluster

from pinnace.api.status import StatusError
from pinnace.bench.gym import scenario
from pinnace.client.correlator import AGGREGATE_MAX_EVENTS
from pinnace.client.events import EventRecorder
from pinnace.client.events_v1 import EventBroadcaster
from pinnace.clock import Clock, VirtualEventLoop
from pinnace.cluster import ClusterOptions, ControlPlane
from pinnace.sim.simulation import Simulation
from pinnace.store import MemoryStore


@pytest.fixture
def checked(monkeypatch: pytest.MonkeyPatch) -> Iterator[Checked]:
    yield from checking(monkeypatch)


def test_a_core_event_is_stored_as_its_body_would_decode(
    cluster: Cluster, checked: Checked
) -> None:
    recorder = EventRecorder(cluster.client, "kubelet", "node-1")

    async def scenario() -> None:
        created = await cluster.client.create(PODS, "default", pod("web"))
        recorder.event(created, "Normal", "Pulled", "Container image already present")
        recorder.event(created, "Normal", "", "", field_path="spec.containers{app}")
        recorder.event(created, "Warning", "BackOff", "")
        await recorder.flush()

    cluster.run(scenario())
    stored = cluster.run(cluster.client.list(EVENTS, "default"))["items"]
    assert checked.writes["Event"] == len(stored) == 3
    assert [(e.get("reason"), e.get("message")) for e in stored] == [
        ("Pulled", "Container image already present"),
        (None, None),  # left out when empty, as Go's encoding leaves them out
        ("BackOff", None),
    ]


def test_events_combined_by_aggregation_are_stored_as_they_would_decode(
    cluster: Cluster, checked: Checked
) -> None:
    recorder = EventRecorder(cluster.client, "kubelet", "node-1")

    async def scenario() -> None:
        created = await cluster.client.create(PODS, "default", pod("web"))
        for i in range(AGGREGATE_MAX_EVENTS + 1):
            recorder.event(created, "Warning", "", f"attempt {i}")
        await recorder.flush()

    cluster.run(scenario())
    stored = cluster.run(cluster.client.list(EVENTS, "default"))["items"]
    assert checked.writes["Event"] == len(stored)
    assert any(e["message"].startswith("(combined from similar events)") for e in stored)


def test_an_events_v1_event_is_stored_as_its_body_would_decode(
    cluster: Cluster, checked: Checked
) -> None:
    broadcaster = EventBroadcaster(cluster.client, "host-1")
    recorder = broadcaster.new_recorder("default-scheduler")

    async def scenario() -> None:
        created = await cluster.client.create(PODS, "default", pod("web"))
        other = await cluster.client.create(PODS, "default", pod("other"))
        recorder.eventf(created, None, "Normal", "Scheduled", "Binding", "assigned")
        recorder.eventf(created, other, "Warning", "Preempted", "Preempting", "")
        await broadcaster.flush()

    cluster.run(scenario())
    stored = cluster.run(cluster.client.list(EVENTS, "default"))["items"]
    assert checked.writes["Event"] == len(stored) == 2
    assert [e.get("message") for e in stored] == ["assigned", None]


def test_a_simulated_clusters_own_writes_are_taken_as_they_would_decode(
    checked: Checked,
) -> None:
    """The kubelets' and the scheduler's Events, and the kubelets' TokenRequests, of pods
    placed through the whole cluster."""
    sim = Simulation(scenario(4, 40, 200.0))
    try:
        sim.advance()
    finally:
        sim.close()
    assert checked.writes["Event"] >= 4 * 40
    assert checked.writes["TokenRequest"] == 40


def test_a_body_of_another_kind_is_refused_as_decoding_refuses_it(cluster: Cluster) -> None:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}

    async def create() -> None:
        await cluster.client.create_own(EVENTS, "default", body)

    with pytest.raises(Exception) as own:
        cluster.run(create())
    with pytest.raises(Exception) as decoded:
        cluster.run(cluster.client.create(EVENTS, "default", body))
    assert str(own.value) == str(decoded.value)


def _pod(name: str, container: dict[str, Any], **spec: Any) -> dict[str, Any]:
    body = pod(name)
    body["spec"] = {"containers": [{"name": "app", "image": "busybox:1.36", **container}], **spec}
    return body


async def _probes_volumes_evictions(plane: ControlPlane, seconds: float) -> dict[str, Any]:
    """Pods whose statuses take every shape the kubelet writes: waiting for a volume (no IP
    yet), crash looping, restarted by a liveness probe, ready and unready by a readiness
    probe, killed over their memory limit, failed by their deadline, evicted. Returns their
    statuses before the evictions, by name."""
    client = plane.client()
    liveness = {
        "args": ["/bin/sh", "-c", "touch /tmp/healthy; sleep 30; rm -f /tmp/healthy; sleep 600"],
        "livenessProbe": {"exec": {"command": ["cat", "/tmp/healthy"]}, "periodSeconds": 5},
    }
    readiness = {
        "command": ["/bin/sh", "-c", "sleep 3600"],
        "readinessProbe": {"httpGet": {"path": "/ready", "port": 80}, "periodSeconds": 5},
    }
    mounted = {"volumeMounts": [{"name": "config", "mountPath": "/etc/config"}]}
    oom = {
        "image": "polinux/stress",
        "command": ["stress"],
        "args": ["--vm", "1", "--vm-bytes", "250M", "--vm-hang", "1"],
        "resources": {"limits": {"memory": "100Mi"}, "requests": {"memory": "50Mi"}},
    }
    bodies = [
        _pod("liveness", liveness),
        _pod("readiness", readiness),
        _pod("mounted", mounted, volumes=[{"name": "config", "configMap": {"name": "late"}}]),
        _pod("oom", oom),
        _pod("deadline", {"command": ["sleep", "600"]}, activeDeadlineSeconds=60),
        _pod("crasher", {"command": ["/bin/sh", "-c", "sleep 5; exit 1"]}, restartPolicy="Never"),
        _pod("looper", {"command": ["/bin/sh", "-c", "sleep 5; exit 1"]}),
    ]
    for body in bodies:
        await client.create(PODS, "default", body)
    await asyncio.sleep(seconds / 3)
    await client.create(CONFIG_MAPS, "default", config_map("late", key="value"))
    await asyncio.sleep(seconds / 3)
    listed = (await client.list(PODS, "default"))["items"]
    for body in bodies:
        with contextlib.suppress(StatusError):
            await client.evict("default", body["metadata"]["name"])
    await asyncio.sleep(seconds / 3)
    return {p["metadata"]["name"]: p["status"] for p in listed}


def test_a_simulated_clusters_pod_statuses_are_taken_as_they_would_decode(
    checked: Checked,
) -> None:
    """The kubelets' status patches (`Client.patch_own`) in the determinism tests' cluster
    (crash loops, evictions, preemption, drains, Jobs) and in one of probes, volumes, memory
    kills, deadlines and evictions."""
    small_cluster.run(7, 1800.0)
    patched = checked.writes["Pod"]
    assert patched > 200

    loop = VirtualEventLoop()
    plane = ControlPlane(
        MemoryStore(), Clock(loop), ClusterOptions(nodes=small_cluster.nodes(2), simulated=True)
    )
    try:
        loop.run_until_complete(plane.start())
        statuses = loop.run_until_complete(_probes_volumes_evictions(plane, 600.0))
        loop.run_until_complete(plane.stop())
    finally:
        loop.close()
        asyncio.set_event_loop(None)
    assert checked.writes["Pod"] - patched > 50
    assert statuses["deadline"]["reason"] == "DeadlineExceeded"
    assert statuses["mounted"]["podIP"]
    [liveness] = statuses["liveness"]["containerStatuses"]
    [oom] = statuses["oom"]["containerStatuses"]
    assert liveness["restartCount"] > 0
    assert oom["lastState"]["terminated"]["reason"] == "OOMKilled"


def test_a_nodes_lease_renewals_are_taken_as_they_would_decode(checked: Checked) -> None:
    """`Client.update_own`: each renewal is the Lease last written with a new renewTime."""
    node = Node(CONFIG)
    try:
        node.settle(60)
    finally:
        node.close()
    assert checked.writes["Lease"] >= 6
