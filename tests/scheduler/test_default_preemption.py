"""DefaultPreemption as kube-scheduler v1.32 decides: minimal victims, priority order, PDBs
respected where possible, preemptionPolicy Never, nominated pods keeping their room, and the
FailedScheduling message. Scenarios follow kubernetes/kubernetes'
pkg/scheduler/framework/plugins/defaultpreemption/default_preemption_test.go
(TestSelectBestCandidate, TestDryRunPreemption, TestPodEligibleToPreemptOthers) and
test/integration/scheduler/preemption/preemption_test.go (TestPreemption, TestPDBInPreemption,
TestNominatedNodeCleanUp)."""

import random
from typing import Any

import pytest

from pinnace.bench.scheduler import run
from pinnace.clock import VirtualClock
from pinnace.scheduler import CycleState, NodeInfo, NodePlugin, PodInfo, Profile, Scheduler, Status
from pinnace.scheduler.plugins import DEFAULT_WEIGHTS, default_plugins
from pinnace.scheduler.plugins.default_preemption import DefaultPreemption, with_preemption
from pinnace.scheduler.preemption import Preemption, num_candidates


def node(name: str, cpu: str = "4", taints: list[dict[str, str]] = ()) -> dict:
    return {
        "metadata": {"name": name},
        "spec": {"taints": list(taints)},
        "status": {"allocatable": {"cpu": cpu, "memory": "32Gi", "pods": "110"}},
    }


def pod(
    name: str,
    cpu: str = "1",
    priority: int = 0,
    node_name: str = "",
    labels: dict[str, str] | None = None,
    start: str = "",
    **spec: Any,
) -> dict:
    container = {"name": "c", "resources": {"requests": {"cpu": cpu}}}
    obj: dict[str, Any] = {
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}", "labels": labels or {}},
        "spec": {"containers": [container], "priority": priority, **spec},
        "status": {},
    }
    if node_name:
        obj["spec"]["nodeName"] = node_name
        obj["status"] = {"phase": "Running", "startTime": start or "2024-01-01T00:00:00Z"}
    return obj


def pdb(name: str, allowed: int, **match_labels: str) -> dict:
    return {
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"selector": {"matchLabels": match_labels}},
        "status": {"disruptionsAllowed": allowed},
    }


class Cluster:
    """A scheduler with DefaultPreemption whose decisions are recorded, not carried out."""

    def __init__(
        self,
        clock: VirtualClock,
        *nodes: dict,
        pdbs: list[dict] = (),
        extra: list[NodePlugin] = (),
        **args: Any,
    ):
        self.decisions: list[Preemption] = []
        self.pods: dict[str, dict] = {}
        preemption = DefaultPreemption(
            args, preempt=self.decisions.append, pod_disruption_budgets=lambda: pdbs
        )
        plugins = with_preemption([*default_plugins(lambda binding: None), *extra], preemption)
        profile = Profile(plugins, DEFAULT_WEIGHTS)
        self.scheduler = Scheduler([profile], clock)
        for n in nodes:
            self.scheduler.add_node(n)

    def add(self, *pods: dict) -> None:
        for p in pods:
            self.pods[p["metadata"]["name"]] = p
            self.scheduler.add_pod(p)

    def delete_victims(self) -> None:
        """What the API adapter does, in the end: the victims go."""
        for victim in self.decisions[-1].victims:
            self.scheduler.delete_pod(victim.pod)

    def preempt(self, preemptor: dict) -> tuple[str | None, list[str]]:
        self.add(preemptor)
        result = self.scheduler.schedule_one()
        assert result.node_name is None
        victims = [v.name for v in self.decisions[-1].victims] if result.nominated_node_name else []
        return result.nominated_node_name, victims


@pytest.fixture
def clock() -> VirtualClock:
    with VirtualClock() as c:
        yield c


def test_only_the_fewest_lower_priority_pods_are_evicted_highest_reprieved_first(
    clock: VirtualClock,
) -> None:
    cluster = Cluster(clock, node("a"))
    cluster.add(*(pod(f"p{prio}", priority=prio, node_name="a") for prio in (1, 2, 3, 4)))
    assert cluster.preempt(pod("high", cpu="2", priority=10)) == ("a", ["p2", "p1"])
    decision = cluster.decisions[0]
    assert (decision.preemptor.name, decision.node_name, decision.num_pdb_violations) == (
        "high",
        "a",
        0,
    )


