"""The disruption controller keeps PodDisruptionBudget status, with the workload controllers,
scheduler and nodes on the virtual clock."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from tests.client.conftest import pod
from tests.controllers.workloads import DEPLOYMENTS, PODS, REPLICA_SETS, Workloads, template

from pinnace.api import catalog
from pinnace.api.objects import Object, clone
from pinnace.api.status import StatusError

PDBS = catalog.kind("policy", "poddisruptionbudgets")
STATEFUL_SETS = catalog.kind("apps", "statefulsets")


def deployment(replicas: int = 3) -> Object:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": template(),
        },
    }


def budget(**spec: Any) -> Object:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "web"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, **spec},
    }


@pytest.fixture
def cluster() -> Iterator[Workloads]:
    c = Workloads(nodes=2)
    yield c
    c.close()


def status_of(cluster: Workloads, settle: float = 5.0) -> Object:
    cluster.settle(settle)
    return cluster.get(PDBS, "web")["status"]


def counts(status: Object) -> tuple[int, int, int, int]:
    return (
        status["expectedPods"],
        status["desiredHealthy"],
        status["currentHealthy"],
        status["disruptionsAllowed"],
    )


def condition(status: Object) -> tuple[str, str, str]:
    (c,) = [c for c in status["conditions"] if c["type"] == "DisruptionAllowed"]
    return c["status"], c["reason"], c["message"]


def with_deployment(cluster: Workloads, replicas: int = 3, **spec: Any) -> None:
    cluster.run(cluster.client.create(DEPLOYMENTS, "default", deployment(replicas)))
    cluster.run(cluster.client.create(PDBS, "default", budget(**spec)))


def test_min_available_integer_counts_the_pods(cluster: Workloads) -> None:
    with_deployment(cluster, minAvailable=2)
    status = status_of(cluster)
    assert counts(status) == (3, 2, 3, 1)
    assert condition(status) == ("True", "SufficientPods", "")
    assert status["observedGeneration"] == 1


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"minAvailable": "50%"}, (3, 2, 3, 1)),  # ceil(1.5) must stay
        ({"maxUnavailable": "50%"}, (3, 1, 3, 2)),  # ceil(1.5) may go
        ({"maxUnavailable": 1}, (3, 2, 3, 1)),
        ({"maxUnavailable": 0}, (3, 3, 3, 0)),
    ],
)
def test_percentages_and_max_unavailable_use_the_controllers_scale(
    cluster: Workloads, spec: Object, expected: tuple[int, int, int, int]
) -> None:
    with_deployment(cluster, **spec)
    status = status_of(cluster)
    assert counts(status) == expected
    state = "True" if expected[3] else "False"
    reason = "SufficientPods" if expected[3] else "InsufficientPods"
    assert condition(status) == (state, reason, "")


def test_scale_follows_the_deployment_not_the_pods_present(cluster: Workloads) -> None:
    with_deployment(cluster, maxUnavailable=1)
    status_of(cluster)
    cluster.run(cluster.client.update_scale(DEPLOYMENTS, "default", "web", 5))
    assert counts(status_of(cluster, 10)) == (5, 4, 5, 1)


def test_a_spec_change_is_observed(cluster: Workloads) -> None:
    with_deployment(cluster, minAvailable=2)
    status_of(cluster)
    cluster.run(cluster.client.patch(PDBS, "default", "web", {"spec": {"minAvailable": 3}}))
    status = status_of(cluster)
    assert status["observedGeneration"] == 2
    assert counts(status) == (3, 3, 3, 0)
    assert condition(status) == ("False", "InsufficientPods", "")


def test_an_eviction_spends_the_budget_until_the_replacement_is_ready(
    cluster: Workloads,
) -> None:
    with_deployment(cluster, minAvailable=2)
    status_of(cluster)
    first, second = (p["metadata"]["name"] for p in cluster.pods(app="web")[:2])
    cluster.run(cluster.client.evict("default", first))
    with pytest.raises(StatusError) as refused:
        cluster.run(cluster.client.evict("default", second))
    assert refused.value.code == 429
    # The replacement turns Ready and the evicted pod is gone: the budget allows one again,
    # and disruptedPods no longer names the evicted pod.
    status = status_of(cluster, 60)
    assert counts(status) == (3, 2, 3, 1)
    assert "disruptedPods" not in status
    cluster.run(cluster.client.evict("default", second))


def test_a_disrupted_pod_not_deleted_counts_again_after_two_minutes(cluster: Workloads) -> None:
    with_deployment(cluster, minAvailable=1)
    status_of(cluster)
    name = cluster.pods(app="web")[0]["metadata"]["name"]
    pdb = clone(cluster.get(PDBS, "web"))  # the in-process client shares the stored object
    pdb["status"]["disruptedPods"] = {name: cluster.client.clock.now_rfc3339()}
    cluster.run(cluster.client.update_status(PDBS, pdb))
    status = status_of(cluster, 1)
    assert counts(status) == (3, 1, 2, 1)
    assert list(status["disruptedPods"]) == [name]
    status = status_of(cluster, 120)
    assert counts(status) == (3, 1, 3, 2)
    assert "disruptedPods" not in status
    assert cluster.events("NotDeleted") == [
        "Pod was expected by PDB default/default to be deleted but it wasn't"
    ]


def test_unserved_controller_fails_safe(cluster: Workloads) -> None:
    orphan = pod("db-0", app="web")
    orphan["metadata"]["ownerReferences"] = [
        {"apiVersion": "example.com/v1", "kind": "Database", "name": "db", "uid": "u-1"}
        | {"controller": True}
    ]
    cluster.run(cluster.client.create(PODS, "default", orphan))
    cluster.run(cluster.client.create(PDBS, "default", budget(maxUnavailable="10%")))
    status = status_of(cluster)
    assert status["disruptionsAllowed"] == 0
    assert condition(status) == (
        "False",
        "SyncFailed",
        'no matches for kind "Database" in version "example.com/v1"',
    )
    assert cluster.events("CalculateExpectedPodCountFailed") == [
        "Failed to calculate the number of expected pods: "
        'no matches for kind "Database" in version "example.com/v1"'
    ]


def test_bare_pods_are_unmanaged_under_a_percentage(cluster: Workloads) -> None:
    cluster.run(cluster.client.create(PODS, "default", pod("solo", app="web")))
    cluster.run(cluster.client.create(PDBS, "default", budget(minAvailable="50%")))
    status = status_of(cluster)
    assert counts(status) == (0, 0, 1, 0)
    assert cluster.events("UnmanagedPods") == [
        "Pods selected by this PodDisruptionBudget (selector: &LabelSelector{MatchLabels:"
        "map[string]string{app: web,},MatchExpressions:[]LabelSelectorRequirement{},}) were "
        "found to be unmanaged. As a result, the status of the PDB cannot be calculated "
        "correctly, which may result in undefined behavior. To account for these pods please "
        'set ".spec.minAvailable" field of the PDB to an integer value.'
    ]


def test_a_budget_without_pods_allows_nothing(cluster: Workloads) -> None:
    cluster.run(cluster.client.create(PDBS, "default", budget(minAvailable=0)))
    status = status_of(cluster)
    assert counts(status) == (0, 0, 0, 0)
    assert condition(status) == ("False", "InsufficientPods", "")
    assert cluster.events("NoPods") == ["No matching pods found"]


def test_a_pod_of_two_budgets_is_warned_which_one_is_synced(cluster: Workloads) -> None:
    for name in ("web", "also"):
        body = budget(minAvailable=0)
        body["metadata"]["name"] = name
        cluster.run(cluster.client.create(PDBS, "default", body))
    cluster.run(cluster.client.create(PODS, "default", pod("solo", app="web")))
    cluster.settle(5)
    warnings = set(cluster.events("MultiplePodDisruptionBudgets"))
    assert warnings
    assert warnings <= {
        f'Pod "default"/"solo" matches multiple PodDisruptionBudgets.  Chose "{name}" arbitrarily.'
        for name in ("web", "also")
    }


def test_an_empty_selector_counts_every_pod_of_the_namespace(cluster: Workloads) -> None:
    """policy/v1: `selector: {}` selects every pod of the budget's namespace."""
    cluster.run(cluster.client.create(DEPLOYMENTS, "default", deployment(2)))
    cluster.run(cluster.client.create(PODS, "default", pod("solo", app="other")))
    every = budget(minAvailable=2)
    every["spec"]["selector"] = {}
    cluster.run(cluster.client.create(PDBS, "default", every))
    status = status_of(cluster, 10)
    assert counts(status) == (3, 2, 3, 1)
    assert condition(status) == ("True", "SufficientPods", "")


