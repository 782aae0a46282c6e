"""PodDisruptionBudgets (policy/v1) through the request pipeline, as kube-apiserver v1.32
answers."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from pinnace.api import catalog

PDBS = catalog.kind("policy", "poddisruptionbudgets")


def pdb(name: str = "web", **spec: Any) -> dict[str, Any]:
    body = {"selector": {"matchLabels": {"app": "web"}}, **spec}
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name},
        "spec": body,
    }


def create(api: Any, body: dict[str, Any]) -> dict[str, Any]:
    return copy.deepcopy(api.call(api.server.create, PDBS, "default", body).obj)


def update(api: Any, body: dict[str, Any], subresource: str = "") -> dict[str, Any]:
    name = body["metadata"]["name"]
    stored = api.call(api.server.update, PDBS, "default", name, body, None, subresource).obj
    return copy.deepcopy(stored)


def test_create_keeps_the_spec_and_starts_an_empty_status(api: Any) -> None:
    body = pdb(minAvailable="50%")
    body["status"] = {"disruptionsAllowed": 5}
    created = create(api, body)
    assert created["spec"] == {"selector": {"matchLabels": {"app": "web"}}, "minAvailable": "50%"}
    assert created["status"] == {
        "disruptionsAllowed": 0,
        "currentHealthy": 0,
        "desiredHealthy": 0,
        "expectedPods": 0,
    }
    assert created["metadata"]["generation"] == 1


def test_any_name_usable_in_a_path_is_accepted(api: Any) -> None:
    # policy/v1 validation never checks the name as a DNS subdomain.
    assert create(api, pdb("-Web_Budget"))["metadata"]["name"] == "-Web_Budget"
    assert api.invalid_causes(api.server.create, PDBS, "default", pdb("a/b")) == [
        "metadata.name: Invalid value: \"a/b\": may not contain '/'"
    ]


def test_min_available_and_max_unavailable_exclude_each_other(api: Any) -> None:
    body = pdb(minAvailable=1, maxUnavailable=1)
    assert api.invalid_causes(api.server.create, PDBS, "default", body) == [
        "spec: Invalid value: policy.PodDisruptionBudgetSpec{...}: "
        "minAvailable and maxUnavailable cannot be both set"
    ]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (
            {"minAvailable": -1},
            ["spec.minAvailable: Invalid value: -1: must be greater than or equal to 0"],
        ),
        (
            {"maxUnavailable": "150%"},
            [
                "spec.maxUnavailable: Invalid value: "
                'intstr.IntOrString{Type:1, IntVal:0, StrVal:"150%"}: '
                "must not be greater than 100%"
            ],
        ),
        (
            {"minAvailable": "half"},
            [
                "spec.minAvailable: Invalid value: "
                'intstr.IntOrString{Type:1, IntVal:0, StrVal:"half"}: '
                "a valid percent string must be a numeric string followed by an ending '%' "
                "(e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')"
            ],
        ),
        (
            {"unhealthyPodEvictionPolicy": "Sometimes"},
            [
                'spec.unhealthyPodEvictionPolicy: Unsupported value: "Sometimes": '
                'supported values: "AlwaysAllow", "IfHealthyBudget"'
            ],
        ),
        (
            {"selector": {"matchExpressions": [{"key": "app", "operator": "Near"}]}},
            [
                "spec.selector.matchExpressions[0].operator: Invalid value: "
                '"Near": not a valid selector operator'
            ],
        ),
    ],
)
def test_spec_validation(api: Any, spec: dict[str, Any], expected: list[str]) -> None:
    assert api.invalid_causes(api.server.create, PDBS, "default", pdb(**spec)) == expected


def test_spec_may_change_and_bumps_the_generation(api: Any) -> None:
    created = create(api, pdb(minAvailable=1))
    changed = copy.deepcopy(created)
    changed["spec"]["minAvailable"] = 2
    changed["status"]["disruptionsAllowed"] = 7
    after = update(api, changed)
    assert after["spec"]["minAvailable"] == 2
    assert after["status"]["disruptionsAllowed"] == 0
    assert after["metadata"]["generation"] == 2
    changed = copy.deepcopy(after)
    changed["spec"]["maxUnavailable"] = 1
    assert api.invalid_causes(api.server.update, PDBS, "default", "web", changed)[0].startswith(
        "spec: Invalid value: policy.PodDisruptionBudgetSpec{...}"
    )


def test_status_endpoint_writes_only_status(api: Any) -> None:
    created = create(api, pdb(minAvailable=1))
    written = copy.deepcopy(created)
    written["status"].update(observedGeneration=1, currentHealthy=3, expectedPods=3)
    written["status"]["disruptionsAllowed"] = 2
    written["spec"]["minAvailable"] = 0
    after = update(api, written, "status")
    assert after["status"]["disruptionsAllowed"] == 2
    assert after["spec"] == created["spec"]
    assert after["metadata"]["generation"] == 1
    after["status"]["desiredHealthy"] = -1
    assert api.invalid_causes(api.server.update, PDBS, "default", "web", after, None, "status") == [
        "status.desiredHealthy: Invalid value: -1: must be greater than or equal to 0"
    ]


def test_status_conditions_are_checked(api: Any) -> None:
    created = create(api, pdb(minAvailable=1))
    written = copy.deepcopy(created)
    good = {
        "type": "DisruptionAllowed",
        "status": "True",
        "reason": "SufficientPods",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    written["status"]["conditions"] = [good]
    after = update(api, written, "status")
    assert after["status"]["conditions"] == [good]
    written = copy.deepcopy(after)
    written["status"]["conditions"] = [
        good,
        {"type": "DisruptionAllowed", "status": "Yes", "reason": "1 pod"},
    ]
    assert api.invalid_causes(
        api.server.update, PDBS, "default", "web", written, None, "status"
    ) == [
        'status.conditions[1].type: Duplicate value: "DisruptionAllowed"',
        'status.conditions[1].status: Unsupported value: "Yes": '
        'supported values: "False", "True", "Unknown"',
        "status.conditions[1].lastTransitionTime: Required value: must be set",
        'status.conditions[1].reason: Invalid value: "1 pod": a condition reason must start '
        "with alphabetic character, optionally followed by a string of alphanumeric "
        "characters or '_,:', and must end with an alphanumeric character or '_' (e.g. "
        "'my_name',  or 'MY_NAME',  or 'MyName',  or 'ReasonA,ReasonB',  or "
        "'ReasonA:ReasonB', regex used for validation is "
        "'[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?')",
    ]
