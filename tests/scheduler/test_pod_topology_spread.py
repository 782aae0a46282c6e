"""PodTopologySpread, with vectors from kube-scheduler v1.32's
pkg/scheduler/framework/plugins/podtopologyspread/scoring_test.go (TestPodTopologySpreadScore)
and filtering_test.go (TestSingleConstraint, TestMultipleConstraints)."""

from typing import Any

import numpy as np
import pytest

from pinnace.clock import VirtualClock
from pinnace.scheduler import CycleState, NodeTable, PodInfo, Scheduler
from pinnace.scheduler.framework import Code
from pinnace.scheduler.plugins import default_profile
from pinnace.scheduler.plugins.pod_topology_spread import PodTopologySpread
from pinnace.scheduler.plugins.workload_selectors import SERVICE, WorkloadSelectors

HOSTNAME = "kubernetes.io/hostname"
FOO = {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}
BAR = {"matchExpressions": [{"key": "bar", "operator": "Exists"}]}
NOT_MATCH = "node(s) didn't match pod topology spread constraints"
MISSING_LABEL = NOT_MATCH + " (missing required label)"


def node(name: str, taints: list[dict[str, str]] = (), **labels: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": labels},
        "spec": {"taints": list(taints)},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
    }


def host(name: str, **labels: str) -> dict[str, Any]:
    return node(name, **{HOSTNAME: name, **labels})


def constraint(max_skew: int, key: str, when: str, selector: Any = FOO, **more: Any) -> dict:
    return {
        "maxSkew": max_skew,
        "topologyKey": key,
        "whenUnsatisfiable": when,
        "labelSelector": selector,
        **more,
    }


def pod(name: str = "p", labels: Any = None, *constraints: dict, **spec: Any) -> PodInfo:
    spec.setdefault("containers", [{"name": "c", "image": "pause"}])
    if constraints:
        spec["topologySpreadConstraints"] = list(constraints)
    meta = {"name": name, "namespace": "default", "labels": labels or {}}
    return PodInfo.from_pod({"metadata": meta, "spec": spec})


def table_of(nodes: list[dict], pods: dict[str, list[dict[str, str]]]) -> NodeTable:
    """`pods`: node name -> the labels of each pod on it."""
    table = NodeTable()
    for n in nodes:
        table.add_node(n)
    for node_name, labels in pods.items():
        for i, lb in enumerate(labels):
            table.add_pod(pod(f"{node_name}-{i}", lb), node_name)
    return table


def scores(
    p: PodInfo,
    candidates: list[dict],
    pods: dict[str, list[dict[str, str]]],
    failed: list[dict] = (),
    plugin: PodTopologySpread | None = None,
) -> list[int]:
    table = table_of([*candidates, *failed], pods)
    plugin = plugin or PodTopologySpread()
    state, nodes = CycleState(), np.arange(len(candidates))
    assert plugin.pre_score(state, p, table, nodes).is_success()
    return plugin.normalize_score(state, p, plugin.score(state, p, table, nodes)).tolist()


F = {"foo": ""}


def soft(max_skew: int, key: str, selector: Any = FOO) -> dict:
    return constraint(max_skew, key, "ScheduleAnyway", selector)


def test_one_constraint_on_hostname_scores() -> None:
    four = [host("node-a"), host("node-b"), host("node-c"), host("node-d")]
    # "one constraint on node, all 4 nodes are candidates": matching pods 2/1/0/3
    spread = {"node-a": [F, F], "node-b": [F], "node-d": [F, F, F]}
    assert scores(pod("p", F, soft(1, HOSTNAME)), four, spread) == [20, 60, 100, 0]
    # "..., null selector"
    assert scores(pod("p", F, soft(1, HOSTNAME, None)), four, spread) == [100] * 4
    # "..., maxSkew=2"
    assert scores(pod("p", F, soft(2, HOSTNAME)), four, spread) == [33, 66, 100, 16]
    # "..., maxSkew=3": matching pods 4/3/2/1
    spread = {"node-a": [F] * 4, "node-b": [F] * 3, "node-c": [F] * 2, "node-d": [F]}
    assert scores(pod("p", F, soft(3, HOSTNAME)), four, spread) == [44, 66, 77, 100]


