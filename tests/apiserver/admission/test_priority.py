"""Priority admission vectors, checked against kube-apiserver v1.32
(plugin/pkg/admission/priority/admission.go, pkg/apis/scheduling SystemPriorityClasses)."""

from __future__ import annotations

from typing import Any

import pytest

from pinnace.api.status import StatusError
from pinnace.apiserver.admission.priority import (
    SYSTEM_PRIORITY_CLASSES,
    admit_pod,
    validate_priority_class,
)


def pc(name: str, value: int, **fields: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        "preemptionPolicy": "PreemptLowerPriority",
        **fields,
    }


def classes(*items: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {**SYSTEM_PRIORITY_CLASSES, **{c["metadata"]["name"]: c for c in items}}


def pod(**spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "web", "namespace": "team"},
        "spec": {"containers": [{"name": "app", "image": "nginx"}], **spec},
    }


def admitted(p: dict[str, Any], *items: dict[str, Any]) -> dict[str, Any]:
    admit_pod(p, classes(*items), "CREATE")
    return p["spec"]


def refusal(p: dict[str, Any], *items: dict[str, Any]) -> str:
    with pytest.raises(StatusError) as info:
        admit_pod(p, classes(*items), "CREATE")
    assert (info.value.code, info.value.reason) == (403, "Forbidden")
    return info.value.message


def test_system_classes_as_kube_apiserver_bootstraps_them() -> None:
    assert dict(SYSTEM_PRIORITY_CLASSES) == {
        "system-node-critical": {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "system-node-critical"},
            "value": 2000001000,
            "description": "Used for system critical pods that must not be moved from their "
            "current node.",
            "preemptionPolicy": "PreemptLowerPriority",
        },
        "system-cluster-critical": {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "system-cluster-critical"},
            "value": 2000000000,
            "description": "Used for system critical pods that must run in the cluster, but "
            "can be moved to another node if necessary.",
            "preemptionPolicy": "PreemptLowerPriority",
        },
    }


def test_a_system_class_resolves_in_any_namespace() -> None:
    spec = admitted(pod(priorityClassName="system-node-critical"))
    assert spec["priority"] == 2000001000
    assert spec["preemptionPolicy"] == "PreemptLowerPriority"


def test_a_named_class_gives_its_value_and_policy() -> None:
    spec = admitted(pod(priorityClassName="batch"), pc("batch", 100, preemptionPolicy="Never"))
    assert (spec["priorityClassName"], spec["priority"], spec["preemptionPolicy"]) == (
        "batch",
        100,
        "Never",
    )


def test_an_unknown_class_is_forbidden() -> None:
    assert refusal(pod(priorityClassName="foo")) == (
        'pods "web" is forbidden: no PriorityClass with name foo was found'
    )


def test_classes_are_looked_up_only_among_those_given() -> None:
    with pytest.raises(StatusError):
        admit_pod(pod(priorityClassName="system-node-critical"), {}, "CREATE")


def test_without_a_name_or_a_default_priority_is_zero() -> None:
    spec = admitted(pod())
    assert spec["priority"] == 0
    assert spec["preemptionPolicy"] == "PreemptLowerPriority"
    assert "priorityClassName" not in spec


def test_the_global_default_class_is_picked_up_by_name() -> None:
    spec = admitted(pod(), pc("normal", 1000, globalDefault=True, preemptionPolicy="Never"))
    assert (spec["priorityClassName"], spec["priority"], spec["preemptionPolicy"]) == (
        "normal",
        1000,
        "Never",
    )


def test_of_several_defaults_the_lowest_value_wins() -> None:
    spec = admitted(pod(), pc("high", 500, globalDefault=True), pc("low", 5, globalDefault=True))
    assert (spec["priorityClassName"], spec["priority"]) == ("low", 5)


def test_a_priority_that_agrees_with_the_class_is_accepted() -> None:
    spec = admitted(pod(priorityClassName="batch", priority=100), pc("batch", 100))
    assert spec["priority"] == 100
    assert admitted(pod(priority=0))["priority"] == 0


def test_a_priority_that_disagrees_is_forbidden() -> None:
    assert refusal(pod(priorityClassName="batch", priority=5), pc("batch", 100)) == (
        'pods "web" is forbidden: the integer value of priority (5) must not be provided in '
        "pod spec; priority admission controller computed 100 from the given PriorityClass name"
    )


def test_a_preemption_policy_that_disagrees_is_forbidden() -> None:
    assert refusal(pod(preemptionPolicy="Never")) == (
        'pods "web" is forbidden: the string value of PreemptionPolicy (Never) must not be '
        "provided in pod spec; priority admission controller computed PreemptLowerPriority "
        "from the given PriorityClass name"
    )


