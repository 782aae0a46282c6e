"""What the Observer records of a small run on the virtual clock (tests/sim/scenario.py),
checked against what the scenario makes happen, worked out by hand."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.sim.scenario import GI, INTERVAL, MI, PODS, RUN_SECONDS, TAINT_AT, Run, container, run
from tests.support import SimulatedCluster

from pinnace.api import catalog
from pinnace.cluster import ClusterOptions
from pinnace.kubelet import node_configs
from pinnace.sim.observe import Observer

EVENTS = catalog.kind("", "events")
PRIORITY_CLASSES = catalog.kind("scheduling.k8s.io", "priorityclasses")
ALLOCATABLE_MEMORY = 16 * GI - 100 * MI  # less the kubelet's default evictionHard


@pytest.fixture(scope="module")
def done() -> Iterator[Run]:
    finished = run()
    yield finished
    finished.cluster.close()


def test_a_sample_every_interval_and_one_at_the_end(done: Run) -> None:
    times = [s.time for s in done.observer.samples]
    assert times == [i * INTERVAL for i in range(int(RUN_SECONDS / INTERVAL) + 1)]


def test_allocatable_requested_and_used_over_the_cluster_and_per_pool(done: Run) -> None:
    end = done.observer.samples[-1]
    assert end.resources == ("cpu", "memory", "pods")
    assert end.pools == ("big", "general")
    # rows: cluster, big (1 node), general (2 nodes); cpu in millicores
    assert end.allocatable.tolist() == [
        [12000, 3 * ALLOCATABLE_MEMORY, 330],
        [4000, ALLOCATABLE_MEMORY, 110],
        [8000, 2 * ALLOCATABLE_MEMORY, 220],
    ]
    # three web pods of 1.5 CPU / 1Gi, all on general since the taint; the hog's 500m / 64Mi
    assert end.requested.tolist() == [
        [5000, 3 * GI + 64 * MI, 4],
        [500, 64 * MI, 1],
        [4500, 3 * GI, 3],
    ]
    # each web pod uses 1 CPU and 512Mi; the hog uses no CPU, and waits in its back-off
    assert end.used[:, :2].tolist() == [[3000, 3 * 512 * MI], [0, 0], [3000, 3 * 512 * MI]]
    before_taint = done.observer.samples[int(TAINT_AT / INTERVAL)]
    assert before_taint.requested[1].tolist() == [2000, GI + 64 * MI, 2]


def test_pods_and_nodes_counted(done: Run) -> None:
    first, end = done.observer.samples[0], done.observer.samples[-1]
    assert first.pods["Total"] == 0
    assert end.pods == {
        "Pending": 1,
        "Running": 4,
        "Succeeded": 0,
        "Failed": 0,
        "Unscheduled": 1,
        "Total": 5,
    }
    assert end.nodes == {"Ready": 3, "NotReady": 0}


def test_each_pods_lifecycle(done: Run) -> None:
    records = {r.name: r for r in done.observer.pods.values()}
    assert len(records) == 6  # three web pods, a replacement, too-big and the hog
    big = records["too-big"]
    assert (big.node, big.scheduled, big.phase) == ("", None, "Pending")
    evicted = [r for r in records.values() if r.evicted]
    [gone] = evicted
    assert (gone.workload, gone.node, gone.evicted) == (
        "Deployment default/web",
        "big-3",
        "DeletionByTaintManager",
    )
    assert gone.evicted_at == gone.deleted == TAINT_AT
    [replacement] = [r for r in records.values() if r.created == TAINT_AT]
    assert replacement.owner_kind == "ReplicaSet"
    assert replacement.node.startswith("general-")
    assert replacement.scheduled == replacement.running == TAINT_AT
    # the hog is OOMKilled as it starts, restarted at once, then after 10, 20 and 40 s of
    # back-off: killed at 0, 0, 10, 30 and 70 s, restarted 4 times
    hog = records["hog"]
    assert (hog.restarts, hog.oom_kills, hog.phase) == (4, 5, "Running")
    kills = [i.time for i in done.observer.incidents if i.kind == "OOMKilled"]
    assert kills == [0, 0, 10, 30, 70]


def test_failed_scheduling_reasons_as_the_scheduler_words_them(done: Run) -> None:
    events = done.cluster.run(
        done.cluster.client.list(
            EVENTS, "default", field_selector="reason=FailedScheduling,involvedObject.name=too-big"
        )
    )["items"]
    written = sum(e.get("count") or 1 for e in events)
    assert written == 2  # when created, and again when the taint changed the big node
    big = next(r for r in done.observer.pods.values() if r.name == "too-big")
    assert big.failed_scheduling == written
    assert done.observer.failed_scheduling == {
        "Insufficient cpu": 2,
        "node(s) had untolerated taint {dedicated: maintenance}": 1,
    }
    per_interval = [s.failed_scheduling for s in done.observer.samples if s.failed_scheduling]
    assert per_interval == [
        {"Insufficient cpu": 1},
        {"Insufficient cpu": 1, "node(s) had untolerated taint {dedicated: maintenance}": 1},
    ]


def test_fragmentation_per_shape_at_the_end(done: Run) -> None:
    nodes = done.observer.nodes_now()
    assert nodes.names == ("big-3", "general-1", "general-2")
    assert nodes.shapes == ("Pod default/too-big", "Pod default/hog", "Deployment default/web")
    # free cpu: big 3500, one general node 2500 and the other 1000 (which has two web pods)
    fits = dict(zip(nodes.names, nodes.fragmentation.fits.tolist(), strict=True))
    assert fits["big-3"] == [0, 7, 2]
    assert sorted([fits["general-1"], fits["general-2"]]) == [[0, 2, 0], [0, 5, 1]]
    # web (1.5 CPU): 500 + 1000 + 1000 of 7000 free millicores strand
    share = nodes.fragmentation.share
    assert share[2, 0] == pytest.approx(2500 / 7000)
    assert share[0, 0] == 1.0  # nothing holds a 5-CPU pod
    assert nodes.fragmentation.largest_free[0] == 3500
    assert nodes.fragmentation.largest_multiple.tolist() == [0, 7, 2]


def test_the_interval_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        Observer(None, 0)  # type: ignore[arg-type]


def test_a_preempted_pod_and_the_wait_of_the_pod_that_preempted_it() -> None:
    cluster = SimulatedCluster(ClusterOptions(nodes=node_configs(1), seed=1))
    observer = Observer(cluster.plane, INTERVAL)
    try:
        cluster.run(observer.start())
        low = {"metadata": {"name": "low"}, "spec": {"containers": [container("3", "1Gi")]}}
        cluster.run(cluster.client.create(PODS, "default", low))
        cluster.wait(5)
        high = {"metadata": {"name": "high"}, "value": 1000}
        cluster.run(cluster.client.create(PRIORITY_CLASSES, "", high))
        important = {
            "metadata": {"name": "important"},
            "spec": {"priorityClassName": "high", "containers": [container("3", "1Gi")]},
        }
        cluster.run(cluster.client.create(PODS, "default", important))
        cluster.wait(60)
        cluster.run(observer.stop())
    finally:
        cluster.close()
    records = {r.name: r for r in observer.pods.values()}
    victim, preemptor = records["low"], records["important"]
    assert (victim.evicted, victim.evicted_at) == ("PreemptionByScheduler", 5.0)
    assert [(i.time, i.kind) for i in observer.incidents] == [(5.0, "PreemptionByScheduler")]
    assert victim.deleted == 5.0  # its simulated containers stop at once
    # tried again after the scheduler's initial back-off (podInitialBackoffSeconds, 1 s)
    assert (preemptor.created, preemptor.scheduled, preemptor.node) == (5.0, 6.0, "pinnace-node-1")
    assert observer.shapes[preemptor.shape].name == "Pod default/low (+1 more)"
    assert observer.failed_scheduling == {"Insufficient cpu": 1}


def test_the_pending_records_are_the_pods_that_exist_and_are_pending() -> None:
    """`Observer.pending`, kept as pods change, is what a pass over every record gives, in the
    order first seen."""
    cluster = SimulatedCluster(ClusterOptions(nodes=node_configs(1), seed=1))
    observer = Observer(cluster.plane, INTERVAL)

    def pending() -> list[str]:
        afresh = [
            r.name for r in observer.pods.values() if r.deleted is None and r.phase == "Pending"
        ]
        assert [r.name for r in observer.pending.values()] == afresh
        return afresh

    try:
        cluster.run(observer.start())
        for name, cpu in (("fits", "1"), ("too-big", "30"), ("also-fits", "1"), ("huge", "40")):
            pod = {"metadata": {"name": name}, "spec": {"containers": [container(cpu, "1Gi")]}}
            cluster.run(cluster.client.create(PODS, "default", pod))
            pending()
        cluster.wait(30)
        assert pending() == ["too-big", "huge"]
        cluster.run(cluster.client.delete(PODS, "default", "too-big"))
        cluster.wait(5)
        assert pending() == ["huge"]
        cluster.run(observer.stop())
    finally:
        cluster.close()
