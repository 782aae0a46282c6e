"""Why the scheduler would place a pod where it does: every Filter plugin's verdict on every
node, every Score plugin's raw and normalised score on every feasible node, and the pick.

`explain(core, pod)` runs one scheduling cycle's plugins over the core's current nodes without
assuming or binding anything. Unlike a real cycle, every Filter plugin is asked about every
node (a cycle stops at a node's first rejection), so the answer shows all the reasons; the
verdict that counts is the first rejection, as in the FailedScheduling message. A node that
passes on its own but not once the room of pods nominated to it is kept for them (pods of
higher or equal priority that preempted there) is rejected as a cycle rejects it. When no
node fits, PostFilter runs as a dry run: the explanation says which node preemption would
nominate and which pods it would evict, and nothing is evicted.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pinnace.api import status
from pinnace.client import Client
from pinnace.scheduler.adapter import (
    NAMESPACES,
    NODES,
    NOT_FINISHED,
    PDBS,
    PODS,
    REPLICA_SETS,
    SERVICES,
    STATEFUL_SETS,
    VOLUME_KINDS,
    PreemptsThroughAPI,
    SchedulerService,
    connect_offline,
)
from pinnace.scheduler.config import SchedulerConfiguration, build_profiles
from pinnace.scheduler.framework import (
    Code,
    CycleState,
    ScoreExtensions,
    ScoreFailed,
    Status,
)
from pinnace.scheduler.nominator import filter_nodes_with_nominated_pods
from pinnace.scheduler.plugins.volume_listers import VolumeListers
from pinnace.scheduler.podinfo import PodInfo
from pinnace.scheduler.profile import Profile
from pinnace.scheduler.schedule_one import (
    NO_NODES_AVAILABLE,
    Diagnosis,
    Scheduler,
    all_plugins,
    fit_error_message,
)

PASSED = "passed"
SKIPPED = "skipped"  # the plugin's PreFilter said Skip: its Filter does not run for this pod


@dataclass(frozen=True)
class FilterVerdict:
    plugin: str
    passed: bool
    reasons: tuple[str, ...] = ()  # why it rejected the node
    skipped: bool = False
    code: Code = Code.SUCCESS  # the rejection's code (whether preemption may resolve it)

    @property
    def text(self) -> str:
        if self.skipped:
            return SKIPPED
        return PASSED if self.passed else ", ".join(self.reasons)


@dataclass(frozen=True)
class PluginScore:
    plugin: str
    raw: int
    normalized: int
    weight: int

    @property
    def weighted(self) -> int:
        return self.normalized * self.weight


@dataclass
class NodeExplanation:
    node: str
    filters: list[FilterVerdict] = field(default_factory=list)
    scores: list[PluginScore] = field(default_factory=list)  # empty for infeasible nodes
    reserved: FilterVerdict | None = None
    """The rejection with the nominated pods' room kept, when that is what rejects it."""

    @property
    def feasible(self) -> bool:
        return self.reserved is None and all(v.passed for v in self.filters)

    @property
    def rejected_by(self) -> FilterVerdict | None:
        """The rejection a scheduling cycle reports: with the nominated pods' room kept, or
        else the first rejecting plugin."""
        return self.reserved or next((v for v in self.filters if not v.passed), None)

    @property
    def total(self) -> int | None:
        return sum(s.weighted for s in self.scores) if self.feasible else None


@dataclass(frozen=True)
class PreemptionDryRun:
    """What PostFilter would do: nominate `node` after evicting `victims` (namespace/name)."""

    node: str
    victims: tuple[str, ...]


