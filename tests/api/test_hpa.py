"""HorizontalPodAutoscalers (autoscaling/v2) through the request pipeline, as kube-apiserver
v1.32 answers."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from pinnace.api import catalog

HPAS = catalog.kind("autoscaling", "horizontalpodautoscalers")
TARGET = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}


def hpa(name: str = "web", **spec: Any) -> dict[str, Any]:
    body = {"scaleTargetRef": dict(TARGET), "maxReplicas": 5, **spec}
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name},
        "spec": body,
    }


def resource_metric(**target: Any) -> dict[str, Any]:
    return {"type": "Resource", "resource": {"name": "memory", "target": target}}


def create(api: Any, body: dict[str, Any]) -> dict[str, Any]:
    return copy.deepcopy(api.call(api.server.create, HPAS, "default", body).obj)


def update(api: Any, body: dict[str, Any], subresource: str = "") -> dict[str, Any]:
    name = body["metadata"]["name"]
    stored = api.call(api.server.update, HPAS, "default", name, body, None, subresource).obj
    return copy.deepcopy(stored)


def refused_create(api: Any, body: dict[str, Any]) -> list[str]:
    return api.invalid_causes(api.server.create, HPAS, "default", body)


def test_create_defaults_min_replicas_and_a_cpu_target(api: Any) -> None:
    created = create(api, hpa())
    assert created["spec"] == {
        "scaleTargetRef": TARGET,
        "minReplicas": 1,
        "maxReplicas": 5,
        "metrics": [
            {
                "type": "Resource",
                "resource": {
                    "name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 80},
                },
            }
        ],
    }
    assert created["status"] == {"desiredReplicas": 0}


def test_a_behavior_gets_both_directions_filled_in() -> None:
    body = hpa(behavior={"scaleDown": {"stabilizationWindowSeconds": 60}})
    HPAS.default(body)
    assert body["spec"]["behavior"] == {
        "scaleUp": {
            "stabilizationWindowSeconds": 0,
            "selectPolicy": "Max",
            "policies": [
                {"type": "Pods", "value": 4, "periodSeconds": 15},
                {"type": "Percent", "value": 100, "periodSeconds": 15},
            ],
        },
        "scaleDown": {
            "stabilizationWindowSeconds": 60,
            "selectPolicy": "Max",
            "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}],
        },
    }


def test_given_metrics_are_kept() -> None:
    metric = resource_metric(type="AverageValue", averageValue="500Mi")
    body = hpa(metrics=[metric])
    HPAS.default(body)
    assert body["spec"]["metrics"] == [metric]


def test_replica_bounds(api: Any) -> None:
    assert refused_create(api, hpa(minReplicas=3, maxReplicas=2)) == [
        "spec.maxReplicas: Invalid value: 2: must be greater than or equal to `minReplicas`"
    ]
    assert refused_create(api, hpa(maxReplicas=0)) == [
        "spec.maxReplicas: Invalid value: 0: must be greater than 0",
        "spec.maxReplicas: Invalid value: 0: must be greater than or equal to `minReplicas`",
    ]
    assert refused_create(api, hpa(minReplicas=0)) == [
        "spec.minReplicas: Invalid value: 0: must be greater than or equal to 1",
        "spec.metrics: Forbidden: must specify at least one Object or External metric to "
        "support scaling to zero replicas",
    ]


def test_scale_target_ref_is_required(api: Any) -> None:
    body = hpa()
    del body["spec"]["scaleTargetRef"]
    assert refused_create(api, body) == [
        "spec.scaleTargetRef.kind: Required value",
        "spec.scaleTargetRef.name: Required value",
    ]
    body = hpa(scaleTargetRef={"kind": "Deployment", "name": "a/b"})
    assert refused_create(api, body) == [
        "spec.scaleTargetRef.name: Invalid value: \"a/b\": may not contain '/'"
    ]


@pytest.mark.parametrize(
    ("metric", "expected"),
    [
        (
            {"type": "Resource"},
            [
                "spec.metrics[0].resource: Required value: "
                "must populate information for the given metric source"
            ],
        ),
        (
            {"type": "Cpu"},
            [
                'spec.metrics[0].type: Unsupported value: "Cpu": supported values: '
                '"ContainerResource", "External", "Object", "Pods", "Resource"'
            ],
        ),
        (
            resource_metric(type="Utilization", averageUtilization=0),
            [
                "spec.metrics[0].resource.target.averageUtilization: Invalid value: 0: "
                "must be greater than 0"
            ],
        ),
        (
            resource_metric(type="Utilization", averageUtilization=50, averageValue="1Gi"),
            [
                "spec.metrics[0].resource.target.averageValue: Forbidden: "
                "may not set both a target raw value and a target utilization"
            ],
        ),
        (
            resource_metric(type="Average"),
            [
                'spec.metrics[0].resource.target.type: Invalid value: "Average": '
                "must be either Utilization, Value, or AverageValue",
                "spec.metrics[0].resource.target.averageUtilization: Required value: "
                "must set either a target raw value or a target utilization",
            ],
        ),
        (
            {
                "type": "Pods",
                "pods": {"metric": {"name": ""}, "target": {"type": "Value", "value": "10"}},
            },
            [
                "spec.metrics[0].pods.metric.name: Required value: must specify a metric name",
                "spec.metrics[0].pods.target.averageValue: Required value: "
                "must specify a positive target averageValue",
            ],
        ),
        (
            {
                "type": "External",
                "external": {
                    "metric": {"name": "queue_depth"},
                    "target": {"type": "Value", "value": "10", "averageValue": "2"},
                },
            },
            [
                "spec.metrics[0].external.target.value: Forbidden: "
                "may not set both a target value for metric and a per-pod target"
            ],
        ),
        (
            {
                "type": "Object",
                "object": {
                    "describedObject": {"kind": "Ingress"},
                    "metric": {"name": "requests"},
                    "target": {"type": "Value", "value": "100"},
                },
            },
            ["spec.metrics[0].object.describedObject.name: Required value"],
        ),
        (
            {
                "type": "ContainerResource",
                "containerResource": {
                    "name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 60},
                },
            },
            [
                "spec.metrics[0].containerResource.container: Required value: "
                "must specify a container"
            ],
        ),
        (
            {
                "type": "Resource",
                "resource": {
                    "name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 60},
                },
                "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue"}},
            },
            [
                "spec.metrics[0].pods.target.averageValue: Required value: "
                "must specify a positive target averageValue",
                "spec.metrics[0].pods: Forbidden: must populate the given metric source only",
            ],
        ),
    ],
)
def test_metric_validation(api: Any, metric: dict[str, Any], expected: list[str]) -> None:
    assert refused_create(api, hpa(metrics=[metric])) == expected


@pytest.mark.parametrize(
    ("rules", "expected"),
    [
        (
            {"policies": []},
            ["spec.behavior.scaleUp.policies: Required value: must specify at least one Policy"],
        ),
        (
            {"selectPolicy": "Sometimes", "stabilizationWindowSeconds": 4000},
            [
                "spec.behavior.scaleUp.stabilizationWindowSeconds: Invalid value: 4000: "
                "must be less than or equal to 3600",
                'spec.behavior.scaleUp.selectPolicy: Unsupported value: "Sometimes": '
                'supported values: "Disabled", "Max", "Min"',
            ],
        ),
        (
            {"policies": [{"type": "Nodes", "value": 0, "periodSeconds": 2000}]},
            [
                'spec.behavior.scaleUp.policies[0].type: Unsupported value: "Nodes": '
                'supported values: "Percent", "Pods"',
                "spec.behavior.scaleUp.policies[0].value: Invalid value: 0: "
                "must be greater than zero",
                "spec.behavior.scaleUp.policies[0].periodSeconds: Invalid value: 2000: "
                "must be less than or equal to 1800",
            ],
        ),
    ],
)
def test_behavior_validation(api: Any, rules: dict[str, Any], expected: list[str]) -> None:
    assert refused_create(api, hpa(behavior={"scaleUp": rules})) == expected


def test_spec_writes_keep_status_and_status_writes_keep_spec(api: Any) -> None:
    created = create(api, hpa())
    written = copy.deepcopy(created)
    written["status"] = {"currentReplicas": 2, "desiredReplicas": 3}
    written["spec"]["maxReplicas"] = 9
    after = update(api, written, "status")
    assert after["status"] == {"currentReplicas": 2, "desiredReplicas": 3}
    assert after["spec"]["maxReplicas"] == 5
    changed = copy.deepcopy(after)
    changed["spec"]["maxReplicas"] = 9
    changed["status"] = {"desiredReplicas": 0}
    after = update(api, changed)
    assert after["spec"]["maxReplicas"] == 9
    assert after["status"] == {"currentReplicas": 2, "desiredReplicas": 3}
    after["status"]["desiredReplicas"] = -1
    assert api.invalid_causes(api.server.update, HPAS, "default", "web", after, None, "status") == [
        "status.desiredReplicas: Invalid value: -1: must be greater than or equal to 0"
    ]
    after["status"]["desiredReplicas"] = 3
    after["spec"]["minReplicas"] = 10
    assert api.invalid_causes(api.server.update, HPAS, "default", "web", after) == [
        "spec.maxReplicas: Invalid value: 9: must be greater than or equal to `minReplicas`"
    ]