def disruption_target(cluster: Workloads, name: str) -> Object:
    conditions = cluster.run(cluster.client.get(PODS, "default", name))["status"]["conditions"]
    (found,) = [c for c in conditions if c["type"] == "DisruptionTarget"]
    return found


@pytest.mark.parametrize(
    ("reason", "cleared"), [("EvictionByEvictionAPI", True), ("TerminationByKubelet", False)]
)
def test_a_disruption_target_not_followed_by_a_delete_is_reset_after_two_minutes(
    cluster: Workloads, reason: str, cleared: bool
) -> None:
    """syncStalePodDisruption: a pod marked for a disruption that never got its delete has the
    condition set to False two minutes after its transition; the kubelet's mark stays."""
    with_deployment(cluster, replicas=1, minAvailable=0)
    cluster.settle(5)
    (target,) = cluster.pods(app="web")
    name = target["metadata"]["name"]
    marked = clone(target)
    marked["status"]["conditions"].append(
        {
            "type": "DisruptionTarget",
            "status": "True",
            "reason": reason,
            "message": "marked",
            "lastTransitionTime": cluster.client.clock.now_rfc3339(),
        }
    )
    cluster.run(cluster.client.update_status(PODS, marked))
    cluster.settle(119)
    assert disruption_target(cluster, name)["status"] == "True"
    cluster.settle(2)
    found = disruption_target(cluster, name)
    if cleared:
        assert found["status"] == "False"
        assert "reason" not in found and "message" not in found
    else:
        assert (found["status"], found["reason"]) == ("True", reason)


def test_a_replica_set_no_deployment_controls_counts_its_own_scale(cluster: Workloads) -> None:
    """getPodReplicaSet: a replica set whose controller is not a Deployment (an Argo Rollout,
    say; a StatefulSet here) gives its own replicas, whatever its controller's scale."""
    owner = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "owner"},
        "spec": {
            "replicas": 0,
            "serviceName": "owner",
            "selector": {"matchLabels": {"app": "owner"}},
            "template": template(app="owner"),
        },
    }
    sts = cluster.run(cluster.client.create(STATEFUL_SETS, "default", owner))
    rs = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": "web",
            "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "owner"}
                | {"uid": sts["metadata"]["uid"], "controller": True}
            ],
        },
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "web"}},
            "template": template(),
        },
    }
    cluster.run(cluster.client.create(REPLICA_SETS, "default", rs))
    cluster.run(cluster.client.create(PDBS, "default", budget(maxUnavailable=1)))
    assert counts(status_of(cluster, 10)) == (3, 2, 3, 1)