@dataclass
class Explanation:
    pod: str  # namespace/name
    scheduler_name: str
    nodes: list[NodeExplanation]
    selected: str | None  # the node the scheduler would pick (None: none fits)
    best: list[str]  # every node with the highest total (the pick is random among them)
    message: str  # FailedScheduling's message when nothing fits, else ""
    pre_filter: Status | None = None  # a PreFilter rejection of the pod on every node
    bound_to: str = ""  # the node a bound pod is on (it is explained as if pending)
    # Its spec.schedulingGates: kept from the queue until removed (explained as if they were)
    scheduling_gates: list[str] = field(default_factory=list)
    preemption: PreemptionDryRun | None = None  # when nothing fits and preemption would help
    configuration: str = ""  # which KubeSchedulerConfiguration it was explained with

    def as_dict(self) -> dict[str, Any]:
        """Plain data, as `pinnace scheduler explain -o json` prints it."""
        return {
            "pod": self.pod,
            "schedulerName": self.scheduler_name,
            "configuration": self.configuration,
            "selected": self.selected,
            "best": self.best,
            "message": self.message,
            "boundTo": self.bound_to,
            "schedulingGates": self.scheduling_gates,
            "preemption": (
                None
                if self.preemption is None
                else {"node": self.preemption.node, "victims": list(self.preemption.victims)}
            ),
            "nodes": [
                {
                    "name": n.node,
                    "feasible": n.feasible,
                    "reservedForNominatedPods": (
                        None if n.reserved is None else _verdict(n.reserved)
                    ),
                    "filters": [_verdict(v) for v in n.filters],
                    "scores": [
                        {
                            "plugin": s.plugin,
                            "raw": s.raw,
                            "normalized": s.normalized,
                            "weight": s.weight,
                        }
                        for s in n.scores
                    ],
                    "total": n.total,
                }
                for n in self.nodes
            ],
        }


def _verdict(verdict: FilterVerdict) -> dict[str, Any]:
    return {"plugin": verdict.plugin, "verdict": verdict.text, "passed": verdict.passed}


def explain(core: Scheduler, pod: Mapping[str, Any]) -> Explanation:
    """What `core` would decide for `pod` now, plugin by plugin; nothing is changed."""
    info = PodInfo.from_pod(pod)
    profile = core.profiles.get(info.scheduler_name)
    if profile is None:
        raise ValueError(
            f'no profile serves schedulerName "{info.scheduler_name}" (profiles: '
            f"{', '.join(core.profiles)})"
        )
    table = core.table
    names = list(table.names)
    explanation = Explanation(info.key, info.scheduler_name, [], None, [], "")
    explanation.scheduling_gates = list(info.scheduling_gates)
    if not names:
        explanation.message = NO_NODES_AVAILABLE
        return explanation
    nodes = [NodeExplanation(name) for name in names]
    explanation.nodes = nodes
    state = CycleState()
    status = profile.run_pre_filter(state, info, table)
    if not status.is_success():
        explanation.pre_filter = status
        for n in nodes:
            n.filters.append(FilterVerdict(status.plugin, False, status.reasons))
        explanation.message = (
            status.message
            if status.code == Code.ERROR
            else fit_error_message(len(names), Diagnosis(pre_filter_msg=status.message))
        )
        return explanation
    passed = _filter(profile, state, info, table, nodes)
    feasible = passed.copy()
    for among_feasible in (True, False):
        reserving = filter_nodes_with_nominated_pods(
            profile, core.nominator, state, info, table, passed, among_feasible
        )
        for i, status in reserving.items():
            nodes[i].reserved = FilterVerdict(
                status.plugin, False, status.reasons, code=status.code
            )
            feasible[i] = False
    candidates = np.flatnonzero(feasible)
    if len(candidates) == 0:
        diagnosis = Diagnosis()
        for n in nodes:
            verdict = n.rejected_by
            if verdict is not None:
                status = Status(verdict.code, verdict.reasons, verdict.plugin)
                diagnosis.node_statuses[n.node] = status
        if profile.post_filter:
            explanation.preemption = _preemption_dry_run(core, profile, state, info, diagnosis)
        explanation.message = fit_error_message(len(names), diagnosis)
        return explanation
    try:
        _score(profile, state, info, table, candidates, nodes)
    except ScoreFailed as e:  # the cycle fails with a scheduler error: no node is picked
        explanation.message = e.status.message
        return explanation
    totals = {nodes[i].node: nodes[i].total or 0 for i in candidates.tolist()}  # all feasible
    top = max(totals.values())
    explanation.best = [name for name, total in totals.items() if total == top]
    explanation.selected = explanation.best[0] if len(explanation.best) == 1 else None
    return explanation


