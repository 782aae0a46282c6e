"""Deployments (apps/v1) through the request pipeline, as kube-apiserver v1.32 answers."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from pinnace.api import catalog

DEPLOYMENTS = catalog.kind("apps", "deployments")


def deployment(name: str = "web", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "selector": {"matchLabels": {"app": name}},
        "template": {
            "metadata": {"labels": {"app": name}},
            "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]},
        },
        **spec,
    }
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name}, "spec": body}


def create(api: Any, body: dict[str, Any]) -> dict[str, Any]:
    return copy.deepcopy(api.call(api.server.create, DEPLOYMENTS, "default", body).obj)


def update(api: Any, body: dict[str, Any], subresource: str = "") -> dict[str, Any]:
    name = body["metadata"]["name"]
    stored = api.call(api.server.update, DEPLOYMENTS, "default", name, body, None, subresource)
    return copy.deepcopy(stored.obj)


def refused_create(api: Any, body: dict[str, Any]) -> list[str]:
    return api.invalid_causes(api.server.create, DEPLOYMENTS, "default", body)


def test_create_defaults_the_rollout(api: Any) -> None:
    created = create(api, deployment())
    spec = created["spec"]
    assert spec["replicas"] == 1
    assert spec["strategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"},
    }
    assert (spec["revisionHistoryLimit"], spec["progressDeadlineSeconds"]) == (10, 600)
    assert spec["template"]["spec"]["restartPolicy"] == "Always"
    assert created["metadata"]["generation"] == 1
    assert created["status"] == {}


def test_recreate_gets_no_rolling_update() -> None:
    body = deployment(strategy={"type": "Recreate"})
    DEPLOYMENTS.default(body)
    assert body["spec"]["strategy"] == {"type": "Recreate"}


def test_selector_is_required_and_must_match(api: Any) -> None:
    body = deployment()
    del body["spec"]["selector"]
    assert refused_create(api, body) == [
        "spec.selector: Required value",
        "spec.template.metadata.labels: Invalid value: "
        'map[string]string{"app":"web"}: `selector` does not match template `labels`',
    ]
    assert refused_create(api, deployment(selector={"matchLabels": {}})) == [
        "spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{}, "
        "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: "
        "empty selector is invalid for deployment"
    ]


@pytest.mark.parametrize(
    ("strategy", "expected"),
    [
        (
            {"type": "Recreate", "rollingUpdate": {"maxSurge": 1}},
            [
                "spec.strategy.rollingUpdate: Forbidden: "
                "may not be specified when strategy `type` is 'Recreate'"
            ],
        ),
        (
            {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": "0%"}},
            [
                "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: "
                'intstr.IntOrString{Type:0, IntVal:0, StrVal:""}: '
                "may not be 0 when `maxSurge` is 0"
            ],
        ),
        (
            {"type": "Canary"},
            [
                'spec.strategy: Unsupported value: apps.DeploymentStrategy{Type:"Canary", '
                "RollingUpdate:(*apps.RollingUpdateDeployment)(nil)}: "
                'supported values: "Recreate", "RollingUpdate"'
            ],
        ),
    ],
)
def test_strategy_validation(api: Any, strategy: dict[str, Any], expected: list[str]) -> None:
    assert refused_create(api, deployment(strategy=strategy)) == expected


def test_progress_deadline_must_exceed_min_ready(api: Any) -> None:
    body = deployment(minReadySeconds=30, progressDeadlineSeconds=30)
    assert refused_create(api, body) == [
        "spec.progressDeadlineSeconds: Invalid value: 30: must be greater than minReadySeconds"
    ]


def test_spec_and_annotation_changes_bump_the_generation(api: Any) -> None:
    created = create(api, deployment())
    changed = copy.deepcopy(created)
    changed["spec"]["replicas"] = 3
    after = update(api, changed)
    assert after["metadata"]["generation"] == 2
    changed = copy.deepcopy(after)
    changed["metadata"]["annotations"] = {"note": "copied to replica sets"}
    after = update(api, changed)
    assert after["metadata"]["generation"] == 3
    changed = copy.deepcopy(after)
    changed["metadata"]["labels"] = {"tier": "web"}
    assert update(api, changed)["metadata"]["generation"] == 3


def test_selector_is_immutable(api: Any) -> None:
    created = create(api, deployment())
    changed = copy.deepcopy(created)
    changed["spec"]["selector"]["matchLabels"]["tier"] = "web"
    changed["spec"]["template"]["metadata"]["labels"]["tier"] = "web"
    assert api.invalid_causes(api.server.update, DEPLOYMENTS, "default", "web", changed) == [
        'spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"app":'
        '"web", "tier":"web"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: '
        "field is immutable"
    ]


def test_status_endpoint_writes_only_status(api: Any) -> None:
    created = create(api, deployment())
    written = copy.deepcopy(created)
    written["status"] = {"replicas": 1, "readyReplicas": 1, "availableReplicas": 1}
    written["spec"]["replicas"] = 4
    written["metadata"]["labels"] = {"tier": "web"}
    after = update(api, written, "status")
    assert after["status"]["availableReplicas"] == 1
    assert after["spec"] == created["spec"]
    assert "labels" not in after["metadata"]
    after["status"]["readyReplicas"] = 2
    assert api.invalid_causes(
        api.server.update, DEPLOYMENTS, "default", "web", after, None, "status"
    ) == ["status.readyReplicas: Invalid value: 2: cannot be greater than status.replicas"]
