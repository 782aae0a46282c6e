"""NodeAffinity, with vectors from kube-scheduler v1.32's
pkg/scheduler/framework/plugins/nodeaffinity/node_affinity_test.go (TestNodeAffinity,
TestNodeAffinityPriority) and the SchedulingNodeAffinity shape of scheduler_perf."""

from typing import Any

import numpy as np
import pytest

from pinnace.clock import VirtualClock
from pinnace.scheduler import CycleState, NodeTable, PodInfo, Scheduler
from pinnace.scheduler.framework import Code
from pinnace.scheduler.plugins import default_profile
from pinnace.scheduler.plugins.node_affinity import NodeAffinity


def node(name: str, **labels: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": labels},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
    }


def pod(name: str = "p", **spec: Any) -> PodInfo:
    spec.setdefault("containers", [{"name": "c", "image": "pause"}])
    return PodInfo.from_pod({"metadata": {"name": name, "namespace": "default"}, "spec": spec})


def table_of(*nodes: dict[str, Any]) -> NodeTable:
    table = NodeTable()
    for n in nodes:
        table.add_node(n)
    return table


def expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": operator, "values": list(values)}


def name_in(*names: str) -> dict[str, Any]:
    return expr("metadata.name", "In", *names)


def required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}
        }
    }


def preferred(*terms: tuple[int, list[dict[str, Any]]]) -> dict[str, Any]:
    return {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": w, "preference": {"matchExpressions": e}} for w, e in terms
            ]
        }
    }


def run_filter(plugin: NodeAffinity, p: PodInfo, table: NodeTable) -> tuple[Any, list[str]]:
    state = CycleState()
    status = plugin.pre_filter(state, p, table)
    if not status.is_success():
        return status, []
    mask = plugin.filter(state, p, table, np.ones(len(table), bool))
    reasons = [
        "" if mask[i] else plugin.node_status(state, p, table, i).message for i in range(len(table))
    ]
    return status, reasons


MATCH = "node(s) didn't match Pod's node affinity/selector"


@pytest.mark.parametrize(
    ("labels", "spec", "fits"),
    [
        # "missing labels" / "same labels" / "node labels are superset"
        ({}, {"nodeSelector": {"foo": "bar"}}, False),
        ({"foo": "bar"}, {"nodeSelector": {"foo": "bar"}}, True),
        ({"foo": "bar", "baz": "blah"}, {"nodeSelector": {"foo": "bar"}}, True),
        # In with several values, NotIn, Exists, DoesNotExist
        (
            {"foo": "bar"},
            {"affinity": required({"matchExpressions": [expr("foo", "In", "value1", "value2")]})},
            False,
        ),
        (
            {"kernel-version": "0206"},
            {"affinity": required({"matchExpressions": [expr("kernel-version", "Gt", "0204")]})},
            True,
        ),
        (
            {"mem-type": "DDR3"},
            {
                "affinity": required(
                    {"matchExpressions": [expr("mem-type", "NotIn", "DDR", "DDR2")]}
                )
            },
            True,
        ),
        (
            {"GPU": "NVIDIA-GRID-K1"},
            {
                "affinity": required(
                    {
                        "matchExpressions": [
                            expr("GPU", "Exists"),
                            expr("GPU", "NotIn", "AMD", "INTER"),
                        ]
                    }
                )
            },
            True,
        ),
        (
            {"GPU": "AMD"},
            {
                "affinity": required(
                    {
                        "matchExpressions": [
                            expr("GPU", "Exists"),
                            expr("GPU", "NotIn", "AMD", "INTER"),
                        ]
                    }
                )
            },
            False,
        ),
        (
            {"foo": "bar"},
            {"affinity": required({"matchExpressions": [expr("foo", "DoesNotExist")]})},
            False,
        ),
        # "Pod with affinity that don't match node's labels won't schedule onto the node"
        (
            {"foo": "bar"},
            {"affinity": required({"matchExpressions": [expr("foo", "In", "value1")]})},
            False,
        ),
        # an empty term matches no node; terms are ORed
        ({"foo": "bar"}, {"affinity": required({})}, False),
        ({"foo": "bar"}, {"affinity": required({"matchExpressions": []})}, False),
        (
            {"foo": "bar"},
            {"affinity": required({}, {"matchExpressions": [expr("foo", "Exists")]})},
            True,
        ),
        # nodeSelector and affinity must both match
        (
            {"foo": "bar"},
            {
                "nodeSelector": {"foo": "bar"},
                "affinity": required({"matchExpressions": [expr("foo", "In", "baz")]}),
            },
            False,
        ),
        # Gt with a label that is not a number, and a term that does not parse, match nothing
        (
            {"version": "v2"},
            {"affinity": required({"matchExpressions": [expr("version", "Gt", "1")]})},
            False,
        ),
        (
            {"foo": "bar"},
            {
                "affinity": required(
                    {"matchExpressions": [expr("foo", "Gt", "x")]},
                    {"matchExpressions": [expr("foo", "Exists")]},
                )
            },
            True,
        ),
        (
            {"foo": "bar"},
            {"affinity": required({"matchExpressions": [expr("foo", "Gt", "x")]})},
            False,
        ),
    ],
)
def test_filter_matches_as_kube_scheduler(labels, spec, fits) -> None:
    table = table_of(node("node1", **labels))
    status, reasons = run_filter(NodeAffinity(), pod(**spec), table)
    assert status.is_success()
    assert reasons == ["" if fits else MATCH]