def _preemption_dry_run(
    core: Scheduler, profile: Profile, state: CycleState, pod: PodInfo, diagnosis: Diagnosis
) -> PreemptionDryRun | None:
    """PostFilter with every preemption plugin deciding but not acting; sets the diagnosis'
    post_filter_msg as a cycle does."""
    with contextlib.ExitStack() as stack:
        decided = [
            stack.enter_context(p.dry_run())
            for p in all_plugins(core)
            if isinstance(p, PreemptsThroughAPI)
        ]
        _, status = profile.run_post_filter(state, pod, core.table, diagnosis)
    diagnosis.post_filter_msg = status.message
    decision = next((d for decisions in decided for d in decisions), None)
    if decision is None:
        return None
    return PreemptionDryRun(decision.node_name, tuple(v.key for v in decision.victims))


def _filter(
    profile: Profile, state: CycleState, pod: PodInfo, table: Any, nodes: list[NodeExplanation]
) -> np.ndarray:
    everywhere = np.ones(len(nodes), bool)
    feasible = everywhere.copy()
    for plugin in profile.filter:
        if plugin.name in state.skip_filter_plugins:
            for n in nodes:
                n.filters.append(FilterVerdict(plugin.name, True, skipped=True))
            continue
        passed = plugin.filter(state, pod, table, everywhere)
        for i, n in enumerate(nodes):
            if passed[i]:
                n.filters.append(FilterVerdict(plugin.name, True))
            else:
                status = plugin.node_status(state, pod, table, i)
                n.filters.append(
                    FilterVerdict(plugin.name, False, status.reasons, code=status.code)
                )
        feasible &= passed
    return feasible


def _score(
    profile: Profile,
    state: CycleState,
    pod: PodInfo,
    table: Any,
    candidates: np.ndarray,
    nodes: list[NodeExplanation],
) -> None:
    profile.run_pre_score(state, pod, table, candidates)
    for plugin, weight in profile.score:
        if plugin.name in state.skip_score_plugins:
            continue
        try:
            raw = np.asarray(plugin.score(state, pod, table, candidates), np.int64)
        except ScoreFailed as e:
            raise ScoreFailed(e.cycle_status(plugin.name)) from None
        normalized = (
            plugin.normalize_score(state, pod, raw.copy())
            if isinstance(plugin, ScoreExtensions)
            else raw
        )
        for j, i in enumerate(candidates.tolist()):
            nodes[i].scores.append(
                PluginScore(plugin.name, int(raw[j]), int(normalized[j]), weight)
            )


