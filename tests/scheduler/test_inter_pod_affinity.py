"""InterPodAffinity with vectors from kube-scheduler v1.32's tests:
pkg/scheduler/framework/plugins/interpodaffinity/filtering_test.go (TestRequiredAffinitySingleNode,
TestRequiredAffinityMultipleNodes) and scoring_test.go (TestPreferredAffinity,
TestPreferredAffinityWithHardPodAffinitySymmetricWeight). Where the Go tests leave a pod's
namespace empty, these use "default", which is what an API pod without one gets."""

import random
from collections import Counter
from typing import Any

import numpy as np
import pytest

from pinnace.clock import VirtualClock
from pinnace.scheduler import CycleState, NodeTable, PodInfo, Scheduler
from pinnace.scheduler.config import ConfigError, build_profiles, parse
from pinnace.scheduler.framework import Code
from pinnace.scheduler.nominator import add_pod, remove_pod, run_filter_on_node
from pinnace.scheduler.plugins import InterPodAffinity, default_profile
from pinnace.scheduler.plugins.pod_affinity_terms import matches_all, merged, pod_affinity_terms

NAMESPACES = {
    "subteam1.team1": {"team": "team1"},
    "subteam2.team1": {"team": "team1"},
    "subteam1.team2": {"team": "team2"},
    "subteam2.team2": {"team": "team2"},
}
AFFINITY_RULES = "node(s) didn't match pod affinity rules"
ANTI_AFFINITY_RULES = "node(s) didn't match pod anti-affinity rules"
EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"


def node(name: str, **labels: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": labels},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
    }


_names = iter(range(1_000_000))


def pod(
    labels: dict[str, str] | None = None,
    affinity: dict[str, Any] | None = None,
    node_name: str = "",
    namespace: str = "default",
) -> PodInfo:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "pause"}]}
    if affinity:
        spec["affinity"] = affinity
    if node_name:
        spec["nodeName"] = node_name
    name = f"p{next(_names)}"
    meta = {"name": name, "namespace": namespace, "labels": labels or {}}
    return PodInfo.from_pod({"metadata": meta, "spec": spec})


def expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    requirement: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        requirement["values"] = list(values)
    return requirement


def term(topology_key: str, *expressions: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "labelSelector": {"matchExpressions": list(expressions)},
        "topologyKey": topology_key,
        **extra,
    }


def weighted(weight: int, affinity_term: dict[str, Any]) -> dict[str, Any]:
    return {"weight": weight, "podAffinityTerm": affinity_term}


def required(kind: str, *terms: dict[str, Any]) -> dict[str, Any]:
    return {kind: {"requiredDuringSchedulingIgnoredDuringExecution": list(terms)}}


def preferred(kind: str, *terms: dict[str, Any]) -> dict[str, Any]:
    return {kind: {"preferredDuringSchedulingIgnoredDuringExecution": list(terms)}}


AFFINITY, ANTI_AFFINITY = "podAffinity", "podAntiAffinity"


def cluster(nodes: list[dict[str, Any]], pods: list[PodInfo]) -> NodeTable:
    table = NodeTable()
    for n in nodes:
        table.add_node(n)
    for p in pods:
        table.add_pod(p, p.node_name)
    return table


def filter_messages(
    incoming: PodInfo, table: NodeTable, plugin: InterPodAffinity | None = None
) -> list[str]:
    plugin = plugin or InterPodAffinity(namespace_labels=NAMESPACES)
    state = CycleState()
    if plugin.pre_filter(state, incoming, table).is_skip():
        return [""] * len(table)
    feasible = plugin.filter(state, incoming, table, np.ones(len(table), bool))
    statuses = [plugin.node_status(state, incoming, table, i) for i in range(len(table))]
    assert feasible.tolist() == [s.is_success() for s in statuses]
    return [s.message for s in statuses]


def scores(
    incoming: PodInfo, table: NodeTable, plugin: InterPodAffinity | None = None
) -> list[int] | None:
    """Normalised scores, or None when PreScore skips the plugin."""
    plugin = plugin or InterPodAffinity(namespace_labels=NAMESPACES)
    state = CycleState()
    nodes = np.arange(len(table))
    status = plugin.pre_score(state, incoming, table, nodes)
    if status.is_skip():
        return None
    assert status.is_success(), status
    raw = plugin.score(state, incoming, table, nodes)
    return plugin.normalize_score(state, incoming, raw).tolist()


# Filter: TestRequiredAffinitySingleNode.
SECURITY_S1 = {"security": "S1"}
REGION_R1 = {"region": "r1", "zone": "z11"}


def one_node(existing: list[PodInfo], incoming: PodInfo) -> str:
    table = cluster([node("node1", region="r1", zone="z11")], existing)
    return filter_messages(incoming, table)[0]


def test_no_affinity_schedules_anywhere() -> None:
    assert one_node([], pod()) == ""


