"""What each descheduler strategy picks, one dry-run cycle over nodes and pods."""

from __future__ import annotations

from tests.descheduler.unit import evicted, node, pod, policy, would_evict

LNU_ARGS = "      thresholds: {cpu: 20}\n      targetThresholds: {cpu: 50}\n"


def test_low_node_utilization_moves_pods_off_overutilized_nodes_until_the_target() -> None:
    nodes = [node("busy"), node("idle"), node("middle")]
    pods = [pod(f"busy-{i}", "busy") for i in range(7)]  # 3.5 of 4 CPU
    pods += [pod("idle-0", "idle"), *(pod(f"middle-{i}", "middle") for i in range(4))]
    found = would_evict(policy("LowNodeUtilization", "balance", LNU_ARGS), nodes, pods)
    # 3500m -> 2000m (50%): three pods of 500m go; all from the overutilized node.
    assert [e.node for e in found] == ["busy"] * 3
    assert found[0].reason == "node is overutilized (cpu 88%, memory 0%, pods 35%)"


def test_low_node_utilization_needs_underutilized_and_overutilized_nodes() -> None:
    nodes = [node("a"), node("b")]
    balanced = [pod(f"a-{i}", "a") for i in range(3)] + [pod(f"b-{i}", "b") for i in range(3)]
    assert evicted(policy("LowNodeUtilization", "balance", LNU_ARGS), nodes, balanced) == []


def test_low_node_utilization_with_deviation_thresholds() -> None:
    args = (
        "      useDeviationThresholds: true\n"
        "      thresholds: {cpu: 10, memory: 10}\n"
        "      targetThresholds: {cpu: 10, memory: 10}\n"
    )
    nodes = [node("a"), node("b")]
    # Mean CPU 50%: a (75%) is above 60%, b (25%) under 40%; pods (unset) count as a 0%
    # deviation from their mean.
    pods = [pod(f"a-{i}", "a") for i in range(6)] + [pod(f"b-{i}", "b") for i in range(2)]
    found = would_evict(policy("LowNodeUtilization", "balance", args), nodes, pods)
    assert [e.node for e in found] == ["a", "a"]


def test_high_node_utilization_skips_when_every_node_is_underutilized() -> None:
    nodes = [node("a"), node("b")]
    pods = [pod("a-0", "a"), pod("b-0", "b")]
    args = "      thresholds: {cpu: 50}\n"
    assert evicted(policy("HighNodeUtilization", "balance", args), nodes, pods) == []


def test_high_node_utilization_evicts_lowest_priority_first_while_room_is_left() -> None:
    nodes = [node("full"), node("sparse")]
    pods = [pod(f"full-{i}", "full") for i in range(6)]  # 3 CPU: 1 CPU to spare
    pods += [
        pod("important", "sparse", priority=100),
        pod("cheap", "sparse"),
        pod("cheaper", "sparse", cpu="1"),
    ]
    found = would_evict(
        policy("HighNodeUtilization", "balance", "      thresholds: {cpu: 60}\n"), nodes, pods
    )
    # The full node has 1 CPU to spare: pods go, lowest priority first, until it is spent.
    assert [e.name for e in found] == ["cheap", "cheaper"]


def test_remove_duplicates_spreads_an_owners_pods() -> None:
    nodes = [node("a"), node("b")]
    pods = [pod(f"web-{i}", "a") for i in range(3)] + [pod("web-3", "b")]
    pods.append(pod("other", "a", image="redis:7"))  # other images: not a duplicate
    found = would_evict(policy("RemoveDuplicates", "balance"), nodes, pods)
    # Four pods on two nodes: at most two per node.
    assert [e.name for e in found] == ["web-1"] or [e.name for e in found] == ["web-2"]
    assert found[0].reason == "3 pods of ReplicaSet web on the node, 2 wanted"


def test_remove_duplicates_excludes_owner_kinds() -> None:
    nodes = [node("a"), node("b")]
    pods = [pod(f"web-{i}", "a") for i in range(3)]
    args = "      excludeOwnerKinds: [ReplicaSet]\n"
    assert evicted(policy("RemoveDuplicates", "balance", args), nodes, pods) == []


def test_node_affinity_evicts_pods_whose_node_no_longer_matches() -> None:
    nodes = [node("old"), node("new", labels={"disk": "ssd"})]
    pods = [
        pod("wants-ssd", "old", nodeSelector={"disk": "ssd"}),
        pod("anywhere", "old"),
    ]
    args = "      nodeAffinityType: [requiredDuringSchedulingIgnoredDuringExecution]\n"
    found = would_evict(policy("RemovePodsViolatingNodeAffinity", "deschedule", args), nodes, pods)
    assert [(e.name, e.reason) for e in found] == [
        ("wants-ssd", "the node no longer satisfies the pod's required node affinity")
    ]
    # With no node to go to, the pod stays.
    elsewhere = [nodes[0], node("plain")]
    plugin = policy("RemovePodsViolatingNodeAffinity", "deschedule", args)
    assert evicted(plugin, elsewhere, pods) == []


def test_node_affinity_preferred_moves_to_a_better_node() -> None:
    nodes = [node("plain"), node("fast", labels={"tier": "fast"})]
    preferred = {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 10,
                    "preference": {
                        "matchExpressions": [{"key": "tier", "operator": "In", "values": ["fast"]}]
                    },
                }
            ]
        }
    }
    pods = [pod("picky", "plain", affinity=preferred), pod("fine", "fast", affinity=preferred)]
    args = "      nodeAffinityType: [preferredDuringSchedulingIgnoredDuringExecution]\n"
    plugin = policy("RemovePodsViolatingNodeAffinity", "deschedule", args)
    assert evicted(plugin, nodes, pods) == ["picky"]


