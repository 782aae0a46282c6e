"""The DefaultEvictor's rules and the eviction limits, over PodLifeTime (which would evict
every old pod) in dry-run cycles; and real evictions, which a PodDisruptionBudget holds back."""

from __future__ import annotations

from typing import Any

import pytest
from tests.descheduler.cluster import DEPLOYMENTS, NODES, Descheduled, deployment
from tests.descheduler.unit import NOW, dry_run, evicted, node, pod, policy, would_evict

from pinnace.api import catalog
from pinnace.clock.rfc3339 import format_time
from pinnace.descheduler.args import PolicyError
from pinnace.descheduler.policy import parse

OLD = 7200.0
ARGS = "      maxPodLifeTimeSeconds: 3600\n"
NODES_AB = [node("a"), node("b")]


def lifetime(evictor: str = "", top: str = "") -> str:
    return policy("PodLifeTime", "deschedule", ARGS, evictor=evictor, top=top)


@pytest.mark.parametrize(
    ("candidate", "allowed_by"),
    [
        (
            pod("critical", "a", age=OLD, priority=2_000_000_000),
            "      evictSystemCriticalPods: true\n",
        ),
        (
            pod("scratch", "a", age=OLD, volumes=[{"name": "tmp", "emptyDir": {}}]),
            "      evictLocalStoragePods: true\n",
        ),
    ],
)
def test_pods_the_evictor_keeps_unless_allowed(
    candidate: dict[str, object], allowed_by: str
) -> None:
    assert evicted(lifetime(), NODES_AB, [candidate]) == []
    name = candidate["metadata"]["name"]  # type: ignore[index]
    assert evicted(lifetime(evictor=allowed_by), NODES_AB, [candidate]) == [name]


def failed(name: str, **kwargs: Any) -> dict[str, Any]:
    return pod(name, "a", age=OLD, status={"phase": "Failed", "reason": "Evicted"}, **kwargs)


def test_failed_pods_and_bare_ones() -> None:
    pods = [failed("crashed"), failed("bare", owner=""), pod("running", "a", age=OLD)]
    removal = policy("RemoveFailedPods", "deschedule")
    found = would_evict(removal, NODES_AB, pods)
    assert [(e.name, e.reason) for e in found] == [("crashed", "pod failed (Evicted)")]
    bare_too = policy("RemoveFailedPods", "deschedule", evictor="      evictFailedBarePods: true\n")
    assert evicted(bare_too, NODES_AB, pods) == ["crashed", "bare"]
    for reasons, expected in (("[OOMKilled]", []), ("[Evicted]", ["crashed"])):
        args = f"      reasons: {reasons}\n"
        assert evicted(policy("RemoveFailedPods", "deschedule", args), NODES_AB, pods) == expected
    # PodLifeTime sees finished pods too, as v0.32's lists every pod on the node.
    assert evicted(lifetime(), NODES_AB, pods) == ["crashed", "running"]
    # The others never do: they hold no resources.
    assert evicted(policy("RemovePodsViolatingNodeTaints", "deschedule"), NODES_AB, pods) == []


def test_daemon_set_and_mirror_pods_are_never_evicted() -> None:
    pods = [
        pod("daemon", "a", age=OLD, owner="DaemonSet/agent"),
        pod("mirror", "a", age=OLD, annotations={"kubernetes.io/config.mirror": "x"}),
    ]
    allow_all = "      evictSystemCriticalPods: true\n      evictLocalStoragePods: true\n"
    assert evicted(lifetime(evictor=allow_all), NODES_AB, pods) == []


def test_the_evict_annotation_overrides_the_rules() -> None:
    marked = pod(
        "marked",
        "a",
        age=OLD,
        owner="",
        annotations={"descheduler.alpha.kubernetes.io/evict": "true"},
    )
    assert evicted(lifetime(), NODES_AB, [marked]) == ["marked"]


