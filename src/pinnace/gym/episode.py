"""One episode: a scenario run on the virtual clock whose scheduling decisions are taken
outside the scheduler, with every reward component accounted.

The episode is the scheduling loop's `Placer` (`pinnace.scheduler.loop`): each cycle that
reaches the choice of a node among the feasible ones (after PreFilter and Filter: the real
profile's plugins) is handed to it. With `agent=True` the episode pauses the virtual loop
right there (`VirtualEventLoop.pause`: nothing else runs meanwhile, so the node table is the
one the filters saw) and waits for `decide(row)`; without, the scheduler's own Score plugins
choose at once (the baselines), the components accounted alike. A pod no node passes never
reaches the placer: the scheduler handles it as kube-scheduler does (FailedScheduling,
PostFilter's preemption), and so is a pod going to the node preemption nominated for it.
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from pinnace.clock import VirtualEventLoop
from pinnace.cluster import GC_THRESHOLD
from pinnace.forecast import EWMA, UsageHistory, workload_of
from pinnace.gym import rewards
from pinnace.gym.observation import Observer
from pinnace.gym.scheduler_only import SchedulerOnly
from pinnace.scheduler.config import SchedulerConfiguration
from pinnace.scheduler.plugins.trimaran import usage_sampling
from pinnace.scheduler.schedule_one import Pending, Scheduler, ScheduleResult
from pinnace.sim.observe import Incident
from pinnace.sim.scenario import Scenario
from pinnace.sim.simulation import Simulation

CLUSTER, SCHEDULER = "cluster", "scheduler"
ENGINES = (CLUSTER, SCHEDULER)
"""What runs an episode: every component of `pinnace up` (the default), or the scheduler
alone (`pinnace.gym.scheduler_only`)."""
NOT_DISRUPTIONS = frozenset({"NodeAdded", "NodeReady", "NodeNotReady", "NodeDeleted", "PodFailed"})
"""The observer's incidents that are not a pod evicted, preempted or OOM-killed."""


def check_engine(engine: str) -> None:
    """Raise a ValueError when `engine` is none of ENGINES."""
    if engine not in ENGINES:
        raise ValueError(f"engine {engine!r}: must be one of {', '.join(ENGINES)}")


@dataclass
class Decision:
    """A decision asked: the cycle, its feasible rows as a mask over `max_nodes`, and the
    observation (None when the episode observes nothing)."""

    pending: Pending
    mask: np.ndarray
    observation: dict[str, np.ndarray] | None
    future: asyncio.Future[ScheduleResult]