def test_pod_without_selector_or_affinity_skips_the_filter() -> None:
    status = NodeAffinity().pre_filter(CycleState(), pod(), table_of(node("n")))
    assert status.code == Code.SKIP


def test_match_fields_narrow_the_nodes_in_pre_filter() -> None:
    table = table_of(node("node1", foo="bar"), node("node2", foo="bar"), node("node3"))
    # "Pod with matchFields using In operator that matches the existing node" + expressions
    spec = {
        "affinity": required(
            {"matchFields": [name_in("node1")], "matchExpressions": [expr("foo", "In", "bar")]}
        )
    }
    _, reasons = run_filter(NodeAffinity(), pod(**spec), table)
    not_named = "node(s) didn't satisfy plugin(s) [NodeAffinity]"
    assert reasons == ["", not_named, not_named]
    # "Pod with two terms of node.Name affinity": the union of the terms' names
    spec = {
        "affinity": required(
            {"matchFields": [name_in("node1")]}, {"matchFields": [name_in("node2")]}
        )
    }
    _, reasons = run_filter(NodeAffinity(), pod(**spec), table)
    assert reasons == ["", "", "node(s) didn't satisfy plugin(s) [NodeAffinity]"]
    # "Pod with two terms: both matchFields and matchExpressions do not match": no narrowing
    spec = {
        "affinity": required(
            {"matchFields": [name_in("node1")]},
            {"matchExpressions": [expr("foo", "In", "not-match-to-bar")]},
        )
    }
    _, reasons = run_filter(NodeAffinity(), pod(**spec), table)
    assert reasons == ["", MATCH, MATCH]
    # matchFields NotIn
    spec = {"affinity": required({"matchFields": [expr("metadata.name", "NotIn", "node2")]})}
    _, reasons = run_filter(NodeAffinity(), pod(**spec), table)
    assert reasons == ["", MATCH, ""]


def test_conflicting_match_fields_reject_the_pod_in_pre_filter() -> None:
    # "Pod with two conflicting mach field requirements"
    spec = {"affinity": required({"matchFields": [name_in("node1"), name_in("node2")]})}
    status, _ = run_filter(NodeAffinity(), pod(**spec), table_of(node("node1"), node("node2")))
    assert (status.code, status.message) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        "pod affinity terms conflict",
    )


def test_added_affinity_is_enforced_before_the_pods_own() -> None:
    added = {
        "addedAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchFields": [name_in("node2")]}]
            }
        }
    }
    table = table_of(node("node1", zone="foo"), node("node2", zone="foo"))
    # "Matches added affinity and Pod's node affinity" / "... but not Pod's node affinity"
    _, reasons = run_filter(
        NodeAffinity(added),
        pod(affinity=required({"matchExpressions": [expr("zone", "In", "foo")]})),
        table,
    )
    assert reasons == ["node(s) didn't match scheduler-enforced node affinity", ""]
    _, reasons = run_filter(
        NodeAffinity(added),
        pod(affinity=required({"matchExpressions": [expr("zone", "In", "bar")]})),
        table,
    )
    assert reasons == ["node(s) didn't match scheduler-enforced node affinity", MATCH]


