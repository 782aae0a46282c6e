"""ReplicaSets (apps/v1) through the request pipeline, as kube-apiserver v1.32 answers."""

from __future__ import annotations

import copy
from typing import Any

from pinnace.api import catalog

REPLICA_SETS = catalog.kind("apps", "replicasets")


def replica_set(name: str = "web-5d8f", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]},
        },
        **spec,
    }
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": name}, "spec": body}


def create(api: Any, body: dict[str, Any]) -> dict[str, Any]:
    return copy.deepcopy(api.call(api.server.create, REPLICA_SETS, "default", body).obj)


def update(api: Any, body: dict[str, Any], subresource: str = "") -> dict[str, Any]:
    name = body["metadata"]["name"]
    stored = api.call(api.server.update, REPLICA_SETS, "default", name, body, None, subresource)
    return copy.deepcopy(stored.obj)


def test_create_defaults_replicas_and_starts_an_empty_status(api: Any) -> None:
    body = replica_set()
    body["status"] = {"replicas": 3}
    created = create(api, body)
    assert created["spec"]["replicas"] == 1
    assert created["spec"]["template"]["spec"]["dnsPolicy"] == "ClusterFirst"
    assert created["status"] == {"replicas": 0}
    assert created["metadata"]["generation"] == 1


def test_template_pods_must_always_restart(api: Any) -> None:
    body = replica_set(replicas=-1)
    body["spec"]["template"]["spec"].update(restartPolicy="OnFailure", activeDeadlineSeconds=9)
    assert api.invalid_causes(api.server.create, REPLICA_SETS, "default", body) == [
        "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
        'spec.template.spec.restartPolicy: Unsupported value: "OnFailure": '
        'supported values: "Always"',
        "spec.template.spec.activeDeadlineSeconds: Forbidden: "
        "activeDeadlineSeconds in ReplicaSet is not Supported",
    ]


def test_selector_must_match_the_template(api: Any) -> None:
    body = replica_set(
        selector={"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["web"]}]}
    )
    assert api.invalid_causes(api.server.create, REPLICA_SETS, "default", body) == [
        "spec.template.metadata.labels: Invalid value: "
        'map[string]string{"app":"web"}: `selector` does not match template `labels`'
    ]


def test_spec_change_bumps_the_generation_and_keeps_status(api: Any) -> None:
    created = create(api, replica_set())
    changed = copy.deepcopy(created)
    changed["spec"]["replicas"] = 3
    changed["status"] = {"replicas": 3}
    after = update(api, changed)
    assert after["metadata"]["generation"] == 2
    assert after["status"] == {"replicas": 0}
    changed = copy.deepcopy(after)
    changed["spec"]["selector"] = {"matchLabels": {}}
    causes = api.invalid_causes(api.server.update, REPLICA_SETS, "default", "web-5d8f", changed)
    assert causes[-1] == (
        "spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{}, "
        "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable"
    )


def test_status_endpoint_writes_only_status(api: Any) -> None:
    created = create(api, replica_set(replicas=2))
    written = copy.deepcopy(created)
    written["status"] = {"replicas": 2, "fullyLabeledReplicas": 2, "readyReplicas": 1}
    written["spec"]["replicas"] = 5
    after = update(api, written, "status")
    assert after["status"]["readyReplicas"] == 1
    assert after["spec"]["replicas"] == 2
    assert after["metadata"]["generation"] == 1
    after["status"]["availableReplicas"] = 2
    causes = api.invalid_causes(
        api.server.update, REPLICA_SETS, "default", "web-5d8f", after, None, "status"
    )
    assert causes == [
        "status.availableReplicas: Invalid value: 2: cannot be greater than readyReplicas"
    ]