def test_priority_threshold_by_value_or_class_name() -> None:
    pods = [pod("low", "a", age=OLD, priority=10), pod("high", "a", age=OLD, priority=1000)]
    assert evicted(lifetime(), NODES_AB, pods) == ["low", "high"]
    by_value = lifetime(evictor="      priorityThreshold: {value: 1000}\n")
    assert evicted(by_value, NODES_AB, pods) == ["low"]
    rules = lifetime(evictor="      priorityThreshold: {name: important}\n")
    found = would_evict(rules, NODES_AB, pods, priority_classes={"important": 1000})
    assert [e.name for e in found] == ["low"]


def test_node_fit_keeps_pods_that_fit_nowhere_else() -> None:
    pods = [pod("big", "a", cpu="3", age=OLD), pod("small", "a", age=OLD)]
    full = [pod(f"b-{i}", "b", cpu="1") for i in range(3)]  # b has 1 CPU left
    found = evicted(lifetime(evictor="      nodeFit: true\n"), NODES_AB, pods + full)
    assert found == ["small"]


def test_limits_per_node_namespace_and_cycle() -> None:
    pods = [pod(f"a-{i}", "a", age=OLD + i) for i in range(3)]
    pods += [pod(f"b-{i}", "b", age=OLD + i) for i in range(3)]
    assert len(evicted(lifetime(), NODES_AB, pods)) == 6
    per_node = evicted(lifetime(top="maxNoOfPodsToEvictPerNode: 1\n"), NODES_AB, pods)
    assert sorted(per_node) == ["a-2", "b-2"]  # the oldest on each node
    assert evicted(lifetime(top="maxNoOfPodsToEvictPerNamespace: 2\n"), NODES_AB, pods) == [
        "a-2",
        "b-2",
    ]
    assert evicted(lifetime(top="maxNoOfPodsToEvictTotal: 1\n"), NODES_AB, pods) == ["a-2"]


PDBS = catalog.kind("policy", "poddisruptionbudgets")
TAINTS = policy("RemovePodsViolatingNodeTaints", "deschedule")
BUDGET = {
    "apiVersion": "policy/v1",
    "kind": "PodDisruptionBudget",
    "metadata": {"name": "web"},
    "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}},
}


def test_evictions_go_through_the_eviction_api_and_budgets_hold() -> None:
    cluster = Descheduled(nodes=2)
    try:
        cluster.create(DEPLOYMENTS, deployment("web", 2))
        cluster.create(PDBS, BUDGET)
        cluster.settle(10)
        taint = {"spec": {"taints": [{"key": "drain", "effect": "NoSchedule"}]}}
        for name in cluster.node_names:
            cluster.run(cluster.client.patch(NODES, "", name, taint))
        before = cluster.placement()

        result = cluster.deschedule(TAINTS)

        assert result.evictions == []
        assert len(result.failures) == 2
        assert all(
            "Cannot evict pod as it would violate the pod's disruption budget." in f
            for f in result.failures
        )
        cluster.settle(10)
        assert cluster.placement() == before
    finally:
        cluster.close()


TWO_PROFILES = """
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: one
  pluginConfig: &config
  - name: DefaultEvictor
    args:
      minPodAge: 5m
  - name: PodLifeTime
    args: {maxPodLifeTimeSeconds: 3600}
  plugins: &plugins
    deschedule:
      enabled: [PodLifeTime]
- name: two
  pluginConfig: *config
  plugins: *plugins
"""


def test_a_cycle_says_why_it_held_pods_back_once_each() -> None:
    started = {"phase": "Running", "startTime": format_time(NOW - 60)}
    pods = [
        pod("young-0", "a", age=OLD, status=started),
        pod("young-1", "b", age=OLD, status=started),
        pod("bare", "a", age=OLD, owner="", status=started),
        pod("old", "b", age=OLD, status={"phase": "Running", "startTime": format_time(NOW - OLD)}),
    ]
    # Both profiles see the same pods: each pod held back is counted once.
    result = dry_run(TWO_PROFILES, NODES_AB, pods)
    assert [e.name for e in result.evictions] == ["old"]
    assert result.held_back == {
        "pod age is not older than MinPodAge: 300 seconds": 2,
        "pod does not have any ownerRefs": 1,
    }