def test_invalid_added_affinity_is_refused() -> None:
    bad = {
        "addedAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [expr("foo", "Gt", "x")]}]
            }
        }
    }
    with pytest.raises(ValueError, match=r"parsing addedAffinity\.requiredDuringScheduling"):
        NodeAffinity(bad)


LABEL1 = {"foo": "bar"}
LABEL2 = {"key": "value"}
LABEL3 = {"az": "az1"}
LABEL4 = {"abc": "az11", "def": "az22"}
LABEL5 = {"foo": "bar", "key": "value", "az": "az1"}
AFFINITY1 = preferred((2, [expr("foo", "In", "bar")]))
AFFINITY2 = preferred(
    (2, [expr("foo", "In", "bar")]),
    (4, [expr("key", "In", "value")]),
    (5, [expr("foo", "In", "bar"), expr("key", "In", "value"), expr("az", "In", "az1")]),
)


def scores(plugin: NodeAffinity, p: PodInfo, *labels: dict[str, str]) -> list[int]:
    table = table_of(*(node(f"node{i}", **lb) for i, lb in enumerate(labels)))
    state, nodes = CycleState(), np.arange(len(table))
    assert plugin.pre_score(state, p, table, nodes).is_success()
    return plugin.normalize_score(state, p, plugin.score(state, p, table, nodes)).tolist()


def test_preferred_terms_score_as_kube_scheduler() -> None:
    # TestNodeAffinityPriority
    assert scores(NodeAffinity(), pod(affinity=AFFINITY1), LABEL4, LABEL2, LABEL3) == [0, 0, 0]
    assert scores(NodeAffinity(), pod(affinity=AFFINITY1), LABEL1, LABEL2, LABEL3) == [100, 0, 0]
    assert scores(NodeAffinity(), pod(affinity=AFFINITY2), LABEL1, LABEL5, LABEL2) == [18, 100, 36]
    added = {"addedAffinity": AFFINITY1["nodeAffinity"]}
    assert scores(NodeAffinity(added), pod(), LABEL1, LABEL2) == [100, 0]
    added = {"addedAffinity": preferred((3, [expr("key", "In", "value")]))["nodeAffinity"]}
    assert scores(NodeAffinity(added), pod(affinity=AFFINITY1), LABEL1, LABEL2, LABEL5) == [
        40,
        60,
        100,
    ]


def test_pre_score_skips_without_preferences_and_fails_on_a_broken_term() -> None:
    table = table_of(node("node1", **LABEL1))
    nodes = np.arange(1)
    assert NodeAffinity().pre_score(CycleState(), pod(), table, nodes).code == Code.SKIP
    broken = pod(affinity=preferred((2, [expr("invalid key", "In", "bar")])))
    status = NodeAffinity().pre_score(CycleState(), broken, table, nodes)
    assert status.code == Code.ERROR
    assert status.message.startswith('[0].matchExpressions[0].key: Invalid value: "invalid key"')


def test_scheduler_places_pods_only_on_matching_nodes_and_explains() -> None:
    # SchedulingNodeAffinity's pod: zone In (zone1, zone2)
    bound: list[Any] = []
    with VirtualClock() as clock:
        scheduler = Scheduler([default_profile(bound.append)], clock)
        for i in range(6):
            labels = {"topology.kubernetes.io/zone": f"zone{i % 3}"}
            scheduler.add_node(node(f"n{i}", **labels))
        affinity = required(
            {"matchExpressions": [expr("topology.kubernetes.io/zone", "In", "zone1", "zone2")]}
        )
        for i in range(8):
            scheduler.add_pod(pod(f"p{i}", affinity=affinity).pod)
        results = scheduler.schedule_pending()
        assert all(r.node_name in {"n1", "n2", "n4", "n5"} for r in results)
        lost = pod("lost", nodeSelector={"topology.kubernetes.io/zone": "zone9"})
        scheduler.add_pod(lost.pod)
        (result,) = scheduler.schedule_pending()
    assert result.node_name is None
    assert result.message == (
        f"0/6 nodes are available: 6 {MATCH}. "
        "preemption: 0/6 nodes are available: 6 Preemption is not helpful for scheduling.."
    )