def test_pods_of_equal_or_higher_priority_are_never_victims(clock: VirtualClock) -> None:
    cluster = Cluster(clock, node("a", cpu="2"))
    cluster.add(pod("same", priority=10, node_name="a"), pod("low", priority=1, node_name="a"))
    assert cluster.preempt(pod("high", cpu="1", priority=10)) == ("a", ["low"])
    cluster.delete_victims()
    cluster.add(pod("big", cpu="2", priority=10))
    result = cluster.scheduler.schedule_one()
    assert result.pod.name == "big"
    assert result.message == (
        "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: "
        "1 No preemption victims found for incoming pod.."
    ), "the room of the nominated pod of equal priority is not free"
    assert result.nominated_node_name == ""


def test_the_node_whose_victims_have_the_lowest_highest_priority_is_chosen(
    clock: VirtualClock,
) -> None:
    # TestSelectBestCandidate "a pod that fits on both nodes when lower priority pods are
    # preempted": the node with the lower-priority victim wins.
    cluster = Cluster(clock, node("a", cpu="2"), node("b", cpu="2"))
    cluster.add(pod("mid", cpu="2", priority=5, node_name="a"))
    cluster.add(pod("low", cpu="2", priority=1, node_name="b"))
    assert cluster.preempt(pod("high", cpu="2", priority=10)) == ("b", ["low"])


def test_then_the_smallest_sum_of_priorities_then_the_fewest_victims(clock: VirtualClock) -> None:
    # TestSelectBestCandidate "sum of priorities" and "fewest pods" cases.
    cluster = Cluster(clock, node("a", cpu="2"), node("b", cpu="2"), node("c", cpu="2"))
    cluster.add(pod("a1", priority=3, node_name="a"), pod("a2", priority=3, node_name="a"))
    cluster.add(pod("b1", priority=3, node_name="b"), pod("b2", priority=1, node_name="b"))
    cluster.add(pod("c1", cpu="2", priority=3, node_name="c"))
    # a: 3+3, b: 3+1, c: 3 alone: same highest priority; c has the smallest sum.
    assert cluster.preempt(pod("high", cpu="2", priority=10)) == ("c", ["c1"])


def test_then_the_latest_start_of_the_highest_priority_victims(clock: VirtualClock) -> None:
    cluster = Cluster(clock, node("a", cpu="1"), node("b", cpu="1"))
    cluster.add(pod("old", priority=1, node_name="a", start="2024-01-01T00:00:00Z"))
    cluster.add(pod("young", priority=1, node_name="b", start="2024-06-01T00:00:00Z"))
    assert cluster.preempt(pod("high", priority=10)) == ("b", ["young"])


def test_a_pdb_protected_pod_is_spared_when_another_node_needs_no_violation(
    clock: VirtualClock,
) -> None:
    # TestPDBInPreemption: a node whose victims violate no budget wins over lower priorities.
    budgets = [pdb("guard", 0, app="guarded")]
    cluster = Cluster(clock, node("a", cpu="1"), node("b", cpu="1"), pdbs=budgets)
    cluster.add(pod("guarded", priority=1, node_name="a", labels={"app": "guarded"}))
    cluster.add(pod("plain", priority=5, node_name="b"))
    assert cluster.preempt(pod("high", priority=10)) == ("b", ["plain"])
    assert cluster.decisions[0].num_pdb_violations == 0


def test_pdb_violating_pods_are_reprieved_first_even_before_higher_priorities(
    clock: VirtualClock,
) -> None:
    budgets = [pdb("guard", 0, app="guarded")]
    cluster = Cluster(clock, node("a", cpu="2"), pdbs=budgets)
    cluster.add(pod("guarded", priority=1, node_name="a", labels={"app": "guarded"}))
    cluster.add(pod("plain", priority=2, node_name="a"))
    assert cluster.preempt(pod("high", priority=10)) == ("a", ["plain"])


def test_a_pdb_is_violated_when_nothing_else_helps_and_counted(clock: VirtualClock) -> None:
    budgets = [pdb("guard", 1, app="guarded")]
    cluster = Cluster(clock, node("a", cpu="2"), pdbs=budgets)
    cluster.add(
        *(pod(f"g{i}", priority=1, node_name="a", labels={"app": "guarded"}) for i in (1, 2))
    )
    nominated, victims = cluster.preempt(pod("high", cpu="2", priority=10))
    assert (nominated, sorted(victims)) == ("a", ["g1", "g2"])
    assert cluster.decisions[0].num_pdb_violations == 1, "the budget allows one of the two"


