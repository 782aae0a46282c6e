"""VerticalPodAutoscalers (autoscaling.k8s.io/v1) through the request pipeline, as
kube-apiserver answers for the CRD kubernetes/autoscaler installs."""

from __future__ import annotations

import copy
from typing import Any

from pinnace.api import catalog

VPAS = catalog.kind("autoscaling.k8s.io", "verticalpodautoscalers")
TARGET = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}


def vpa(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling.k8s.io/v1",
        "kind": "VerticalPodAutoscaler",
        "metadata": {"name": "web"},
        "spec": {"targetRef": TARGET, **spec},
    }


def create(api: Any, body: dict[str, Any]) -> dict[str, Any]:
    return copy.deepcopy(api.call(api.server.create, VPAS, "default", body).obj)


def test_create_keeps_the_spec_without_defaults_and_drops_status(api: Any) -> None:
    body = vpa(updatePolicy={"updateMode": "Initial"})
    body["status"] = {"recommendation": {"containerRecommendations": []}}
    created = create(api, body)
    assert created["spec"] == {"targetRef": TARGET, "updatePolicy": {"updateMode": "Initial"}}
    assert "status" not in created
    assert created["metadata"]["generation"] == 1


def test_quantities_are_kept_as_sent_and_checked_against_the_crds_pattern(api: Any) -> None:
    # A CRD's int-or-string quantities are stored as written, not canonicalised.
    policy = {"containerName": "*", "minAllowed": {"cpu": "0.1", "memory": 1073741824}}
    created = create(api, vpa(resourcePolicy={"containerPolicies": [policy]}))
    allowed = created["spec"]["resourcePolicy"]["containerPolicies"][0]["minAllowed"]
    assert allowed == {"cpu": "0.1", "memory": 1073741824}
    bad = {"containerName": "*", "maxAllowed": {"cpu": "lots"}}
    [cause] = api.invalid_causes(
        api.server.create, VPAS, "default", vpa(resourcePolicy={"containerPolicies": [bad]})
    )
    path = "spec.resourcePolicy.containerPolicies[0].maxAllowed.cpu"
    assert cause.startswith(f'{path}: Invalid value: "lots": {path} in body should match \'^(')


def test_the_schema_requires_a_target_and_knows_its_enums(api: Any) -> None:
    body = vpa(
        updatePolicy={"updateMode": "Sometimes"},
        resourcePolicy={
            "containerPolicies": [
                {"containerName": "app", "mode": "On", "controlledValues": "LimitsOnly"}
            ]
        },
    )
    del body["spec"]["targetRef"]
    assert api.invalid_causes(api.server.create, VPAS, "default", body) == [
        "spec.targetRef: Required value",
        'spec.updatePolicy.updateMode: Unsupported value: "Sometimes": supported values: '
        '"Off", "Initial", "Recreate", "InPlaceOrRecreate", "Auto"',
        'spec.resourcePolicy.containerPolicies[0].mode: Unsupported value: "On": supported '
        'values: "Auto", "Off"',
        "spec.resourcePolicy.containerPolicies[0].controlledValues: Unsupported value: "
        '"LimitsOnly": supported values: "RequestsAndLimits", "RequestsOnly"',
    ]
    no_spec = {"metadata": {"name": "web"}}
    assert api.invalid_causes(api.server.create, VPAS, "default", no_spec) == [
        "spec: Required value"
    ]
    no_name = vpa(targetRef={"kind": "Deployment"})
    assert api.invalid_causes(api.server.create, VPAS, "default", no_name) == [
        "spec.targetRef.name: Required value"
    ]


def test_a_spec_change_counts_a_generation_and_keeps_the_status(api: Any) -> None:
    created = create(api, vpa())
    created["status"] = {"conditions": [{"type": "RecommendationProvided", "status": "True"}]}
    with_status = api.call(api.server.update, VPAS, "default", "web", created, None, "status").obj
    changed = copy.deepcopy(with_status)
    changed["spec"]["updatePolicy"] = {"updateMode": "Off"}
    changed["status"] = {}
    updated = api.call(api.server.update, VPAS, "default", "web", changed, None, "").obj
    assert updated["metadata"]["generation"] == 2
    assert updated["status"] == with_status["status"]
