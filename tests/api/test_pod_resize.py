"""In-place resize in the API (InPlacePodVerticalScaling, alpha in v1.32): the pods/resize
subresource, resizePolicy defaulting and validation, and the fields the server drops while
the gate is off. Vectors written from v1.32's ValidatePodResize and validateResizePolicy."""

from __future__ import annotations

from typing import Any

import pytest
from tests.apiserver.conftest import Harness

from pinnace.api import catalog
from pinnace.api.features import FeatureGates, parse_feature_gates
from pinnace.api.patch import PatchType
from pinnace.api.status import StatusError

PODS = catalog.kind("", "pods")
ON = FeatureGates(in_place_pod_vertical_scaling=True)


def harness(gates: FeatureGates) -> Harness:
    h = Harness()
    h.server.features = gates
    return h


def pod(resources: dict[str, Any], **container: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
        "spec": {
            "containers": [{"name": "app", "image": "nginx", "resources": resources, **container}]
        },
    }


BURSTABLE = {
    "requests": {"cpu": "100m", "memory": "64Mi"},
    "limits": {"cpu": "200m", "memory": "64Mi"},
}


def resize(h: Harness, change: dict[str, Any], **rest: Any) -> dict[str, Any]:
    patch = {"spec": {"containers": [{"name": "app", **change}]}, **rest}
    return h.call(
        h.server.patch, PODS, "default", "web", PatchType.STRATEGIC_MERGE, patch, None, "resize"
    ).obj


def resize_causes(h: Harness, change: dict[str, Any]) -> list[str]:
    with pytest.raises(StatusError) as e:
        resize(h, change)
    assert e.value.code == 422
    assert e.value.details is not None
    return [f"{c['field']}: {c['message']}" for c in e.value.details["causes"]]


def test_gate_off_no_resize_subresource_and_no_resize_policy() -> None:
    h = harness(FeatureGates())
    created = h.call(
        h.server.create,
        PODS,
        "default",
        pod(BURSTABLE, resizePolicy=[{"resourceName": "cpu", "restartPolicy": "NotRequired"}]),
    ).obj
    assert "resizePolicy" not in created["spec"]["containers"][0]
    with pytest.raises(StatusError) as e:
        resize(h, {"resources": {"requests": {"cpu": "150m"}}})
    assert (e.value.code, e.value.message) == (
        404,
        "the server could not find the requested resource",
    )


def test_resize_changes_only_resources_and_marks_it_proposed() -> None:
    h = harness(ON)
    created = h.call(h.server.create, PODS, "default", pod(BURSTABLE)).obj
    assert created["spec"]["containers"][0]["resizePolicy"] == [
        {"resourceName": "cpu", "restartPolicy": "NotRequired"},
        {"resourceName": "memory", "restartPolicy": "NotRequired"},
    ]
    resized = resize(
        h,
        {"resources": {"requests": {"cpu": "150m"}}, "image": "nginx:2"},
        metadata={"labels": {"app": "other"}},
    )
    container = resized["spec"]["containers"][0]
    assert container["resources"]["requests"] == {"cpu": "150m", "memory": "64Mi"}
    assert container["image"] == "nginx"  # the rest of a resize write is dropped
    assert resized["metadata"]["labels"] == {"app": "web"}
    assert resized["status"]["resize"] == "Proposed"


def test_resize_validation() -> None:
    h = harness(ON)
    h.call(h.server.create, PODS, "default", pod(BURSTABLE))
    assert resize_causes(h, {"resources": {"limits": {"ephemeral-storage": "1Gi"}}}) == [
        "spec: Forbidden: only cpu and memory resources are mutable"
    ]
    # Burstable to Guaranteed: cpu request up to its limit.
    assert resize_causes(h, {"resources": {"requests": {"cpu": "200m"}}}) == [
        'spec: Invalid value: "Burstable": Pod QoS is immutable'
    ]
    assert resize_causes(h, {"resources": {"requests": {"cpu": "300m"}}}) == [
        'spec.containers[0].resources.requests: Invalid value: "300m": must be less than or '
        "equal to cpu limit of 200m"
    ]
    assert resize_causes(
        h, {"resizePolicy": [{"resourceName": "storage", "restartPolicy": "Sometimes"}]}
    ) == [
        'spec.containers[0].resizePolicy: Unsupported value: "storage": supported values: '
        '"cpu", "memory"',
        'spec.containers[0].resizePolicy: Unsupported value: "Sometimes": supported values: '
        '"NotRequired", "RestartContainer"',
    ]


def test_pod_update_may_not_change_resources() -> None:
    h = harness(ON)
    h.call(h.server.create, PODS, "default", pod(BURSTABLE))
    patch = {"spec": {"containers": [{"name": "app", "resources": {"requests": {"cpu": "150m"}}}]}}
    with pytest.raises(StatusError) as e:
        h.call(h.server.patch, PODS, "default", "web", PatchType.STRATEGIC_MERGE, patch)
    assert e.value.code == 422
    assert "pod updates may not change fields other than" in e.value.message


def test_resize_policy_never_restart_pod() -> None:
    h = harness(ON)
    never = pod(
        BURSTABLE, resizePolicy=[{"resourceName": "memory", "restartPolicy": "RestartContainer"}]
    )
    never["spec"]["restartPolicy"] = "Never"
    assert h.invalid_causes(h.server.create, PODS, "default", never) == [
        'spec.containers[0].resizePolicy: Invalid value: "RestartContainer": must be '
        "'NotRequired' when `restartPolicy` is 'Never'"
    ]


