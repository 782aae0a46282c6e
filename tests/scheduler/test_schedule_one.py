"""The scheduling cycle end to end through the core: placements, FailedScheduling messages in
kube-scheduler's format, requeueing on cluster events, percentageOfNodesToScore, seeded ties and
a researcher's own per-node Python plugin."""

from typing import Any

import numpy as np
import pytest

from pinnace.clock import VirtualClock
from pinnace.scheduler import (
    CycleState,
    NodeInfo,
    NodePlugin,
    NodeTable,
    PodInfo,
    Profile,
    Scheduler,
    Status,
)
from pinnace.scheduler.framework import RowScores, unschedulable
from pinnace.scheduler.plugins import DEFAULT_WEIGHTS, default_plugins, default_profile
from pinnace.scheduler.schedule_one import (
    Diagnosis,
    fit_error_message,
    num_feasible_nodes_to_find,
)


def node(name: str, cpu: str = "4", taints: list[dict[str, str]] = (), **labels: str) -> dict:
    return {
        "metadata": {"name": name, "labels": labels},
        "spec": {"taints": list(taints)},
        "status": {"allocatable": {"cpu": cpu, "memory": "32Gi", "pods": "110"}},
    }


def pod(name: str, cpu: str = "100m", **spec: Any) -> dict:
    container = {"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "500Mi"}}}
    return {
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"containers": [container], **spec},
    }


@pytest.fixture
def clock() -> VirtualClock:
    with VirtualClock() as c:
        yield c


def scheduler_with(clock: VirtualClock, *nodes: dict, seed: int = 0, **kw: Any) -> Scheduler:
    scheduler = Scheduler([default_profile(lambda binding: None)], clock, seed=seed, **kw)
    for n in nodes:
        scheduler.add_node(n)
    return scheduler


def test_failed_scheduling_message_counts_each_reason_over_the_nodes(clock: VirtualClock) -> None:
    gpu = [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]
    scheduler = scheduler_with(
        clock,
        node("a", cpu="1"),
        node("b", cpu="1"),
        *(node(f"g{i}", taints=gpu) for i in range(3)),
    )
    scheduler.add_pod(pod("big", cpu="2"))
    (result,) = scheduler.schedule_pending()
    assert result.node_name is None and result.reason == "FailedScheduling"
    assert result.message == (
        "0/5 nodes are available: 2 Insufficient cpu, "
        "3 node(s) had untolerated taint {dedicated: gpu}. preemption: 0/5 nodes are "
        "available: 2 No preemption victims found for incoming pod, "
        "3 Preemption is not helpful for scheduling.."
    )


def test_reasons_sort_as_text_and_a_node_can_give_several() -> None:
    statuses = {f"n{i}": unschedulable("Insufficient cpu") for i in range(10)}
    statuses["x"] = unschedulable("Insufficient cpu", "Insufficient memory")
    statuses["y"] = unschedulable("Insufficient memory")
    message = fit_error_message(12, Diagnosis(node_statuses=statuses))
    assert message == "0/12 nodes are available: 11 Insufficient cpu, 2 Insufficient memory."
    statuses = {f"n{i}": unschedulable("b") for i in range(10)} | {"x": unschedulable("a")}
    assert fit_error_message(11, Diagnosis(node_statuses=statuses)) == (
        "0/11 nodes are available: 1 a, 10 b."
    )
    prefilter = Diagnosis(pre_filter_msg="node(s) didn't satisfy plugin(s) [X]")
    assert fit_error_message(3, prefilter) == (
        "0/3 nodes are available: node(s) didn't satisfy plugin(s) [X]."
    )


def test_no_nodes_at_all(clock: VirtualClock) -> None:
    scheduler = scheduler_with(clock)
    scheduler.add_pod(pod("p"))
    (result,) = scheduler.schedule_pending()
    assert result.message == "no nodes available to schedule pods"


def test_an_unschedulable_pod_is_placed_once_a_node_joins(clock: VirtualClock) -> None:
    scheduler = scheduler_with(clock, node("small", cpu="1"))
    scheduler.add_pod(pod("p", cpu="2"))
    assert scheduler.schedule_one().node_name is None
    assert scheduler.schedule_one() is None
    scheduler.add_node(node("big", cpu="8"))
    assert scheduler.schedule_one() is None, "backing off"
    clock.advance(1)
    result = scheduler.schedule_one()
    assert (result.node_name, result.message) == ("big", "Successfully assigned ns/p to big")