def test_system_default_constraints_use_the_selecting_service() -> None:
    # "system defaulting, nodes don't have zone, pods match service"
    four = [host("node-a"), host("node-b"), host("node-c"), host("node-d")]
    spread = {"node-a": [F] * 4, "node-b": [F] * 3, "node-c": [F] * 2, "node-d": [F]}
    workloads = WorkloadSelectors()
    plugin = PodTopologySpread(workload_selector=workloads)
    table = table_of(four, spread)
    state, nodes = CycleState(), np.arange(4)
    # Nothing selects the pod: no default constraints.
    assert plugin.pre_score(state, pod("p", F), table, nodes).code == Code.SKIP
    workloads.set(
        SERVICE,
        {"metadata": {"name": "s", "namespace": "default"}, "spec": {"selector": {"foo": ""}}},
    )
    assert scores(pod("p", F), four, spread, plugin=plugin) == [44, 66, 77, 100]


def test_candidates_and_failed_nodes() -> None:
    spread = {
        "node-a": [F] * 4,
        "node-b": [F] * 2,
        "node-x": [F],
        "node-y": [F] * 3,
    }
    # "one constraint on node, 3 out of 4 nodes are candidates"
    candidates = [host("node-a"), host("node-b"), host("node-x")]
    assert scores(pod("p", F, soft(1, HOSTNAME)), candidates, spread, [host("node-y")]) == [
        33,
        83,
        100,
    ]
    # "..., one node doesn't match topology key"
    candidates = [host("node-a"), node("node-b", n="node-b"), host("node-x")]
    assert scores(pod("p", F, soft(1, HOSTNAME)), candidates, spread, [host("node-y")]) == [
        16,
        0,
        100,
    ]
    # "one constraint on zone, 3 out of 4 nodes are candidates"
    candidates = [
        host("node-a", zone="zone1"),
        host("node-b", zone="zone1"),
        host("node-x", zone="zone2"),
    ]
    failed = [host("node-y", zone="zone2")]
    assert scores(pod("p", F, soft(1, "zone")), candidates, spread, failed) == [75, 75, 100]


def test_two_constraints() -> None:
    # "two Constraints on zone and node, 2 out of 4 nodes are candidates": 2/~1~/2/~4~
    spread = {"node-a": [F, F], "node-b": [F], "node-x": [F, F], "node-y": [F] * 4}
    candidates = [host("node-a", zone="zone1"), host("node-x", zone="zone2")]
    failed = [host("node-b", zone="zone1"), host("node-y", zone="zone2")]
    p = pod("p", F, soft(1, "zone"), soft(1, HOSTNAME))
    assert scores(p, candidates, spread, failed) == [100, 63]
    # "two Constraints on zone and node, with different labelSelectors"
    fb = {"foo": "", "bar": ""}
    spread = {"node-a": [F], "node-b": [fb], "node-y": [F, {"bar": ""}]}
    four = [
        host("node-a", zone="zone1"),
        host("node-b", zone="zone1"),
        host("node-x", zone="zone2"),
        host("node-y", zone="zone2"),
    ]
    p = pod("p", fb, soft(1, "zone"), soft(1, HOSTNAME, BAR))
    assert scores(p, four, spread) == [60, 20, 100, 60]


def run_filter(p: PodInfo, table: NodeTable, plugin: PodTopologySpread | None = None) -> list[str]:
    plugin = plugin or PodTopologySpread()
    state = CycleState()
    assert plugin.pre_filter(state, p, table).is_success()
    mask = plugin.filter(state, p, table, np.ones(len(table), bool))
    statuses = [plugin.node_status(state, p, table, i) for i in range(len(table))]
    for fits, status in zip(mask, statuses, strict=True):
        assert fits == status.is_success()
    return [s.message for s in statuses]


def hard(max_skew: int, key: str, selector: Any = FOO, **more: Any) -> dict:
    return constraint(max_skew, key, "DoNotSchedule", selector, **more)


ZONES = [
    host("node-a", zone="zone1"),
    host("node-b", zone="zone1"),
    host("node-x", zone="zone2"),
    host("node-y", zone="zone2"),
]


