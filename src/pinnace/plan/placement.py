"""kube-scheduler placing pods over a snapshot: the scheduler core (`pinnace.scheduler`, the
default profile or the snapshot's KubeSchedulerConfiguration) fed the snapshot's nodes and pods as
its informers would feed it, run on a virtual clock of its own.

`Placer.place(pods)` queues pods and runs scheduling cycles until none is left to try: the queue
sorts them (priority, then arrival), each cycle filters, scores and assumes, and a pod that fits
nowhere gets kube-scheduler's FailedScheduling message. Preemption is carried out as the API
adapter would: each victim is deleted at once (as a pod with no grace period) and, when a
controller owns it, a replacement pod is queued as the controller would create it; the preemptor
then goes to its nominated node. Pods in backoff are retried as the virtual clock moves on, so
the loop ends when every pod is placed or waits for a change in the cluster that will not come
(a pod that fails on an error, as with no nodes at all, is retried until its backoff has run its
longest with nothing changing).

A trial (`begin()`, then `restore()` or `commit()`) tries changes and puts everything back when
asked: what a drain simulation needs (`plan remove`, `plan nodes --spare`, `plan headroom`).
"""

from __future__ import annotations

import copy
import random
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from pinnace.api.objects import Object
from pinnace.clock import Randomness, VirtualClock
from pinnace.controllers.controller_utils import controller_ref
from pinnace.plan.cluster import PlanError, Snapshot
from pinnace.scheduler.adapter import PreemptsThroughAPI, connect_offline
from pinnace.scheduler.config import (
    ConfigError,
    PluginSet,
    SchedulerConfiguration,
    build_profiles,
)
from pinnace.scheduler.podinfo import DEFAULT_SCHEDULER_NAME, PodInfo
from pinnace.scheduler.preemption import Preemption
from pinnace.scheduler.queue import POD_MAX_BACKOFF
from pinnace.scheduler.schedule_one import Scheduler, ScheduleResult, all_plugins

BACKOFF_STEP = 1.0
"""Virtual seconds between rounds, so pods backing off (1 s doubling to 10 s) are retried."""
MAX_ROUNDS = 100_000
NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
"""What the API server draws a generateName suffix from."""
PREEMPTED = "Preempted"
SCHEDULING_GATED = "Scheduling is blocked due to non-empty scheduling gates"
"""The PodScheduled condition's message for a gated pod (reason SchedulingGated)."""


@dataclass
class Outcome:
    """Where a pod went: its node, or "" with the FailedScheduling message."""

    key: str
    pod: Object
    node: str = ""
    message: str = ""
    nominated: str = ""
    """The node preemption nominated for it while it waited."""


@dataclass(frozen=True)
class Preempted:
    victim: str
    """namespace/name"""
    node: str
    preemptor: str
    replacement: str = ""
    """The key of the pod its controller creates instead ("" when it has no controller)."""


@dataclass
class _Trial:
    """What changed since `begin()`, for `restore()` to undo."""

    added: set[str] = field(default_factory=set)
    """Keys of the pods added."""
    originals: dict[str, Object] = field(default_factory=dict)
    """Pods from before as they were when first changed (placed, moved, preempted, gone with
    a node), by key."""
    nodes: list[Object] = field(default_factory=list)
    """Nodes from before taken away (a node the trial added and took away again is not one:
    `restore()` gives these back)."""
    new_nodes: list[str] = field(default_factory=list)
    """Nodes added."""
    preemptions: int = 0
    """len(preemptions) at `begin()`."""
    randomness: list[tuple[random.Random, tuple[Any, ...]]] = field(default_factory=list)
    """Each random stream and its state at `begin()`: a trial starts where the last did."""
    choices: tuple[Any, int] | None = None
    """The scheduler's choices' state at `begin()`."""