def test_preemption_policy_never_preempts_nothing(clock: VirtualClock) -> None:
    cluster = Cluster(clock, node("a", cpu="1"))
    cluster.add(pod("low", node_name="a"))
    cluster.add(pod("high", priority=10, preemptionPolicy="Never"))
    result = cluster.scheduler.schedule_one()
    assert result.message == (
        "0/1 nodes are available: 1 Insufficient cpu. "
        "preemption: not eligible due to preemptionPolicy=Never.."
    )
    assert (result.nominated_node_name, cluster.decisions) == (None, [])


def test_message_counts_nodes_without_victims_and_nodes_preemption_cannot_help(
    clock: VirtualClock,
) -> None:
    gpu = [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]
    cluster = Cluster(clock, node("a", cpu="1"), node("b", taints=gpu), node("c", taints=gpu))
    cluster.add(pod("important", priority=100, node_name="a"))
    cluster.add(pod("p", priority=10))
    result = cluster.scheduler.schedule_one()
    assert result.message == (
        "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated taint "
        "{dedicated: gpu}. preemption: 0/3 nodes are available: 1 No preemption victims found "
        "for incoming pod, 2 Preemption is not helpful for scheduling.."
    )


def test_the_decision_says_what_the_adapter_writes(clock: VirtualClock) -> None:
    cluster = Cluster(clock, node("a", cpu="1"))
    cluster.add(pod("low", node_name="a"))
    cluster.preempt(pod("high", priority=10))
    decision = cluster.decisions[0]
    assert decision.disruption_condition() == {
        "type": "DisruptionTarget",
        "status": "True",
        "reason": "PreemptionByScheduler",
        "message": "default-scheduler: preempting to accommodate a higher priority pod",
    }
    assert decision.victim_event_message() == "Preempted by pod uid-high on node a"


def test_the_preemptor_lands_on_its_node_and_lower_pods_cannot_take_the_room(
    clock: VirtualClock,
) -> None:
    # TestPreemption / TestNominatedNodeCleanUp: the nominated pod's room is reserved.
    cluster = Cluster(clock, node("a", cpu="2"))
    cluster.add(pod("low", cpu="2", node_name="a"))
    assert cluster.preempt(pod("high", cpu="2", priority=100)) == ("a", ["low"])
    assert cluster.scheduler.nominator.node_of("ns/high") == "a"
    cluster.delete_victims()
    cluster.add(pod("mid", cpu="1", priority=50))
    result = cluster.scheduler.schedule_one()  # high is backing off; mid comes first
    assert (result.pod.name, result.node_name) == ("mid", None)
    assert result.message.startswith("0/1 nodes are available: 1 Insufficient cpu. preemption:")
    clock.advance(10)
    result = cluster.scheduler.schedule_one()
    assert (result.pod.name, result.node_name) == ("high", "a")
    assert cluster.scheduler.nominator.node_of("ns/high") is None


def test_the_preemptor_goes_to_its_nominated_node_even_if_another_now_scores_higher(
    clock: VirtualClock,
) -> None:
    # schedule_one.go's evaluateNominatedNode: the nominated node is tried first, alone.
    cluster = Cluster(clock, node("a", cpu="2"))
    cluster.add(pod("low", cpu="2", node_name="a"))
    cluster.preempt(pod("high", cpu="2", priority=100))
    cluster.delete_victims()
    cluster.scheduler.add_node(node("roomy", cpu="64"))
    clock.advance(10)
    result = cluster.scheduler.schedule_one()
    assert (result.pod.name, result.node_name) == ("high", "a")


def test_a_nominated_pod_waits_while_its_victims_terminate(clock: VirtualClock) -> None:
    # TestPodEligibleToPreemptOthers "Pod with nominated node, but without any lower priority
    # pod terminating" / "with a lower priority pod terminating".
    cluster = Cluster(clock, node("a", cpu="1"), node("b", cpu="1"))
    cluster.add(pod("low-a", node_name="a"), pod("low-b", priority=1, node_name="b"))
    (victim,) = cluster.preempt(pod("high", priority=100))[1]
    old = cluster.pods[victim]
    terminating = {
        **old,
        "metadata": {**old["metadata"], "deletionTimestamp": "2024-01-02T00:00:00Z"},
        "status": {
            **old["status"],
            "conditions": [{**cluster.decisions[0].disruption_condition()}],
        },
    }
    cluster.scheduler.update_pod(old, terminating)
    clock.advance(301)  # parked pods are retried after 5 minutes at the latest
    result = cluster.scheduler.schedule_one()
    assert result.pod.name == "high"
    assert result.message.endswith(
        "preemption: not eligible due to a terminating pod on the nominated node.."
    )
    assert len(cluster.decisions) == 1, "no second round of victims"


