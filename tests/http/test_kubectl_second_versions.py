"""Kinds served at a second version (autoscaling/v1 HorizontalPodAutoscalers, events.k8s.io/v1
Events), with real kubectl against `pinnace up`: as kube-apiserver v1.32, the server publishes
their schemas in /openapi/v2 and /openapi/v3 and takes server-side apply at that version, its
managedFields entries naming it."""

from __future__ import annotations

import http.client
import json
from typing import Any
from urllib.parse import urlparse

from tests.http.conftest import Cluster
from tests.http.test_kubectl_encoding import APPLY, STRATEGIC, send

HPA_V1 = """
apiVersion: autoscaling/v1
kind: HorizontalPodAutoscaler
metadata:
  name: web
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 5
  targetCPUUtilizationPercentage: %d
"""

EVENT_V1 = """
apiVersion: events.k8s.io/v1
kind: Event
metadata:
  name: synced
  labels: {round: "%s"}
eventTime: "2026-01-02T03:04:05.678901Z"
reportingController: example.com/syncer
reportingInstance: syncer-1
action: Reconcile
reason: Synced
note: in sync
type: Normal
regarding: {kind: Pod, name: web, namespace: default}
"""


def managed(cluster: Cluster, resource: str, name: str) -> list[tuple[str, str, str]]:
    got = json.loads(cluster.ok("get", resource, name, "-o", "json", "--show-managed-fields"))
    return [
        (e["manager"], e["operation"], e["apiVersion"]) for e in got["metadata"]["managedFields"]
    ]


def test_server_side_apply_of_an_autoscaling_v1_hpa(cluster: Cluster) -> None:
    applied = cluster.ok("apply", "--server-side", "-f", "-", stdin=HPA_V1 % 60)
    assert applied.strip() == "horizontalpodautoscaler.autoscaling/web serverside-applied"
    resource = "horizontalpodautoscalers.v1.autoscaling"
    assert managed(cluster, resource, "web") == [("kubectl", "Apply", "autoscaling/v1")]
    cluster.ok("apply", "--server-side", "-f", "-", stdin=HPA_V1 % 70)
    got = json.loads(cluster.ok("get", resource, "web", "-o", "json"))
    assert got["spec"]["targetCPUUtilizationPercentage"] == 70
    v2 = json.loads(
        cluster.ok("get", "horizontalpodautoscalers.v2.autoscaling", "web", "-o", "json")
    )
    assert v2["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"] == 70
    # Another manager changing the field it set at v1 conflicts with it.
    conflict = cluster.kubectl(
        "apply", "--server-side", "--field-manager", "other", "-f", "-", stdin=HPA_V1 % 80
    )
    assert conflict.returncode != 0
    assert 'conflict with "kubectl": .spec.targetCPUUtilizationPercentage' in conflict.stderr


def test_server_side_apply_of_an_events_k8s_io_v1_event(cluster: Cluster) -> None:
    applied = cluster.ok("apply", "--server-side", "-f", "-", stdin=EVENT_V1 % "first")
    assert applied.strip() == "event.events.k8s.io/synced serverside-applied"
    assert managed(cluster, "events.v1.events.k8s.io", "synced") == [
        ("kubectl", "Apply", "events.k8s.io/v1")
    ]
    cluster.ok("apply", "--server-side", "-f", "-", stdin=EVENT_V1 % "second")
    core = json.loads(cluster.ok("get", "events.v1.", "synced", "-o", "json"))
    assert (core["message"], core["metadata"]["labels"]) == ("in sync", {"round": "second"})
    # The note is immutable at this version; v1.32's error names the core field.
    changed = (EVENT_V1 % "third").replace("note: in sync", "note: changed")
    refused = cluster.kubectl("apply", "--server-side", "-f", "-", stdin=changed)
    assert 'message: Invalid value: "changed": field is immutable' in refused.stderr


def test_openapi_documents_describe_both_versions(cluster: Cluster) -> None:
    v1 = cluster.ok("explain", "horizontalpodautoscalers.spec", "--api-version=autoscaling/v1")
    assert "targetCPUUtilizationPercentage" in v1
    v2 = cluster.ok("explain", "horizontalpodautoscalers.spec", "--api-version=autoscaling/v2")
    assert "targetCPUUtilizationPercentage" not in v2 and "metrics" in v2
    events = cluster.ok("explain", "events", "--api-version=events.k8s.io/v1")
    assert "reportingController" in events and "involvedObject" not in events
    swagger = json.loads(cluster.ok("get", "--raw", "/openapi/v2"))
    definitions = swagger["definitions"]
    hpa = definitions["io.k8s.api.autoscaling.v1.HorizontalPodAutoscaler"]
    assert hpa["x-kubernetes-group-version-kind"] == [
        {"group": "autoscaling", "kind": "HorizontalPodAutoscaler", "version": "v1"}
    ]
    event = definitions["io.k8s.api.events.v1.Event"]
    assert event["x-kubernetes-group-version-kind"] == [
        {"group": "events.k8s.io", "kind": "Event", "version": "v1"}
    ]
    index = json.loads(cluster.ok("get", "--raw", "/openapi/v3"))["paths"]
    assert {"apis/autoscaling/v1", "apis/events.k8s.io/v1"} <= set(index)