def test_required_affinity_in_operator_matches_existing_pod() -> None:
    incoming = pod(
        SECURITY_S1,
        required(AFFINITY, term("region", expr("service", "In", "securityscan", "value2"))),
    )
    existing = [pod({"service": "securityscan"}, node_name="node1")]
    assert one_node(existing, incoming) == ""


def test_required_affinity_not_in_operator() -> None:
    incoming = pod(
        SECURITY_S1,
        required(AFFINITY, term("region", expr("service", "NotIn", "securityscan3", "value3"))),
    )
    existing = [pod({"service": "securityscan"}, node_name="node1")]
    assert one_node(existing, incoming) == ""


def test_required_affinity_in_other_namespace_does_not_match() -> None:
    incoming = pod(
        SECURITY_S1,
        required(
            AFFINITY,
            term("region", expr("service", "In", "securityscan"), namespaces=["DiffNameSpace"]),
        ),
    )
    existing = [pod({"service": "securityscan"}, node_name="node1", namespace="ns")]
    assert one_node(existing, incoming) == AFFINITY_RULES


def test_required_affinity_unmatched_labels() -> None:
    incoming = pod(
        SECURITY_S1,
        required(AFFINITY, term("region", expr("service", "In", "antivirusscan", "value2"))),
    )
    existing = [pod({"service": "securityscan"}, node_name="node1")]
    assert one_node(existing, incoming) == AFFINITY_RULES


def test_required_affinity_every_term_must_match_the_same_pod() -> None:
    incoming = pod(
        SECURITY_S1,
        required(
            AFFINITY,
            term("region", expr("service", "Exists"), expr("service", "In", "securityscan")),
            term("region", expr("service", "NotIn", "WrongValue")),
        ),
    )
    existing = [pod({"service": "securityscan"}, node_name="node1")]
    assert one_node(existing, incoming) == ""
    incoming = pod(
        SECURITY_S1,
        required(
            AFFINITY,
            term("region", expr("service", "In", "securityscan")),
            term("region", expr("service", "In", "WrongValue")),
        ),
    )
    assert one_node(existing, incoming) == AFFINITY_RULES


def test_affinity_satisfied_but_anti_affinity_not() -> None:
    incoming = pod(
        SECURITY_S1,
        {
            **required(AFFINITY, term("region", expr("service", "In", "securityscan", "value2"))),
            **required(
                ANTI_AFFINITY, term("node", expr("service", "In", "securityscan", "value2"))
            ),
        },
    )
    existing = [pod({"service": "securityscan"}, node_name="node1")]
    table = cluster([node("node1", region="r1", node="node1")], existing)
    assert filter_messages(incoming, table) == [ANTI_AFFINITY_RULES]


def test_existing_pod_anti_affinity_is_respected() -> None:
    """The symmetry rule: the incoming pod has no anti-affinity, the placed one has."""
    existing = [
        pod(
            {"service": "securityscan"},
            required(ANTI_AFFINITY, term("zone", expr("security", "In", "S1"))),
            node_name="node1",
        )
    ]
    assert one_node(existing, pod(SECURITY_S1)) == EXISTING_ANTI_AFFINITY
    assert one_node(existing, pod({"security": "S2"})) == ""


def test_one_plugin_follows_placed_pods_with_terms_as_they_come_and_go() -> None:
    """A plugin that skipped pods while no placed pod had terms sees one placed since, and
    stops seeing it once it is gone (its node's removal included)."""
    plugin = InterPodAffinity(namespace_labels=NAMESPACES)
    table = cluster([node("node1", zone="z1"), node("node2", zone="z2")], [])
    incoming = pod(SECURITY_S1)
    assert filter_messages(incoming, table, plugin) == ["", ""]
    assert scores(incoming, table, plugin) is None
    table.add_pod(pod({"app": "plain"}, node_name="node1"), "node1")
    assert filter_messages(incoming, table, plugin) == ["", ""]
    guard = pod(
        {"service": "securityscan"},
        {
            **required(ANTI_AFFINITY, term("zone", expr("security", "In", "S1"))),
            **preferred(AFFINITY, weighted(5, term("zone", expr("security", "In", "S1")))),
        },
        node_name="node1",
    )
    table.add_pod(guard, "node1")
    assert filter_messages(incoming, table, plugin) == [EXISTING_ANTI_AFFINITY, ""]
    assert scores(incoming, table, plugin) == [100, 0]
    table.remove_pod(guard.key, "node1")
    assert filter_messages(incoming, table, plugin) == ["", ""]
    assert scores(incoming, table, plugin) is None
    table.add_pod(guard, "node2")
    assert filter_messages(incoming, table, plugin) == ["", EXISTING_ANTI_AFFINITY]
    table.remove_node("node2")
    assert filter_messages(incoming, table, plugin) == [""]
    assert scores(incoming, table, plugin) is None


