"""A trace replayed on the simulation's clock: one task per trace, whatever its size.

What the trace holds is turned into a stream of timed steps in order of simulated time (the
pods' creations, a recording's changes, machines joining and leaving); the task takes them in
turn, sleeping on the virtual clock until each falls due, and keeps the deletions its
creations promise (a pod deleted at its recorded time) in a heap beside the stream, so that at
any moment it holds only what is still to come for the pods alive.

Sampling (`sample`) and `limit` are applied here, on the run's own random stream for the
workload, so a run's seed decides which pods a sampled trace keeps. A create the API server
refuses is counted, as a workload generator's, and the replay goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from pinnace.api import catalog
from pinnace.api.objects import Object
from pinnace.api.options import BACKGROUND
from pinnace.api.status import StatusError
from pinnace.client import LocalClient
from pinnace.clock import Randomness
from pinnace.cluster import ControlPlane
from pinnace.kubelet import behaviour
from pinnace.kubelet.pool import NotRunning
from pinnace.sim.traces.model import (
    TRACE_ID,
    TRACE_LABEL,
    AddNode,
    ObjectChange,
    RemoveNode,
    Trace,
    TracePod,
)
from pinnace.sim.traces.recording import SUPPORTING

PODS = catalog.kind("", "pods")
NAMESPACES = catalog.kind("", "namespaces")
IMAGE = "pinnace.dev/trace-replay"
CONTAINER = "main"


@dataclass(frozen=True, slots=True)
class CreatePod:
    at: float
    pod: TracePod
    run: float | None
    """Simulated seconds it runs once started; None: until deleted, or on."""
    deleted: float | None


@dataclass(frozen=True, slots=True)
class DeletePod:
    at: float
    name: str


Step = CreatePod | DeletePod | ObjectChange | AddNode | RemoveNode


def steps(trace: Trace, randomness: Randomness) -> Iterator[Step]:
    """The trace's steps in order of simulated time (ties in the trace's order)."""
    pods = _arrivals(trace, randomness)
    changes = (replace(c, at=max(0.0, trace.at(c.at))) for c in _sampled(trace, randomness))
    return heapq.merge(
        iter(trace.node_events), changes, pods, key=lambda s: s.at
    )  # node events first at a tie: a pod may need the node that joins


def _arrivals(trace: Trace, randomness: Randomness) -> Iterator[CreatePod]:
    rng = randomness.random
    created = 0
    for pod in trace.pods:
        if trace.sample < 1 and rng.random() >= trace.sample:
            continue
        arrival = _arrival(trace, pod)
        if arrival is None:
            continue
        created += 1
        yield arrival
        if trace.limit is not None and created >= trace.limit:
            return


def _arrival(trace: Trace, pod: TracePod) -> CreatePod | None:
    """The pod's creation on the simulated clock; None if it is gone by time zero. A pod the
    trace created before time zero (a negative `timeShift`) that lives on is created at zero
    with what is left of its run."""
    at = trace.at(pod.created)
    deleted = None if pod.deleted is None else trace.at(pod.deleted)
    run = None if pod.run is None else trace.span(pod.run)
    if pod.run is not None and pod.started is not None:
        end = trace.at(pod.started + pod.run)
        if end <= 0:
            return None
        run = min(trace.span(pod.run), end - max(0.0, trace.at(pod.started)))
    if deleted is not None and deleted <= 0:
        return None
    return CreatePod(max(0.0, at), pod, run, deleted)


def _sampled(trace: Trace, randomness: Randomness) -> Iterator[ObjectChange]:
    """A recording's changes, of the objects `sample` and `limit` keep, in order (and of every
    Namespace and PriorityClass)."""
    rng = randomness.random
    kept: dict[int, bool] = {}
    for change in trace.changes:
        if change.kind in SUPPORTING:
            yield change
            continue
        if change.number not in kept:
            room = trace.limit is None or sum(kept.values()) < trace.limit
            kept[change.number] = room and (trace.sample >= 1 or rng.random() < trace.sample)
        if kept[change.number]:
            yield change


class TraceReplay:
    """Replays `trace` into the cluster of `plane` through `client`, from `started_at` (the
    simulation's time zero on the clock); `refused` counts refused creates by workload."""

    def __init__(
        self,
        trace: Trace,
        plane: ControlPlane,
        client: LocalClient,
        randomness: Randomness,
        started_at: float,
        refused: Counter[str],
    ) -> None:
        self.trace = trace
        self._plane = plane
        self._client = client
        self._randomness = randomness
        self._started_at = started_at
        self._refused = refused
        self._namespaces: set[str] = set()

    async def run(self) -> None:
        clock = self._client.clock
        for obj in self.trace.objects:
            await self._apply_object(obj)
        later: list[tuple[float, int, DeletePod]] = []
        order = itertools.count()
        stream = steps(self.trace, self._randomness)
        upcoming = next(stream, None)
        while upcoming is not None or later:
            step: Step
            if later and (upcoming is None or later[0][0] < upcoming.at):
                step = heapq.heappop(later)[2]
            else:
                assert upcoming is not None
                step, upcoming = upcoming, next(stream, None)
            delay = self._started_at + step.at - clock.now()
            if delay > 0:
                await asyncio.sleep(delay)
            follow = await self._take(step)
            if follow is not None:
                heapq.heappush(later, (follow.at, next(order), follow))

    async def _take(self, step: Step) -> DeletePod | None:
        match step:
            case CreatePod():
                return await self._create(step)
            case DeletePod(name=name):
                await self._delete(PODS, self.trace.namespace, name)
            case ObjectChange():
                await self._change(step)
            case AddNode(config=config):
                config = replace(config, index=self._plane.nodes.next_index)
                await self._plane.nodes.add_nodes([config])
            case RemoveNode(name=name):
                # NotRunning: it left already (a removeNodes step of the timeline took it).
                with contextlib.suppress(NotRunning):
                    await self._plane.nodes.remove_node(name)
        return None

    # --- pods of a trace ----------------------------------------------------------------------

    async def _create(self, step: CreatePod) -> DeletePod | None:
        name = f"{self.trace.name}-{step.pod.number}"
        await self._namespace(self.trace.namespace)
        try:
            await self._client.create(PODS, self.trace.namespace, self._pod(name, step))
        except StatusError:
            self._refused[self.trace.name] += 1
            return None
        return None if step.deleted is None else DeletePod(step.deleted, name)

    def _pod(self, name: str, step: CreatePod) -> Object:
        pod = step.pod
        annotations = {TRACE_ID: pod.key, **pod.annotations}
        if step.run is not None:
            annotations[behaviour.RUN_SECONDS] = behaviour.seconds_value(step.run)
            if pod.exit_code:
                annotations[behaviour.EXIT_CODE] = str(pod.exit_code)
        resources: dict[str, Any] = {"requests": dict(pod.requests)}
        if pod.limits:
            resources["limits"] = dict(pod.limits)
        spec: dict[str, Any] = {
            "restartPolicy": "Never",
            "containers": [{"name": CONTAINER, "image": IMAGE, "resources": resources}],
        }
        if pod.priority_class:
            spec["priorityClassName"] = pod.priority_class
        if pod.node_affinity:
            key, wanted = pod.node_affinity
            expression = {"key": key, "operator": "In", "values": list(wanted)}
            terms = [{"matchExpressions": [expression]}]
            spec["affinity"] = {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}
                }
            }
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": self.trace.namespace,
                "labels": {TRACE_LABEL: self.trace.name, **pod.labels},
                "annotations": annotations,
            },
            "spec": spec,
        }

    # --- objects of a recording ---------------------------------------------------------------

    async def _change(self, change: ObjectChange) -> None:
        kind = catalog.by_kind(change.api_version, change.kind)
        if kind is None:
            return  # a kind Pinnace does not serve (its pods are replayed on their own)
        if change.obj is None:
            await self._delete(kind, change.namespace, change.name)
            return
        obj = change.obj
        if kind.namespaced:
            await self._namespace(change.namespace)
        try:
            await self._client.create(kind, change.namespace, obj)
            return
        except StatusError as e:
            if e.code != 409:
                self._refused[self.trace.name] += 1
                return

        def written(current: Object) -> Object:
            meta = dict(current["metadata"])
            for key in ("labels", "annotations"):
                meta.pop(key, None)
                if key in obj["metadata"]:
                    meta[key] = obj["metadata"][key]
            rest = {k: v for k, v in obj.items() if k != "metadata"}
            return {**current, **rest, "metadata": meta}

        try:
            await self._client.modify(kind, change.namespace, change.name, written)
        except StatusError:
            self._refused[self.trace.name] += 1

    async def _apply_object(self, obj: Object) -> None:
        kind = catalog.by_kind(obj["apiVersion"], obj["kind"])
        assert kind is not None, "a trace format makes only kinds Pinnace serves"
        try:
            await self._client.create(kind, "", obj)
        except StatusError as e:
            if e.code != 409:
                raise

    async def _namespace(self, namespace: str) -> None:
        """Make the namespace a replayed object goes to, unless it exists."""
        if namespace in self._namespaces:
            return
        self._namespaces.add(namespace)
        body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
        try:
            await self._client.create(NAMESPACES, "", body)
        except StatusError as e:
            if e.code != 409:
                raise

    async def _delete(self, kind: Any, namespace: str, name: str) -> None:
        try:
            await self._client.delete(kind, namespace if kind.namespaced else "", name, BACKGROUND)
        except StatusError as e:
            if e.code != 404:
                raise