def test_a_class_without_a_policy_leaves_the_pods_alone() -> None:
    batch = pc("batch", 100)
    del batch["preemptionPolicy"]
    spec = admitted(pod(priorityClassName="batch", preemptionPolicy="Never"), batch)
    assert spec["preemptionPolicy"] == "Never"


def test_errors_name_a_generated_pod_by_its_prefix() -> None:
    p = pod(priorityClassName="foo")
    p["metadata"] = {"generateName": "web-", "namespace": "team"}
    assert refusal(p).startswith('pods "web-" is forbidden: ')


def test_an_update_keeps_the_priority_create_gave() -> None:
    old = pod(priorityClassName="batch", priority=100, preemptionPolicy="Never")
    new = pod(priorityClassName="batch")
    admit_pod(new, {}, "UPDATE", old)
    assert (new["spec"]["priority"], new["spec"]["preemptionPolicy"]) == (100, "Never")


def test_an_update_resolves_nothing() -> None:
    new = pod(priorityClassName="gone", priority=7)
    admit_pod(new, {}, "UPDATE", pod())
    assert new["spec"]["priority"] == 7
    assert "preemptionPolicy" not in new["spec"]


def test_other_operations_change_nothing() -> None:
    p = pod()
    admit_pod(p, classes(), "DELETE")
    assert "priority" not in p["spec"]


def test_a_second_global_default_is_forbidden() -> None:
    existing = classes(pc("a", 10, globalDefault=True))
    with pytest.raises(StatusError) as info:
        validate_priority_class(pc("b", 20, globalDefault=True), existing, "CREATE")
    assert (info.value.code, info.value.reason) == (403, "Forbidden")
    assert info.value.message == (
        'priorityclasses.scheduling.k8s.io "b" is forbidden: PriorityClass a is already marked '
        "as default. Only one default can exist"
    )
    assert info.value.details == {
        "name": "b",
        "group": "scheduling.k8s.io",
        "kind": "priorityclasses",
    }


def test_marking_another_class_default_on_update_is_forbidden() -> None:
    existing = classes(pc("a", 10, globalDefault=True), pc("b", 20))
    with pytest.raises(StatusError):
        validate_priority_class(pc("b", 20, globalDefault=True), existing, "UPDATE")


def test_the_default_class_itself_may_be_updated() -> None:
    existing = classes(pc("a", 10, globalDefault=True))
    validate_priority_class(pc("a", 10, globalDefault=True, description="x"), existing, "UPDATE")
    validate_priority_class(pc("a", 10, globalDefault=True), existing)


def test_creating_a_default_under_the_defaults_name_is_forbidden_on_create() -> None:
    existing = classes(pc("a", 10, globalDefault=True))
    with pytest.raises(StatusError):
        validate_priority_class(pc("a", 10, globalDefault=True), existing, "CREATE")


def test_classes_that_are_not_default_are_not_checked() -> None:
    validate_priority_class(pc("b", 20), classes(pc("a", 10, globalDefault=True)), "CREATE")
    validate_priority_class(pc("b", 20, globalDefault=True), classes(), "CREATE")


def test_a_priority_given_without_a_class_must_match_the_default() -> None:
    assert refusal(pod(priority=5)) == (
        'pods "web" is forbidden: the integer value of priority (5) must not be provided in '
        "pod spec; priority admission controller computed 0 from the given PriorityClass name"
    )
    normal = pc("normal", 1000, globalDefault=True)
    assert refusal(pod(priority=0), normal).endswith(
        "the integer value of priority (0) must not be provided in pod spec; priority admission "
        "controller computed 1000 from the given PriorityClass name"
    )
    assert admitted(pod(priority=1000), normal)["priorityClassName"] == "normal"


def test_the_system_cluster_critical_class_resolves_too() -> None:
    spec = admitted(pod(priorityClassName="system-cluster-critical"))
    assert (spec["priority"], spec["preemptionPolicy"]) == (2000000000, "PreemptLowerPriority")


def test_a_named_class_wins_over_the_global_default() -> None:
    spec = admitted(
        pod(priorityClassName="batch"),
        pc("batch", 100, preemptionPolicy="Never"),
        pc("normal", 1000, globalDefault=True),
    )
    assert (spec["priorityClassName"], spec["priority"], spec["preemptionPolicy"]) == (
        "batch",
        100,
        "Never",
    )


def test_an_unknown_class_is_forbidden_even_with_a_global_default() -> None:
    assert refusal(pod(priorityClassName="gold"), pc("normal", 1000, globalDefault=True)) == (
        'pods "web" is forbidden: no PriorityClass with name gold was found'
    )