class Placer:
    def __init__(
        self,
        snapshot: Snapshot,
        *,
        seed: int = 0,
        config: SchedulerConfiguration | None = None,
        preemption: bool = True,
        scoring: bool = True,
    ) -> None:
        """A scheduler holding `snapshot`'s nodes and pods (its pending pods queued, not yet
        tried). Without `preemption`, no pod evicts another to fit; without `scoring`, a pod
        goes to any node the filters accept (picked at random, as ties are), as
        cluster-autoscaler's simulator places pods."""
        config = config or snapshot.scheduler_config or SchedulerConfiguration()
        if not scoring:
            config = _without_scoring(config)
        self.clock = VirtualClock()
        try:
            profiles = build_profiles(config, lambda binding: None)
        except ConfigError as e:
            raise PlanError(f"scheduler configuration: {e}") from None
        if not preemption:
            for profile in profiles:
                profile.post_filter = ()
        self.core = Scheduler(
            profiles,
            self.clock,
            seed=seed,
            percentage_of_nodes_to_score=config.percentage_of_nodes_to_score,
        )
        connect_offline(
            self.core,
            namespaces=snapshot.of("namespaces"),
            budgets=snapshot.of("poddisruptionbudgets"),
            replica_sets=snapshot.of("replicasets"),
            stateful_sets=snapshot.of("statefulsets"),
            services=snapshot.of("services"),
        )
        randomness = Randomness(seed)
        self._decisions: list[Preemption] = []
        preempting = [p for p in all_plugins(self.core) if isinstance(p, PreemptsThroughAPI)]
        for i, plugin in enumerate(preempting):
            plugin.preempt = self._decisions.append
            plugin.random = randomness.child(f"preemption-{i}").random
        self._names = randomness.child("names").random
        self._streams = [self._names, *(p.random for p in preempting)]
        self._pinned = _pinned_owners(snapshot)
        self.nodes: dict[str, Object] = {}
        self.pods: dict[str, Object] = {}
        """Every pod the scheduler holds, by key, as last seen (bound ones with spec.nodeName)."""
        self.outcomes: dict[str, Outcome] = {}
        """What became of each pod tried here, by key."""
        self.preemptions: list[Preempted] = []
        self._trial: _Trial | None = None
        for node in snapshot.nodes:
            self.add_node(node)
        for pod in snapshot.pods:
            self.add_pod(pod)

    # --- the cluster -------------------------------------------------------------------------

    def add_node(self, node: Object) -> None:
        name = node["metadata"]["name"]
        if self._trial is not None and name not in self.nodes:
            self._trial.new_nodes.append(name)
        self.nodes[name] = node
        self.core.add_node(node)

    def remove_node(self, name: str) -> list[Object]:
        """Take the node away; the pods bound to it, which leave with it (as on a failure)."""
        gone = self.pods_on(name)
        node = self.nodes.pop(name)
        self.core.delete_node(name)
        if self._trial is not None and name not in self._trial.new_nodes:
            self._trial.nodes.append(node)
        for pod in gone:
            self.delete_pod(pod)
        return gone

    def add_pod(self, pod: Object) -> None:
        """A pod the scheduler learns of: bound ones take room, pending ones are queued."""
        key = pod_key(pod)
        self.pods[key] = pod
        self.core.add_pod(pod)
        if self._trial is not None and key not in self._trial.originals:
            self._trial.added.add(key)

    def pods_on(self, node: str) -> list[Object]:
        """The pods bound to the node, as the scheduler's table holds them."""
        table = self.core.table
        i = table.index.get(node)
        return [] if i is None else [self.pods[key] for key in table.pods[i] if key in self.pods]

    def node_of(self, key: str) -> str:
        pod = self.pods.get(key)
        return (pod["spec"].get("nodeName") or "") if pod is not None else ""

    # --- scheduling --------------------------------------------------------------------------

    def place(self, pods: Iterable[Object] = ()) -> list[Outcome]:
        """Queue `pods` and schedule until nothing more can be; their outcomes, in order (the
        snapshot's pending pods are tried too, their outcomes in `outcomes`)."""
        added = []
        for pod in pods:
            self.add_pod(pod)
            added.append(pod)
        self.run()
        return [self._outcome(pod) for pod in added]

    def _outcome(self, pod: Object) -> Outcome:
        """The pod's outcome; one it never got a cycle for waits before the queue: its
        scheduling gates (as the PodScheduled condition says), or no profile of this
        scheduler serves it."""
        key = pod_key(pod)
        found = self.outcomes.get(key)
        if found is not None and found.pod is self.pods.get(key, found.pod):
            return found
        spec = pod.get("spec") or {}
        if spec.get("schedulingGates"):
            message = SCHEDULING_GATED
        else:
            name = spec.get("schedulerName") or DEFAULT_SCHEDULER_NAME
            message = f'no profile of this scheduler serves schedulerName "{name}"'
        found = self.outcomes[key] = Outcome(key, pod, message=message)
        return found

    def run(self) -> None:
        """Scheduling cycles until every queued pod is placed, waits on a cluster change, or
        keeps failing on an error (no nodes at all) though every pod backing off has been
        tried again since anything changed: nothing more will change here."""
        idle = 0.0
        for _ in range(MAX_ROUNDS):
            changed = False
            while (result := self.core.schedule_one()) is not None:
                self._record(result)
                changed |= bool(result.node_name) or bool(self._decisions)
                self._carry_out_preemptions()
            pending = self.core.queue.pending()
            if not pending["active"] and not pending["backoff"]:
                return
            idle = 0.0 if changed else idle + BACKOFF_STEP
            if idle > POD_MAX_BACKOFF:
                return
            self.clock.advance(BACKOFF_STEP)
        raise PlanError(f"scheduling did not settle in {MAX_ROUNDS} rounds")

    def _record(self, result: ScheduleResult) -> None:
        key = result.pod.key
        pod = self.pods.get(key, dict(result.pod.pod))
        outcome = self.outcomes.get(key)
        if outcome is None or outcome.pod is not pod:
            outcome = self.outcomes[key] = Outcome(key, pod)
        if result.node_name:
            self._changing(key, pod)
            bound = _bound(pod, result.node_name)
            self.pods[key] = bound
            outcome.pod, outcome.node, outcome.message = bound, result.node_name, ""
        else:
            outcome.message = result.message
            outcome.nominated = result.nominated_node_name or outcome.nominated

    def _carry_out_preemptions(self) -> None:
        # Emptied in place: the preemption plugins hold the list's append.
        decisions = self._decisions.copy()
        self._decisions.clear()
        for decision in decisions:
            for victim in decision.victims:
                self._preempt(victim, decision)

    def _preempt(self, victim: PodInfo, decision: Preemption) -> None:
        pod = self.pods.get(victim.key, dict(victim.pod))
        self.delete_pod(pod)
        outcome = self.outcomes.setdefault(victim.key, Outcome(victim.key, pod))
        outcome.node, outcome.message = "", PREEMPTED
        replacement = ""
        if controller_ref(pod) is not None:
            new = self.replacement(pod)
            replacement = pod_key(new)
            self.add_pod(new)
        self.preemptions.append(
            Preempted(victim.key, decision.node_name, decision.preemptor.key, replacement)
        )

    def delete_pod(self, pod: Object) -> None:
        """The pod is gone (deleted, evicted, or preempted)."""
        key = pod_key(pod)
        self.pods.pop(key, None)
        self.core.delete_pod(pod)
        self._changing(key, pod)

    def _changing(self, key: str, pod: Object) -> None:
        """Keep a pod from before the trial as it was, before its first change."""
        trial = self._trial
        if trial is not None and key not in trial.added:
            trial.originals.setdefault(key, pod)

    def replacement(self, pod: Object) -> Object:
        """The pod its controller creates for `pod` once it is gone: the same spec, unbound
        (unless the controller's template names a node), named as the controller names pods
        (a StatefulSet's keeps its name)."""
        new = unbound(pod)
        ref = controller_ref(pod)
        pinned = self._pinned.get(ref.get("uid", "")) if ref is not None else None
        if pinned:
            new["spec"]["nodeName"] = pinned
        meta = new["metadata"]
        base = meta.get("generateName")
        if base:
            suffix = "".join(self._names.choice(NAME_ALPHABET) for _ in range(5))
            meta["name"] = f"{base}{suffix}"
        meta["uid"] = str(uuid.UUID(int=self._names.getrandbits(128), version=4))
        return new

    # --- trials ------------------------------------------------------------------------------

    def begin(self) -> None:
        """Start a trial: every change from now on (pods added, moved or preempted, nodes
        removed, and the random choices' state) can be undone by `restore()`, or kept by
        `commit()`. Each trial from one state thus makes the same choices, whatever was tried
        before."""
        streams = [(stream, stream.getstate()) for stream in self._streams]
        self._trial = _Trial(
            preemptions=len(self.preemptions), randomness=streams, choices=self.core.choices()
        )

    def restore(self) -> None:
        """Undo the trial's changes: the cluster holds what it held at `begin()` (a node taken
        away and given back comes last in the scheduler's node order, as a node added)."""
        trial, self._trial = self._trial, None
        if trial is None:
            return
        for key in trial.added:
            pod = self.pods.get(key)
            if pod is not None:
                self.delete_pod(pod)
        for name in trial.new_nodes:
            if name in self.nodes:
                self.remove_node(name)
        for node in trial.nodes:
            self.add_node(node)
        for key, pod in trial.originals.items():
            current = self.pods.get(key)
            if current is not None:
                self.delete_pod(current)
            self.add_pod(pod)
        del self.preemptions[trial.preemptions :]
        for stream, state in trial.randomness:
            stream.setstate(state)
        if trial.choices is not None:
            self.core.restore_choices(trial.choices)

    def commit(self) -> None:
        self._trial = None


