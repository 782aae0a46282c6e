"""A whole cluster on the virtual clock: the `ControlPlane` `pinnace up` runs, in one process,
driven by a scenario (objects at time zero, timeline steps, workload arrivals) and observed
into a report.

    sim = Simulation("scenario.yaml", seed=7)
    report = sim.run(until=3600)           # an hour of simulated time, in seconds
    pods = sim.run_coroutine(sim.client.list(PODS, "default"))
    sim.close()

Nothing here reads the wall clock except to say how long the run took (`wall_seconds`), which
no simulated outcome depends on: the same scenario and seed give the same event log.
"""

from __future__ import annotations

import asyncio
import gc
import sys
import time
from collections import Counter, deque
from collections.abc import Awaitable, Coroutine, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

from pinnace.api.status import StatusError
from pinnace.client import LocalClient
from pinnace.clock import Clock, VirtualEventLoop
from pinnace.clock.component import cancel_and_wait
from pinnace.cluster import GC_THRESHOLD, ClusterOptions, ControlPlane
from pinnace.scheduler.loop import Placer
from pinnace.sim.actions import ActionError, Actions
from pinnace.sim.arrivals import run_arrivals
from pinnace.sim.eventlog import EventLog
from pinnace.sim.observe import Observer
from pinnace.sim.report import Report
from pinnace.sim.scenario import Scenario, Step, load_scenario, parse_scenario
from pinnace.sim.settle import until_settled
from pinnace.sim.traces.replay import TraceReplay
from pinnace.store import MemoryStore
from pinnace.store.codec import Codec

T = TypeVar("T")

FIELD_MANAGER = "pinnace-simulate"
"""The field manager of the objects a scenario applies."""
RECENT_VERSIONS = 65536
"""The store's latest changes kept as written (`MvccState`): a burst of pods created at once
(a planner's 30,000 pods at time zero, with their bindings and Scheduled events) stays
unpacked until it is scheduled, and the writes of the two compaction intervals a busy
simulated day keeps (5,000 nodes, 150,000 pods) are never packed."""
HELD_VERSIONS = sys.maxsize
"""Every live key's latest change is held as written: the informers of the components, in the
same process, hold those very objects, so a packed copy would only add to the memory (a burst
of 30,000 pods on 5,000 nodes peaks at 472 MiB held, 559 MiB with 16,384 held), and its
packing and the unpacking of a write's read to its cost."""


def simulated_store() -> MemoryStore:
    """The simulated mode's store: in memory, objects as plain JSON when packed at all
    (packing them for memory is what a simulation skips), the `RECENT_VERSIONS` latest changes
    and every live key's latest kept as written, and no key settled into blocks: with objects
    not deflated, those save about 200 bytes a key (10 MB for the 50,000 a busy day holds), and
    cost their rebuilding on every compaction and write of a key that lives past one, and a
    block's unpacking on each read (an Event, read again to delete it an hour later)."""
    return MemoryStore(
        codec=Codec(deflate=False),
        recent_versions=RECENT_VERSIONS,
        settle_keys=False,
        held_versions=HELD_VERSIONS,
    )