def test_a_taint_removal_releases_pods_it_kept_out(clock: VirtualClock) -> None:
    tainted = node("n", taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}])
    scheduler = scheduler_with(clock, tainted)
    scheduler.add_pod(pod("p"))
    assert scheduler.schedule_one().node_name is None
    clock.advance(2)
    more_cpu = node("n", cpu="8", taints=tainted["spec"]["taints"])
    scheduler.update_node(tainted, more_cpu)
    assert scheduler.schedule_one() is None, "an allocatable change cannot undo a taint"
    scheduler.update_node(more_cpu, node("n"))
    assert scheduler.schedule_one().node_name == "n"


def test_pods_for_another_scheduler_are_left_alone(clock: VirtualClock) -> None:
    scheduler = scheduler_with(clock, node("n"))
    scheduler.add_pod(pod("p", schedulerName="my-scheduler"))
    assert scheduler.schedule_pending() == []


def test_least_allocated_spreads_and_ties_break_by_seed(clock: VirtualClock) -> None:
    def placements(seed: int) -> list[str]:
        scheduler = scheduler_with(clock, *(node(f"n{i}") for i in range(4)), seed=seed)
        for i in range(8):
            scheduler.add_pod(pod(f"p{i}"))
        return [r.node_name for r in scheduler.schedule_pending()]

    first = placements(7)
    assert first == placements(7), "deterministic for a seed"
    assert sorted(first) == ["n0", "n0", "n1", "n1", "n2", "n2", "n3", "n3"], "spread evenly"
    assert any(placements(seed) != first for seed in range(8)), "ties are broken at random"


def test_higher_priority_pods_are_placed_first(clock: VirtualClock) -> None:
    scheduler = scheduler_with(clock, node("n", cpu="1"))
    scheduler.add_pod(pod("low", cpu="600m"))
    clock.advance(1)
    scheduler.add_pod(pod("high", cpu="600m", priority=1000))
    results = scheduler.schedule_pending()
    assert [(r.pod.name, r.node_name) for r in results] == [("high", "n"), ("low", None)]


@pytest.mark.parametrize(
    ("percentage", "nodes", "expected"),
    [
        (0, 50, 50),  # small clusters: every node
        (0, 1000, 420),  # 50 - 1000/125 = 42%
        (0, 5000, 500),  # 50 - 40 = 10%
        (0, 6000, 300),  # 50 - 48 = 2% -> at least 5%
        (0, 1500, 570),
        (10, 500, 100),  # at least 100
        (100, 5000, 5000),
    ],
)
def test_percentage_of_nodes_to_score(percentage: int, nodes: int, expected: int) -> None:
    assert num_feasible_nodes_to_find(percentage, nodes) == expected


def test_a_partial_search_goes_round_the_nodes(clock: VirtualClock) -> None:
    scheduler = scheduler_with(
        clock, *(node(f"n{i:03}") for i in range(200)), percentage_of_nodes_to_score=1
    )
    for i in range(3):
        scheduler.add_pod(pod(f"p{i}"))
    results = scheduler.schedule_pending()
    assert [r.feasible_nodes for r in results] == [100, 100, 100]
    assert all(r.node_name for r in results)


def test_a_partial_search_takes_the_feasible_nodes_in_the_order_it_visits_them(
    clock: VirtualClock,
) -> None:
    """findNodesThatPassFilters with percentageOfNodesToScore: going round the nodes from where
    the last cycle stopped, the first feasible ones wanted, and the next cycle starting after
    the last node looked at (all of them when fewer were feasible)."""
    scheduler = scheduler_with(clock, node("n"), percentage_of_nodes_to_score=1)
    profile = next(iter(scheduler.profiles.values()))
    rng = np.random.default_rng(3)
    for _ in range(300):
        n = int(rng.integers(101, 400))
        feasible = rng.random(n) < rng.choice([0.05, 0.3, 0.9, 1.0])
        start = scheduler._next_start_node_index = int(rng.integers(n))
        wanted = num_feasible_nodes_to_find(1, n)
        visited = [(start + i) % n for i in range(n)]
        expected = [i for i in visited if feasible[i]][:wanted]
        looked_at = visited.index(expected[-1]) + 1 if len(expected) == wanted else n
        assert scheduler._nodes_to_score(profile, feasible, n).tolist() == expected
        assert scheduler._next_start_node_index == (start + looked_at) % n


