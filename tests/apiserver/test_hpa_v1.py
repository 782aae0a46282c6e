"""HorizontalPodAutoscalers at autoscaling/v1 (what `kubectl autoscale` writes), stored as
autoscaling/v2: written and read at either version, through the HTTP front end in process."""

from __future__ import annotations

import json
from typing import Any

from tests.apiserver.conftest import Harness

from pinnace.apiserver.http.app import APIApp
from pinnace.clock import Randomness

V1 = "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers"
V2 = "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers"
REF = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}


def call(
    api: Harness, method: str, path: str, body: Any = None, content_type: str = "application/json"
) -> tuple[int, Any]:
    app = APIApp(api.server, Randomness(1))
    data = b"" if body is None else json.dumps(body).encode()
    headers = [(b"content-type", content_type.encode())] if body is not None else []
    scope = {
        "type": "http",
        "method": method,
        "path": path,
        "query_string": b"",
        "headers": headers,
    }
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": data, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    api.run(app(scope, receive, send))
    return sent[0]["status"], json.loads(b"".join(m.get("body", b"") for m in sent[1:]))


def test_a_v1_cpu_target_is_a_v2_utilization_metric_and_back(api: Harness) -> None:
    v1 = {
        "apiVersion": "autoscaling/v1",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web"},
        "spec": {
            "scaleTargetRef": REF,
            "minReplicas": 1,
            "maxReplicas": 5,
            "targetCPUUtilizationPercentage": 50,
        },
    }
    code, created = call(api, "POST", V1, v1)
    assert code == 201
    assert created["apiVersion"] == "autoscaling/v1"
    assert created["spec"] == v1["spec"]

    code, stored = call(api, "GET", f"{V2}/web")
    assert stored["apiVersion"] == "autoscaling/v2"
    assert stored["spec"]["metrics"] == [
        {
            "type": "Resource",
            "resource": {
                "name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": 50},
            },
        }
    ]
    assert "targetCPUUtilizationPercentage" not in stored["spec"]

    code, listed = call(api, "GET", V1)
    assert listed["apiVersion"] == "autoscaling/v1"
    assert listed["items"][0]["spec"]["targetCPUUtilizationPercentage"] == 50


def test_v2_only_fields_ride_in_v1_annotations(api: Harness) -> None:
    memory = {"type": "AverageValue", "averageValue": "100Mi"}
    v2 = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web"},
        "spec": {
            "scaleTargetRef": REF,
            "maxReplicas": 5,
            "metrics": [{"type": "Resource", "resource": {"name": "memory", "target": memory}}],
        },
    }
    assert call(api, "POST", V2, v2)[0] == 201
    code, seen = call(api, "GET", f"{V1}/web")
    assert code == 200
    assert "targetCPUUtilizationPercentage" not in seen["spec"]
    annotation = seen["metadata"]["annotations"]["autoscaling.alpha.kubernetes.io/metrics"]
    assert json.loads(annotation) == [
        {"type": "Resource", "resource": {"name": "memory", "targetAverageValue": "100Mi"}}
    ]

    # written back at v1, the annotation is the v2 metric again and no annotation is stored
    seen["spec"]["maxReplicas"] = 7
    code, updated = call(api, "PUT", f"{V1}/web", seen)
    assert code == 200 and updated["spec"]["maxReplicas"] == 7
    stored = call(api, "GET", f"{V2}/web")[1]
    assert stored["spec"]["metrics"] == v2["spec"]["metrics"]
    assert "annotations" not in stored["metadata"] or not stored["metadata"]["annotations"]


def test_discovery_lists_v1_after_the_preferred_v2(api: Harness) -> None:
    code, group = call(api, "GET", "/apis/autoscaling")
    assert code == 200
    assert [v["version"] for v in group["versions"]] == ["v2", "v1"]
    assert group["preferredVersion"]["version"] == "v2"
    code, resources = call(api, "GET", "/apis/autoscaling/v1")
    assert [r["name"] for r in resources["resources"]] == [
        "horizontalpodautoscalers",
        "horizontalpodautoscalers/status",
    ]


def test_merge_and_strategic_merge_patches_at_v1(api: Harness) -> None:
    created = {
        "apiVersion": "autoscaling/v1",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web"},
        "spec": {"scaleTargetRef": REF, "maxReplicas": 4, "targetCPUUtilizationPercentage": 60},
    }
    assert call(api, "POST", V1, created)[0] == 201
    merge = {"spec": {"targetCPUUtilizationPercentage": 70}}
    code, patched = call(api, "PATCH", f"{V1}/web", merge, "application/merge-patch+json")
    assert code == 200 and patched["spec"]["targetCPUUtilizationPercentage"] == 70
    strategic = {"spec": {"maxReplicas": 6}}
    code, patched = call(
        api, "PATCH", f"{V1}/web", strategic, "application/strategic-merge-patch+json"
    )
    assert code == 200 and patched["spec"]["maxReplicas"] == 6
    stored = call(api, "GET", f"{V2}/web")[1]
    assert stored["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"] == 70
    assert stored["spec"]["maxReplicas"] == 6