def test_existing_pod_anti_affinity_on_a_key_the_node_lacks_rejects_nothing() -> None:
    existing = [
        pod(
            {"service": "securityscan"},
            required(ANTI_AFFINITY, term("rack", expr("security", "In", "S1"))),
            node_name="node1",
        )
    ]
    assert one_node(existing, pod(SECURITY_S1)) == ""


def test_incoming_pod_matching_its_own_affinity_schedules_first() -> None:
    """No pod matches yet, the pod matches its own terms: allowed where the keys exist."""
    incoming = pod(
        {"foo": "bar", "service": "securityscan"},
        required(
            AFFINITY,
            term("zone", expr("foo", "In", "bar")),
            term("zone", expr("service", "In", "securityscan")),
        ),
    )
    table = cluster([node("node1", zone="z1"), node("node2")], [])
    assert filter_messages(incoming, table) == ["", AFFINITY_RULES]
    not_self = pod({"foo": "bar"}, required(AFFINITY, term("zone", expr("foo", "In", "baz"))))
    assert filter_messages(not_self, table) == [AFFINITY_RULES, AFFINITY_RULES]


def test_affinity_rejection_is_unresolvable_anti_affinity_is_not() -> None:
    plugin = InterPodAffinity()
    existing = [pod({"app": "x"}, node_name="node1")]
    table = cluster([node("node1", zone="z1"), node("node2", zone="z2")], existing)
    incoming = pod({}, required(AFFINITY, term("zone", expr("app", "In", "x"))))
    state = CycleState()
    plugin.pre_filter(state, incoming, table)
    assert plugin.node_status(state, incoming, table, 1).code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    incoming = pod({}, required(ANTI_AFFINITY, term("zone", expr("app", "In", "x"))))
    state = CycleState()
    plugin.pre_filter(state, incoming, table)
    assert plugin.node_status(state, incoming, table, 0).code == Code.UNSCHEDULABLE


# Filter: TestRequiredAffinityMultipleNodes.
def test_affinity_spreads_over_the_topology_domain() -> None:
    incoming = pod({}, required(AFFINITY, term("region", expr("foo", "In", "bar"))))
    existing = [pod({"foo": "bar"}, node_name="machine1")]
    table = cluster(
        [
            node("machine1", region="r1", zone="z11"),
            node("machine2", region="r1", zone="z12"),
            node("machine3", region="r2", zone="z21"),
        ],
        existing,
    )
    assert filter_messages(incoming, table) == ["", "", AFFINITY_RULES]


def test_anti_affinity_rejects_the_whole_domain() -> None:
    incoming = pod({"foo": "bar"}, required(ANTI_AFFINITY, term("zone", expr("foo", "In", "bar"))))
    existing = [pod({"foo": "bar"}, node_name="nodeA")]
    table = cluster(
        [
            node("nodeA", region="r1", zone="z1"),
            node("nodeB", region="r1", zone="z1"),
            node("nodeC", region="r2", zone="z2"),
        ],
        existing,
    )
    assert filter_messages(incoming, table) == [ANTI_AFFINITY_RULES, ANTI_AFFINITY_RULES, ""]


def test_anti_affinity_with_namespace_selector() -> None:
    selector = {"matchExpressions": [expr("team", "In", "team1")]}
    incoming = pod(
        {},
        required(ANTI_AFFINITY, term("zone", expr("foo", "In", "bar"), namespaceSelector=selector)),
        namespace="subteam1.team1",
    )
    table = cluster(
        [node("nodeA", zone="z1"), node("nodeB", zone="z2")],
        [
            pod({"foo": "bar"}, node_name="nodeA", namespace="subteam2.team1"),
            pod({"foo": "bar"}, node_name="nodeB", namespace="subteam1.team2"),
        ],
    )
    assert filter_messages(incoming, table) == [ANTI_AFFINITY_RULES, ""]
    # An empty namespace selector selects every namespace.
    incoming = pod(
        {}, required(ANTI_AFFINITY, term("zone", expr("foo", "In", "bar"), namespaceSelector={}))
    )
    assert filter_messages(incoming, table) == [ANTI_AFFINITY_RULES, ANTI_AFFINITY_RULES]


def test_existing_anti_affinity_with_namespace_selector_reads_incoming_namespace_labels() -> None:
    selector = {"matchExpressions": [expr("team", "In", "team2")]}
    existing = [
        pod(
            {},
            required(
                ANTI_AFFINITY, term("zone", expr("foo", "In", "bar"), namespaceSelector=selector)
            ),
            node_name="nodeA",
        )
    ]
    table = cluster(
        [node("nodeA", zone="z1"), node("nodeB", zone="z1"), node("nodeC", zone="z2")], existing
    )
    in_team2 = pod({"foo": "bar"}, namespace="subteam1.team2")
    assert filter_messages(in_team2, table) == [EXISTING_ANTI_AFFINITY, EXISTING_ANTI_AFFINITY, ""]
    in_team1 = pod({"foo": "bar"}, namespace="subteam1.team1")
    assert filter_messages(in_team1, table) == ["", "", ""]