class PreferLabel(NodePlugin):
    """A researcher's policy: only nodes labelled tier=gold, and the higher `rank` the better."""

    name = "PreferLabel"

    def filter_node(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        if node.labels.get("tier") == "gold":
            return Status()
        return unschedulable("node(s) are not gold")

    def score_node(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        return int(node.labels.get("rank", "0"))


def test_a_per_node_python_plugin_filters_and_scores(clock: VirtualClock) -> None:
    profile = Profile(
        [*default_plugins(lambda binding: None), PreferLabel()],
        {**DEFAULT_WEIGHTS, "PreferLabel": 5},
    )
    scheduler = Scheduler([profile], clock)
    for n in [
        node("bronze", cpu="8", tier="bronze", rank="100"),
        node("gold-1", tier="gold", rank="10"),
        node("gold-2", tier="gold", rank="20"),
    ]:
        scheduler.add_node(n)
    scheduler.add_pod(pod("p"))
    assert scheduler.schedule_one().node_name == "gold-2"
    scheduler.add_pod(pod("huge", cpu="100"))
    assert scheduler.schedule_one().message == (
        "0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: "
        "3 No preemption victims found for incoming pod.."
    ), "a node is rejected by the first filter it fails: NodeResourcesFit runs first"
    scheduler.add_pod(pod("small", cpu="6"))  # fits only the bronze node
    assert scheduler.schedule_one().message == (
        "0/3 nodes are available: 1 node(s) are not gold, 2 Insufficient cpu. preemption: "
        "0/3 nodes are available: 3 No preemption victims found for incoming pod.."
    )


class OutOfRange(NodePlugin):
    name = "OutOfRange"

    def score_node(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        return 101


def test_a_score_outside_zero_to_a_hundred_is_an_error(clock: VirtualClock) -> None:
    profile = Profile([*default_plugins(lambda binding: None), OutOfRange()], DEFAULT_WEIGHTS)
    scheduler = Scheduler([profile], clock)
    scheduler.add_node(node("a"))
    scheduler.add_node(node("b"))
    scheduler.add_pod(pod("p"))
    assert scheduler.schedule_one().message == (
        "plugin 'OutOfRange' returns an invalid score 101, it should in the range of [0, 100] "
        "after normalizing"
    )


class PilePods:
    """Scores a node by the pods on it, row by row: pods pile up on one node."""

    name = "PilePods"

    def __init__(self, per_pod: int) -> None:
        self.per_pod = per_pod

    def row_scores(self, state: CycleState, pod: PodInfo, table: NodeTable) -> RowScores:
        def one(i: int) -> int:
            return len(table.pods[i]) * self.per_pod

        def many(rows: Any) -> np.ndarray:
            return np.array([one(i) for i in np.arange(len(table))[rows]], np.int64)

        return RowScores(self.per_pod, many, one)

    def score(self, state: CycleState, pod: PodInfo, table: NodeTable, nodes: Any) -> Any:
        return self.row_scores(state, pod, table).compute(nodes)


def pile_scheduler(clock: VirtualClock, per_pod: int, *nodes: dict) -> Scheduler:
    plugins = [*default_plugins(lambda binding: None), PilePods(per_pod)]
    scheduler = Scheduler([Profile(plugins, {**DEFAULT_WEIGHTS, "PilePods": 100})], clock)
    for n in nodes:
        scheduler.add_node(n)
    return scheduler


def test_row_wise_scores_follow_each_bind(clock: VirtualClock) -> None:
    scheduler = pile_scheduler(clock, 10, node("a"), node("b"), node("c"))
    for i in range(5):
        scheduler.add_pod(pod(f"p{i}"))
    assert len({result.node_name for result in scheduler.schedule_pending()}) == 1


def test_a_row_wise_score_outside_zero_to_a_hundred_is_an_error(clock: VirtualClock) -> None:
    invalid = (
        "plugin 'PilePods' returns an invalid score 120, it should in the range of [0, 100] "
        "after normalizing"
    )
    scheduler = pile_scheduler(clock, 60, node("a"), node("b"))
    for i in range(3):
        scheduler.add_pod(pod(f"p{i}"))
    results = scheduler.schedule_pending()
    assert [r.message for r in results[2:]] == [invalid], "the third pod sees 2 pods on a node"
    # Every row computed at once (a new scheduler) is checked too.
    scheduler = pile_scheduler(clock, 60, node("a"), node("b"))
    scheduler.add_pod(pod("x", nodeName="a"))
    scheduler.add_pod(pod("y", nodeName="a"))
    scheduler.add_pod(pod("p"))
    assert scheduler.schedule_one().message == invalid


def test_a_finished_pod_frees_its_node_for_pending_pods(clock: VirtualClock) -> None:
    scheduler = scheduler_with(clock, node("n", cpu="1"))
    running = pod("done", cpu="1", nodeName="n")
    scheduler.add_pod(running)
    scheduler.add_pod(pod("waiting", cpu="1"))
    assert scheduler.schedule_one().message == (
        "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: "
        "1 No preemption victims found for incoming pod.."
    )
    clock.advance(1)
    scheduler.update_pod(running, {**running, "status": {"phase": "Succeeded"}})
    assert scheduler.schedule_one().node_name == "n"


class FakePreemption:
    """A PostFilter standing in for DefaultPreemption: nominates `node` if given."""

    name = "FakePreemption"

    def __init__(self, node: str | None) -> None:
        self.node = node
        self.seen: list[set[str]] = []

    def post_filter(
        self, state: CycleState, pod: PodInfo, table: Any, diagnosis: Any
    ) -> tuple[str | None, Status]:
        self.seen.append(set(diagnosis.node_statuses))
        if self.node is None:
            return None, unschedulable(
                "preemption: 0/2 nodes are available: 2 No preemption victims found for "
                "incoming pod"
            )
        return self.node, Status()


def test_post_filter_runs_when_no_node_fits_and_its_message_is_appended(
    clock: VirtualClock,
) -> None:
    for nominee in [None, "b"]:
        preemption = FakePreemption(nominee)
        plugins = [
            preemption if plugin.name == "DefaultPreemption" else plugin
            for plugin in default_plugins(lambda binding: None)
        ]
        profile = Profile(plugins, DEFAULT_WEIGHTS)
        scheduler = Scheduler([profile], clock)
        scheduler.add_node(node("a", cpu="1"))
        scheduler.add_node(node("b", cpu="1"))
        scheduler.add_pod(pod("p", cpu="2"))
        result = scheduler.schedule_one()
        assert preemption.seen == [{"a", "b"}]
        assert result.nominated_node_name == nominee
        if nominee is None:
            assert result.message == (
                "0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are "
                "available: 2 No preemption victims found for incoming pod."
            )
        else:
            assert result.message == "0/2 nodes are available: 2 Insufficient cpu."


class NeedsLabel(NodePlugin):
    """A filter that registers no events: any cluster event may help the pods it rejects."""

    name = "NeedsLabel"

    def filter_node(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        return Status() if "ready" in node.labels else unschedulable("node(s) are not ready")


def test_a_plugin_registering_no_events_gets_every_event(clock: VirtualClock) -> None:
    profile = Profile([*default_plugins(lambda binding: None), NeedsLabel()], DEFAULT_WEIGHTS)
    scheduler = Scheduler([profile], clock)
    scheduler.add_node(node("n"))
    scheduler.add_pod(pod("p"))
    assert scheduler.schedule_one().message == (
        "0/1 nodes are available: 1 node(s) are not ready. preemption: 0/1 nodes are "
        "available: 1 No preemption victims found for incoming pod.."
    )
    clock.advance(1)
    scheduler.update_node(node("n"), node("n", ready="yes"))  # a label change
    assert scheduler.schedule_one().node_name == "n"
