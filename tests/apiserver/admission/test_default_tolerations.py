"""DefaultTolerationSeconds vectors, checked against kube-apiserver v1.32
(plugin/pkg/admission/defaulttolerationseconds)."""

from __future__ import annotations

from typing import Any

import pytest

from pinnace.apiserver.admission.default_tolerations import admit_pod

NOT_READY = {
    "key": "node.kubernetes.io/not-ready",
    "operator": "Exists",
    "effect": "NoExecute",
    "tolerationSeconds": 300,
}
UNREACHABLE = {
    "key": "node.kubernetes.io/unreachable",
    "operator": "Exists",
    "effect": "NoExecute",
    "tolerationSeconds": 300,
}


def tolerations_after(*given: dict[str, Any], **seconds: int) -> list[dict[str, Any]]:
    pod: dict[str, Any] = {"spec": {"containers": [{"name": "app"}]}}
    if given:
        pod["spec"]["tolerations"] = list(given)
    admit_pod(pod, **seconds)
    return pod["spec"]["tolerations"]


def test_a_pod_gets_both_tolerations_for_300_seconds() -> None:
    assert tolerations_after() == [NOT_READY, UNREACHABLE]


def test_the_seconds_are_configurable() -> None:
    assert tolerations_after(not_ready_seconds=60, unreachable_seconds=0) == [
        {**NOT_READY, "tolerationSeconds": 60},
        {**UNREACHABLE, "tolerationSeconds": 0},
    ]


def test_existing_tolerations_come_first_and_stay_as_they_are() -> None:
    own = {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}
    assert tolerations_after(own) == [own, NOT_READY, UNREACHABLE]


def test_a_pod_tolerating_one_taint_gets_only_the_other() -> None:
    own = {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"}
    assert tolerations_after(own) == [own, UNREACHABLE]


def test_an_empty_key_tolerates_both() -> None:
    own = {"operator": "Exists"}
    assert tolerations_after(own) == [own]


@pytest.mark.parametrize(
    "own",
    [
        {"key": "node.kubernetes.io/unreachable", "operator": "Exists"},
        {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": ""},
        # Only key and effect are looked at, not the operator or value.
        {"key": "node.kubernetes.io/unreachable", "operator": "Equal", "value": "x"},
    ],
)
def test_an_empty_effect_counts_as_no_execute(own: dict[str, Any]) -> None:
    assert tolerations_after(own) == [own, NOT_READY]


def test_another_effect_does_not_count() -> None:
    own = {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoSchedule"}
    empty_key = {"operator": "Exists", "effect": "NoSchedule"}
    assert tolerations_after(own, empty_key) == [own, empty_key, NOT_READY, UNREACHABLE]


def test_a_pod_with_both_is_left_alone() -> None:
    assert tolerations_after(NOT_READY, UNREACHABLE) == [NOT_READY, UNREACHABLE]


def test_a_pods_own_seconds_are_kept() -> None:
    own = {**UNREACHABLE, "tolerationSeconds": 6000}
    assert tolerations_after(own) == [own, NOT_READY]


def test_an_empty_key_with_no_execute_tolerates_both() -> None:
    own = {"operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30}
    assert tolerations_after(own) == [own]
