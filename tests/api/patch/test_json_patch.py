"""JSON patch: RFC 6902 operations, evanphx/json-patch v4 quirks, kube-apiserver's statuses."""

from __future__ import annotations

from typing import Any

import pytest

from pinnace.api.patch import MAX_JSON_PATCH_OPERATIONS, apply_json_patch
from pinnace.api.status import StatusError

DOC = {"metadata": {"name": "web", "labels": {"app": "web"}}, "spec": {"args": ["a", "b"]}}


@pytest.mark.parametrize(
    ("ops", "expected"),
    [
        (
            [{"op": "add", "path": "/metadata/labels/tier", "value": "fe"}],
            {"metadata": {"name": "web", "labels": {"app": "web", "tier": "fe"}}},
        ),
        (
            [{"op": "add", "path": "/spec/args/1", "value": "x"}],
            {"spec": {"args": ["a", "x", "b"]}},
        ),
        (
            [{"op": "add", "path": "/spec/args/-", "value": "c"}],
            {"spec": {"args": ["a", "b", "c"]}},
        ),
        (
            [{"op": "add", "path": "/spec/args/-1", "value": "c"}],
            {"spec": {"args": ["a", "b", "c"]}},
        ),
        ([{"op": "remove", "path": "/spec/args/0"}], {"spec": {"args": ["b"]}}),
        ([{"op": "remove", "path": "/spec/args/-1"}], {"spec": {"args": ["a"]}}),
        ([{"op": "replace", "path": "/spec/args/1", "value": "z"}], {"spec": {"args": ["a", "z"]}}),
        (
            [{"op": "move", "from": "/spec/args/0", "path": "/spec/args/-"}],
            {"spec": {"args": ["b", "a"]}},
        ),
        (
            [{"op": "copy", "from": "/metadata/name", "path": "/metadata/labels/name"}],
            {"metadata": {"name": "web", "labels": {"app": "web", "name": "web"}}},
        ),
        ([{"op": "test", "path": "/spec/args/0", "value": "a"}], {}),
        ([{"op": "test", "path": "/spec/missing", "value": None}], {}),
        # v4 quirk: replace of a missing object member adds it.
        (
            [{"op": "replace", "path": "/spec/paused", "value": True}],
            {"spec": {"args": ["a", "b"], "paused": True}},
        ),
        (
            [{"op": "add", "path": "/metadata/labels/a~1b", "value": "1"}],
            {"metadata": {"name": "web", "labels": {"app": "web", "a/b": "1"}}},
        ),
    ],
)
def test_operations(ops: list[dict[str, Any]], expected: dict[str, Any]) -> None:
    patched = apply_json_patch(DOC, ops)
    assert patched == {**DOC, **expected}


def test_the_input_is_left_alone() -> None:
    apply_json_patch(DOC, [{"op": "remove", "path": "/spec"}])
    assert DOC["spec"] == {"args": ["a", "b"]}


@pytest.mark.parametrize(
    "op",
    [
        {"op": "test", "path": "/spec/args/0", "value": "b"},
        {"op": "test", "path": "/metadata/name", "value": 1},
        {"op": "remove", "path": "/spec/missing"},
        {"op": "remove", "path": "/spec/args/2"},
        {"op": "replace", "path": "/spec/args/5", "value": 1},
        {"op": "add", "path": "/nothing/here", "value": 1},
        {"op": "add", "path": "/spec/args/3", "value": 1},
        {"op": "add", "path": "", "value": {}},
        {"op": "move", "from": "/spec/nope", "path": "/spec/x"},
        {"op": "jump", "path": "/spec"},
        {"op": "add", "value": 1},
    ],
)
def test_an_operation_that_does_not_apply_is_the_generic_422(op: dict[str, Any]) -> None:
    with pytest.raises(StatusError) as e:
        apply_json_patch(DOC, [op])
    assert (e.value.code, e.value.reason, e.value.message) == (
        422,
        "Invalid",
        "the server rejected our request due to an error in our request",
    )


def test_numbers_compare_by_their_json_text() -> None:
    with pytest.raises(StatusError):
        apply_json_patch({"a": 1}, [{"op": "test", "path": "/a", "value": 1.0}])
    with pytest.raises(StatusError):
        apply_json_patch({"a": True}, [{"op": "test", "path": "/a", "value": 1}])


@pytest.mark.parametrize(
    ("ops", "message"),
    [
        ({"op": "add"}, "json: cannot unmarshal object into Go value of type jsonpatch.Patch"),
        (["add"], "json: cannot unmarshal string into Go value of type jsonpatch.Operation"),
    ],
)
def test_a_body_that_is_not_a_list_of_operations_is_a_bad_request(ops: Any, message: str) -> None:
    with pytest.raises(StatusError) as e:
        apply_json_patch(DOC, ops)
    assert (e.value.code, e.value.message) == (400, message)


def test_more_than_10000_operations_is_too_large() -> None:
    ops = [{"op": "test", "path": "/metadata/name", "value": "web"}] * (
        MAX_JSON_PATCH_OPERATIONS + 1
    )
    with pytest.raises(StatusError) as e:
        apply_json_patch(DOC, ops)
    assert (e.value.code, e.value.reason, e.value.message) == (
        413,
        "RequestEntityTooLarge",
        "Request entity too large: The allowed maximum operations in a JSON patch is 10000, "
        "got 10001",
    )
    assert apply_json_patch(DOC, ops[:-1]) == DOC


def test_raw_bytes_are_decoded() -> None:
    assert apply_json_patch({"a": 1}, b'[{"op":"replace","path":"/a","value":2}]') == {"a": 2}
