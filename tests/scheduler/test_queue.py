"""The scheduling queue on a virtual clock: PrioritySort order, backoff, parking unschedulable
pods until an event that can help them, the 5-minute flush, and scheduling gates."""

from typing import Any

import pytest

from pinnace.clock import VirtualClock
from pinnace.scheduler import PodInfo
from pinnace.scheduler.events import NODE, NODE_ADD, POD, ClusterEvent
from pinnace.scheduler.framework import SUCCESS, Status, unresolvable
from pinnace.scheduler.plugins import PrioritySort, SchedulingGates
from pinnace.scheduler.queue import SchedulingQueue, backoff_duration

PLUGIN_EVENTS = {
    "NodeResourcesFit": [NODE_ADD, ClusterEvent("AssignedPod", "Delete")],
    "TaintToleration": [ClusterEvent(NODE, "UpdateNodeTaint")],
    "SchedulingGates": [ClusterEvent(POD, "UpdatePodSchedulingGatesEliminated")],
}


def pod(name: str, priority: int = 0, gates: tuple[str, ...] = ()) -> PodInfo:
    spec: dict[str, Any] = {"containers": [{"name": "c"}], "priority": priority}
    if gates:
        spec["schedulingGates"] = [{"name": g} for g in gates]
    return PodInfo.from_pod({"metadata": {"name": name, "namespace": "ns"}, "spec": spec})


@pytest.fixture
def clock() -> VirtualClock:
    with VirtualClock() as c:
        yield c


def make_queue(clock: VirtualClock) -> SchedulingQueue:
    gates = SchedulingGates()
    return SchedulingQueue(clock, PrioritySort().sort_key, gates.pre_enqueue, PLUGIN_EVENTS)


def popped_names(queue: SchedulingQueue) -> list[str]:
    names = []
    while (queued := queue.pop()) is not None:
        names.append(queued.pod.name)
        queue.done(queued.pod.key)
    return names


def test_higher_priority_first_then_first_come(clock: VirtualClock) -> None:
    queue = make_queue(clock)
    for name, priority in [("low", 0), ("high", 100), ("low-later", 0), ("mid", 50)]:
        queue.add(pod(name, priority))
        clock.advance(1)
    assert popped_names(queue) == ["high", "mid", "low", "low-later"]


def test_backoff_doubles_per_attempt_up_to_ten_seconds() -> None:
    assert [backoff_duration(n, 1.0, 10.0) for n in range(1, 7)] == [1, 2, 4, 8, 10, 10]


def test_a_pod_that_errored_backs_off_then_returns(clock: VirtualClock) -> None:
    queue = make_queue(clock)
    queue.add(pod("p"))
    for attempt, wait in [(1, 1.0), (2, 2.0), (3, 4.0)]:
        queued = queue.pop()
        assert queued is not None and queued.attempts == attempt
        queue.add_unschedulable(queued, ())  # an error: no plugin rejected it
        assert queue.pending()["backoff"] == ["ns/p"]
        clock.advance(wait - 0.001)
        assert queue.pop() is None
        clock.advance(0.001)
    assert queue.pop() is not None


def test_a_rejected_pod_waits_for_an_event_its_rejecting_plugin_registered(
    clock: VirtualClock,
) -> None:
    queue = make_queue(clock)
    queue.add(pod("p"))
    queued = queue.pop()
    queue.add_unschedulable(queued, {"NodeResourcesFit"})
    assert queue.pending()["unschedulable"] == ["ns/p"]
    queue.move_all_to_active_or_backoff(ClusterEvent(NODE, "UpdateNodeTaint"))
    assert queue.pending()["unschedulable"] == ["ns/p"], "a taint change cannot free resources"
    queue.move_all_to_active_or_backoff(NODE_ADD)
    assert queue.pending()["backoff"] == ["ns/p"], "still within its 1 s backoff"
    clock.advance(1)
    assert popped_names(queue) == ["p"]