def test_filter_single_constraint() -> None:
    # "no existing pods"
    assert run_filter(pod("p", F, hard(1, "zone")), table_of(ZONES, {})) == [""] * 4
    # "existing pods in a different namespace do not count" is covered by the index; here
    # "pods spread across zones as 3/3, all nodes fit"
    spread = {"node-a": [F], "node-b": [F, F], "node-x": [F, F], "node-y": [F]}
    assert run_filter(pod("p", F, hard(1, "zone")), table_of(ZONES, spread)) == [""] * 4
    # "pods spread across zones as 1/2 due to absence of label 'zone' on node-b"
    nodes = [host("node-a", zone="zone1"), host("node-b", zon="zone1"), *ZONES[2:]]
    spread = {"node-a": [F], "node-b": [F], "node-x": [F], "node-y": [F]}
    assert run_filter(pod("p", F, hard(1, "zone")), table_of(nodes, spread)) == [
        "",
        MISSING_LABEL,
        NOT_MATCH,
        NOT_MATCH,
    ]
    # "pod cannot be scheduled as all nodes don't have label 'rack'"
    assert run_filter(pod("p", F, hard(1, "rack")), table_of(ZONES[:2], {})) == [MISSING_LABEL] * 2
    # "pods spread across nodes as 2/1/0/3, only node-x fits"
    spread = {"node-a": [F, F], "node-b": [F], "node-y": [F, F, F]}
    assert run_filter(pod("p", F, hard(1, HOSTNAME)), table_of(ZONES, spread)) == [
        NOT_MATCH,
        NOT_MATCH,
        "",
        NOT_MATCH,
    ]
    # "incoming pod doesn't match itself": 2/1/0/3 with maxSkew 1, self-match 0
    assert run_filter(pod("p", {"bar": ""}, hard(1, HOSTNAME)), table_of(ZONES, spread)) == [
        NOT_MATCH,
        "",
        "",
        NOT_MATCH,
    ]


def test_min_domains_treats_the_global_minimum_as_zero() -> None:
    # "pods spread across zone as 2/1, maxSkew is 2, and the number of domains < minDomains,
    # then the third and fourth nodes fit" ... variants: zone1 holds 2, zone2 holds 1.
    spread = {"node-a": [F], "node-b": [F], "node-x": [F]}
    p = pod("p", F, hard(2, "zone"))
    assert run_filter(p, table_of(ZONES, spread)) == ["", "", "", ""]
    p = pod("p", F, hard(2, "zone", minDomains=3))
    assert run_filter(p, table_of(ZONES, spread)) == [NOT_MATCH, NOT_MATCH, "", ""]


def test_node_inclusion_policies() -> None:
    # Node affinity (Honor by default): node-x and node-y are not eligible, so zone2 is no
    # domain and the minimum is zone1's.
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["zone1"]}]}
                ]
            }
        }
    }
    spread = {"node-a": [F, F], "node-b": [F]}
    p = pod("p", F, hard(1, "zone"), affinity=affinity)
    assert run_filter(p, table_of(ZONES, spread)) == [""] * 4
    p = pod("p", F, hard(1, "zone", nodeAffinityPolicy="Ignore"), affinity=affinity)
    assert run_filter(p, table_of(ZONES, spread)) == [NOT_MATCH, NOT_MATCH, "", ""]
    # Taints (Ignore by default): a tainted zone2 only stops counting when honoured.
    taint = [{"key": "k", "value": "v", "effect": "NoSchedule"}]
    tainted = [*ZONES[:2], node("node-x", taint, zone="zone2")]
    p = pod("p", F, hard(1, "zone"))
    assert run_filter(p, table_of(tainted, spread)) == [NOT_MATCH, NOT_MATCH, ""]
    p = pod("p", F, hard(1, "zone", nodeTaintsPolicy="Honor"))
    assert run_filter(p, table_of(tainted, spread)) == ["", "", ""]


def test_match_label_keys_narrow_the_selector() -> None:
    # Pods of another revision do not count: node-a's pods have rev=1, the pod rev=2.
    old = {"foo": "", "rev": "1"}
    spread = {"node-a": [old, old]}
    p = pod("p", {"foo": "", "rev": "2"}, hard(1, HOSTNAME))
    assert run_filter(p, table_of(ZONES, spread))[0] == NOT_MATCH
    p = pod("p", {"foo": "", "rev": "2"}, hard(1, HOSTNAME, matchLabelKeys=["rev"]))
    assert run_filter(p, table_of(ZONES, spread)) == [""] * 4


