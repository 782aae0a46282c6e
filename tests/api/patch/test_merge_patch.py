"""JSON merge patch: the RFC 7386 appendix A vectors, and kube-apiserver's error statuses."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pinnace.api.patch import apply_json_merge_patch, create_json_merge_patch
from pinnace.api.status import StatusError

# RFC 7386 appendix A, with each target wrapped in an object (the API only patches objects).
RFC_VECTORS = [
    ({"a": "b"}, {"a": "c"}, {"a": "c"}),
    ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
    ({"a": "b"}, {"a": None}, {}),
    ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
    ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
    ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
    ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
    ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
    ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
    ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
]


@pytest.mark.parametrize(("target", "patch", "expected"), RFC_VECTORS)
def test_rfc_7386_examples(target: dict, patch: dict, expected: dict) -> None:
    assert apply_json_merge_patch(target, patch) == expected


def test_labels_change_and_removal_leave_the_input_alone() -> None:
    live = {"metadata": {"name": "web", "labels": {"app": "web", "tier": "fe"}}}
    patched = apply_json_merge_patch(live, {"metadata": {"labels": {"tier": None, "v": "2"}}})
    assert patched == {"metadata": {"name": "web", "labels": {"app": "web", "v": "2"}}}
    assert live["metadata"]["labels"] == {"app": "web", "tier": "fe"}


def test_lists_are_replaced_whole() -> None:
    live = {"spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b"}]}}
    patched = apply_json_merge_patch(live, {"spec": {"containers": [{"name": "a", "image": "y"}]}})
    assert patched["spec"]["containers"] == [{"name": "a", "image": "y"}]


def test_nulls_inside_inserted_arrays_are_pruned_like_evanphx() -> None:
    patched = apply_json_merge_patch({}, {"a": [{"b": None, "c": 1}]})
    assert patched == {"a": [{"c": 1}]}


def test_an_array_replacing_an_object_keeps_its_nulls_like_evanphx() -> None:
    # merge(): a patch value that is no object replaces an object as it is, unpruned.
    patched = apply_json_merge_patch({"a": {"x": 1}}, {"a": [{"b": None, "c": 1}, None]})
    assert patched == {"a": [{"b": None, "c": 1}, None]}


def test_raw_bytes_are_decoded() -> None:
    assert apply_json_merge_patch({"a": 1}, b'{"a": 2}') == {"a": 2}


@pytest.mark.parametrize("patch", [None, 5, "x", b"null", b"3"])
def test_a_patch_that_is_not_an_object_is_a_bad_request(patch: Any) -> None:
    with pytest.raises(StatusError) as e:
        apply_json_merge_patch({"a": 1}, patch)
    assert (e.value.code, e.value.reason, e.value.message) == (
        400,
        "BadRequest",
        "Invalid JSON Patch",
    )


def test_an_array_patch_fails_to_decode_as_the_object() -> None:
    with pytest.raises(StatusError) as e:
        apply_json_merge_patch({"a": 1}, [1])
    assert e.value.code == 422
    assert e.value.message.startswith(' "" is invalid: patch: Invalid value: "[1]": ')


def test_malformed_bytes_are_a_bad_request() -> None:
    with pytest.raises(StatusError) as e:
        apply_json_merge_patch({}, b"{")
    assert e.value.code == 400


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=3),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=2), inner, max_size=3)
    ),
    max_leaves=10,
)
documents = st.dictionaries(
    st.text(max_size=2),
    json_values.filter(lambda v: v is not None),
    max_size=4,
)


def _without_null_members(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_null_members(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_null_members(v) for v in value]
    return value


@given(documents, documents)
def test_the_diff_of_two_documents_turns_one_into_the_other(a: dict, b: dict) -> None:
    # Merge patch cannot express null members, so compare documents without them.
    a, b = _without_null_members(a), _without_null_members(b)
    assert apply_json_merge_patch(a, create_json_merge_patch(a, b)) == b