TAINT = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}


def test_node_taints_evicts_pods_that_do_not_tolerate() -> None:
    nodes = [node("gpu", taints=[TAINT]), node("plain")]
    toleration = {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}
    pods = [pod("intruder", "gpu"), pod("welcome", "gpu", tolerations=[toleration])]
    found = would_evict(policy("RemovePodsViolatingNodeTaints", "deschedule"), nodes, pods)
    assert [(e.name, e.reason) for e in found] == [
        ("intruder", "untolerated taint dedicated=gpu:NoSchedule")
    ]
    for excluded in ("dedicated", "dedicated=gpu"):
        args = f"      excludedTaints: [{excluded}]\n"
        plugin = policy("RemovePodsViolatingNodeTaints", "deschedule", args)
        assert evicted(plugin, nodes, pods) == []


def test_node_taints_prefer_no_schedule_only_when_included() -> None:
    soft = {"key": "spot", "value": "", "effect": "PreferNoSchedule"}
    nodes = [node("spot", taints=[soft]), node("plain")]
    pods = [pod("web-0", "spot")]
    assert evicted(policy("RemovePodsViolatingNodeTaints", "deschedule"), nodes, pods) == []
    args = "      includePreferNoSchedule: true\n"
    assert evicted(policy("RemovePodsViolatingNodeTaints", "deschedule", args), nodes, pods) == [
        "web-0"
    ]


def test_inter_pod_anti_affinity_evicts_the_pod_whose_rule_is_violated() -> None:
    nodes = [node("a"), node("b")]
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {"app": "db"}},
                    "topologyKey": "kubernetes.io/hostname",
                }
            ]
        }
    }
    pods = [
        pod("loner", "a", labels={"app": "loner"}, affinity=anti),
        pod("db", "a", labels={"app": "db"}, owner="ReplicaSet/db"),
        pod("far-db", "b", labels={"app": "db"}, owner="ReplicaSet/db"),
    ]
    found = would_evict(
        policy("RemovePodsViolatingInterPodAntiAffinity", "deschedule"), nodes, pods
    )
    assert [(e.name, e.reason) for e in found] == [
        ("loner", "anti-affinity rejects pod db in its domain")
    ]


def test_topology_spread_evicts_from_the_fullest_domain() -> None:
    nodes = [node("a1", labels={"zone": "a"}), node("b1", labels={"zone": "b"})]
    spread = [
        {
            "maxSkew": 1,
            "topologyKey": "zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "web"}},
        }
    ]
    pods = [pod(f"web-{i}", "a1", topologySpreadConstraints=spread) for i in range(4)]
    found = would_evict(
        policy("RemovePodsViolatingTopologySpreadConstraint", "balance"), nodes, pods
    )
    # 4 against 0 with maxSkew 1: two move, leaving 2 and 2.
    assert len(found) == 2
    assert found[0].reason == "zone domains differ by more than maxSkew 1"
    soft = [dict(spread[0], whenUnsatisfiable="ScheduleAnyway")]
    pods = [pod(f"web-{i}", "a1", topologySpreadConstraints=soft) for i in range(4)]
    plugin = policy("RemovePodsViolatingTopologySpreadConstraint", "balance")
    assert evicted(plugin, nodes, pods) == []
    args = "      constraints: [DoNotSchedule, ScheduleAnyway]\n"
    plugin = policy("RemovePodsViolatingTopologySpreadConstraint", "balance", args)
    assert len(evicted(plugin, nodes, pods)) == 2


def restarted(name: str, count: int) -> dict[str, object]:
    return pod(
        name,
        "a",
        status={"phase": "Running", "containerStatuses": [{"name": "app", "restartCount": count}]},
    )


def test_too_many_restarts() -> None:
    nodes = [node("a"), node("b")]
    pods = [restarted("flaky", 5), restarted("steady", 2)]
    args = "      podRestartThreshold: 3\n"
    found = would_evict(policy("RemovePodsHavingTooManyRestarts", "deschedule", args), nodes, pods)
    assert [(e.name, e.reason) for e in found] == [("flaky", "5 restarts, threshold 3")]


def test_pod_lifetime_evicts_the_oldest_first() -> None:
    nodes = [node("a"), node("b")]
    pods = [pod("young", "a", age=60), pod("old", "a", age=7200), pod("older", "b", age=9000)]
    args = "      maxPodLifeTimeSeconds: 3600\n"
    found = would_evict(policy("PodLifeTime", "deschedule", args), nodes, pods)
    assert [(e.name, e.reason) for e in found] == [
        ("older", "running for 9000s, more than 3600s"),
        ("old", "running for 7200s, more than 3600s"),
    ]
    pending = [pod("stuck", "a", age=7200, status={"phase": "Pending"}), *pods]
    args += "      states: [Pending]\n"
    assert evicted(policy("PodLifeTime", "deschedule", args), nodes, pending) == ["stuck"]


def test_namespaces_and_label_selector_restrict_a_plugin() -> None:
    nodes = [node("a"), node("b")]
    pods = [pod("old", "a", age=7200), pod("old-db", "a", age=7200, labels={"app": "db"})]
    args = "      maxPodLifeTimeSeconds: 3600\n      labelSelector: {matchLabels: {app: db}}\n"
    assert evicted(policy("PodLifeTime", "deschedule", args), nodes, pods) == ["old-db"]
    args = "      maxPodLifeTimeSeconds: 3600\n      namespaces: {exclude: [default]}\n"
    assert evicted(policy("PodLifeTime", "deschedule", args), nodes, pods) == []