def test_pods_without_constraints_skip_the_plugin() -> None:
    table = table_of(ZONES, {})
    assert PodTopologySpread().pre_filter(CycleState(), pod("p", F), table).code == Code.SKIP


def test_scheduler_spreads_and_explains() -> None:
    bound: list[Any] = []
    with VirtualClock() as clock:
        scheduler = Scheduler([default_profile(bound.append)], clock)
        for n in ZONES:
            scheduler.add_node(n)
        for i in range(8):
            scheduler.add_pod(pod(f"p{i}", F, hard(1, "zone"), hard(1, HOSTNAME)).pod)
        placed = [r.node_name for r in scheduler.schedule_pending()]
        assert sorted(placed) == [
            "node-a",
            "node-a",
            "node-b",
            "node-b",
            "node-x",
            "node-x",
            "node-y",
            "node-y",
        ]
        scheduler.add_pod(pod("q", F, hard(1, "rack")).pod)
        (result,) = scheduler.schedule_pending()
    assert result.node_name is None
    assert result.message.startswith(f"0/4 nodes are available: 4 {MISSING_LABEL}.")


@pytest.mark.parametrize(
    "defaulting", [{"defaultingType": "System", "defaultConstraints": [hard(1, "zone")]}]
)
def test_system_defaulting_refuses_explicit_defaults(defaulting) -> None:
    with pytest.raises(ValueError, match="defaultConstraints must be empty"):
        PodTopologySpread(defaulting)


def test_pods_of_other_namespaces_and_terminating_pods_do_not_count() -> None:
    table = table_of(ZONES, {})
    other = PodInfo.from_pod({"metadata": {"name": "o", "namespace": "other", "labels": F}})
    table.add_pod(other, "node-a")
    leaving = {
        "name": "t",
        "namespace": "default",
        "labels": F,
        "deletionTimestamp": "2024-01-01T00:00:00Z",
    }
    table.add_pod(PodInfo.from_pod({"metadata": leaving}), "node-a")
    assert run_filter(pod("p", F, hard(1, HOSTNAME)), table) == [""] * 4
    table.add_pod(pod("counted", F), "node-a")
    assert run_filter(pod("p", F, hard(1, HOSTNAME)), table)[0] == NOT_MATCH


def test_workload_selector_merges_services_and_the_controlling_replica_set() -> None:
    workloads = WorkloadSelectors()
    meta = {"namespace": "default"}
    workloads.set(
        SERVICE, {"metadata": {**meta, "name": "web"}, "spec": {"selector": {"app": "web"}}}
    )
    workloads.set(
        SERVICE,
        {"metadata": {"namespace": "other", "name": "web"}, "spec": {"selector": {"tier": "x"}}},
    )
    rs = {"matchExpressions": [{"key": "rev", "operator": "In", "values": ["1"]}]}
    workloads.set("ReplicaSet", {"metadata": {**meta, "name": "web-1"}, "spec": {"selector": rs}})
    owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-1", "controller": True}
    labels = {"app": "web", "rev": "1"}
    p = PodInfo.from_pod(
        {"metadata": {**meta, "name": "p", "labels": labels, "ownerReferences": [owner]}}
    )
    assert str(workloads(p)) == "app=web,rev in (1)"
    # A pod nothing selects or controls has no workload selector, hence no default spreading.
    assert workloads(pod("lonely", {"z": "1"})).empty


def test_workload_selector_follows_services_as_they_change() -> None:
    """A Service counts from when it selects the pod until it stops selecting or is gone."""
    workloads = WorkloadSelectors()
    web = {
        "metadata": {"namespace": "default", "name": "web"},
        "spec": {"selector": {"app": "web"}},
    }
    p = PodInfo.from_pod(
        {"metadata": {"namespace": "default", "name": "p", "labels": {"app": "web"}}}
    )
    workloads.set(SERVICE, {**web, "spec": {}})
    assert workloads(p).empty
    workloads.set(SERVICE, web)
    assert str(workloads(p)) == "app=web"
    workloads.delete(SERVICE, "default", "web")
    assert workloads(p).empty
    workloads.delete(SERVICE, "default", "web")  # already gone: nothing to do
    assert workloads(p).empty