def render(explanation: Mapping[str, Any]) -> str:
    """An explanation's plain data (`as_dict`) as tables: filters per node, then scores per
    feasible node, then the pick."""
    lines = [f"Pod {explanation['pod']} (scheduler {explanation['schedulerName']})"]
    if explanation["configuration"]:
        lines.append(f"Configuration: {explanation['configuration']}")
    if explanation["boundTo"]:
        lines.append(f"Bound to {explanation['boundTo']}; explained as if it were pending now.")
    if explanation["schedulingGates"]:
        # SchedulingGates' PreEnqueue message, which keeps the pod out of the queue.
        lines.append(
            f"Waiting for scheduling gates: [{' '.join(explanation['schedulingGates'])}]: the "
            "scheduler does not try it until they are removed; explained as if they were."
        )
    lines.append("")
    nodes = explanation["nodes"]
    if not nodes:
        return "\n".join([*lines, f"Unschedulable: {explanation['message']}"]) + "\n"
    rows = [["NODE", *(v["plugin"] for v in nodes[0]["filters"])]]
    rows += [[n["name"], *(v["verdict"] for v in n["filters"])] for n in nodes]
    lines += ["FILTER", *_table(rows), ""]
    reserved = [(n["name"], n["reservedForNominatedPods"]) for n in nodes]
    reserved = [(name, v) for name, v in reserved if v is not None]
    if reserved:
        lines += ["REJECTED WITH THE ROOM OF PODS NOMINATED TO THE NODE KEPT FOR THEM"]
        lines += [f"{name}: {v['plugin']}: {v['verdict']}" for name, v in reserved]
        lines.append("")
    feasible = [n for n in nodes if n["feasible"]]
    if feasible:
        score_plugins = [f"{s['plugin']} (x{s['weight']})" for s in feasible[0]["scores"]]
        rows = [["NODE", *score_plugins, "TOTAL"]]
        ranked = sorted(feasible, key=lambda n: (-n["total"], n["name"]))
        rows += [
            [n["name"], *(f"{s['raw']} -> {s['normalized']}" for s in n["scores"]), str(n["total"])]
            for n in ranked
        ]
        lines += ["SCORE (raw -> normalised, times the weight in the total)", *_table(rows), ""]
    if explanation["selected"]:
        lines.append(f"Selected: {explanation['selected']}")
    elif explanation["best"]:
        tied = ", ".join(explanation["best"])
        lines.append(f"Tied for the highest score (picked at random): {tied}")
    else:
        lines.append(f"Unschedulable: {explanation['message']}")
        preemption = explanation["preemption"]
        if preemption is not None:
            victims = ", ".join(preemption["victims"])
            lines.append(f"Preemption would nominate {preemption['node']}, evicting: {victims}")
    return "\n".join(lines) + "\n"


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[c]) for row in rows) for c in range(len(rows[0]))]
    return [
        "   ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]


async def explain_pod(
    client: Client,
    namespace: str,
    name: str,
    config: SchedulerConfiguration | None = None,
    usage_of: SchedulerService | None = None,
) -> Explanation:
    """Explain a pod of a running cluster: a core is built from the API's current nodes and
    bound pods (the pod itself left out), with `config`'s profiles, and the usage the running
    scheduler `usage_of` has sampled; nothing is written."""
    config = config or SchedulerConfiguration()
    target = await client.get(PODS, namespace, name)
    core = Scheduler(
        build_profiles(config, lambda binding: None),
        client.clock,
        percentage_of_nodes_to_score=config.percentage_of_nodes_to_score,
    )
    for node in (await client.list(NODES))["items"]:
        core.add_node(node)
    uid = target["metadata"].get("uid")
    for pod in (await client.list(PODS, field_selector=NOT_FINISHED))["items"]:
        if pod["metadata"].get("uid") == uid:
            continue
        # Bound pods take room; pending ones nominated to a node keep room there.
        if (pod.get("spec") or {}).get("nodeName") or (pod.get("status") or {}).get(
            "nominatedNodeName"
        ):
            core.add_pod(pod)
    connect_offline(
        core,
        namespaces=(await client.list(NAMESPACES))["items"],
        budgets=(await client.list(PDBS))["items"],
        replica_sets=(await client.list(REPLICA_SETS))["items"],
        stateful_sets=(await client.list(STATEFUL_SETS))["items"],
        services=(await client.list(SERVICES))["items"],
        usage_of=usage_of,
        volumes=await _volume_listers(client),
    )
    bound_to = (target.get("spec") or {}).get("nodeName") or ""
    if bound_to:
        target = {**target, "spec": {k: v for k, v in target["spec"].items() if k != "nodeName"}}
    explanation = explain(core, target)
    explanation.bound_to = bound_to
    explanation.configuration = config.describe()
    return explanation


async def _volume_listers(client: Client) -> VolumeListers:
    listers = VolumeListers()
    for resource, kind in VOLUME_KINDS:
        for obj in (await client.list(kind))["items"]:
            listers.set(resource, obj)
    return listers


def cluster_explainer(
    client: Client, config: SchedulerConfiguration | None, scheduler: SchedulerService | None
) -> Callable[[str, str], Awaitable[dict[str, Any]]]:
    """(namespace, pod name) -> the explanation's plain data, as the cluster's scheduler gives
    it: with the configuration it runs, the plugins it imported and the usage it sampled.
    `pinnace up` serves it for `pinnace scheduler explain`."""

    async def explain_here(namespace: str, name: str) -> dict[str, Any]:
        try:
            explanation = await explain_pod(client, namespace, name, config, scheduler)
        except ValueError as e:  # no profile serves the pod's schedulerName
            raise status.bad_request(str(e)) from None
        explanation.configuration = f"the cluster's scheduler's ({explanation.configuration})"
        return explanation.as_dict()

    return explain_here