def test_pods_that_would_fit_nowhere_else_are_held_back_for_it() -> None:
    pods = [pod("big", "a", cpu="3", age=OLD)] + [pod(f"b-{i}", "b", cpu="1") for i in range(3)]
    result = dry_run(lifetime(evictor="      nodeFit: true\n"), NODES_AB, pods)
    assert result.evictions == []
    assert result.held_back == {
        "pod does not fit on any other node because of nodeSelector(s), Taint(s), or nodes "
        "marked as unschedulable": 1
    }


TAINTS_AND_LIFETIME = """
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: test
  pluginConfig:
  - name: PodLifeTime
    args: {maxPodLifeTimeSeconds: 60}
  plugins:
    deschedule:
      enabled: [RemovePodsViolatingNodeTaints, PodLifeTime]
"""


def test_a_pod_the_api_refuses_twice_is_reported_once() -> None:
    cluster = Descheduled(nodes=2)
    try:
        cluster.create(DEPLOYMENTS, deployment("web", 2))
        cluster.create(PDBS, BUDGET)
        cluster.settle(10)
        taint = {"spec": {"taints": [{"key": "drain", "effect": "NoSchedule"}]}}
        for name in cluster.node_names:
            cluster.run(cluster.client.patch(NODES, "", name, taint))
        cluster.settle(60)

        # Both strategies pick both pods; the budget refuses each time.
        result = cluster.deschedule(TAINTS_AND_LIFETIME)

        assert result.evictions == []
        assert len(result.failures) == 2
        assert len({f.split(":")[0] for f in result.failures}) == 2
    finally:
        cluster.close()


def test_min_replicas_and_min_pod_age() -> None:
    started = {"phase": "Running", "startTime": format_time(NOW - 60)}
    pods = [pod("web-0", "a", age=OLD, status=started), pod("web-1", "b", age=OLD, status=started)]
    assert evicted(lifetime(evictor="      minReplicas: 3\n"), NODES_AB, pods) == []
    assert len(evicted(lifetime(evictor="      minReplicas: 2\n"), NODES_AB, pods)) == 2
    assert evicted(lifetime(evictor="      minPodAge: 5m\n"), NODES_AB, pods) == []
    assert len(evicted(lifetime(evictor="      minPodAge: 30s\n"), NODES_AB, pods)) == 2
    with pytest.raises(PolicyError) as refused:
        parse(lifetime(evictor="      minPodAge: soon\n"))
    assert str(refused.value) == (
        'profiles[0].pluginConfig[0].args.minPodAge: time: invalid duration "soon"'
    )


def test_pod_life_time_states() -> None:
    """States match the phase, the pod's status reason (a pod the kubelet rejected) and the
    containers' waiting reasons, init containers' only with includingInitContainers."""
    rejected = failed("rejected") | {"status": {"phase": "Failed", "reason": "NodeAffinity"}}
    waiting = {"state": {"waiting": {"reason": "CrashLoopBackOff"}}}
    init_looping = pod(
        "init", "a", age=OLD, status={"phase": "Pending", "initContainerStatuses": [waiting]}
    )
    pods = [rejected, init_looping, pod("running", "a", age=OLD)]
    states = ARGS + "      states: [NodeAffinity, CrashLoopBackOff]\n"
    assert evicted(policy("PodLifeTime", "deschedule", states), NODES_AB, pods) == ["rejected"]
    with_init = states + "      includingInitContainers: true\n"
    found = evicted(policy("PodLifeTime", "deschedule", with_init), NODES_AB, pods)
    assert sorted(found) == ["init", "rejected"]
    with pytest.raises(PolicyError, match='Unsupported value: "Succeeded"'):
        parse(policy("PodLifeTime", "deschedule", ARGS + "      states: [Succeeded]\n"))