def test_pods_added_or_removed_by_preemption_update_a_clone_of_the_state() -> None:
    # TestPreFilterStateAddPod / RemovePod in spirit: node-a holds 2 matching pods, the others
    # 1 each, so with maxSkew 1 the pod fits anywhere but node-a.
    spread = {"node-a": [F, F], "node-b": [F], "node-x": [F], "node-y": [F]}
    table = table_of(ZONES, spread)
    plugin, p = PodTopologySpread(), pod("p", F, hard(1, HOSTNAME))
    state = CycleState()
    assert plugin.pre_filter(state, p, table).is_success()
    everywhere = np.ones(4, bool)
    assert plugin.filter(state, p, table, everywhere).tolist() == [False, True, True, True]
    victim = table.pods[0]["default/node-a-0"]
    simulated = state.clone()
    assert plugin.pre_filter_remove_pod(simulated, p, victim, table, 0).is_success()
    assert plugin.filter(simulated, p, table, everywhere).tolist() == [True] * 4
    # Adding a matching pod to node-b raises its count to 2: node-b no longer fits.
    assert plugin.pre_filter_add_pod(simulated, p, pod("n", F), table, 1).is_success()
    assert plugin.filter(simulated, p, table, everywhere).tolist() == [True, False, True, True]
    # A pod of another namespace changes nothing; the original state is untouched.
    stranger = PodInfo.from_pod({"metadata": {"name": "s", "namespace": "other", "labels": F}})
    assert plugin.pre_filter_add_pod(simulated, p, stranger, table, 2).is_success()
    assert plugin.filter(simulated, p, table, everywhere).tolist() == [True, False, True, True]
    assert plugin.filter(state, p, table, everywhere).tolist() == [False, True, True, True]


def node_key(name: str, taints: list[dict[str, str]] = (), **labels: str) -> dict[str, Any]:
    return node(name, taints, node=name, **labels)


ABC = {"node-a": [F, F], "node-b": [F], "node-c": [F]}


def test_more_scores_from_upstream() -> None:
    four = [
        host("node-a", zone="zone1"),
        host("node-b", zone="zone1"),
        host("node-x", zone="zone2"),
        host("node-y", zone="zone2"),
    ]
    fb, b_ = {"foo": "", "bar": ""}, {"bar": ""}
    # "two Constraints on zone and node, with different labelSelectors, some nodes have 0 pods"
    spread = {"node-b": [b_], "node-x": [F], "node-y": [fb]}
    p = pod("p", fb, soft(1, "zone"), soft(1, HOSTNAME, BAR))
    assert scores(p, four, spread) == [100, 60, 40, 0]
    # "..., 3 out of 4 nodes are candidates"
    spread = {"node-a": [F], "node-b": [fb], "node-y": [F, b_]}
    assert scores(p, four[:3], spread, four[3:]) == [50, 25, 100]
    # "minDomains has no effect when ScheduleAnyway"
    three = [node_key("node-a"), node_key("node-b"), node_key("node-c")]
    spread = {"node-a": [F, F], "node-b": [F, F], "node-c": [F]}
    p = pod("p", F, constraint(2, "node", "ScheduleAnyway", FOO, minDomains=10))
    assert scores(p, three, spread) == [75, 75, 100]


def test_scores_with_node_inclusion_policies() -> None:
    three = [node_key("node-a", foo=""), node_key("node-b", foo=""), node_key("node-c")]
    ignore = {"nodeAffinityPolicy": "Ignore"}
    # "NodeAffinityPolicy honoed/ignored with labelSelectors"
    p = pod("p", F, soft(1, "node"), nodeSelector={"foo": ""})
    assert scores(p, three, ABC) == [0, 33, 100]
    p = pod("p", F, constraint(1, "node", "ScheduleAnyway", FOO, **ignore), nodeSelector=F)
    assert scores(p, three, ABC) == [66, 100, 100]
    # "NodeAffinityPolicy honoed/ignored with nodeAffinity"
    term = {"matchExpressions": [{"key": "foo", "operator": "In", "values": [""]}]}
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
        }
    }
    assert scores(pod("p", F, soft(1, "node"), affinity=affinity), three, ABC) == [0, 33, 100]
    p = pod("p", F, constraint(1, "node", "ScheduleAnyway", FOO, **ignore), affinity=affinity)
    assert scores(p, three, ABC) == [66, 100, 100]
    # "NodeTaintsPolicy honored/ignored"
    taints = [{"key": "foo", "value": "", "effect": "NoSchedule"}]
    tainted = [node_key("node-a"), node_key("node-b"), node_key("node-c", taints)]
    p = pod("p", F, constraint(1, "node", "ScheduleAnyway", FOO, nodeTaintsPolicy="Honor"))
    assert scores(p, tainted, ABC) == [0, 33, 100]
    assert scores(pod("p", F, soft(1, "node")), tainted, ABC) == [66, 100, 100]


