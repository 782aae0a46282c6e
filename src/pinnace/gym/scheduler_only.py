"""The research environment's scheduler-only engine: the scenario's nodes and its workload
generators' pods fed to the scheduler core (`pinnace.scheduler`) as kube-scheduler's informers
would feed them, on a virtual clock, with no API server, node agents or controllers running.

A research episode asks a decision of each pod the scheduler would place; the cluster engine
(`pinnace.sim.Simulation`) runs every component of `pinnace up` for each (about nine API writes,
the node agent's start and status, the Events), the cost of a step. This engine keeps what the
decision sees and what makes the episode's rewards, and nothing else:

- the nodes are the Nodes the pools' node agents register (`kubelet.node_status.node_object`),
  Ready, and stay so;
- the pods are the generators' arrivals (the same times, names and draws as in the cluster
  engine for a seed: `sim.arrivals.arrivals_of`), each the generator's template as the API
  server admits it (its defaulting, LimitRanges, PriorityClasses, RuntimeClass overhead),
  created once per generator at the start in a cluster of the scenario's objects and no nodes
  (a generator whose template that API server refuses makes no pod, as each of its creates
  would be refused); the namespaces, for the plugins matching namespace selectors, are read
  from that cluster too;
- a bound pod starts at once (the node agent's start takes no time here): one status update,
  Running, with `status.startTime` (preemption orders victims by it); it holds its node until
  its containers' run time is over, counted from the bind, as `kubelet.behaviour` models it,
  all containers ending together (a pod running forever holds it for good). A finished pod
  leaves the scheduler's view, as kube-scheduler's informer drops a pod that turns Succeeded
  or Failed;
- within an instant, each change reaches the core as many turns of the event loop after its
  cause as on the cluster engine (`ARRIVAL_TURNS`, `BIND_TURNS`, `START_TURNS`,
  `STATUS_TURNS`, `FINISH_TURNS`, measured there), so same-instant arrivals, finishes,
  back-offs and cycles take turns as there;
- a failed cycle's pod gets the status kube-scheduler patches (the PodScheduled condition,
  false, with the cycle's message, when it changes; the node preemption nominated): a pending
  pod's update, which moves it within the queue as in the cluster engine;
- preemption's victims get their DisruptionTarget condition and deletion, then leave within
  the instant (the cluster engine's victims stop when SIGTERMed too, stop-seconds being
  refused), each an incident the rewards count;
- when the plugins or the placer read usage, the scheduler samples it every interval from the
  start, as the scheduler service does, of the node agents' summaries as
  `pinnace.gym.node_usage` models them (CPU, and memory within the containers' requests).

What it cannot run so, `pinnace.gym.scheduler_scope` refuses, naming the field: what needs
the components it does not run, and node agent behaviour it does not model.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import math
import uuid
from collections.abc import Callable
from dataclasses import replace

import orjson

from pinnace.api import catalog
from pinnace.api.objects import Object
from pinnace.api.status import StatusError
from pinnace.clock import Clock, Randomness, VirtualEventLoop
from pinnace.clock.component import cancel_and_wait
from pinnace.gym.node_usage import NodeStatsModel
from pinnace.gym.scheduler_scope import NEEDS_CLUSTER, refuse_image_scores, refuse_unsupported
from pinnace.kubelet.behaviour import (
    ContainerBehaviour,
    UnknownOutcome,
    context_free_behaviour,
    node_unknown_outcome,
)
from pinnace.kubelet.node_status import node_object
from pinnace.scheduler.adapter import PreemptsThroughAPI, connect_offline, failure_patch
from pinnace.scheduler.config import SchedulerConfiguration, build_profiles
from pinnace.scheduler.loop import Placer, SchedulingLoop
from pinnace.scheduler.plugins.trimaran import CUSTOM_METRICS
from pinnace.scheduler.preemption import PREEMPTION_BY_SCHEDULER, Preemption
from pinnace.scheduler.schedule_one import Scheduler, ScheduleResult, all_plugins
from pinnace.scheduler.usage_sampling import UsageSampling
from pinnace.sim.arrivals import Arrival, arrivals_of
from pinnace.sim.observe import Incident
from pinnace.sim.scenario import Arrivals, Scenario
from pinnace.sim.simulation import Simulation

PODS = catalog.kind("", "pods")
NAMESPACES = catalog.kind("", "namespaces")
SERVER_SET = frozenset({"managedFields", "resourceVersion", "uid", "creationTimestamp"})
"""What the API server sets on the admitted template that each arrival has its own of (or,
managedFields, which the scheduler does not read)."""


class SchedulerOnly:
    """`scenario` with `seed` on the scheduler-only engine (see the module's docstring), its
    cycles that reach the choice of a node finished by `placer` (`scored`: by the scheduler's
    Score plugins, not by an agent); started at time zero and run by `advance`."""

    def __init__(self, scenario: Scenario, seed: int, placer: Placer, scored: bool) -> None:
        refuse_unsupported(scenario)
        self.scenario = scenario
        self.loop = VirtualEventLoop()
        self.clock = Clock(self.loop)
        self.started_at = self.clock.now()
        randomness = Randomness(seed)
        stream = randomness.child("scheduler")  # as the cluster's scheduler draws its seeds
        config = scenario.cluster.scheduler_config or SchedulerConfiguration()
        self.core = Scheduler(
            build_profiles(config, lambda binding: None),
            self.clock,
            seed=stream.random.getrandbits(63),
            percentage_of_nodes_to_score=config.percentage_of_nodes_to_score,
        )
        self.usage = UsageSampling.of(self.core, self.clock, placer)
        if self.usage is not None and self.usage.load_metric is not None:
            raise ValueError(
                "spec.cluster.schedulerConfig: a plugin reading a custom metric (metricProvider "
                f"{CUSTOM_METRICS}) {NEEDS_CLUSTER}: its pods serve it"
            )
        if scored:
            refuse_image_scores(scenario, self.core.profiles.values())
        templates, namespaces = _admitted(scenario, seed)
        connect_offline(self.core, namespaces=namespaces)
        preempting = [p for p in all_plugins(self.core) if isinstance(p, PreemptsThroughAPI)]
        for i, plugin in enumerate(preempting):
            plugin.preempt = self._preempt
            plugin.random = stream.child(f"preemption-{i}").random
        self.incidents: list[Incident] = []
        """Pods preempted, as the cluster engine's observer records them."""
        self.pods: dict[str, Object] = {}
        """The pods not finished, by key, as the scheduler's informer would hold them."""
        self._finishing: dict[str, asyncio.TimerHandle] = {}
        self._uids = itertools.count(1)
        self._unknown = {node.name: node_unknown_outcome(node) for node in scenario.cluster.nodes}
        now = self.clock.now_rfc3339()
        # In the order the scheduler's node informer lists them: by name.
        for node in sorted(scenario.cluster.nodes, key=lambda n: n.name):
            self.core.add_node(node_object(node, now))
        self.scheduling = SchedulingLoop(self.core, self.clock, self._handle, placer)
        self._tasks = [self.loop.create_task(self.scheduling.run())]
        self.node_stats: NodeStatsModel | None = None
        if self.usage is not None:
            self.node_stats = NodeStatsModel(scenario.cluster.nodes, self.clock)
            self._tasks.append(self.loop.create_task(self._sample_usage(self.usage)))
        for arrivals in scenario.workloads:
            template = templates[arrivals.name]
            if template is not None:
                task = self._arrive(arrivals, template, randomness)
                self._tasks.append(self.loop.create_task(task))
        self._closed = False

    @property
    def elapsed(self) -> float:
        """Seconds of simulated time since the start."""
        return self.clock.now() - self.started_at

    def advance(self) -> None:
        """Run until the scenario's `until`, or until the placer pauses the loop."""
        assert self.scenario.until is not None, "an episode's scenario has spec.until"
        horizon = self.started_at + self.scenario.until
        if horizon > self.clock.now():
            self.loop.run_until(horizon)
        for task in self._tasks:
            if task.done() and not task.cancelled() and (error := task.exception()) is not None:
                raise error

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self.loop.run_until_complete(cancel_and_wait(self._tasks))
        finally:
            self.loop.close()
            asyncio.set_event_loop(None)

    # --- the informer's events ---------------------------------------------------------------

    async def _arrive(
        self, arrivals: Arrivals, template: Callable[[], Object], randomness: Randomness
    ) -> None:
        for arrival in arrivals_of(arrivals, randomness, self.started_at):
            await asyncio.sleep(max(0.0, arrival.at - self.clock.now()))
            after_turns(self.loop, ARRIVAL_TURNS, self._add, self._made(template(), arrival))

    async def _sample_usage(self, usage: UsageSampling) -> None:
        """The scheduler's usage samples, from the start on, one every interval, as the
        scheduler service takes them of the node agents' summaries."""
        assert self.node_stats is not None
        while True:
            usage.record(self.node_stats.summaries(), self.pods.get)
            await asyncio.sleep(usage.interval)

    def _add(self, pod: Object) -> None:
        self.pods[f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"] = pod
        self.core.add_pod(pod)
        self.scheduling.nudge()

    def _made(self, pod: Object, arrival: Arrival) -> Object:
        """The admitted template made this arrival, as the API server would store it."""
        meta = pod["metadata"]
        meta["name"] = arrival.name
        meta["uid"] = str(uuid.UUID(int=next(self._uids)))
        meta["creationTimestamp"] = self.clock.now_rfc3339()
        if arrival.annotations:
            meta["annotations"] = {**(meta.get("annotations") or {}), **arrival.annotations}
        return pod

    def _handle(self, result: ScheduleResult) -> None:
        """What the adapter writes for the result, as its echo reaches the informer: turns of
        the loop later (`BIND_TURNS`), not before the cycles run back to back with this
        one."""
        pod = result.pod
        if result.node_name is not None:
            after_turns(self.loop, BIND_TURNS, self._bound, pod.key, result.node_name)
            return
        rejected, now = result.status.is_rejected(), self.clock.now_rfc3339()
        patch = failure_patch(pod.pod, rejected, result.message, result.nominated_node_name, now)
        if patch is not None:
            after_turns(self.loop, BIND_TURNS, self._patched, pod.key, patch["status"])

    def _bound(self, key: str, node_name: str) -> None:
        """The binding's echo; the node agent, which has it too, starts the pod a turn on."""
        pending = self.pods.get(key)
        if pending is None:
            return
        bound = {**pending, "spec": {**pending["spec"], "nodeName": node_name}}
        self.pods[key] = bound
        self.core.update_pod(pending, bound)
        self.scheduling.nudge()
        after_turns(self.loop, START_TURNS, self._start, key, node_name)

    def _start(self, key: str, node_name: str) -> None:
        """The node agent starts the pod: its containers' exit is due when their run time is
        over; its status, Running, reaches the informer `STATUS_TURNS` later."""
        bound = self.pods.get(key)
        if bound is None or "deletionTimestamp" in bound["metadata"]:
            return
        behaviours = _behaviours(bound, self._unknown.get(node_name))
        if self.node_stats is not None:
            self.node_stats.start(key, bound, node_name, behaviours)
        seconds = _run_seconds(bound, behaviours)
        if math.isfinite(seconds):
            self._finishing[key] = self.loop.call_later(seconds, self._exited, key)
        # Its start time is now, the bind's instant (preemption orders victims by it), to the
        # second as the agent writes it.
        after_turns(self.loop, STATUS_TURNS, self._running, key, self.clock.now_rfc3339())

    def _running(self, key: str, started: str) -> None:
        bound = self.pods.get(key)
        if bound is None:
            return
        status = {**(bound.get("status") or {}), "phase": "Running", "startTime": started}
        running = {**bound, "status": status}
        self.pods[key] = running
        self.core.update_pod(bound, running)
        self.scheduling.nudge()

    def _exited(self, key: str) -> None:
        """The pod's containers exit: the node agent's status write, then its echo, reach the
        informer some turns of the loop later."""
        self._finishing.pop(key, None)
        if self.node_stats is not None:
            self.node_stats.stop(key)
        after_turns(self.loop, FINISH_TURNS, self._finish, key)

    def _finish(self, key: str) -> None:
        pod = self.pods.pop(key, None)
        if pod is not None:
            self.core.delete_pod(pod)
            self.scheduling.nudge()

    def _patched(self, key: str, patch: Object) -> None:
        """The echo of the adapter's patch of a pod's status: its conditions by type (the
        PodScheduled condition of a failed cycle), status.nominatedNodeName set, or cleared by
        None. A patch changing nothing has no echo."""
        pod = self.pods.get(key)
        if pod is None:
            return
        status = _merged_status(pod.get("status") or {}, patch)
        if status == (pod.get("status") or {}):
            return
        new = {**pod, "status": status}
        self.pods[key] = new
        self.core.update_pod(pod, new)
        self.scheduling.nudge()

    def _preempt(self, decision: Preemption) -> None:
        """What the adapter writes for a preemption, as its echoes reach the informer
        `BIND_TURNS` later: each victim's DisruptionTarget and deletion, the nominations
        cleared."""
        self.core.metrics.preempted(len(decision.victims))
        condition = decision.disruption_condition()
        for victim in decision.victims:
            after_turns(self.loop, BIND_TURNS, self._terminating, victim.key, condition)
        for nominated in decision.nominations_to_clear:
            clear = {"nominatedNodeName": None}
            after_turns(self.loop, BIND_TURNS, self._patched, nominated.key, clear)

    def _terminating(self, key: str, condition: Object) -> None:
        """A victim's DisruptionTarget condition (an incident, as the cluster engine's observer
        counts it then) and its deletion's timestamp; its node agent, seeing the deletion,
        stops it at once (stop-seconds being refused) in a timer of this instant, and its
        status and deletion reach the informer `FINISH_TURNS` after. A victim already being
        deleted (two cycles of an instant chose it) changes no more: the API server leaves it
        as it is."""
        pod = self.pods.get(key)
        if pod is None or "deletionTimestamp" in pod["metadata"]:
            return
        now = self.clock.now_rfc3339()
        status = pod.get("status") or {}
        conditions = [
            c for c in status.get("conditions") or () if c.get("type") != condition["type"]
        ]
        conditions.append({**condition, "lastTransitionTime": now})
        disrupted = {**pod, "status": {**status, "conditions": conditions}}
        self.core.update_pod(pod, disrupted)
        meta = {**pod["metadata"], "deletionTimestamp": now}
        deleting = {**disrupted, "metadata": meta}
        self.pods[key] = deleting
        self.core.update_pod(disrupted, deleting)
        self.incidents.append(Incident(self.elapsed, PREEMPTION_BY_SCHEDULER, key))
        self.scheduling.nudge()
        timer = self._finishing.pop(key, None)
        if timer is not None:
            timer.cancel()
        self._finishing[key] = self.loop.call_later(0.0, self._exited, key)


# The turns of the event loop the cluster engine takes to pass each change on to the
# scheduler's informer (each API write and watch, each component's reaction, a turn or more),
# measured there: within an instant, the core then sees arrivals, finishes, bindings and back-offs
# in the cluster engine's order, which decides which pod a cycle takes and what it sees.
ARRIVAL_TURNS = 2
"""From an arrival's instant (its task woken a turn after its timer) until the core has the
pod: the cluster engine's generator creates it, the API server's watch and the scheduler's
informer deliver it."""
BIND_TURNS = 3
"""From a cycle's result until the echo of what the adapter writes for it (the binding, a
failed cycle's PodScheduled condition and nomination, a victim's condition and deletion)
reaches the informer."""
START_TURNS = 1
"""From the binding's echo until the node agent, which has it too, starts the pod (and its
containers' exit timer is set)."""
STATUS_TURNS = 3
"""From the start until the node agent's status of the pod (Running) reaches the informer."""
FINISH_TURNS = 3
"""From a pod's containers' exit until the core has it gone: the node agent's status write, the
API server's watch, then the scheduler's informer."""


def after_turns(
    loop: asyncio.AbstractEventLoop, turns: int, callback: Callable[..., object], *args: object
) -> None:
    """Run `callback(*args)` after `turns` turns of `loop` (`call_soon` chained `turns`
    times; 0: now): where the cluster engine's components pass a change on, each a turn."""
    if turns <= 0:
        callback(*args)
    else:
        loop.call_soon(after_turns, loop, turns - 1, callback, *args)


def _merged_status(status: Object, patch: Object) -> Object:
    """`status` with the strategic merge `patch` of it the scheduler sends: conditions merged by
    their type, other fields replaced, a None removing its field."""
    merged = {**status}
    for name, value in patch.items():
        if value is None:
            merged.pop(name, None)
        elif name == "conditions":
            conditions = [dict(c) for c in status.get("conditions") or ()]
            for condition in value:
                same = next((c for c in conditions if c.get("type") == condition["type"]), None)
                if same is None:
                    conditions.append(dict(condition))
                else:
                    same.update(condition)
            merged["conditions"] = conditions
        else:
            merged[name] = value
    return merged


def _admitted(
    scenario: Scenario, seed: int
) -> tuple[dict[str, Callable[[], Object] | None], list[Object]]:
    """Each generator's template as the API server admits it, by generator: a function making
    a copy (None: refused); and the namespaces. Both from a cluster of the scenario's objects
    and no nodes, as its start applies them."""
    bare = replace(
        scenario,
        cluster=replace(scenario.cluster, nodes=[], pools={}),
        workloads=[],
        timeline=[],
        traces=[],
    )
    sim = Simulation(bare, seed=seed, fingerprint=False)
    try:
        templates: dict[str, Callable[[], Object] | None] = {}
        for arrivals in scenario.workloads:
            pod = orjson.loads(orjson.dumps(arrivals.template))
            meta = pod.setdefault("metadata", {})
            meta.pop("generateName", None)
            meta["name"] = f"{arrivals.name}-0"
            try:
                admitted = sim.run_coroutine(sim.client.create(PODS, arrivals.namespace, pod))
            except StatusError:
                templates[arrivals.name] = None
                continue
            # Left as it is: the object the client returns is the one the informers hold.
            meta = {k: v for k, v in admitted["metadata"].items() if k not in SERVER_SET}
            text = orjson.dumps({**admitted, "metadata": meta})
            templates[arrivals.name] = functools.partial(orjson.loads, text)
        namespaces = sim.run_coroutine(sim.client.list(NAMESPACES, ""))["items"]
    finally:
        sim.close()
    return templates, namespaces


def _behaviours(pod: Object, unknown: UnknownOutcome | None) -> list[ContainerBehaviour]:
    """The model of each of the pod's containers, in the spec's order, on a node whose
    unknown commands take `unknown`."""
    return [context_free_behaviour(pod, c["name"], unknown) for c in pod["spec"]["containers"]]


def _run_seconds(pod: Object, behaviours: list[ContainerBehaviour]) -> float:
    """Seconds from the start until the pod, its containers behaving as `behaviours`,
    finishes (inf: it never does, a server restarted Always). What `_refuse_template` lets
    through has no init containers, no restarts and its containers ending together: the first
    container's run time is the pod's."""
    if (pod["spec"].get("restartPolicy") or "Always") == "Always":
        return math.inf
    return behaviours[0].run_seconds
