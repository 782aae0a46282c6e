"""TaintToleration, NodeUnschedulable, NodeName, NodePorts and ImageLocality, with vectors from
kube-scheduler v1.32's tests beside each plugin (pkg/scheduler/framework/plugins/<plugin>/)."""

from typing import Any

import numpy as np

from pinnace.scheduler import CycleState, NodeTable, PodInfo
from pinnace.scheduler.plugins import (
    ImageLocality,
    NodeName,
    NodePorts,
    NodeUnschedulable,
    TaintToleration,
)


def node(name: str, taints: list[dict[str, str]] = (), **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {"taints": list(taints), **spec},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
    }


def taint(key: str, value: str, effect: str) -> dict[str, str]:
    return {"key": key, "value": value, "effect": effect}


def pod(**spec: Any) -> PodInfo:
    spec.setdefault("containers", [{"name": "c", "image": "pause"}])
    return PodInfo.from_pod({"metadata": {"name": "p", "namespace": "default"}, "spec": spec})


def table_of(*nodes: dict[str, Any]) -> NodeTable:
    table = NodeTable()
    for n in nodes:
        table.add_node(n)
    return table


def run_filter(plugin: Any, incoming: PodInfo, table: NodeTable) -> list[str]:
    """Each node's verdict: "" if it passes, else its reasons joined."""
    state = CycleState()
    pre_filter = getattr(plugin, "pre_filter", None)
    if pre_filter is not None and pre_filter(state, incoming, table).is_skip():
        return [""] * len(table)
    feasible = plugin.filter(state, incoming, table, np.ones(len(table), bool))
    statuses = [plugin.node_status(state, incoming, table, i) for i in range(len(table))]
    assert feasible.tolist() == [s.is_success() for s in statuses]
    return [s.message for s in statuses]


def run_score(plugin: Any, incoming: PodInfo, table: NodeTable) -> list[int]:
    state = CycleState()
    scores = plugin.score(state, incoming, table, np.arange(len(table)))
    if hasattr(plugin, "normalize_score"):
        scores = plugin.normalize_score(state, incoming, scores)
    # A scheduling cycle takes the plugin's word for a score every node gets alike.
    uniform = plugin.uniform_score(state, incoming, table)
    assert uniform is None or scores.tolist() == [uniform] * len(table)
    return scores.tolist()


# tainttoleration/taint_toleration_test.go
def test_untolerated_no_schedule_taint_rejects_with_its_key_and_value() -> None:
    table = table_of(node("nodeA", [taint("dedicated", "user1", "NoSchedule")]))
    assert run_filter(TaintToleration(), pod(), table) == [
        "node(s) had untolerated taint {dedicated: user1}"
    ]
    tolerant = pod(
        tolerations=[
            {"key": "dedicated", "operator": "Equal", "value": "user1", "effect": "NoSchedule"}
        ]
    )
    assert run_filter(TaintToleration(), tolerant, table) == [""]
    other_value = pod(tolerations=[{"key": "dedicated", "value": "user2", "effect": "NoSchedule"}])
    assert run_filter(TaintToleration(), other_value, table) == [
        "node(s) had untolerated taint {dedicated: user1}"
    ]


def test_exists_tolerations_and_prefer_no_schedule_taints_in_the_filter() -> None:
    table = table_of(
        node("nodeA", [taint("foo", "bar", "NoExecute")]),
        node("nodeB", [taint("foo", "bar", "PreferNoSchedule")]),
    )
    exists = pod(tolerations=[{"key": "foo", "operator": "Exists", "effect": "NoExecute"}])
    assert run_filter(TaintToleration(), exists, table) == ["", ""]
    everything = pod(tolerations=[{"operator": "Exists"}])  # empty key: every taint
    assert run_filter(TaintToleration(), everything, table) == ["", ""]
    wrong_effect = pod(tolerations=[{"key": "foo", "operator": "Exists", "effect": "NoSchedule"}])
    assert run_filter(TaintToleration(), wrong_effect, table) == [
        "node(s) had untolerated taint {foo: bar}",
        "",  # PreferNoSchedule never filters
    ]


def test_taint_score_prefers_fewer_intolerable_prefer_no_schedule_taints() -> None:
    # "the more intolerable taints a node has, the lower score it gets."
    table = table_of(
        node("nodeA"),
        node("nodeB", [taint("cpu-type", "arm64", "PreferNoSchedule")]),
        node(
            "nodeC",
            [
                taint("cpu-type", "arm64", "PreferNoSchedule"),
                taint("disk-type", "ssd", "PreferNoSchedule"),
            ],
        ),
    )
    tolerant = pod(
        tolerations=[
            {"key": "foo", "operator": "Equal", "value": "bar", "effect": "PreferNoSchedule"}
        ]
    )
    assert run_score(TaintToleration(), tolerant, table) == [100, 50, 0]


def test_taint_score_counts_only_prefer_no_schedule() -> None:
    # "only taints and toleration with PreferNoSchedule effect are considered"
    table = table_of(
        node("nodeA"),
        node("nodeB", [taint("cpu-type", "arm64", "NoSchedule")]),
        node("nodeC", [taint("cpu-type", "arm64", "PreferNoSchedule")]),
    )
    tolerant = pod(
        tolerations=[
            {"key": "cpu-type", "operator": "Equal", "value": "arm64", "effect": "NoSchedule"},
            {"key": "disk-type", "operator": "Equal", "value": "ssd", "effect": "NoSchedule"},
        ]
    )
    assert run_score(TaintToleration(), tolerant, table) == [100, 100, 0]
    assert run_score(TaintToleration(), pod(), table_of(node("a"), node("b"))) == [100, 100]