def test_scores_with_match_label_keys() -> None:
    four = [
        host("node-a", zone="zone1"),
        host("node-b", zone="zone1"),
        host("node-c", zone="zone2"),
        host("node-d", zone="zone2"),
    ]
    fb, b_ = {"foo": "", "bar": ""}, {"bar": ""}
    # "matchLabelKeys ANDed with LabelSelector when LabelSelector is empty"
    spread = {"node-a": [F], "node-b": [fb], "node-c": [F, b_]}
    p = pod(
        "p",
        fb,
        constraint(1, "zone", "ScheduleAnyway", {}, matchLabelKeys=["foo"]),
        constraint(1, HOSTNAME, "ScheduleAnyway", {}, matchLabelKeys=["bar"]),
    )
    assert scores(p, four, spread) == [60, 20, 60, 100]
    # "... when LabelSelector isn't empty"
    fbz, bz = {"foo": "", "bar": "", "baz": ""}, {"bar": "", "baz": ""}
    spread = {"node-a": [F], "node-b": [fbz], "node-c": [F, b_, bz]}
    p = pod(
        "p",
        fbz,
        soft(1, "zone"),
        constraint(1, HOSTNAME, "ScheduleAnyway", BAR, matchLabelKeys=["baz"]),
    )
    assert scores(p, four, spread) == [60, 20, 60, 100]


def test_scores_leave_out_other_namespaces_and_terminating_pods() -> None:
    two = [host("node-a"), host("node-b")]
    # "existing pods in a different namespace do not count"
    table = table_of(two, {"node-a": [F], "node-b": [F, F]})
    table.add_pod(
        PodInfo.from_pod({"metadata": {"name": "o", "namespace": "ns1", "labels": F}}), "node-a"
    )
    plugin, p, state, nodes = (
        PodTopologySpread(),
        pod("p", F, soft(1, HOSTNAME)),
        CycleState(),
        np.arange(2),
    )
    assert plugin.pre_score(state, p, table, nodes).is_success()
    assert plugin.normalize_score(state, p, plugin.score(state, p, table, nodes)).tolist() == [
        100,
        33,
    ]
    # "terminating Pods should be excluded"
    table = table_of(two, {"node-b": [F]})
    leaving = {
        "name": "t",
        "namespace": "default",
        "labels": F,
        "deletionTimestamp": "2024-01-01T00:00:00Z",
    }
    table.add_pod(PodInfo.from_pod({"metadata": leaving}), "node-a")
    state = CycleState()
    assert plugin.pre_score(state, p, table, nodes).is_success()
    assert plugin.normalize_score(state, p, plugin.score(state, p, table, nodes)).tolist() == [
        100,
        0,
    ]


def test_min_domains_end_to_end() -> None:
    # test/integration/scheduler/filters: "pods spread across nodes as 2/2/1, maxSkew is 2, and
    # the number of domains < minDomains, then the third node fits"
    bound: list[Any] = []
    with VirtualClock() as clock:
        scheduler = Scheduler([default_profile(bound.append)], clock)
        for i in range(4):
            scheduler.add_node(node(f"node-{i}", node=f"node-{i}", zone=f"zone-{i // 2}"))
        for name, node_name in [("1a", 1), ("1b", 1), ("2a", 2), ("2b", 2), ("3", 3)]:
            existing = pod(f"p{name}", F).pod
            existing["spec"]["nodeName"] = f"node-{node_name}"
            scheduler.add_pod(existing)
        not_node_0 = {
            "matchExpressions": [{"key": "node", "operator": "NotIn", "values": ["node-0"]}]
        }
        affinity = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [not_node_0]
                }
            }
        }
        scheduler.add_pod(pod("p", F, hard(2, "node", minDomains=4), affinity=affinity).pod)
        (result,) = scheduler.schedule_pending()
    assert result.node_name == "node-3"