def test_an_event_after_the_backoff_goes_straight_to_active(clock: VirtualClock) -> None:
    queue = make_queue(clock)
    queue.add(pod("p"))
    queue.add_unschedulable(queue.pop(), {"TaintToleration"})
    clock.advance(5)
    queue.move_all_to_active_or_backoff(ClusterEvent(NODE, "UpdateNodeTaint"))
    assert queue.pending()["active"] == ["ns/p"]


def test_unschedulable_pods_are_retried_after_five_minutes(clock: VirtualClock) -> None:
    queue = make_queue(clock)
    queue.add(pod("p"))
    queue.add_unschedulable(queue.pop(), {"NodeResourcesFit"})
    clock.advance(300)
    assert queue.pop() is None
    clock.advance(0.5)
    assert popped_names(queue) == ["p"]


def test_next_due_is_when_a_backoff_ends_or_a_parked_pod_is_past_five_minutes(
    clock: VirtualClock,
) -> None:
    """The scheduler sleeps until `next_due` when no event wakes it: a pod is ready by then, and
    not a wait earlier; a gated pod waits on no time."""
    queue = make_queue(clock)
    start = clock.now()
    assert queue.next_due() is None
    queue.add(pod("gated", gates=("g",)))
    assert queue.next_due() is None
    queue.add(pod("errs"))
    queue.add(pod("parked"))
    queue.add_unschedulable(queue.pop(), ())  # errs: backs off 1 s
    clock.advance(0.5)
    queue.add_unschedulable(queue.pop(), {"NodeResourcesFit"})  # parked at 0.5
    assert queue.next_due() == start + 1.0
    clock.advance(0.5 - 0.001)
    assert queue.pop() is None
    clock.advance(start + 1.0 - clock.now())
    assert popped_names(queue) == ["errs"]
    due = queue.next_due()
    assert due is not None and start + 300.5 < due <= start + 300.5 + 0.001
    clock.advance(299)  # parked for 299.5 s
    assert queue.pop() is None
    clock.advance(due - clock.now())
    assert popped_names(queue) == ["parked"]
    assert queue.next_due() is None


def test_gated_pods_stay_out_until_their_gates_are_removed(clock: VirtualClock) -> None:
    queue = make_queue(clock)
    queue.add(pod("gated", gates=("example.com/quota",)))
    queue.add(pod("free"))
    assert popped_names(queue) == ["free"]
    clock.advance(600)
    queue.move_all_to_active_or_backoff(NODE_ADD)
    assert queue.pop() is None, "neither time nor cluster events release a gated pod"
    assert queue.pending()["unschedulable"] == ["ns/gated"]
    queue.update(pod("gated"))
    assert popped_names(queue) == ["gated"]


def test_scheduling_gates_pre_enqueue_message() -> None:
    status = SchedulingGates().pre_enqueue(pod("p", gates=("a", "b")))
    assert status == unresolvable("waiting for scheduling gates: [a b]")
    assert SchedulingGates().pre_enqueue(pod("p")) == SUCCESS


def test_updates_and_deletes_of_waiting_pods(clock: VirtualClock) -> None:
    queue = make_queue(clock)
    queue.add(pod("a", 0))
    queue.add(pod("b", 0))
    queue.update(pod("b", 10))  # a new priority re-sorts it
    queue.delete("ns/a")
    assert popped_names(queue) == ["b"]
    assert len(queue) == 0


def test_a_pod_deleted_in_flight_is_not_requeued(clock: VirtualClock) -> None:
    queue = make_queue(clock)
    queue.add(pod("p"))
    queued = queue.pop()
    queue.delete("ns/p")
    queue.add_unschedulable(queued, {"NodeResourcesFit"})
    assert len(queue) == 0


def test_status_of_a_rejection_names_its_plugin() -> None:
    assert unresolvable("x").with_plugin("P") == Status(unresolvable("x").code, ("x",), "P")