def _pinned_owners(snapshot: Snapshot) -> dict[str, str]:
    """The owners whose pod template names a node (spec.nodeName), by uid: their pods skip the
    scheduler."""
    found = {}
    for resource in ("replicasets", "statefulsets", "daemonsets", "jobs"):
        for owner in snapshot.of(resource):
            template = (owner.get("spec") or {}).get("template") or {}
            node = (template.get("spec") or {}).get("nodeName")
            if node:
                found[owner["metadata"].get("uid", "")] = node
    return found


def _without_scoring(config: SchedulerConfiguration) -> SchedulerConfiguration:
    """`config` with every PreScore and Score plugin disabled."""
    none = {"preScore": PluginSet(disabled=["*"]), "score": PluginSet(disabled=["*"])}
    profiles = [replace(p, plugins={**p.plugins, **none}) for p in config.profiles]
    return replace(config, profiles=profiles)


def pod_key(pod: Mapping[str, Any]) -> str:
    meta = pod["metadata"]
    return f"{meta.get('namespace') or 'default'}/{meta['name']}"


def _bound(pod: Object, node: str) -> Object:
    return {**pod, "spec": {**pod["spec"], "nodeName": node}}


def unbound(pod: Mapping[str, Any]) -> Object:
    """A copy of `pod` as it was before it was scheduled: no node, no status. Nested fields
    are shared with `pod` but for the affinity (the DaemonSet controller rewrites a copy's)."""
    meta = {
        k: v
        for k, v in pod["metadata"].items()
        if k not in ("resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds")
    }
    spec = {k: v for k, v in pod["spec"].items() if k != "nodeName"}
    if "affinity" in spec:
        spec["affinity"] = copy.deepcopy(spec["affinity"])
    return {k: v for k, v in pod.items() if k != "status"} | {"metadata": meta, "spec": spec}