# nodeunschedulable/node_unschedulable_test.go
def test_cordoned_node_takes_only_pods_tolerating_the_unschedulable_taint() -> None:
    table = table_of(node("cordoned", unschedulable=True), node("open"))
    assert run_filter(NodeUnschedulable(), pod(), table) == ["node(s) were unschedulable", ""]
    tolerant = pod(
        tolerations=[
            {
                "key": "node.kubernetes.io/unschedulable",
                "operator": "Exists",
                "effect": "NoSchedule",
            }
        ]
    )
    assert run_filter(NodeUnschedulable(), tolerant, table) == ["", ""]


def test_cordoning_and_uncordoning_and_removing_nodes() -> None:
    table = table_of(node("a"), node("b"))
    assert run_filter(NodeUnschedulable(), pod(), table) == ["", ""]
    table.update_node(node("b", unschedulable=True))
    assert run_filter(NodeUnschedulable(), pod(), table) == ["", "node(s) were unschedulable"]
    table.add_node(node("c", unschedulable=True))
    table.update_node(node("b"))
    assert run_filter(NodeUnschedulable(), pod(), table) == ["", "", "node(s) were unschedulable"]
    table.remove_node("a")  # "c" takes its row
    assert run_filter(NodeUnschedulable(), pod(), table) == ["node(s) were unschedulable", ""]
    table.remove_node("c")
    table.add_node(node("d"))
    assert run_filter(NodeUnschedulable(), pod(), table) == ["", ""]


# nodename/node_name_test.go
def test_node_name_fits_only_the_named_node() -> None:
    table = table_of(node("foo"), node("bar"))
    assert run_filter(NodeName(), pod(), table) == ["", ""]
    assert run_filter(NodeName(), pod(nodeName="foo"), table) == [
        "",
        "node(s) didn't match the requested node name",
    ]


# nodeports/node_ports_test.go
def ports(*entries: tuple[str, str, int]) -> list[dict[str, Any]]:
    return [
        {
            "name": "c",
            "ports": [
                {"protocol": protocol, "hostIP": ip, "hostPort": port, "containerPort": port}
                for protocol, ip, port in entries
            ],
        }
    ]


def table_with_pod_ports(*entries: tuple[str, str, int]) -> NodeTable:
    table = table_of(node("n"))
    existing = PodInfo.from_pod(
        {"metadata": {"name": "e"}, "spec": {"nodeName": "n", "containers": ports(*entries)}}
    )
    table.add_pod(existing, "n")
    return table


def test_host_port_conflicts_as_kube_scheduler_sees_them() -> None:
    conflict = ["node(s) didn't have free ports for the requested pod ports"]
    cases = [
        # (existing, wanted, fits) from TestNodePorts
        ((("UDP", "127.0.0.1", 8080),), (("UDP", "127.0.0.1", 9090),), True),
        ((("UDP", "127.0.0.1", 8080),), (("UDP", "127.0.0.1", 8080),), False),
        ((("TCP", "127.0.0.1", 8080),), (("UDP", "127.0.0.1", 8080),), True),
        ((("TCP", "127.0.0.1", 8001),), (("TCP", "127.0.0.2", 8001),), True),
        ((("TCP", "0.0.0.0", 8001),), (("TCP", "127.0.0.1", 8001),), False),
        ((("TCP", "127.0.0.1", 8001),), (("TCP", "0.0.0.0", 8001),), False),
        ((("UDP", "0.0.0.0", 8001),), (("TCP", "0.0.0.0", 8001),), True),
    ]
    for existing, wanted, fits in cases:
        table = table_with_pod_ports(*existing)
        verdict = run_filter(NodePorts(), pod(containers=ports(*wanted)), table)
        assert verdict == ([""] if fits else conflict), (existing, wanted)


def test_host_ports_free_again_when_the_pod_goes() -> None:
    table = table_with_pod_ports(("TCP", "", 80))
    wanted = pod(containers=ports(("TCP", "", 80)))
    assert run_filter(NodePorts(), wanted, table) != [""]
    table.remove_pod("default/e", "n")
    assert run_filter(NodePorts(), wanted, table) == [""]


# imagelocality/image_locality_test.go
MB = 1024 * 1024


def image_node(name: str, images: list[tuple[list[str], int]]) -> dict[str, Any]:
    n = node(name)
    n["status"]["images"] = [{"names": names, "sizeBytes": size} for names, size in images]
    return n


def test_image_locality_scales_by_size_and_spread() -> None:
    # Images as in the Go test's nodes; scores by image_locality.go's formula.
    table = table_of(
        image_node(
            "node1",
            [(["gcr.io/40:latest", "gcr.io/40:v1"], 40 * MB), (["gcr.io/300:latest"], 300 * MB)],
        ),
        image_node("node2", [(["gcr.io/250:latest"], 250 * MB), (["gcr.io/10:v1"], 10 * MB)]),
    )
    test_pod = pod(
        containers=[{"name": "a", "image": "gcr.io/40"}, {"name": "b", "image": "gcr.io/300"}]
    )
    # node1: (40MB + 300MB) * 1/2 = 170MB -> 100 * (170 - 23) / (2000 - 23) = 7
    assert run_score(ImageLocality(), test_pod, table) == [7, 0]
    # 250MB on 1 of 2 nodes counts 125MB: 100 * (125 - 23) / (1000 - 23) = 10
    one = pod(containers=[{"name": "a", "image": "gcr.io/250"}])
    assert run_score(ImageLocality(), one, table) == [0, 10]
    tagged = pod(containers=[{"name": "a", "image": "gcr.io/10"}])  # means gcr.io/10:latest
    assert run_score(ImageLocality(), tagged, table) == [0, 0]
