"""ObjectMeta validation: vectors worded as apimachinery's api/validation and the core group."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pinnace.api.meta import (
    is_path_segment_name,
    validate_object_meta,
    validate_object_meta_update,
)
from pinnace.api.names import is_dns1123_label

SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)


def messages(errs: list[Any]) -> list[str]:
    return [str(e) for e in errs]


def obj(**meta: Any) -> dict[str, Any]:
    return {"metadata": meta}


def test_a_valid_namespaced_object_passes() -> None:
    assert validate_object_meta(obj(name="web", namespace="default"), namespaced=True) == []


def test_name_or_generate_name_is_required() -> None:
    assert messages(validate_object_meta(obj(namespace="d"), namespaced=True)) == [
        "metadata.name: Required value: name or generateName is required"
    ]


def test_a_bad_name_gets_the_subdomain_message() -> None:
    assert messages(validate_object_meta(obj(name="Web", namespace="d"), namespaced=True)) == [
        f'metadata.name: Invalid value: "Web": {SUBDOMAIN_MSG}'
    ]


def test_generate_name_may_end_in_a_dash_but_must_otherwise_be_a_name() -> None:
    ok = obj(name="web-x1", generateName="web-", namespace="d")
    assert validate_object_meta(ok, namespaced=True) == []
    bad = obj(name="web-x1", generateName="Web-", namespace="d")
    assert messages(validate_object_meta(bad, namespaced=True)) == [
        f'metadata.generateName: Invalid value: "Web-": {SUBDOMAIN_MSG}'
    ]


def test_namespace_required_for_namespaced_and_forbidden_for_cluster_kinds() -> None:
    assert messages(validate_object_meta(obj(name="a"), namespaced=True)) == [
        "metadata.namespace: Required value"
    ]
    assert messages(validate_object_meta(obj(name="a", namespace="d"), namespaced=False)) == [
        "metadata.namespace: Forbidden: not allowed on this type"
    ]


def test_custom_name_rule() -> None:
    errs = validate_object_meta(obj(name="a.b"), namespaced=False, name_rule=is_dns1123_label)
    assert messages(errs) == ['metadata.name: Invalid value: "a.b": must not contain dots']


def test_negative_generation() -> None:
    errs = validate_object_meta(obj(name="a", generation=-1), namespaced=False)
    assert messages(errs) == [
        "metadata.generation: Invalid value: -1: must be greater than or equal to 0"
    ]


def test_annotations_keys_any_case_and_total_size() -> None:
    ok = obj(name="a", annotations={"Example.COM/Key": "v"})
    assert validate_object_meta(ok, namespaced=False) == []
    big = obj(name="a", annotations={"k": "x" * (256 * 1024)})
    assert messages(validate_object_meta(big, namespaced=False)) == [
        "metadata.annotations: Too long: must have at most 262144 bytes"
    ]
    bad_key = validate_object_meta(obj(name="a", annotations={"a b": ""}), namespaced=False)
    assert [e.field for e in bad_key] == ["metadata.annotations"]
    assert str(bad_key[0]).startswith('metadata.annotations: Invalid value: "a b": name part')


def test_labels_are_checked() -> None:
    errs = validate_object_meta(obj(name="a", labels={"app": "-x"}), namespaced=False)
    assert [e.field for e in errs] == ["metadata.labels"]


def test_objects_with_the_same_labels_each_get_their_errors() -> None:
    """Objects of one workload share their labels: each is checked, and told on its own."""
    first = validate_object_meta(obj(name="a", labels={"app": "-x"}), namespaced=False)
    first.append("changed by its caller")
    again = validate_object_meta(obj(name="b", labels={"app": "-x"}), namespaced=False)
    assert messages(again) == messages(first[:1])
    assert validate_object_meta(obj(name="c", labels={"app": "1"}), namespaced=False) == []
    assert messages(validate_object_meta(obj(name="d", labels={"app": 1}), namespaced=False)) == [
        "metadata.labels[app]: Invalid value: 1: must be of type string"
    ]


def test_finalizers() -> None:
    ok = obj(name="a", finalizers=["kubernetes", "orphan", "example.com/cleanup"])
    assert validate_object_meta(ok, namespaced=False) == []
    errs = validate_object_meta(obj(name="a", finalizers=["cleanup"]), namespaced=False)
    assert messages(errs) == [
        'metadata.finalizers[0]: Invalid value: "cleanup": name is neither a standard '
        "finalizer name nor is it fully qualified"
    ]
    both = obj(name="a", finalizers=["orphan", "foregroundDeletion"])
    assert messages(validate_object_meta(both, namespaced=False)) == [
        'metadata.finalizers: Invalid value: []string{"orphan", "foregroundDeletion"}: '
        "finalizer orphan and foregroundDeletion cannot be both set"
    ]


def ref(**overrides: Any) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u1"} | overrides


def test_owner_references_need_identity_and_one_controller() -> None:
    assert validate_object_meta(obj(name="a", ownerReferences=[ref()]), namespaced=False) == []
    errs = validate_object_meta(
        obj(name="a", ownerReferences=[ref(apiVersion="apps/", kind="", name="", uid="")]),
        namespaced=False,
    )
    assert messages(errs) == [
        'metadata.ownerReferences.apiVersion: Invalid value: "apps/": version must not be empty',
        'metadata.ownerReferences.kind: Invalid value: "": must not be empty',
        'metadata.ownerReferences.name: Invalid value: "": must not be empty',
        'metadata.ownerReferences.uid: Invalid value: "": must not be empty',
    ]
    two = [ref(controller=True), ref(name="rs2", uid="u2", controller=True)]
    errs = validate_object_meta(obj(name="a", ownerReferences=two), namespaced=False)
    assert [e.field for e in errs] == ["metadata.ownerReferences"]
    assert errs[0].detail == (
        "Only one reference can have Controller set to true. "
        'Found "true" in references for ReplicaSet/rs and ReplicaSet/rs2'
    )


def test_an_event_cannot_own_objects() -> None:
    errs = validate_object_meta(
        obj(name="a", ownerReferences=[ref(apiVersion="v1", kind="Event")]), namespaced=False
    )
    assert [e.detail for e in errs] == ["/v1, Kind=Event is disallowed from being an owner"]


def test_managed_fields_operation() -> None:
    entry = {"manager": "kubectl", "operation": "Patch", "fieldsType": "FieldsV1"}
    errs = validate_object_meta(obj(name="a", managedFields=[entry]), namespaced=False)
    assert messages(errs) == [
        'metadata.managedFields[0].operation: Invalid value: "Patch": must be `Apply` or `Update`'
    ]


OLD = {
    "metadata": {
        "name": "a",
        "namespace": "d",
        "uid": "u1",
        "resourceVersion": "5",
        "creationTimestamp": "2024-01-01T00:00:00Z",
        "generation": 2,
    }
}


def updated(**changes: Any) -> dict[str, Any]:
    return {"metadata": OLD["metadata"] | changes}


def test_update_keeps_identity() -> None:
    assert validate_object_meta_update(updated(), OLD) == []
    errs = validate_object_meta_update(updated(name="b", uid="u2", namespace="e"), OLD)
    assert messages(errs) == [
        'metadata.name: Invalid value: "b": field is immutable',
        'metadata.namespace: Invalid value: "e": field is immutable',
        'metadata.uid: Invalid value: "u2": field is immutable',
    ]


def test_update_needs_resource_version_and_keeps_generation() -> None:
    errs = validate_object_meta_update(updated(resourceVersion="", generation=1), OLD)
    assert messages(errs) == [
        'metadata.resourceVersion: Invalid value: "": must be specified for an update',
        "metadata.generation: Invalid value: 1: must not be decremented",
    ]


def test_no_new_finalizers_once_deleting() -> None:
    old = updated(deletionTimestamp="2024-01-02T00:00:00Z", finalizers=["example.com/a"])
    removed = updated(deletionTimestamp="2024-01-02T00:00:00Z")
    assert validate_object_meta_update(removed, old) == []
    added = updated(
        deletionTimestamp="2024-01-02T00:00:00Z", finalizers=["example.com/a", "example.com/b"]
    )
    assert messages(validate_object_meta_update(added, old)) == [
        "metadata.finalizers: Forbidden: no new finalizers can be added if the object is being "
        'deleted, found new finalizers []string{"example.com/b"}'
    ]
    # Before deletion, adding is fine.
    assert validate_object_meta_update(updated(finalizers=["example.com/b"]), OLD) == []


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=12,
)
META_KEYS = st.sampled_from(
    [
        "name",
        "namespace",
        "generateName",
        "labels",
        "annotations",
        "finalizers",
        "ownerReferences",
        "managedFields",
        "generation",
        "deletionTimestamp",
        "resourceVersion",
    ]
)


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(META_KEYS, JSON), st.dictionaries(META_KEYS, JSON), st.booleans())
def test_garbage_metadata_gives_field_errors_not_exceptions(
    new: dict[str, Any], old: dict[str, Any], namespaced: bool
) -> None:
    validate_object_meta({"metadata": new}, namespaced=namespaced)
    validate_object_meta_update({"metadata": new}, {"metadata": old})


@pytest.mark.parametrize("garbage", [None, "x", [1], {"metadata": "x"}, {"metadata": [1]}])
def test_garbage_objects(garbage: Any) -> None:
    assert validate_object_meta(garbage, namespaced=True)


def test_path_segment_names() -> None:
    assert is_path_segment_name("a.b") == []
    assert is_path_segment_name("..") == ["may not be '..'"]
    assert is_path_segment_name("a/b%") == ["may not contain '/'", "may not contain '%'"]
    errs = validate_object_meta(obj(name="a/b"), namespaced=False, name_rule=is_path_segment_name)
    assert messages(errs) == ["metadata.name: Invalid value: \"a/b\": may not contain '/'"]