def test_lower_priority_pods_nominated_to_the_node_lose_their_nomination(
    clock: VirtualClock,
) -> None:
    cluster = Cluster(clock, node("a", cpu="1"))
    cluster.add(pod("low", node_name="a"))
    cluster.add(pod("mid", priority=5, preemptionPolicy="Never", status={}))
    mid = cluster.pods["mid"]
    cluster.scheduler.update_pod(mid, {**mid, "status": {"nominatedNodeName": "a"}})
    cluster.scheduler.schedule_one()  # mid: may not preempt
    cluster.preempt(pod("high", priority=10))
    decision = cluster.decisions[0]
    assert [p.name for p in decision.nominations_to_clear] == ["mid"]
    assert cluster.scheduler.nominator.node_of("ns/mid") is None


def test_enough_candidates_stop_the_search_from_a_random_offset(clock: VirtualClock) -> None:
    nodes = [node(f"n{i}", cpu="1") for i in range(20)]
    chosen = set()
    for seed in range(6):
        cluster = Cluster(clock, *nodes, minCandidateNodesPercentage=0, minCandidateNodesAbsolute=1)
        cluster.add(*(pod(f"low{i}", node_name=f"n{i}") for i in range(20)))
        cluster.scheduler.profiles["default-scheduler"].post_filter[0].random.seed(seed)
        chosen.add(cluster.preempt(pod("high", priority=10))[0])
    assert len(chosen) > 1, "the first candidate found depends on the random start"


def test_number_of_candidates_and_arguments() -> None:
    assert num_candidates(5000, 10, 100) == 500
    assert num_candidates(300, 10, 100) == 100
    assert num_candidates(50, 10, 100) == 50
    with pytest.raises(ValueError, match=r"not in valid range \[0, 100\]"):
        DefaultPreemption({"minCandidateNodesPercentage": 101})
    with pytest.raises(ValueError, match="cannot be zero"):
        DefaultPreemption({"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0})


class PassThrough(NodePlugin):
    """A Filter the preemption does not know to be per-node: it takes the node-by-node path."""

    name = "PassThrough"

    def filter_node(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        return Status()


def test_many_nodes_at_once_choose_as_node_by_node(clock: VirtualClock) -> None:
    rng = random.Random(5)
    for _ in range(60):
        nodes = [node(f"n{i}", cpu=str(rng.randint(1, 4))) for i in range(rng.randint(3, 12))]
        pods, nominated = [], []
        for i in range(rng.randint(10, 60)):
            on = rng.choice(nodes)["metadata"]["name"]
            labels = {"app": rng.choice("xyz")}
            start = f"2024-01-{rng.randint(1, 28):02d}T00:00:00Z"
            cpu = f"{rng.choice((100, 300, 500, 1000))}m"
            pods.append(pod(f"p{i}", cpu, rng.randint(0, 5), on, labels, start))
        for i in range(rng.randint(0, 3)):
            waiting = pod(f"w{i}", "500m", rng.randint(0, 9))
            waiting["status"] = {"nominatedNodeName": rng.choice(nodes)["metadata"]["name"]}
            nominated.append(waiting)
        budgets = [pdb(f"b{a}", rng.randint(0, 2), app=a) for a in "xy"]
        preemptor = pod("high", f"{rng.choice((500, 1000, 2000, 3500, 5000))}m", rng.randint(4, 9))
        outcomes = []
        for extra in ([], [PassThrough()]):
            cluster = Cluster(clock, *nodes, pdbs=budgets, minCandidateNodesAbsolute=3, extra=extra)
            cluster.add(*pods, *nominated)
            cluster.add(preemptor)
            results = cluster.scheduler.schedule_pending()
            outcomes.append(
                (
                    [(r.pod.name, r.node_name, r.message, r.nominated_node_name) for r in results],
                    [
                        (d.node_name, [v.name for v in d.victims], d.num_pdb_violations)
                        for d in cluster.decisions
                    ],
                )
            )
        assert outcomes[0] == outcomes[1]


def test_the_preemption_bench_workload_runs_its_preemptors_to_the_end() -> None:
    # 300 measured pods meet 2 preemptors (one per 114 cycles); each must land in the end.
    (figures,) = run(["PreemptionAsync"], nodes=100, pods=300).values()
    assert (figures["nodes"], figures["pods"]) == (100, 300)
