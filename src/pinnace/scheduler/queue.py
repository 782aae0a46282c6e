"""The scheduling queue (pkg/scheduler/backend/queue/scheduling_queue.go, v1.32).

- activeQ: pods ready to be tried, popped in the QueueSort plugin's order.
- backoffQ: pods that failed and wait out their backoff: 1 s after the first attempt, doubling
  per attempt, at most 10 s.
- unschedulable pods: pods the filters rejected, parked until a cluster event that one of the
  rejecting plugins registered happens (then back to activeQ, or to backoffQ while their backoff
  lasts), or until 5 minutes have passed. Pods a PreEnqueue plugin (SchedulingGates) refuses are
  parked here too, until an update of the pod lets them in.

Time comes from a Clock. kube-scheduler moves due pods from backoffQ every second and flushes
5-minute leftovers every 30 seconds; this queue does both whenever it is asked to `pop` or
`flush`, so a pod is never kept waiting past its due time, and tells when that next is
(`next_due`), so that nothing need poll it.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from pinnace.clock import Clock
from pinnace.scheduler.events import UNSCHEDULABLE_TIMEOUT, ClusterEvent
from pinnace.scheduler.framework import Status
from pinnace.scheduler.podinfo import PodInfo

POD_INITIAL_BACKOFF = 1.0
POD_MAX_BACKOFF = 10.0
POD_MAX_IN_UNSCHEDULABLE_PODS = 300.0
PARKED_MARGIN = 0.001
"""How long past the 5 minutes a parked pod is due: well inside the 30 s that kube-scheduler's
own flush of leftovers may take."""


@dataclass(eq=False)
class QueuedPodInfo:
    pod: PodInfo
    timestamp: float  # when the pod was added to the queue, or last failed
    initial_attempt_timestamp: float | None = None
    attempts: int = 0
    unschedulable_plugins: frozenset[str] = frozenset()
    gated: Status | None = None  # the PreEnqueue rejection keeping it out of activeQ


def backoff_duration(attempts: int, initial: float, maximum: float) -> float:
    """calculateBackoffDuration: initial, doubled per attempt after the first, capped."""
    duration = initial
    for _ in range(1, attempts):
        if duration > maximum - duration:
            return maximum
        duration += duration
    return duration


class SchedulingQueue:
    def __init__(
        self,
        clock: Clock,
        sort_key: Callable[[QueuedPodInfo], tuple[Any, ...]],
        pre_enqueue: Callable[[PodInfo], Status],
        plugin_events: dict[str, list[ClusterEvent]],
        *,
        initial_backoff: float = POD_INITIAL_BACKOFF,
        max_backoff: float = POD_MAX_BACKOFF,
    ) -> None:
        self._clock = clock
        self._sort_key = sort_key
        self._pre_enqueue = pre_enqueue
        self._plugin_events = plugin_events
        self._initial_backoff = initial_backoff
        self._max_backoff = max_backoff
        self._sequence = itertools.count()
        # activeQ's entries: the sort key's items, then the sequence and the pod (one flat
        # tuple: comparing nested key tuples took most of a push's and a pop's time).
        self._active: list[tuple[Any, ...]] = []
        self._backoff: list[tuple[float, int, QueuedPodInfo]] = []
        # Parked pods in the order they were parked (so oldest first), and gated ones apart.
        self._unschedulable: dict[str, QueuedPodInfo] = {}
        self._gated: dict[str, QueuedPodInfo] = {}
        self._registered = {event for events in plugin_events.values() for event in events}
        # pod key -> where it waits ("active", "backoff", "unschedulable"), the sequence number
        # of its heap entry (heap entries with another number are stale and skipped), the pod.
        self._where: dict[str, tuple[str, int, QueuedPodInfo]] = {}
        self._in_flight: dict[str, QueuedPodInfo] = {}

    def __len__(self) -> int:
        return len(self._where)

    def pending_counts(self) -> dict[str, int]:
        """How many pods wait in each queue: active, backoff, unschedulable, and gated (the
        unschedulable ones a PreEnqueue plugin keeps out)."""
        counts: dict[str, int] = {}
        for where, _, queued in self._where.values():
            queue = "gated" if queued.gated is not None else where
            counts[queue] = counts.get(queue, 0) + 1
        return counts

    def add(self, pod: PodInfo) -> None:
        """A new pending pod."""
        if pod.key in self._where or pod.key in self._in_flight:
            self.update(pod)
            return
        self._admit(QueuedPodInfo(pod, self._clock.now()))

    def update(self, pod: PodInfo, events: Iterable[ClusterEvent] = ()) -> None:
        """A pending pod changed: take the new version. A parked pod goes back to the queue if
        it was gated, or if the change (`events`) may undo what rejected it."""
        where = self._where.get(pod.key)
        if where is None:
            if pod.key in self._in_flight:
                self._in_flight[pod.key].pod = pod
            else:
                self.add(pod)
            return
        queued = where[2]
        parked = where[0] == "unschedulable" and queued.gated is None
        if parked and not any(self._worth_requeuing(queued, event) for event in events):
            queued.pod = pod
            return
        self._remove(pod.key)
        queued.pod = pod
        if where[0] == "unschedulable":
            self._requeue(queued)
        else:
            self._put(queued, where[0])

    def delete(self, key: str) -> None:
        if key in self._where:
            self._remove(key)
        self._in_flight.pop(key, None)

    def pop(self) -> QueuedPodInfo | None:
        """The next pod to try, or None if activeQ is empty. It is in flight until `done` or
        `add_unschedulable`."""
        self.flush()
        while self._active:
            entry = heapq.heappop(self._active)
            sequence, queued = entry[-2], entry[-1]
            if self._where.get(queued.pod.key) != ("active", sequence, queued):
                continue
            del self._where[queued.pod.key]
            queued.attempts += 1
            if queued.initial_attempt_timestamp is None:
                queued.initial_attempt_timestamp = self._clock.now()
            self._in_flight[queued.pod.key] = queued
            return queued
        return None

    def has_active(self) -> bool:
        """Whether activeQ may have a pod for `pop` (an entry gone stale may say so)."""
        return bool(self._active)

    def done(self, key: str) -> None:
        """The pod in flight was scheduled (assumed); the queue forgets it."""
        self._in_flight.pop(key, None)

    def add_unschedulable(self, queued: QueuedPodInfo, rejected_by: Iterable[str]) -> None:
        """A pod in flight failed. Rejected by plugins: park it until an event they registered;
        failed for another reason (an error): back off and retry."""
        if self._in_flight.pop(queued.pod.key, None) is None:
            return  # deleted while in flight
        queued.timestamp = self._clock.now()
        queued.unschedulable_plugins = frozenset(rejected_by)
        if queued.unschedulable_plugins:
            self._put(queued, "unschedulable")
        else:
            self._put(queued, "backoff")

    def add_after_binding_error(self, pod: PodInfo, attempts: int) -> None:
        """A pod the queue let go once assumed failed to bind (handleBindingCycleError): it
        backs off as a pod failed `attempts` times, whatever version of it came back since."""
        if pod.key in self._where:
            self._remove(pod.key)
        self._in_flight.pop(pod.key, None)
        self._put(QueuedPodInfo(pod, self._clock.now(), attempts=attempts), "backoff")

    def move_all_to_active_or_backoff(self, event: ClusterEvent) -> None:
        """A cluster event: parked pods that one of their rejecting plugins registered it for
        get another chance."""
        if not self._unschedulable:
            return  # nothing parked (as after most binds)
        if not any(registered.matches(event) for registered in self._registered):
            return  # no plugin cares: nothing parked can be helped
        moved = [
            queued
            for queued in self._unschedulable.values()
            if self._worth_requeuing(queued, event)
        ]
        for queued in moved:
            self._remove(queued.pod.key)
            self._requeue(queued)

    def flush(self) -> None:
        """Move pods whose backoff is over to activeQ, and pods parked for 5 minutes back."""
        now = self._clock.now()
        while self._backoff and self._backoff[0][0] <= now:
            _, sequence, queued = heapq.heappop(self._backoff)
            if self._where.get(queued.pod.key) == ("backoff", sequence, queued):
                del self._where[queued.pod.key]
                self._put(queued, "active")
        expired = []
        for queued in self._unschedulable.values():
            if now - queued.timestamp <= POD_MAX_IN_UNSCHEDULABLE_PODS:
                break  # parked in time order: the rest are younger
            expired.append(queued)
        for queued in expired:
            self._remove(queued.pod.key)
            self._requeue(queued, UNSCHEDULABLE_TIMEOUT)

    def next_due(self) -> float | None:
        """When `flush` next has something to move (a backoff ending; a millisecond after a
        pod has been parked for 5 minutes, since it must be parked for longer), or None when
        nothing waits on time: who runs the queue need not look before then. (A backoff
        entry gone stale may make it early.)"""
        due = [self._backoff[0][0]] if self._backoff else []
        parked = next(iter(self._unschedulable.values()), None)
        if parked is not None:
            due.append(parked.timestamp + POD_MAX_IN_UNSCHEDULABLE_PODS + PARKED_MARGIN)
        return min(due, default=None)

    def pending(self) -> dict[str, list[str]]:
        """Pod keys by where they wait: activeQ, backoffQ, unschedulable (gated included)."""
        out: dict[str, list[str]] = {"active": [], "backoff": [], "unschedulable": []}
        for key, (where, _, _) in self._where.items():
            out[where].append(key)
        return out

    def backoff_expiry(self, queued: QueuedPodInfo) -> float:
        return queued.timestamp + backoff_duration(
            queued.attempts, self._initial_backoff, self._max_backoff
        )

    # Internals.
    def _admit(self, queued: QueuedPodInfo) -> None:
        status = self._pre_enqueue(queued.pod)
        if status.is_success():
            queued.gated = None
            self._put(queued, "active")
        else:
            queued.gated = status
            self._put(queued, "unschedulable")

    def _requeue(self, queued: QueuedPodInfo, event: ClusterEvent | None = None) -> None:
        status = self._pre_enqueue(queued.pod)
        if not status.is_success():
            queued.gated = status
            self._put(queued, "unschedulable")
            return
        queued.gated = None
        backing_off = queued.attempts > 0 and self.backoff_expiry(queued) > self._clock.now()
        self._put(queued, "backoff" if backing_off else "active")

    def _worth_requeuing(self, queued: QueuedPodInfo, event: ClusterEvent) -> bool:
        if not queued.unschedulable_plugins:
            return True
        return any(
            registered.matches(event)
            for plugin in queued.unschedulable_plugins
            for registered in self._plugin_events.get(plugin, ())
        )

    def _put(self, queued: QueuedPodInfo, where: str) -> None:
        sequence = next(self._sequence)
        self._where[queued.pod.key] = (where, sequence, queued)
        if where == "active":
            heapq.heappush(self._active, (*self._sort_key(queued), sequence, queued))
        elif where == "backoff":
            heapq.heappush(self._backoff, (self.backoff_expiry(queued), sequence, queued))
        elif queued.gated is None:
            self._unschedulable[queued.pod.key] = queued
        else:
            self._gated[queued.pod.key] = queued

    def _remove(self, key: str) -> QueuedPodInfo:
        """Take a waiting pod out; its heap entry, if any, goes stale."""
        where, _, queued = self._where.pop(key)
        if where == "unschedulable":
            del (self._gated if queued.gated is not None else self._unschedulable)[key]
        return queued
