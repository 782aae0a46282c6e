"""Decoding request bodies as kube-apiserver does: type errors, unknown fields, quantities."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pinnace.api.autoscaling.vpa import VERTICAL_POD_AUTOSCALER
from pinnace.api.coordination.lease import LEASE
from pinnace.api.core.binding import BINDING
from pinnace.api.core.configmap import CONFIG_MAP
from pinnace.api.core.event import EVENT
from pinnace.api.core.limitrange import LIMIT_RANGE
from pinnace.api.core.namespace import NAMESPACE
from pinnace.api.core.node import NODE
from pinnace.api.core.resourcequota import RESOURCE_QUOTA
from pinnace.api.decode import Repeats, decode
from pinnace.api.kind import Kind
from pinnace.api.scheduling.priorityclass import PRIORITY_CLASS
from pinnace.api.schema import MAX_DEPTH, unknown_fields
from pinnace.api.status import StatusError

# Stand-ins with the schema of kinds other modules define.
POD = Kind("", "v1", "Pod", "pods", True, "V1Pod")
DEPLOYMENT = Kind("apps", "v1", "Deployment", "deployments", True, "V1Deployment")
HPA = Kind(
    "autoscaling",
    "v2",
    "HorizontalPodAutoscaler",
    "horizontalpodautoscalers",
    True,
    "V2HorizontalPodAutoscaler",
)
MY_KINDS = [
    NAMESPACE,
    NODE,
    CONFIG_MAP,
    EVENT,
    LIMIT_RANGE,
    RESOURCE_QUOTA,
    BINDING,
    PRIORITY_CLASS,
    LEASE,
]


def bad_request(body: Any, kind: Kind = POD, *, strict: bool = False) -> str:
    with pytest.raises(StatusError) as info:
        decode(body, kind, strict=strict)
    assert info.value.code == 400
    assert info.value.reason == "BadRequest"
    return info.value.message


def test_apiversion_and_kind_come_from_the_url_when_left_out() -> None:
    decoded = decode({"metadata": {"name": "a"}}, CONFIG_MAP)
    assert decoded.obj == {"metadata": {"name": "a"}, "apiVersion": "v1", "kind": "ConfigMap"}
    assert decoded.warnings == []


def test_duplicate_fields_are_warned_about_or_refused_with_unknown_ones() -> None:
    # sigs.k8s.io/json's strict decoding; a repeat of an unknown field, or within one, is
    # skipped with it by a Go struct, but not by a custom resource's map.
    body = {"metadata": {"name": "a", "labels": {"x": "1"}}, "extra": {"y": 1}}
    repeats = ["metadata.name", "metadata.labels.x", "extra", "extra.y"]
    decoded = decode(body, CONFIG_MAP, repeats=Repeats(repeats))
    assert decoded.warnings == [
        'duplicate field "metadata.name"',
        'duplicate field "metadata.labels.x"',
        'unknown field "extra"',
    ]
    with pytest.raises(StatusError) as e:
        decode(body, CONFIG_MAP, strict=True, repeats=Repeats(repeats))
    assert (e.value.code, e.value.message) == (
        400,
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: '
        'duplicate field "metadata.name", duplicate field "metadata.labels.x", '
        'unknown field "extra"',
    )
    vpa = {"metadata": {"name": "v"}, "spec": {"targetRef": {"kind": "Deployment", "name": "d"}}}
    decoded = decode(vpa, VERTICAL_POD_AUTOSCALER, repeats=Repeats(["spec.targetRef.name"]))
    assert decoded.warnings == ['duplicate field "spec.targetRef.name"']


def test_fields_come_in_the_order_kube_apiserver_writes_them() -> None:
    # A built-in kind's Go struct order; a custom resource's (here the VPA, a CRD in v1.32)
    # as Go writes a map, keys sorted.
    body = {"status": {}, "data": {"a": "b"}, "metadata": {"name": "a"}, "kind": "ConfigMap"}
    assert list(decode(body, CONFIG_MAP).obj) == ["kind", "apiVersion", "metadata", "data"]
    namespace = {"status": {"phase": "Active"}, "spec": {}, "metadata": {"name": "n"}}
    ordered = ["kind", "apiVersion", "metadata", "spec", "status"]
    assert list(decode(namespace, NAMESPACE).obj) == ordered
    vpa = {"spec": {"targetRef": {"kind": "Deployment", "name": "d"}}, "metadata": {"name": "v"}}
    ordered = ["apiVersion", "kind", "metadata", "spec"]
    assert list(decode(vpa, VERTICAL_POD_AUTOSCALER).obj) == ordered


def test_input_is_not_mutated_and_output_is_a_copy() -> None:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "b"}, "foo": 1}
    decoded = decode(body, CONFIG_MAP)
    assert body["foo"] == 1
    decoded.obj["data"]["a"] = "changed"
    assert body["data"] == {"a": "b"}


def test_unknown_fields_are_dropped_and_warned_about() -> None:
    body = {
        "kind": "Pod",
        "spec": {"foo": 1, "containers": [{"name": "c", "bar": {"x": 1}}]},
        "status": {"baz": True},
    }
    decoded = decode(body, POD)
    assert decoded.warnings == [
        'unknown field "spec.foo"',
        'unknown field "spec.containers[0].bar"',
        'unknown field "status.baz"',
    ]
    assert decoded.obj["spec"] == {"containers": [{"name": "c", "resources": {}}]}
    assert unknown_fields(POD, body) == ["spec.foo", "spec.containers[0].bar", "status.baz"]


def test_a_spec_sent_again_as_json_decodes_as_the_first_time() -> None:
    """A JSON body's spec that decoded cleanly is remembered; what any body decodes to, and
    its warnings and errors, stay what the schema says."""
    spec = {"containers": [{"name": "c", "resources": {"limits": {"cpu": "0.5"}}}]}
    first = decode({"kind": "Pod", "spec": spec}, POD, json_text=True).obj
    again = decode({"kind": "Pod", "spec": spec}, POD, json_text=True).obj
    assert again == first == decode({"kind": "Pod", "spec": spec}, POD).obj
    assert first["spec"]["containers"][0]["resources"] == {"limits": {"cpu": "500m"}}
    again["spec"]["containers"][0]["name"] = "changed"
    assert decode({"kind": "Pod", "spec": spec}, POD, json_text=True).obj == first
    unknown = {**spec, "foo": 1}
    for _ in range(2):
        decoded = decode({"kind": "Pod", "spec": unknown}, POD, json_text=True)
        assert decoded.warnings == ['unknown field "spec.foo"']
        assert decoded.obj["spec"] == first["spec"]
    for _ in range(2):
        assert bad_request({"spec": {**spec, "hostname": 1}}).endswith(
            "PodSpec.spec.hostname of type string"
        )
    # Written as the same JSON text, but a tuple is no list (nor a NaN null): a body not
    # parsed from JSON text is answered from memory only if it reads back the same.
    decode({"kind": "Pod", "spec": {"containers": [{"name": "c"}]}}, POD, json_text=True)
    with pytest.raises(StatusError) as refused:
        decode({"kind": "Pod", "spec": {"containers": ({"name": "c"},)}}, POD)
    assert "PodSpec.spec.containers of type []v1.Container" in refused.value.message
    decode({"kind": "Pod", "spec": {"priority": None}}, POD)
    with pytest.raises(StatusError) as refused:
        decode({"kind": "Pod", "spec": {"priority": float("nan")}}, POD)
    assert "PodSpec.spec.priority of type int32" in refused.value.message


def test_in_process_bodies_of_one_spec_share_nothing() -> None:
    """The pods a controller creates from one template's spec, answered from memory, each get
    their own spec: changing one (as defaulting and admission do in place) changes neither
    the others, nor the body sent, nor what the next body decodes to."""
    spec = {"containers": [{"name": "c", "resources": {"limits": {"cpu": "0.5"}}}]}
    sent = {"containers": [{"name": "c", "resources": {"limits": {"cpu": "0.5"}}}]}
    first, second, third = (decode({"kind": "Pod", "spec": spec}, POD).obj for _ in range(3))
    assert first == second == third
    second["spec"]["containers"][0]["resources"]["limits"]["cpu"] = "2"
    second["spec"]["nodeName"] = "n"
    assert spec == sent
    assert first == third == decode({"kind": "Pod", "spec": spec}, POD).obj
    assert first["spec"]["containers"][0]["resources"] == {"limits": {"cpu": "500m"}}


def test_strict_decoding_refuses_unknown_fields() -> None:
    body = {"spec": {"foo": 1, "bar": 2}}
    assert bad_request(body, strict=True) == (
        'Pod in version "v1" cannot be handled as a Pod: strict decoding error: '
        'unknown field "spec.foo", unknown field "spec.bar"'
    )


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            {"spec": {"containers": "nginx"}},
            "json: cannot unmarshal string into Go struct field PodSpec.spec.containers of type "
            "[]v1.Container",
        ),
        (
            {"spec": {"containers": [{"name": 5}]}},
            "json: cannot unmarshal number into Go struct field Container.spec.containers.name "
            "of type string",
        ),
        (
            {"metadata": {"labels": {"app": True}}},
            "json: cannot unmarshal bool into Go struct field ObjectMeta.metadata.labels of "
            "type string",
        ),
        (
            {"spec": {"priority": 1.5}},
            "json: cannot unmarshal number 1.5 into Go struct field PodSpec.spec.priority of "
            "type int32",
        ),
        (
            {"spec": {"priority": 3000000000}},
            "json: cannot unmarshal number 3000000000 into Go struct field PodSpec.spec.priority "
            "of type int32",
        ),
        (
            {"metadata": "x"},
            "json: cannot unmarshal string into Go struct field Pod.metadata of type v1.ObjectMeta",
        ),
    ],
)
def test_type_mismatches(body: dict[str, Any], message: str) -> None:
    assert bad_request(body) == f'Pod in version "v1" cannot be handled as a Pod: {message}'


def test_int64_fields_take_values_past_int32() -> None:
    # Toleration.TolerationSeconds is a *int64: a value past 2^31 - 1 is no decode error.
    toleration = {"key": "k", "operator": "Exists", "tolerationSeconds": 3_000_000_000}
    body = {"spec": {"containers": [{"name": "c"}], "tolerations": [toleration]}}
    assert decode(body, POD).obj["spec"]["tolerations"] == [toleration]


def test_the_first_type_error_is_reported() -> None:
    body = {"spec": {"hostname": 1, "containers": "x"}}
    assert bad_request(body).endswith("PodSpec.spec.hostname of type string")


QUANTITY_REGEX_MSG = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)


def test_quantities_are_canonicalised_everywhere() -> None:
    body = {
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "resources": {
                        "limits": {"cpu": "1000m", "memory": 1073741824},
                        "requests": {"cpu": 0.5},
                    },
                }
            ],
            "volumes": [{"name": "v", "emptyDir": {"sizeLimit": "2048Mi"}}],
            "overhead": {"cpu": "100m"},
        }
    }
    spec = decode(body, POD).obj["spec"]
    assert spec["containers"][0]["resources"] == {
        "limits": {"cpu": "1", "memory": "1073741824"},
        "requests": {"cpu": "500m"},
    }
    assert spec["volumes"][0]["emptyDir"] == {"sizeLimit": "2Gi"}
    quota = decode({"spec": {"hard": {"pods": "10", "requests.cpu": "2000m"}}}, RESOURCE_QUOTA)
    assert quota.obj["spec"]["hard"] == {"pods": "10", "requests.cpu": "2"}
    node = decode({"status": {"capacity": {"memory": "1024Ki"}}}, NODE)
    assert node.obj["status"]["capacity"] == {"memory": "1Mi"}
    lr = decode(
        {
            "spec": {
                "limits": [
                    {
                        "type": "Container",
                        "maxLimitRequestRatio": {"cpu": "2"},
                        "defaultRequest": {"cpu": "0.1"},
                    }
                ]
            }
        },
        LIMIT_RANGE,
    )
    assert lr.obj["spec"]["limits"][0]["defaultRequest"] == {"cpu": "100m"}


def test_a_bad_quantity_is_a_bad_request() -> None:
    body = {"spec": {"containers": [{"name": "c", "resources": {"limits": {"cpu": "1.5.5"}}}]}}
    assert bad_request(body) == (
        f'Pod in version "v1" cannot be handled as a Pod: {QUANTITY_REGEX_MSG}'
    )
    assert bad_request({"status": {"capacity": {"cpu": True}}}, NODE).endswith(QUANTITY_REGEX_MSG)


def test_times_are_canonicalised() -> None:
    decoded = decode(
        {
            "metadata": {"creationTimestamp": "2024-05-01T12:00:00.75+02:00"},
            "spec": {"renewTime": "2024-05-01T10:00:00.5Z"},
        },
        LEASE,
    )
    assert decoded.obj["metadata"]["creationTimestamp"] == "2024-05-01T10:00:00Z"
    assert decoded.obj["spec"]["renewTime"] == "2024-05-01T10:00:00.500000Z"
    assert bad_request({"metadata": {"creationTimestamp": "yesterday"}}, LEASE) == (
        'Lease in version "v1" cannot be handled as a Lease: parsing time "yesterday" as '
        '"2006-01-02T15:04:05Z07:00": cannot parse "yesterday" as "2006"'
    )


def test_nulls_are_dropped() -> None:
    decoded = decode({"metadata": {"name": "a", "labels": None}, "data": None}, CONFIG_MAP)
    assert decoded.obj == {"metadata": {"name": "a"}, "apiVersion": "v1", "kind": "ConfigMap"}


def test_a_struct_of_strings_decodes_as_field_by_field() -> None:
    # An object reference has string fields only: whether all of a body's are strings of known
    # fields or not, nulls are dropped, unknown fields reported, other types refused.
    involved = {"kind": "Pod", "name": "p", "namespace": "default", "uid": "u"}
    event = {"metadata": {"name": "e"}, "involvedObject": involved, "source": {}}
    decoded = decode(event, EVENT).obj
    assert decoded["involvedObject"] == involved
    assert decoded["involvedObject"] is not involved
    assert decoded["source"] == {}
    with_null = decode({**event, "involvedObject": {**involved, "uid": None}}, EVENT).obj
    assert with_null["involvedObject"] == {"kind": "Pod", "name": "p", "namespace": "default"}
    unknown = decode({**event, "involvedObject": {**involved, "color": "red"}}, EVENT)
    assert unknown.obj["involvedObject"] == involved
    assert unknown.warnings == ['unknown field "involvedObject.color"']
    with pytest.raises(StatusError) as e:
        decode({**event, "involvedObject": {**involved, "name": 5}}, EVENT)
    assert e.value.message.endswith(
        "json: cannot unmarshal number into Go struct field ObjectReference.involvedObject.name"
        " of type string"
    )


def test_struct_fields_go_always_writes_are_written_even_when_not_sent() -> None:
    pod = {
        "metadata": {"name": "p"},
        "spec": {
            "containers": [
                {"name": "a", "image": "x"},
                {"name": "b", "image": "x", "resources": None},
            ],
            "initContainers": [{"name": "i", "image": "x", "resources": {"limits": {"cpu": "1"}}}],
        },
        "status": {"containerStatuses": [{"name": "a", "state": {"running": {}}}]},
    }
    decoded = decode(pod, POD).obj
    assert [c["resources"] for c in decoded["spec"]["containers"]] == [{}, {}]
    assert decoded["spec"]["initContainers"][0]["resources"] == {"limits": {"cpu": "1"}}
    [status] = decoded["status"]["containerStatuses"]
    assert (status["state"], status["lastState"]) == ({"running": {}}, {})
    # A pointer is left out when not sent: a container's securityContext, a pod's affinity.
    assert "securityContext" not in decoded["spec"]["containers"][0]
    assert "affinity" not in decoded["spec"]


def test_int_or_string_fields() -> None:
    deployment = DEPLOYMENT
    body = {"spec": {"strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}}}}
    assert decode(body, deployment).obj["spec"] == body["spec"]
    assert bad_request({"spec": {"strategy": {"rollingUpdate": {"maxSurge": True}}}}, deployment)


def test_kind_or_version_mismatch() -> None:
    assert bad_request({"apiVersion": "v1", "kind": "pod"}) == (
        'pod in version "v1" cannot be handled as a Pod: no kind "pod" is registered for '
        'version "v1" in scheme "k8s.io/kubernetes/pkg/api/legacyscheme/scheme.go:30"'
    )
    assert bad_request({"apiVersion": "v1", "kind": "ConfigMap"}) == (
        'ConfigMap in version "v1" cannot be handled as a Pod: converting (v1.ConfigMap) to '
        "(core.Pod): unknown conversion"
    )
    hpa_v1 = {"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler"}
    assert bad_request(hpa_v1, HPA) == (
        "the API version in the data (autoscaling/v1) does not match the expected API version "
        "(autoscaling/v2)"
    )


def test_type_meta_of_the_wrong_type() -> None:
    assert bad_request({"kind": 5}) == (
        "the object provided is unrecognized (must be of type Pod): couldn't get version/kind; "
        "json parse error: json: cannot unmarshal number into Go struct field .kind of type "
        'string ({"kind":5})'
    )
    assert bad_request([1, 2]).startswith(
        "the object provided is unrecognized (must be of type Pod): couldn't get version/kind; "
        "json parse error: json: cannot unmarshal array into Go value of type struct"
    )


def test_deep_nesting_is_a_bad_request_not_a_recursion_error() -> None:
    deep: Any = {}
    for _ in range(MAX_DEPTH * 3):
        deep = {"a": deep}
    entry = {"manager": "m", "operation": "Update", "fieldsType": "FieldsV1", "fieldsV1": deep}
    assert bad_request({"metadata": {"managedFields": [entry]}}).endswith("exceeded max depth")
    shallow = {"metadata": {"managedFields": [entry | {"fieldsV1": {"f:a": {}}}]}}
    assert decode(shallow, POD).obj["metadata"]["managedFields"][0]["fieldsV1"] == {"f:a": {}}


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=20,
)
FIELDS = ["metadata", "spec", "status", "data", "binaryData", "immutable", "apiVersion", "kind"]


def shaped(json: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    return st.dictionaries(st.sampled_from(FIELDS), json, max_size=5)


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(MY_KINDS), shaped(JSON) | JSON, st.booleans())
def test_decode_and_validate_never_raise_anything_but_status_errors(
    kind: Kind, body: Any, strict: bool
) -> None:
    try:
        decoded = decode(body, kind, strict=strict)
    except StatusError as e:
        assert e.code == 400
        return
    obj = decoded.obj
    kind.default(obj)
    kind.prepare_for_create(obj)
    assert isinstance(kind.validate(obj), list)
    assert isinstance(kind.validate_update(obj, obj), list)
    assert isinstance(kind.validate_status_update(obj, obj), list)


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(MY_KINDS), shaped(JSON), shaped(JSON))
def test_validators_survive_undecoded_garbage(kind: Kind, new: Any, old: Any) -> None:
    kind.default(new)
    kind.prepare_for_update(new, old)
    kind.validate(new)
    kind.validate_update(new, old)
    kind.validate_status_update(new, old)


def test_namespace_decode_keeps_known_fields() -> None:
    body = {"metadata": {"name": "team-a"}, "spec": {"finalizers": ["kubernetes"]}}
    assert decode(body, NAMESPACE).obj["spec"] == {"finalizers": ["kubernetes"]}


def test_other_versions_of_the_same_group_are_not_registered() -> None:
    assert bad_request({"apiVersion": "apps/v1beta1", "kind": "Deployment"}, DEPLOYMENT) == (
        'Deployment in version "v1beta1" cannot be handled as a Deployment: no kind '
        '"Deployment" is registered for version "apps/v1beta1" in scheme '
        '"k8s.io/kubernetes/pkg/api/legacyscheme/scheme.go:30"'
    )


def test_binary_data_is_base64() -> None:
    decoded = decode({"binaryData": {"k": "aGVs\nbG8="}}, CONFIG_MAP)
    assert decoded.obj["binaryData"] == {"k": "aGVsbG8="}
    assert bad_request({"binaryData": {"k": "ab$d"}}, CONFIG_MAP) == (
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: illegal base64 data at '
        "input byte 2"
    )
    assert bad_request({"binaryData": {"k": 1}}, CONFIG_MAP).endswith(
        "json: cannot unmarshal number into Go struct field ConfigMap.binaryData of type []uint8"
    )


def test_times_in_canonical_form_stay_as_sent() -> None:
    decoded = decode(
        {
            "metadata": {"creationTimestamp": "2024-02-29T23:59:59Z"},
            "spec": {"renewTime": "2024-02-29T23:59:59.000001Z"},
        },
        LEASE,
    )
    assert decoded.obj["metadata"]["creationTimestamp"] == "2024-02-29T23:59:59Z"
    assert decoded.obj["spec"]["renewTime"] == "2024-02-29T23:59:59.000001Z"
    # Canonical in shape but not a moment: refused as any such time is.
    assert bad_request({"spec": {"renewTime": "2023-02-29T00:00:00.000000Z"}}, LEASE) == (
        'Lease in version "v1" cannot be handled as a Lease: parsing time '
        '"2023-02-29T00:00:00.000000Z": day out of range'
    )


def test_times_out_of_range() -> None:
    prefix = 'Lease in version "v1" cannot be handled as a Lease: parsing time'
    assert bad_request({"spec": {"renewTime": "2024-02-30T00:00:00Z"}}, LEASE) == (
        f'{prefix} "2024-02-30T00:00:00Z": day out of range'
    )
    assert bad_request({"spec": {"renewTime": "2024-01-01T25:00:00Z"}}, LEASE) == (
        f'{prefix} "2024-01-01T25:00:00Z": hour out of range'
    )
    # In UTC before year 1 or after 9999: Go keeps them, Pinnace refuses (docs/differences.md).
    for moment in ("0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59.5-07:30"):
        assert bad_request({"spec": {"renewTime": moment}}, LEASE) == (
            f'{prefix} "{moment}": year out of range'
        )


def _bound_pod() -> dict[str, Any]:
    """A pod as stored after its binding: the API server writes lastProbeTime as Go writes a
    zero time, null."""
    condition = {
        "type": "PodScheduled",
        "status": "True",
        "lastProbeTime": None,
        "lastTransitionTime": "2025-01-01T00:00:00Z",
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default", "finalizers": ["example.com/keep"]},
        "spec": {"containers": [{"name": "c", "image": "nginx"}], "nodeName": "n1"},
        "status": {"phase": "Pending", "conditions": [condition]},
    }


@pytest.mark.parametrize(
    "change",
    [
        # NaN and infinities write as null, the text the stored part has there.
        lambda p: p["status"]["conditions"][0].__setitem__("lastProbeTime", float("nan")),
        lambda p: p["status"]["conditions"][0].__setitem__("lastProbeTime", float("inf")),
        # A tuple writes as the stored list.
        lambda p: p["metadata"].__setitem__("finalizers", ("example.com/keep",)),
    ],
)
def test_an_update_on_a_stored_object_refuses_what_a_decode_without_it_refuses(
    change: Any,
) -> None:
    stored = _bound_pod()
    new = _bound_pod()
    change(new)
    with pytest.raises(StatusError) as without:
        decode(new, POD)
    with pytest.raises(StatusError) as with_basis:
        decode(new, POD, basis=stored)
    assert with_basis.value.message == without.value.message


def test_a_shared_decode_keeps_the_stored_parts_left_alone_but_the_metadata_dict() -> None:
    stored = _bound_pod()
    new = {**stored, "status": {"phase": "Running"}}  # as a merge patch of the status makes it
    decoded = decode(new, POD, basis=stored, share=True).obj
    assert decoded == {**stored, "status": {"phase": "Running"}}
    assert decoded["spec"] is stored["spec"]
    # The update path sets resourceVersion and generation in the metadata dict itself.
    assert decoded["metadata"] is not stored["metadata"]
    assert decode(new, POD, basis=stored).obj["spec"] is not stored["spec"]
    # A part with the stored text is the stored one too: a kubelet sends its whole status.
    conditions = [dict(c) for c in stored["status"]["conditions"]]
    new = {**stored, "status": {"phase": "Running", "conditions": conditions}}
    decoded = decode(new, POD, basis=stored, share=True).obj
    assert decoded["status"]["conditions"][0] is stored["status"]["conditions"][0]
    assert decoded["status"]["conditions"] is not conditions