class Episode:
    """`scenario` run with `seed` on `engine` (CLUSTER: every component of `pinnace up`, a
    `Simulation`; SCHEDULER: the scheduler alone, `SchedulerOnly`), its decisions asked of
    the caller (`agent`) or of the scheduler; `observer` builds the observations (None: none
    are built); `scheduler_config` replaces the scenario's; `measured` are the decision
    components measured (the time components always are)."""

    name = "pinnace.gym"

    def __init__(
        self,
        scenario: Scenario,
        seed: int,
        *,
        agent: bool,
        observer: Observer | None,
        max_nodes: int,
        scheduler_config: SchedulerConfiguration | None = None,
        measured: Collection[str] = rewards.DECISION_COMPONENTS,
        engine: str = CLUSTER,
    ) -> None:
        check_engine(engine)
        if scenario.until is None:
            raise ValueError(f"scenario {scenario.name}: an episode needs spec.until")
        if scheduler_config is not None:
            cluster = replace(scenario.cluster, scheduler_config=scheduler_config)
            scenario = replace(scenario, cluster=cluster)
        self.agent = agent
        self.measured = frozenset(measured) & set(rewards.DECISION_COMPONENTS)
        """The decision components to measure (the others cost nothing and stay 0)."""
        self.observer = observer
        self.max_nodes = max_nodes
        if observer is not None and observer.uses_usage:
            # Read usage as the policy plugins do, with their defaults.
            self.usage_window, self.usage_interval = usage_sampling({})
            self.workload_usage: UsageHistory | None = None
        self.decision: Decision | None = None
        self.failure: ValueError | None = None
        """Why the last decision could not be asked."""
        self.totals: dict[str, float] = dict.fromkeys(rewards.COMPONENTS, 0.0)
        """Every component summed over the episode so far."""
        self.accrued: dict[str, float] = {}
        """The components since `take_accrued` was last called."""
        self.decisions = 0
        self._last_time: float | None = None
        self._pending = self._in_system = 0
        self._incidents_seen = 0
        self._on_nodes = rewards.PodsOnNodes()
        self._started = False
        self._incidents: Sequence[Incident] = ()
        """The engine's incidents (pods evicted, preempted, OOM-killed; nodes failing)."""
        # A closed episode's cluster is freed before this one is built, not kept with it;
        # collecting now rather than once it is built spares the pass over the new cluster
        # (0.7 s of CPU at 5,000 nodes), whose building leaves next to no cycles (frozen with
        # it, they would be freed at `close`).
        gc.collect()
        self.sim: Simulation | SchedulerOnly
        if engine == SCHEDULER:
            self.sim = SchedulerOnly(scenario, seed, placer=self, scored=not agent)
            self._incidents, self.core = self.sim.incidents, self.sim.core
        else:
            # No event log lines: an episode is reproduced from its seed, never fingerprinted.
            self.sim = Simulation(scenario, seed=seed, fingerprint=False, placer=self)
            assert self.sim.plane.scheduler is not None
            self._incidents, self.core = self.sim.observer.incidents, self.sim.plane.scheduler.core
        self._started = True
        # The cluster just built lives as long as the episode: keep it out of the garbage
        # collector's passes until `close` (they took 8 % of a step at 100 nodes and 13 % at
        # 5,000, scanning it; half as much without). The collector keeps the cluster's
        # thresholds meanwhile, between steps too: restored to the caller's after each run
        # of the loop, they made the pod objects of the steps so far be scanned again every
        # hundred young collections (7 % of a step).
        gc.freeze()
        self._thresholds = gc.get_threshold()
        gc.set_threshold(*GC_THRESHOLD)

    # --- the placer ------------------------------------------------------------------------

    def place(self, core: Scheduler, pending: Pending) -> asyncio.Future[ScheduleResult]:
        future: asyncio.Future[ScheduleResult] = core.clock.loop.create_future()
        self._elapse(core)
        if not self.agent:
            future.set_result(self._finish(core, pending, None))
            return future
        try:
            self.decision = self._ask(core, pending, future)
        except ValueError as e:
            # Raised from the scheduler's loop, it would only end the scheduler's task and
            # the episode would go on without one: `advance` raises it to the caller.
            self.failure = e
        if self._started:  # not while the simulation starts: it runs to its end first
            loop = core.clock.loop
            assert isinstance(loop, VirtualEventLoop)
            loop.pause()
        return future

    def _ask(
        self, core: Scheduler, pending: Pending, future: asyncio.Future[ScheduleResult]
    ) -> Decision:
        mask = np.zeros(self.max_nodes, bool)
        feasible = pending.feasible
        if len(feasible) > self.max_nodes:
            raise ValueError(
                f"the cluster has {len(feasible)} nodes, more than the environment's "
                f"max_nodes ({self.max_nodes}): make the environment with a larger max_nodes"
            )
        mask[: len(feasible)] = feasible
        observation = None
        if self.observer is not None:
            observation = self.observer.observe(
                core.table, pending.pod, self._forecast(pending.pod.pod)
            )
        return Decision(pending, mask, observation, future)

    # --- driving ---------------------------------------------------------------------------

    def advance(self) -> Decision | None:
        """Run until a decision is asked (returned) or the scenario's end (None); raises
        what made a decision impossible to ask (more nodes than `max_nodes`)."""
        if self.decision is None and self.failure is None:
            self.sim.advance()
        if self.failure is not None:
            raise self.failure
        if self.decision is None:
            self._elapse(self.core)
        return self.decision

    def decide(self, row: int) -> ScheduleResult:
        """Place the asked decision's pod on node row `row`. A row that is not feasible fails
        the cycle as a scheduler error: the pod is retried after a backoff."""
        decision = self.decision
        if decision is None:
            raise RuntimeError("no decision is asked")
        self.decision = None
        names = self.core.table.names
        node_name = names[row] if 0 <= row < len(names) else f"#{row}"
        result = self._finish(self.core, decision.pending, node_name)
        decision.future.set_result(result)
        return result

    def take_accrued(self) -> dict[str, float]:
        accrued = dict(self.accrued)
        self.accrued.clear()
        return accrued

    def close(self) -> None:
        # Stopping runs the loop: a cycle it lets reach the choice of a node (one due at the
        # episode's last instant) must not pause it, or stopping never ends.
        self._started = False
        try:
            self.sim.close()
        finally:
            # Even when closing failed: the cluster must not stay frozen.
            gc.unfreeze()
            gc.set_threshold(*self._thresholds)

    # --- accounting ------------------------------------------------------------------------

    def _finish(self, core: Scheduler, pending: Pending, node_name: str | None) -> ScheduleResult:
        which = self.measured
        gauge = rewards.Gauge(core.table, pending.pod, which) if which else None
        before = gauge.measures() if gauge is not None else None
        result = core.finish(pending, node_name)
        if result.node_name is not None:
            self.decisions += 1
            if gauge is not None and before is not None:
                after = gauge.remeasure()  # only the node the pod went to changed
                self._add(rewards.decision_rewards(before, after, which))
        self._count(core)
        return result

    def _elapse(self, core: Scheduler) -> None:
        """Accrue the time components since the last decision, at the counts `_finish` took
        right after it."""
        now = core.clock.now()
        if self._last_time is None:
            self._last_time = now
        incidents = self._incidents  # none while the cluster engine starts
        disruptions = sum(
            1 for i in incidents[self._incidents_seen :] if i.kind not in NOT_DISRUPTIONS
        )
        self._incidents_seen = len(incidents)
        seconds = now - self._last_time
        self._last_time = now
        self._add(rewards.time_rewards(self._pending, self._in_system, seconds, disruptions))

    def _count(self, core: Scheduler) -> None:
        self._pending = len(core.queue)
        self._in_system = self._pending + self._on_nodes.count(core.table)

    def _add(self, components: dict[str, float]) -> None:
        for name, value in components.items():
            self.totals[name] += value
            self.accrued[name] = self.accrued.get(name, 0.0) + value

    def _forecast(self, pod: Any) -> tuple[float, float] | None:
        """The pod's workload's forecast use (EWMA; the history keeps it until its next
        sample)."""
        history = getattr(self, "workload_usage", None)
        if history is None:
            return None
        return history.forecast(workload_of(pod), EWMA)