def test_invalid_selector_is_unresolvable() -> None:
    incoming = pod({}, required(AFFINITY, term("zone", expr("foo", "In", "{{.bad-value.}}"))))
    status = InterPodAffinity().pre_filter(
        CycleState(), incoming, cluster([node("n", zone="z")], [])
    )
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message.startswith("parsing pod: ")


def test_counts_follow_binds_removals_and_node_changes() -> None:
    """The incremental counts agree with the cluster after each change."""
    plugin = InterPodAffinity()
    table = cluster([node("a", zone="z1"), node("b", zone="z2"), node("c", zone="z3")], [])
    incoming = pod({"app": "web"}, required(ANTI_AFFINITY, term("zone", expr("app", "In", "web"))))
    assert filter_messages(incoming, table, plugin) == ["", "", ""]
    web = pod({"app": "web"}, node_name="b")
    table.add_pod(web, "b")
    assert filter_messages(incoming, table, plugin) == ["", ANTI_AFFINITY_RULES, ""]
    table.add_node(node("b", zone="z1"))
    assert filter_messages(incoming, table, plugin) == [
        ANTI_AFFINITY_RULES,
        ANTI_AFFINITY_RULES,
        "",
    ]
    table.remove_node("a")  # c takes a's row
    assert filter_messages(incoming, table, plugin) == ["", ANTI_AFFINITY_RULES]
    table.remove_pod(web.key, "b")
    assert filter_messages(incoming, table, plugin) == ["", ""]
    guard = pod({}, required(ANTI_AFFINITY, term("zone", expr("app", "In", "web"))), node_name="c")
    table.add_pod(guard, "c")
    assert filter_messages(pod({"app": "web"}), table, plugin) == [EXISTING_ANTI_AFFINITY, ""]
    table.remove_pod(guard.key, "c")
    assert filter_messages(pod({"app": "web"}), table, plugin) == ["", ""]


# Score: TestPreferredAffinity.
REGION_CHINA = {"region": "China"}
REGION_INDIA = {"region": "India"}
AZ1 = {"az": "az1"}
AZ2 = {"az": "az2"}
CHINA_AZ1 = {"region": "China", "az": "az1"}
S1 = {"security": "S1"}
S2 = {"security": "S2"}
STAY_WITH_S1_IN_REGION = preferred(
    AFFINITY, weighted(5, term("region", expr("security", "In", "S1")))
)
STAY_WITH_S2_IN_REGION = preferred(
    AFFINITY, weighted(6, term("region", expr("security", "In", "S2")))
)
AFFINITY3 = preferred(
    AFFINITY,
    weighted(8, term("region", expr("security", "NotIn", "S1"), expr("security", "In", "S2"))),
    weighted(2, term("region", expr("security", "Exists"), expr("wrongkey", "DoesNotExist"))),
)
HARD_AFFINITY = required(
    AFFINITY,
    term("region", expr("security", "In", "S1", "value2")),
    term("region", expr("security", "Exists"), expr("wrongkey", "DoesNotExist")),
)
AWAY_FROM_S1_IN_AZ = preferred(ANTI_AFFINITY, weighted(5, term("az", expr("security", "In", "S1"))))
AWAY_FROM_S2_IN_AZ = preferred(ANTI_AFFINITY, weighted(5, term("az", expr("security", "In", "S2"))))
STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ = {
    **preferred(AFFINITY, weighted(8, term("region", expr("security", "In", "S1")))),
    **preferred(ANTI_AFFINITY, weighted(5, term("az", expr("security", "In", "S2")))),
}
TEAM1 = {"matchExpressions": [expr("team", "In", "team1")]}
AFFINITY_NAMESPACE_SELECTOR = preferred(
    AFFINITY,
    weighted(
        5,
        term(
            "region",
            expr("security", "In", "S1"),
            namespaces=["subteam2.team2"],
            namespaceSelector=TEAM1,
        ),
    ),
)
ANTI_AFFINITY_NAMESPACE_SELECTOR = preferred(
    ANTI_AFFINITY,
    weighted(
        5,
        term(
            "region",
            expr("security", "In", "S1"),
            namespaces=["subteam2.team2"],
            namespaceSelector=TEAM1,
        ),
    ),
)


def nodes_with(*labels: dict[str, str]) -> list[dict[str, Any]]:
    return [node(f"node{i}", **node_labels) for i, node_labels in enumerate(labels, 1)]


def on(
    node_index: int,
    labels: dict[str, str] | None = None,
    affinity: dict[str, Any] | None = None,
    namespace: str = "default",
) -> PodInfo:
    return pod(labels, affinity, node_name=f"node{node_index}", namespace=namespace)


