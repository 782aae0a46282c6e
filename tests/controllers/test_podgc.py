"""The pod garbage collector on the virtual clock: orphaned pods after the node quarantine,
terminating pods never scheduled or on out-of-service nodes, and terminated pods beyond the
threshold; and a DaemonSet that follows when its pod's node is deleted."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from tests.client.conftest import NODES, PODS, Cluster, pod
from tests.controllers.workloads import Workloads, template

from pinnace.api.objects import Object
from pinnace.client import InformerFactory
from pinnace.controllers.daemonset import DAEMON_SETS
from pinnace.controllers.podgc import PodGCController, TerminatedPods

FINALIZER = "example.com/keep"


class GC(Cluster):
    """Nodes and pods written through the API (no kubelets), and the pod GC."""

    def __init__(self, nodes: tuple[str, ...] = ("n1", "n2"), threshold: int = 12500) -> None:
        super().__init__()
        for name in nodes:
            self.run(self.client.create(NODES, "", node(name)))
        self.informers = InformerFactory(self.client)
        self.gc = PodGCController(self.client, self.informers, threshold)
        self.informers.start()
        self.task = self.loop.create_task(self.gc.run())
        self.wait(1)

    def wait(self, seconds: float) -> None:
        self.run(asyncio.sleep(seconds))

    def create(self, obj: Object) -> Object:
        return self.run(self.client.create(PODS, "default", obj))

    def names(self) -> set[str]:
        return {p["metadata"]["name"] for p in self.run(self.client.list(PODS, "default"))["items"]}

    def get(self, name: str) -> Object:
        return self.run(self.client.get(PODS, "default", name))

    def set_phase(self, name: str, phase: str, reason: str = "") -> None:
        # A copy: the object read is the one the API server's and the informers' caches hold.
        current = {**self.get(name)}
        current["status"] = {"phase": phase, **({"reason": reason} if reason else {})}
        self.run(self.client.update_status(PODS, current))

    def stop(self) -> None:
        self.task.cancel()
        self.run(self.informers.stop())
        self.close()


def node(name: str, ready: str = "True", taints: list[Object] | None = None) -> Object:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        "spec": {"taints": taints or []},
        "status": {"conditions": [{"type": "Ready", "status": ready}]},
    }


def kept(name: str, node_name: str = "", **labels: str) -> dict[str, Any]:
    """A pod with a finalizer, so what the collector did to it stays visible."""
    obj = pod(name, node=node_name, **labels)
    obj["metadata"]["finalizers"] = [FINALIZER]
    return obj


@pytest.fixture
def gc() -> Iterator[GC]:
    cluster = GC()
    yield cluster
    cluster.stop()


def test_pods_of_a_deleted_node_go_after_the_quarantine(gc: GC):
    gc.create(pod("a", node="n1"))
    gc.create(kept("b", node_name="n1"))
    gc.create(pod("c", node="n2"))
    gc.set_phase("a", "Running")
    gc.set_phase("b", "Running")
    gc.run(gc.client.delete(NODES, "", "n1"))
    gc.wait(30)  # seen missing, but still in quarantine
    assert gc.names() == {"a", "b", "c"}
    gc.wait(40)
    assert gc.names() == {"b", "c"}
    b = gc.get("b")
    assert b["metadata"]["deletionTimestamp"]
    assert b["metadata"]["deletionGracePeriodSeconds"] == 0
    assert b["status"]["phase"] == "Failed"
    [target] = [c for c in b["status"]["conditions"] if c["type"] == "DisruptionTarget"]
    assert (target["status"], target["reason"], target["message"]) == (
        "True",
        "DeletionByPodGC",
        "PodGC: node no longer exists",
    )


def test_a_node_back_within_the_quarantine_keeps_its_pods(gc: GC):
    gc.create(pod("a", node="n1"))
    gc.run(gc.client.delete(NODES, "", "n1"))
    gc.wait(21)
    gc.run(gc.client.create(NODES, "", node("n1")))
    gc.wait(100)
    assert gc.names() == {"a"}


def test_pods_bound_to_a_node_that_never_was_or_went_twice_go_after_the_quarantine(gc: GC):
    gc.create(pod("a", node="ghost"))
    gc.create(pod("b", node="n1"))
    gc.run(gc.client.delete(NODES, "", "n1"))
    gc.wait(21)
    gc.run(gc.client.create(NODES, "", node("n1")))
    gc.wait(100)  # back within the quarantine: "b" stays, "ghost" has none left
    assert gc.names() == {"b"}
    gc.run(gc.client.delete(NODES, "", "n1"))
    gc.wait(30)
    gc.create(pod("c", node="ghost"))  # bound to it again after its pods went
    assert gc.names() == {"b", "c"}
    gc.wait(70)
    assert gc.names() == set()


def test_a_terminating_pod_never_scheduled_is_failed_and_deleted(gc: GC):
    gc.create(kept("pending"))
    gc.set_phase("pending", "Pending")
    gc.run(gc.client.delete(PODS, "default", "pending"))
    gc.wait(21)
    pending = gc.get("pending")
    assert pending["status"]["phase"] == "Failed"
    assert pending["metadata"]["deletionGracePeriodSeconds"] == 0
    assert "conditions" not in pending["status"]


def test_terminating_pods_on_an_out_of_service_node_are_deleted(gc: GC):
    out_of_service = {"key": "node.kubernetes.io/out-of-service", "effect": "NoExecute"}
    gc.run(gc.client.create(NODES, "", node("down", "False", [out_of_service])))
    gc.run(gc.client.create(NODES, "", node("cordoned", "True", [out_of_service])))
    for name, where in (("x", "down"), ("y", "cordoned"), ("z", "down")):
        gc.create(pod(name, node=where))
        gc.set_phase(name, "Running")
    for name in ("x", "y"):
        gc.run(gc.client.delete(PODS, "default", name))  # graceful: no kubelet finishes it
    gc.wait(21)
    # x: terminating on a node out of service; y: its node is Ready; z: not terminating.
    assert gc.names() == {"y", "z"}


def test_terminated_pods_beyond_the_threshold_go_evicted_first_then_oldest():
    gc = GC(threshold=2)
    try:
        for name in ("old", "middle", "young", "evicted", "running"):
            gc.create(pod(name, node="n1"))
            gc.wait(1)
        gc.set_phase("old", "Succeeded")
        gc.set_phase("middle", "Failed")
        gc.set_phase("young", "Succeeded")
        gc.set_phase("evicted", "Failed", reason="Evicted")
        gc.set_phase("running", "Running")
        gc.wait(21)
        assert gc.names() == {"middle", "young", "running"}
    finally:
        gc.stop()


def test_a_terminated_pod_evicted_since_the_last_pass_goes_first():
    gc = GC(threshold=2)
    try:
        for name in ("old", "middle", "young", "late"):
            gc.create(pod(name, node="n1"))
            gc.wait(1)
        for name in ("old", "middle", "young"):
            gc.set_phase(name, "Failed")
        gc.wait(21)
        assert gc.names() == {"middle", "young", "late"}
        gc.set_phase("young", "Failed", reason="Evicted")
        gc.set_phase("late", "Succeeded")
        gc.wait(21)
        assert gc.names() == {"middle", "late"}
    finally:
        gc.stop()


def test_a_daemon_pod_on_a_deleted_node_is_collected_and_the_status_follows():
    cluster = Workloads(nodes=2)
    try:
        ds = {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": "agent"},
            "spec": {
                "selector": {"matchLabels": {"app": "agent"}},
                "template": template(app="agent"),
            },
        }
        cluster.run(cluster.client.create(DAEMON_SETS, "default", ds))
        cluster.settle()
        assert len(cluster.pods(app="agent")) == 2
        cluster.run(cluster.client.delete(NODES, "", "pinnace-node-2"))
        cluster.settle(80)
        [remaining] = cluster.pods(app="agent")
        assert remaining["spec"]["nodeName"] == "pinnace-node-1"
        status = cluster.get(DAEMON_SETS, "agent")["status"]
        assert (status["desiredNumberScheduled"], status["currentNumberScheduled"]) == (1, 1)
        assert status["numberReady"] == 1
    finally:
        cluster.close()


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["put", "put", "put", "discard", "first"]),
            st.integers(0, 30),
            st.tuples(st.booleans(), st.integers(0, 5).map(float), st.sampled_from("ab")),
        ),
        max_size=200,
    )
)
# A pod whose order changes and changes back (CI's newer Hypothesis found it listed twice).
@example([("put", 0, (False, 0.0, "a")), ("put", 0, (False, 0.0, "b")),
          ("put", 0, (False, 0.0, "a")), ("first", 2, (False, 0.0, "a"))])  # fmt: skip
def test_the_terminated_pods_come_first_in_order_ties_as_they_first_finished(
    steps: list[tuple[str, int, tuple[bool, float, str]]],
) -> None:
    """What a pass deletes: the first pods by byEvictionAndCreationTimestamp, equal ones in the
    order they finished (a stable sort of every terminated pod, as before)."""
    pods = TerminatedPods()
    held: dict[str, tuple[bool, float, str]] = {}
    for action, n, order in steps:
        key = f"ns/pod-{n}"
        if action == "put":
            pods.put(key, order)
            held[key] = order
        elif action == "discard":
            pods.discard(key)
            held.pop(key, None)
        else:
            assert pods.first(n) == sorted(held, key=held.__getitem__)[:n]
        assert len(pods) == len(held)