class Simulation:
    """The scenario's cluster, started on its own virtual loop at time zero.

    `scenario` is a Scenario, a path to a scenario file, or the file's content as a mapping;
    `seed` overrides the scenario's; `event_log`, when given, receives the event log's lines
    (its SHA-256 is kept either way) unless `fingerprint` is False: then no line is made and
    the report's event log digest is "" (a research episode, which nothing fingerprints, spares
    each change's JSON and digest: 7 % of a step's instructions at 100 nodes); `placer`, when
    given, chooses the scheduler's nodes among the feasible ones (the research environment,
    `pinnace.gym`)."""

    def __init__(
        self,
        scenario: Scenario | str | Path | Mapping[str, Any],
        *,
        seed: int | None = None,
        event_log: BinaryIO | None = None,
        fingerprint: bool = True,
        placer: Placer | None = None,
    ) -> None:
        if isinstance(scenario, str | Path):
            scenario = load_scenario(scenario)
        elif not isinstance(scenario, Scenario):
            scenario = parse_scenario(dict(scenario))
        self.scenario = scenario
        self.seed = scenario.seed if seed is None else seed
        self.loop = VirtualEventLoop()
        self.clock = Clock(self.loop)
        self.store = simulated_store()
        cluster = scenario.cluster
        options = ClusterOptions(
            nodes=cluster.nodes,
            scheduler_config=cluster.scheduler_config,
            node_lifecycle=cluster.node_lifecycle,
            workloads=cluster.workloads,
            cluster_autoscaler=cluster.autoscaler,
            features=cluster.features,
            seed=self.seed,
            placer=placer,
            kube_state_metrics=False,
            dashboard=False,
            simulated=True,
        )
        self.plane = ControlPlane(self.store, self.clock, options)
        self.client: LocalClient = LocalClient(self.plane.server, field_manager=FIELD_MANAGER)
        """The scenario's own client: what it applies is recorded under FIELD_MANAGER."""
        self.event_log = EventLog(self.store, self.clock, event_log, lines=fingerprint)
        pools = {p.name: p.cost for p in cluster.pools.values()}
        self.observer = Observer(self.plane, scenario.metrics.interval, pools)
        self.actions = Actions(self.plane, self.client, cluster.pools)
        self.started_at = self.clock.now()
        self.refused: Counter[str] = Counter()
        """Arrivals the API server refused, by generator or trace workload."""
        self._tasks: list[asyncio.Task[None]] = []
        self._timeline: deque[tuple[str, Step]] = deque()
        """Steps not yet taken, each with where it comes from, for errors."""
        self._following: asyncio.Task[None] | None = None
        self._injected = 0
        self._wall = 0.0
        self._closed = False
        try:
            self._timed(self._start())
        except BaseException:
            self.close()
            raise

    # --- running ------------------------------------------------------------------------------

    @property
    def elapsed(self) -> float:
        """Seconds of simulated time since the start."""
        return self.clock.now() - self.started_at

    @property
    def wall_seconds(self) -> float:
        """Seconds of real time spent running the cluster so far."""
        return self._wall

    def run(self, until: float | None = None) -> Report:
        """Run until `until` seconds of simulated time from the start (the scenario's `until`
        when None), and report on the run so far."""
        self.advance(until)
        return self.report()

    def advance(self, until: float | None = None) -> None:
        """Run until `until` seconds of simulated time from the start (the scenario's `until`
        when None)."""
        self._check_running()
        horizon = self.scenario.until if until is None else until
        if horizon is None:
            raise ValueError("the scenario has no `until`: say how long to run")
        if horizon > self.elapsed:
            self._timed(lambda: self.loop.run_until(self.started_at + horizon))

    def finish(self) -> Report:
        """Stop the cluster (the observer takes its last sample) and report on the whole run."""
        elapsed = self.elapsed
        self.close()
        return self._report(elapsed)

    def step(self) -> float:
        """Run up to the next timer of any component, and what falls due then; the seconds
        of simulated time since the start, after."""
        self._check_running()
        self._timed(self.loop.run_until_next)
        return self.elapsed

    def run_coroutine(self, coro: Awaitable[T]) -> T:
        """Run the cluster until `coro` (e.g. a read through `client`) is done."""
        if self._closed and isinstance(coro, Coroutine):
            coro.close()  # never to run: no "never awaited" warning besides the error
        self._check_running()
        return self._timed(lambda: self.loop.run_until_complete(coro))

    def inject(self, step: Step) -> None:
        """Add a step at the end of the timeline, as if the scenario's list ended with it: it
        is taken after the steps before it, at `at` (counted from the start) or once the
        cluster has settled after them."""
        self._check_running()
        self._injected += 1
        self._follow(step, f"injected step {self._injected}")

    def report(self) -> Report:
        """The report of the run so far."""
        return self._report(self.elapsed)

    def close(self) -> None:
        """Stop every component and the scenario's own tasks; the loop is closed after."""
        if self._closed:
            return
        self._closed = True
        try:
            with _rare_collections():
                self.loop.run_until_complete(self._stop())
        finally:
            self.loop.close()
            asyncio.set_event_loop(None)

    def __enter__(self) -> Simulation:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # --- the scenario -------------------------------------------------------------------------

    async def _start(self) -> None:
        await self.plane.start()
        await self.observer.start()
        for index, obj in enumerate(self.scenario.objects):
            try:
                await self.actions.apply([obj])
            except (ActionError, StatusError) as e:
                where = self.scenario.object_field(index)
                raise ActionError(f"{where}: {e}", where) from e
        for i, step in enumerate(self.scenario.timeline):
            self._follow(step, f"spec.timeline[{i}]")
        for arrivals in self.scenario.workloads:
            task = run_arrivals(
                arrivals, self.client, self.plane.randomness, self.started_at, self.refused
            )
            self._tasks.append(self.loop.create_task(task))
        for trace in self.scenario.traces:
            randomness = self.plane.randomness.child("traces").child(trace.name)
            replay = TraceReplay(
                trace, self.plane, self.client, randomness, self.started_at, self.refused
            )
            self._tasks.append(self.loop.create_task(replay.run()))

    def _follow(self, step: Step, where: str) -> None:
        self._timeline.append((where, step))
        if self._following is None or self._following.done():
            self._following = self.loop.create_task(self._take_steps())
            self._tasks.append(self._following)

    async def _take_steps(self) -> None:
        """Take the timeline's steps one after the other, each at its time or once the
        cluster has settled after the one before."""
        while self._timeline:
            where, step = self._timeline.popleft()
            if step.at is not None:
                await asyncio.sleep(max(0.0, self.started_at + step.at - self.clock.now()))
            else:
                await until_settled(self.clock, lambda: self.event_log.workload_changes)
            action = f"{where}.{_action_name(step)}"
            try:
                goes_on = await self.actions.take(step.action)
            except (ActionError, StatusError) as e:
                raise ActionError(f"{action}: {e}", _field(action)) from e
            if goes_on is not None:
                watched = _named_failure(goes_on, action)
                self._tasks.append(self.loop.create_task(watched))

    async def _stop(self) -> None:
        await cancel_and_wait(self._tasks)
        await self.actions.stop()
        await self.observer.stop()
        await self.plane.stop()
        self.event_log.close()

    def _report(self, elapsed: float) -> Report:
        with _rare_collections():  # a row per pod: the default thresholds would walk the heap
            return Report.from_run(
                self.observer,
                scenario=self.scenario.name,
                seed=self.seed,
                simulated_seconds=elapsed,
                wall_seconds=self._wall,
                event_log_sha256=self.event_log.sha256(),
                refused=self.refused,
            )

    def _check_running(self) -> None:
        if self._closed:
            raise RuntimeError("the simulation is finished (finish() or close() stopped it)")

    def _timed(self, work: Any) -> Any:
        """Run `work` (a coroutine, or a callable running the loop), counting its wall time;
        raise what made a step or a workload generator fail meanwhile."""
        began = time.perf_counter()
        try:
            with _rare_collections():
                result = (
                    self.loop.run_until_complete(work) if isinstance(work, Coroutine) else work()
                )
        finally:
            self._wall += time.perf_counter() - began
        self._raise_failure()
        return result

    def _raise_failure(self) -> None:
        for task in self._tasks:
            error = task.exception() if task.done() and not task.cancelled() else None
            if error is not None:
                self._tasks.remove(task)
                raise error


async def _named_failure(task: asyncio.Task[None], where: str) -> None:
    """Wait for `task`, the rest of the step at `where`; its failure names the step."""
    try:
        await task
    except ActionError as e:
        raise ActionError(f"{where}: {e}", _field(where)) from e


def _field(where: str) -> str:
    """The scenario field a step's name is (an injected step is none)."""
    return where if where.startswith("spec.") else ""


@contextmanager
def _rare_collections() -> Iterator[None]:
    """The cyclic garbage collector runs as rarely as in `pinnace up` meanwhile: the cluster's
    objects are acyclic, and its default thresholds walk all of them again and again (a fifth
    of the CPU of loading 2,000 pods, nine tenths of building the report of a large run)."""
    thresholds = gc.get_threshold()
    gc.set_threshold(*GC_THRESHOLD)
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)


def _action_name(step: Step) -> str:
    """The step's action as the scenario file names it: FailNode is failNode."""
    name = type(step.action).__name__
    return name[0].lower() + name[1:]