SCORE_CASES = [
    pytest.param(
        pod(S1), [], nodes_with(REGION_CHINA, REGION_INDIA, AZ1), None, id="no affinity skips"
    ),
    pytest.param(
        pod(S1, STAY_WITH_S1_IN_REGION),
        [on(1, S1), on(2, S2), on(3, S1)],
        nodes_with(REGION_CHINA, REGION_INDIA, AZ1),
        [100, 0, 0],
        id="matching pods in the topology score high",
    ),
    pytest.param(
        pod(None, STAY_WITH_S1_IN_REGION),
        [on(1, S1)],
        nodes_with(REGION_CHINA, CHINA_AZ1, REGION_INDIA),
        [100, 100, 0],
        id="the whole domain shares the score",
    ),
    pytest.param(
        pod(S1, STAY_WITH_S2_IN_REGION),
        [on(1, S2), on(1, S2), on(2, S2), on(3, S2), on(4, S2), on(5, S2)],
        nodes_with(REGION_CHINA, REGION_INDIA, REGION_CHINA, REGION_CHINA, REGION_INDIA),
        [100, 0, 100, 100, 0],
        id="the region with more matches wins",
    ),
    pytest.param(
        pod(S1, AFFINITY3),
        [on(1, S1), on(2, S2), on(3, S1)],
        nodes_with(REGION_CHINA, REGION_INDIA, AZ1),
        [20, 100, 0],
        id="operators and partial matches",
    ),
    pytest.param(
        pod(S2),
        [on(1, S1, STAY_WITH_S1_IN_REGION), on(2, S2, STAY_WITH_S2_IN_REGION)],
        nodes_with(REGION_CHINA, REGION_INDIA, AZ1),
        [0, 100, 0],
        id="symmetry of preferred affinity",
    ),
    pytest.param(
        pod(S1, namespace="subteam1.team1"),
        [on(1, S1, AFFINITY_NAMESPACE_SELECTOR), on(2, S2, STAY_WITH_S2_IN_REGION)],
        nodes_with(REGION_CHINA, REGION_INDIA, AZ1),
        [100, 0, 0],
        id="symmetry with namespace selector",
    ),
    pytest.param(
        pod(S1, namespace="subteam1.team1"),
        [on(1, S1, ANTI_AFFINITY_NAMESPACE_SELECTOR), on(2, S2, STAY_WITH_S2_IN_REGION)],
        nodes_with(REGION_CHINA, REGION_INDIA, AZ1),
        [0, 100, 100],
        id="anti-affinity symmetry with namespace selector",
    ),
    pytest.param(
        pod(S1),
        [on(1, S1, HARD_AFFINITY), on(2, S2, HARD_AFFINITY)],
        nodes_with(REGION_CHINA, REGION_INDIA, AZ1),
        [100, 100, 0],
        id="symmetry of required affinity",
    ),
    pytest.param(
        pod(S1, AWAY_FROM_S1_IN_AZ),
        [on(1, S1), on(2, S2)],
        nodes_with(AZ1, REGION_CHINA),
        [0, 100],
        id="anti-affinity",
    ),
    pytest.param(
        pod(S1, AWAY_FROM_S1_IN_AZ),
        [on(1, S1), on(1, S1), on(2, S2)],
        nodes_with(AZ1, REGION_INDIA),
        [0, 100],
        id="anti-affinity with more matches",
    ),
    pytest.param(
        pod(S2),
        [on(1, S1, AWAY_FROM_S2_IN_AZ), on(2, S2, AWAY_FROM_S1_IN_AZ)],
        nodes_with(AZ1, AZ2),
        [0, 100],
        id="symmetry of preferred anti-affinity",
    ),
    pytest.param(
        pod(S1, STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
        [on(1, S1), on(1, S1), on(2, S1), on(3, S1), on(3, S1), on(4, S1), on(5, S1)],
        nodes_with(CHINA_AZ1, REGION_INDIA, REGION_CHINA, REGION_CHINA, REGION_INDIA),
        [100, 0, 100, 100, 0],
        id="affinity and anti-affinity with the same labels",
    ),
    pytest.param(
        pod(S1, STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
        [
            on(1, S1),
            on(2, S2),
            on(3, None, STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
            on(4, None, AWAY_FROM_S1_IN_AZ),
        ],
        nodes_with(REGION_CHINA, AZ1, REGION_INDIA, AZ2),
        [100, 0, 100, 0],
        id="affinity, anti-affinity and symmetry",
    ),
    pytest.param(
        pod(S1),
        [on(1, S1), on(2, None, STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ)],
        nodes_with(REGION_CHINA, REGION_CHINA),
        [0, 0],
        id="partial topology without affinity pods",
    ),
    pytest.param(
        pod(S1, AFFINITY_NAMESPACE_SELECTOR, namespace="subteam1.team1"),
        [
            on(1, S1, namespace="subteam1.team1"),
            on(1, S1, namespace="subteam1.team1"),
            on(1, S1, namespace="subteam1.team2"),
            on(2, S1, namespace="subteam2.team1"),
        ],
        nodes_with(REGION_CHINA, REGION_INDIA),
        [100, 0],
        id="affinity matching a namespace selector",
    ),
    pytest.param(
        pod(S1, ANTI_AFFINITY_NAMESPACE_SELECTOR, namespace="subteam1.team1"),
        [
            on(1, S1, namespace="subteam1.team1"),
            on(1, S1, namespace="subteam1.team1"),
            on(1, S1, namespace="subteam2.team2"),
            on(2, S1, namespace="subteam2.team1"),
        ],
        nodes_with(REGION_CHINA, REGION_INDIA),
        [0, 100],
        id="anti-affinity matching namespace selector and namespaces",
    ),
]


@pytest.mark.parametrize(("incoming", "existing", "nodes", "expected"), SCORE_CASES)
def test_preferred_affinity_scores(
    incoming: PodInfo,
    existing: list[PodInfo],
    nodes: list[dict[str, Any]],
    expected: list[int] | None,
) -> None:
    assert scores(incoming, cluster(nodes, existing)) == expected


def test_ignore_preferred_terms_of_existing_pods() -> None:
    existing = [
        on(1, S1, STAY_WITH_S1_IN_REGION_AWAY_FROM_S2_IN_AZ),
        on(2, S2, STAY_WITH_S2_IN_REGION),
    ]
    table = cluster(nodes_with(REGION_CHINA, REGION_INDIA), existing)
    ignoring = InterPodAffinity({"ignorePreferredTermsOfExistingPods": True})
    assert scores(pod(S2), table, ignoring) is None
    assert scores(pod(S2), table) == [0, 100]


# Score: TestPreferredAffinityWithHardPodAffinitySymmetricWeight.
HARD_POD_AFFINITY = required(
    AFFINITY,
    term(
        "region",
        expr("service", "In", "S1"),
        namespaces=["default", "subteam2.team2"],
        namespaceSelector=TEAM1,
    ),
)


@pytest.mark.parametrize(
    ("weight", "namespace", "expected"),
    [
        (1, "default", [100, 100, 0]),
        (0, "default", None),
        (1, "subteam1.team2", None),
        (1, "subteam1.team1", [100, 100, 0]),
        (1, "subteam2.team2", [100, 100, 0]),
    ],
)
def test_hard_pod_affinity_weight(weight: int, namespace: str, expected: list[int] | None) -> None:
    existing = [on(1, None, HARD_POD_AFFINITY), on(2, None, HARD_POD_AFFINITY)]
    table = cluster(nodes_with(REGION_CHINA, REGION_INDIA, AZ1), existing)
    plugin = InterPodAffinity({"hardPodAffinityWeight": weight}, NAMESPACES)
    assert scores(pod({"service": "S1"}, namespace=namespace), table, plugin) == expected


def test_hard_pod_affinity_weight_is_checked() -> None:
    with pytest.raises(
        ValueError,
        match=r"hardPodAffinityWeight: Invalid value: 101: not in valid range \[0, 100\]",
    ):
        InterPodAffinity({"hardPodAffinityWeight": 101})


def test_normalisation_truncates_like_float64() -> None:
    """float64(100) * (float64(29) / float64(100)) is 28.999999999999996: 28, not 29."""
    plugin = InterPodAffinity()
    normalised = plugin.normalize_score(CycleState(), pod(), np.array([-50, -21, 50], np.int64))
    assert normalised.tolist() == [0, 28, 100]


# Through the scheduler with the default profile.
def test_default_profile_spreads_anti_affine_replicas_and_explains() -> None:
    bound: list[Any] = []
    with VirtualClock() as clock:
        scheduler = Scheduler([default_profile(bound.append)], clock)
        for i in range(3):
            scheduler.add_node(node(f"n{i}", **{"kubernetes.io/hostname": f"n{i}"}))
        anti = required(ANTI_AFFINITY, term("kubernetes.io/hostname", expr("app", "In", "web")))
        for _ in range(4):
            scheduler.add_pod(pod({"app": "web"}, anti).pod)
        results = scheduler.schedule_pending()
    placed = [r.node_name for r in results if r.node_name]
    assert sorted(placed) == ["n0", "n1", "n2"]
    (failed,) = [r for r in results if not r.node_name]
    # DefaultPreemption, once in the profile, appends its own sentence.
    assert failed.message.startswith(
        "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules."
    )


def test_namespace_labels_are_read_each_cycle() -> None:
    """The adapter's namespace mapping is live: a relabelled namespace counts at once."""
    namespaces = {"a": {"team": "x"}, "b": {"team": "y"}}
    plugin = InterPodAffinity(namespace_labels=namespaces)
    selector = {"matchLabels": {"team": "x"}}
    anti = required(
        ANTI_AFFINITY, term("zone", expr("app", "In", "db"), namespaceSelector=selector)
    )
    table = cluster([node("n1", zone="z1"), node("n2", zone="z2")], [on_node("n2", "b")])
    assert filter_messages(pod({}, anti), table, plugin) == ["", ""]
    namespaces["b"] = {"team": "x"}
    assert filter_messages(pod({}, anti), table, plugin) == ["", ANTI_AFFINITY_RULES]


def on_node(node_name: str, namespace: str) -> PodInfo:
    return pod({"app": "db"}, node_name=node_name, namespace=namespace)


# Random clusters: the vectorised plugin against kube-scheduler's algorithm written out with
# its topology-pair maps (filtering.go, scoring.go), node by node, after every kind of change.
def reference_filter(incoming: PodInfo, table: NodeTable, namespaces: Any) -> list[str]:
    terms = merged(pod_affinity_terms(incoming), namespaces)
    namespace_labels = namespaces.get(incoming.namespace) or {}
    existing: Counter[tuple[str, str]] = Counter()
    affinity: Counter[tuple[str, str]] = Counter()
    anti_affinity: Counter[tuple[str, str]] = Counter()
    for i in range(len(table)):
        labels = table.labels[i]
        for placed in table.pods[i].values():
            for t in pod_affinity_terms(placed).required_anti_affinity:
                matched = t.matches(incoming.namespace, incoming.labels, namespace_labels)
                if matched and t.topology_key in labels:
                    existing[t.topology_key, labels[t.topology_key]] += 1
            if matches_all(terms.required_affinity, placed):
                for t in terms.required_affinity:
                    if t.topology_key in labels:
                        affinity[t.topology_key, labels[t.topology_key]] += 1
            for t in terms.required_anti_affinity:
                if t.matches(placed.namespace, placed.labels, {}) and t.topology_key in labels:
                    anti_affinity[t.topology_key, labels[t.topology_key]] += 1
    if not existing and not terms.required_affinity and not terms.required_anti_affinity:
        return [""] * len(table)
    verdicts = []
    for labels in table.labels:
        pods_exist, has_keys = True, True
        for t in terms.required_affinity:
            if t.topology_key not in labels:
                has_keys = False
                break
            if affinity[t.topology_key, labels[t.topology_key]] <= 0:
                pods_exist = False
        if not has_keys or not (
            pods_exist or (not affinity and matches_all(terms.required_affinity, incoming))
        ):
            verdicts.append(AFFINITY_RULES)
        elif anti_affinity and any(
            t.topology_key in labels and anti_affinity[t.topology_key, labels[t.topology_key]] > 0
            for t in terms.required_anti_affinity
        ):
            verdicts.append(ANTI_AFFINITY_RULES)
        elif existing and any(existing[pair] > 0 for pair in labels.items()):
            verdicts.append(EXISTING_ANTI_AFFINITY)
        else:
            verdicts.append("")
    return verdicts


def reference_scores(incoming: PodInfo, table: NodeTable, namespaces: Any) -> list[int] | None:
    terms = merged(pod_affinity_terms(incoming), namespaces)
    namespace_labels = namespaces.get(incoming.namespace) or {}
    topology: dict[str, Counter[str]] = {}

    def process(t: Any, weight: int, target: PodInfo, ns_labels: Any, labels: Any) -> None:
        if t.matches(target.namespace, target.labels, ns_labels) and t.topology_key in labels:
            topology.setdefault(t.topology_key, Counter())[labels[t.topology_key]] += weight

    for i in range(len(table)):
        labels = table.labels[i]
        for placed in table.pods[i].values():
            for w in terms.preferred_affinity:
                process(w.term, w.weight, placed, {}, labels)
            for w in terms.preferred_anti_affinity:
                process(w.term, -w.weight, placed, {}, labels)
            placed_terms = pod_affinity_terms(placed)
            for t in placed_terms.required_affinity:
                process(t, 1, incoming, namespace_labels, labels)
            for w in placed_terms.preferred_affinity:
                process(w.term, w.weight, incoming, namespace_labels, labels)
            for w in placed_terms.preferred_anti_affinity:
                process(w.term, -w.weight, incoming, namespace_labels, labels)
    if not topology:
        return None
    raw = [
        sum(values[labels[key]] for key, values in topology.items() if key in labels)
        for labels in table.labels
    ]
    low, high = min(raw), max(raw)
    return [0 if high == low else int(100.0 * ((s - low) / (high - low))) for s in raw]


KEYS = ("zone", "region", "kubernetes.io/hostname", "rack")


def random_term(rng: random.Random) -> dict[str, Any]:
    apps = rng.sample(["a", "b", "c"], rng.randint(1, 2))
    extra: dict[str, Any] = {}
    choice = rng.random()
    if choice < 0.25:
        extra["namespaces"] = rng.sample(["ns1", "ns2"], 1)
    elif choice < 0.4:
        extra["namespaceSelector"] = {"matchLabels": {"team": rng.choice(["x", "y"])}}
    elif choice < 0.5:
        extra["namespaceSelector"] = {}
    return term(rng.choice(KEYS), expr("app", rng.choice(["In", "NotIn"]), *apps), **extra)


def random_affinity(rng: random.Random) -> dict[str, Any]:
    affinity: dict[str, Any] = {}
    for kind in (AFFINITY, ANTI_AFFINITY):
        section: dict[str, Any] = {}
        if rng.random() < 0.3:
            section["requiredDuringSchedulingIgnoredDuringExecution"] = [
                random_term(rng) for _ in range(rng.randint(1, 2))
            ]
        if rng.random() < 0.4:
            section["preferredDuringSchedulingIgnoredDuringExecution"] = [
                weighted(rng.randint(1, 100), random_term(rng)) for _ in range(rng.randint(1, 2))
            ]
        if section:
            affinity[kind] = section
    return affinity


def random_node(rng: random.Random, name: str) -> dict[str, Any]:
    labels = {"kubernetes.io/hostname": name}
    if rng.random() < 0.85:
        labels["zone"] = rng.choice(["z1", "z2", "z3"])
    if rng.random() < 0.7:
        labels["region"] = rng.choice(["r1", "r2"])
    return node(name, **labels)


def random_pod(rng: random.Random, node_name: str = "") -> PodInfo:
    labels = {"app": rng.choice(["a", "b", "c"])} if rng.random() < 0.9 else {}
    affinity = random_affinity(rng) if rng.random() < 0.6 else None
    return pod(labels, affinity, node_name, rng.choice(["ns1", "ns2"]))


@pytest.mark.parametrize("seed", range(12))
def test_random_clusters_agree_with_the_reference(seed: int) -> None:
    rng = random.Random(seed)
    namespaces = {"ns1": {"team": "x"}, "ns2": {"team": "y"}}
    plugin = InterPodAffinity(namespace_labels=namespaces)
    table = cluster([random_node(rng, f"n{i}") for i in range(rng.randint(4, 12))], [])
    placed: list[PodInfo] = []
    for _ in range(14):
        change = rng.random()
        if change < 0.55 or not placed:
            target = rng.choice(table.names)
            p = random_pod(rng, target)
            table.add_pod(p, target)
            placed.append(p)
        elif change < 0.75:
            p = placed.pop(rng.randrange(len(placed)))
            table.remove_pod(p.key, p.node_name)
        elif change < 0.9:
            table.add_node(random_node(rng, rng.choice(table.names)))
        elif len(table) > 2:
            gone = rng.choice(table.names)
            table.remove_node(gone)
            placed = [p for p in placed if p.node_name != gone]
        else:
            table.add_node(random_node(rng, f"m{len(table)}"))
        for _ in range(3):
            incoming = random_pod(rng)
            assert filter_messages(incoming, table, plugin) == reference_filter(
                incoming, table, namespaces
            )
            assert scores(incoming, table, plugin) == reference_scores(incoming, table, namespaces)


def test_pre_filter_extensions_follow_pods_added_and_removed() -> None:
    """As filtering_test.go's TestPreFilterStateAddRemovePod: preemption and nominated pods
    add and remove pods after PreFilter; a clone of the state keeps its own counts."""
    profile = default_profile(lambda binding: None)
    table = cluster([node("n1", zone="z1"), node("n2", zone="z2")], [])
    incoming = pod({"app": "web"}, required(ANTI_AFFINITY, term("zone", expr("app", "In", "web"))))
    state = CycleState()
    assert profile.run_pre_filter(state, incoming, table).is_success()
    simulated = state.clone()
    web = pod({"app": "web"}, node_name="n1")
    assert add_pod(profile, simulated, incoming, table, 0, web).is_success()
    assert run_filter_on_node(profile, simulated, incoming, table, 0).message == ANTI_AFFINITY_RULES
    assert run_filter_on_node(profile, state, incoming, table, 0).is_success()
    assert remove_pod(profile, simulated, incoming, table, 0, web).is_success()
    assert run_filter_on_node(profile, simulated, incoming, table, 0).is_success()
    guard = pod({}, required(ANTI_AFFINITY, term("zone", expr("app", "In", "web"))), "n2")
    assert add_pod(profile, simulated, incoming, table, 1, guard).is_success()
    status = run_filter_on_node(profile, simulated, incoming, table, 1)
    assert (status.plugin, status.message) == ("InterPodAffinity", EXISTING_ANTI_AFFINITY)


def test_plugin_config_args_reach_the_plugin() -> None:
    config = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- pluginConfig:
  - name: InterPodAffinity
    args:
      hardPodAffinityWeight: {weight}
"""
    (profile,) = build_profiles(parse(config.format(weight=7)), lambda binding: None)
    (plugin,) = [p for p in profile.plugins if p.name == "InterPodAffinity"]
    assert plugin.hard_pod_affinity_weight == 7
    with pytest.raises(ConfigError) as e:
        build_profiles(parse(config.format(weight=101)), lambda binding: None)
    assert str(e.value) == (
        "profiles[0].pluginConfig[0].args.hardPodAffinityWeight: Invalid value: 101: "
        "not in valid range [0, 100]"
    )