def post(cluster: Cluster, path: str, body: str) -> tuple[int, list[str], Any]:
    """POST a YAML body; (status, Warning headers, decoded answer)."""
    address = urlparse(cluster.url)
    connection = http.client.HTTPConnection(address.hostname or "", address.port, timeout=20)
    try:
        headers = {"Content-Type": "application/yaml", "Accept": "application/json"}
        connection.request("POST", path, body=body.encode(), headers=headers)
        answer = connection.getresponse()
        return answer.status, answer.headers.get_all("Warning") or [], json.loads(answer.read())
    finally:
        connection.close()


def test_a_body_is_decoded_at_the_version_it_is_sent_at(cluster: Cluster) -> None:
    events = "/apis/events.k8s.io/v1/namespaces/default/events"
    # core/v1's field names are unknown fields of events.k8s.io/v1's Event.
    body = (EVENT_V1 % "x").replace("name: synced", "name: core-named") + "message: hello\n"
    code, warnings, _ = post(cluster, events + "?fieldValidation=Warn", body)
    assert (code, warnings) == (201, ['299 - "unknown field \\"message\\""'])
    strict = body.replace("core-named", "strict")
    code, _, answer = post(cluster, events + "?fieldValidation=Strict", strict)
    assert (code, answer["message"]) == (
        400,
        'Event in version "v1" cannot be handled as a Event: strict decoding error: '
        'unknown field "message"',
    )
    # A value the served version's type cannot hold is its decode error, never a crash.
    malformed = (HPA_V1 % 50).replace("name: web", "name: bad") + "status: 5\n"
    hpas = "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers"
    code, _, answer = post(cluster, hpas, malformed)
    assert (code, answer["message"]) == (
        400,
        'HorizontalPodAutoscaler in version "v1" cannot be handled as a '
        "HorizontalPodAutoscaler: json: cannot unmarshal number into Go struct field "
        "HorizontalPodAutoscaler.status of type v1.HorizontalPodAutoscalerStatus",
    )


def test_a_patch_at_the_second_version_of_the_wrong_type_is_the_patch_handler_s_error(
    cluster: Cluster,
) -> None:
    """A patch through autoscaling/v1 that leaves a string in maxReplicas is refused as
    patch.go refuses it at the stored version (not create's 400): a merge patch with the JSON
    decoder's error and a strategic merge patch with the unstructured converter's, in a 422
    on the field `patch`; an apply with its field manager's 500. Nothing is written."""
    cluster.ok("apply", "--server-side", "-f", "-", stdin=HPA_V1 % 60)
    resource = "horizontalpodautoscalers.v1.autoscaling"
    before = json.loads(cluster.ok("get", resource, "web", "-o", "json"))
    wrong = '{"spec":{"maxReplicas":"x"}}'
    merged = cluster.kubectl("patch", resource, "web", "--type", "merge", "-p", wrong)
    assert merged.returncode == 1
    assert merged.stderr.startswith('The request is invalid: patch: Invalid value: "{')
    assert merged.stderr.rstrip().endswith(
        '": json: cannot unmarshal string into Go struct field '
        "HorizontalPodAutoscalerSpec.spec.maxReplicas of type int32"
    )
    path = "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers/web"
    code, _, answer = send(cluster, "PATCH", path, wrong, STRATEGIC)
    assert (code, answer["message"]) == (
        422,
        ' "" is invalid: patch: Invalid value: "map[spec:map[maxReplicas:x]]": '
        "unrecognized type: int32",
    )
    apply = f"{path}?fieldManager=kubectl&force=true"
    code, _, answer = send(cluster, "PATCH", apply, HPA_V1.replace("%d", "x"), APPLY)
    assert (code, answer["message"]) == (
        500,
        "failed to create typed patch object (/web; autoscaling/v1, "
        "Kind=HorizontalPodAutoscaler): .spec.targetCPUUtilizationPercentage: expected numeric "
        "(int or float), got string",
    )
    after = json.loads(cluster.ok("get", resource, "web", "-o", "json"))
    assert after["spec"] == before["spec"]
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