def test_status_fields_dropped_without_their_gates() -> None:
    h = harness(ON)
    h.call(h.server.create, PODS, "default", pod(BURSTABLE))
    entry = {
        "name": "app",
        "image": "nginx",
        "imageID": "",
        "ready": True,
        "restartCount": 0,
        "resources": BURSTABLE,
        "allocatedResources": BURSTABLE["requests"],
    }
    patch = {"status": {"containerStatuses": [entry], "resize": "InProgress"}}
    written = h.call(
        h.server.patch, PODS, "default", "web", PatchType.MERGE, patch, None, "status"
    ).obj
    status = written["status"]
    assert status["resize"] == "InProgress"
    assert status["containerStatuses"][0]["resources"] == BURSTABLE
    assert "allocatedResources" not in status["containerStatuses"][0]


def _resized_status(h: Harness) -> dict[str, Any]:
    entry = {"name": "app", "image": "nginx", "imageID": "", "ready": True, "restartCount": 0}
    entry |= {"resources": BURSTABLE, "allocatedResources": BURSTABLE["requests"]}
    patch = {"status": {"containerStatuses": [entry], "resize": "InProgress"}}
    written = h.call(
        h.server.patch, PODS, "default", "web", PatchType.MERGE, patch, None, "status"
    ).obj
    return written["status"]


def test_a_status_write_with_the_gate_off_drops_what_the_resize_reports() -> None:
    h = harness(FeatureGates())
    h.call(h.server.create, PODS, "default", pod(BURSTABLE))
    status = _resized_status(h)
    assert "resize" not in status
    assert status["containerStatuses"][0].keys().isdisjoint({"resources", "allocatedResources"})


def test_a_status_write_keeps_the_resize_of_a_pod_that_uses_it_after_the_gate_is_off() -> None:
    h = harness(ON)
    h.call(h.server.create, PODS, "default", pod(BURSTABLE))  # resizePolicy defaulted
    h.server.features = FeatureGates()
    status = _resized_status(h)
    assert status["resize"] == "InProgress"
    assert status["containerStatuses"][0]["resources"] == BURSTABLE
    assert "allocatedResources" not in status["containerStatuses"][0]


def test_feature_gates_flag() -> None:
    assert parse_feature_gates("InPlacePodVerticalScaling=true") == ON
    with pytest.raises(ValueError, match="unrecognized feature gate: Nope"):
        parse_feature_gates("Nope=true")
    with pytest.raises(ValueError, match='parsing "yes": invalid syntax'):
        parse_feature_gates("InPlacePodVerticalScaling=yes")


def test_a_resize_is_charged_to_the_quota_for_what_it_adds() -> None:
    h = harness(ON)
    quota = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "compute", "namespace": "default"},
        "spec": {"hard": {"requests.cpu": "1"}},
    }
    h.call(h.server.create, catalog.kind("", "resourcequotas"), "default", quota)
    h.call(h.server.create, PODS, "default", pod(BURSTABLE))
    resize(h, {"resources": {"requests": {"cpu": "180m"}, "limits": {"cpu": "1"}}})
    with pytest.raises(StatusError) as e:
        resize(h, {"resources": {"requests": {"cpu": "1200m"}, "limits": {"cpu": "2"}}})
    assert (e.value.code, e.value.message) == (
        403,
        'pods "web" is forbidden: exceeded quota: compute, requested: requests.cpu=1020m, '
        "used: requests.cpu=180m, limited: requests.cpu=1",
    )


def test_fields_of_a_gate_turned_off_go_at_the_next_write() -> None:
    h = harness(FeatureGates(True, True))
    h.call(h.server.create, PODS, "default", pod({}))  # BestEffort: no resizePolicy defaulted
    entry = {"name": "app", "image": "nginx", "imageID": "", "ready": True, "restartCount": 0}
    status = {"containerStatuses": [{**entry, "resources": {}, "allocatedResources": {}}]}
    written = h.call(
        h.server.patch, PODS, "default", "web", PatchType.MERGE, {"status": status}, None, "status"
    ).obj
    h.server.features = ON  # InPlacePodVerticalScalingAllocatedStatus off
    labelled = h.call(
        h.server.patch,
        PODS,
        "default",
        "web",
        PatchType.MERGE,
        {"metadata": {"labels": {"x": "y"}}},
    ).obj
    assert "allocatedResources" not in labelled["status"]["containerStatuses"][0]
    assert "resources" in labelled["status"]["containerStatuses"][0]
    # What was read before is left as it was.
    assert "allocatedResources" in written["status"]["containerStatuses"][0]


@pytest.mark.parametrize("gates", [FeatureGates(), ON])
def test_workload_templates_keep_resize_policy_only_with_the_gate(gates: FeatureGates) -> None:
    h = harness(gates)
    policy = [{"resourceName": "cpu", "restartPolicy": "RestartContainer"}]
    template = pod(BURSTABLE, resizePolicy=policy)
    template["metadata"] = {"labels": {"app": "web"}}
    body = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": template},
    }
    created = h.call(h.server.create, catalog.kind("apps", "deployments"), "default", body).obj
    container = created["spec"]["template"]["spec"]["containers"][0]
    assert container.get("resizePolicy") == (policy if gates == ON else None)
