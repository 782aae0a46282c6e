"""A create's managedFields come from one direct walk: it must record exactly what the general
updater records for the same create (a comparison with the empty object), for any object."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pinnace.api.patch import strategies, track_update
from pinnace.api.patch.created import CreatedFields, created_fields_v1
from pinnace.api.patch.fieldpath import FieldSet
from pinnace.api.patch.managed import UNTRACKED
from pinnace.api.patch.openapi import SCALAR, Shape, kind_shape
from pinnace.api.patch.typed import compare, with_zero_structs

NOISE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-1, 2),
    st.sampled_from(["", "a", "TCP"]),
    st.just({}),
    st.just([]),
)
KEY_VALUES = st.one_of(st.sampled_from(["a", "b", "TCP"]), st.integers(0, 2))
MAX_DEPTH = 5


@cache
def values(shape: Shape, depth: int = 0) -> st.SearchStrategy[Any]:
    """Values of roughly this shape: mostly fitting, with wrong types, nulls, empties,
    undeclared fields, items without keys and duplicate keys mixed in."""
    if shape.kind == "scalar" or depth >= MAX_DEPTH:
        return NOISE
    if shape.kind == "struct":
        return NOISE | fields(shape, depth)
    element = shape.element or SCALAR
    if shape.kind == "map":
        inner = st.deferred(lambda: values(element, depth + 1))
        return NOISE | st.dictionaries(st.sampled_from(["x", "y"]), inner, max_size=2)
    if shape.relationship == "map":
        item = st.fixed_dictionaries({}, optional={k: KEY_VALUES for k in shape.keys}).flatmap(
            lambda keys: st.deferred(lambda: values(element, depth + 1)).map(
                lambda v: {**v, **keys} if isinstance(v, dict) else v
            )
        )
    elif shape.relationship == "set":
        item = KEY_VALUES | NOISE
    else:
        item = st.deferred(lambda: values(element, depth + 1))
    return NOISE | st.lists(item, max_size=3)


def fields(shape: Shape, depth: int = 0) -> st.SearchStrategy[dict[str, Any]]:
    """Objects of a struct's shape: some of its fields, and one it does not declare."""
    names = [*sorted(shape.fields()), "undeclared"]
    return st.lists(st.sampled_from(names), max_size=4, unique=True).flatmap(
        lambda chosen: st.fixed_dictionaries(
            {
                n: st.deferred(lambda n=n: values(shape.child(n) or SCALAR, depth + 1))
                for n in chosen
            }
        )
    )


@st.composite
def objects(draw: st.DrawFn) -> tuple[Shape, dict[str, Any]]:
    api_version, kind = draw(st.sampled_from(sorted(strategies.ROOTS)))
    shape = kind_shape(kind, api_version)
    assert shape is not None
    # Drawn as a struct rather than filtered out of all values: most of those are not objects,
    # and filtering them out failed Hypothesis' health check now and then.
    body = draw(fields(shape))
    return shape, {"apiVersion": api_version, "kind": kind, **body}


IGNORED = st.sampled_from([FieldSet(), FieldSet.of(("f:status",)), FieldSet.of(("f:spec",))])


def by_the_general_comparison(obj: dict[str, Any], shape: Shape, ignored: FieldSet) -> Any:
    found = compare(with_zero_structs({}, shape), with_zero_structs(obj, shape), shape).exclude(
        ignored
    )
    return found.added.union(found.modified).difference(UNTRACKED).to_fields_v1()


@settings(max_examples=400, deadline=None)
@given(case=objects(), ignored=IGNORED)
def test_the_direct_walk_finds_what_the_general_comparison_finds(
    case: tuple[Shape, dict[str, Any]], ignored: FieldSet
) -> None:
    shape, obj = case
    expected = by_the_general_comparison(obj, shape, ignored)
    got = created_fields_v1(obj, shape, ignored, UNTRACKED)
    # Key order too: it is the order the entry is stored and served in.
    assert json.dumps(got) == json.dumps(expected)


def deployment() -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"app": "web"}, "annotations": {}},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [
                        {"name": "a", "image": "nginx", "ports": [{"containerPort": 80}]},
                        {"name": "a", "image": "duplicate"},
                        {"image": "no name"},
                    ],
                    "tolerations": [{"key": "k", "operator": "Exists"}],
                },
            },
        },
        "status": {"replicas": 2},
    }


@pytest.mark.parametrize("subresource", ["", "status"])
def test_a_create_records_the_same_entry_as_an_update_from_nothing(subresource: str) -> None:
    """A create sending managedFields of its own goes through the general updater; one that
    sends another manager's entry for a field it does not set gets the same entry for itself."""
    other = {
        "manager": "other",
        "operation": "Update",
        "apiVersion": "apps/v1",
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:spec": {"f:paused": {}}},
    }
    plain = track_update(None, deployment(), manager="m", subresource=subresource, now="t")
    sent = deployment()
    sent["metadata"]["managedFields"] = [other]
    general = track_update(None, sent, manager="m", subresource=subresource, now="t")
    mine = [e for e in general["metadata"]["managedFields"] if e.get("manager") == "m"]
    assert json.dumps(plain["metadata"]["managedFields"]) == json.dumps(mine)


def test_tracking_leaves_the_objects_it_is_given_as_they_were() -> None:
    old = track_update(None, deployment(), manager="m", now="t")
    snapshot = json.dumps(old)
    new = json.loads(snapshot)
    new["spec"]["replicas"] = 3
    sent = json.dumps(new)
    updated = track_update(old, new, manager="n", now="u")
    assert json.dumps(old) == snapshot
    assert json.dumps(new) == sent
    assert updated["metadata"] is not new["metadata"]
    assert [e["manager"] for e in updated["metadata"]["managedFields"]] == ["m", "n"]


def _restructured(value: Any, draw: st.DrawFn) -> Any:
    """`value` with each scalar outside lists replaced by another of any type (a null by a
    null): what `CreatedFields` takes for the same structure."""
    if isinstance(value, dict):
        return {k: _restructured(v, draw) for k, v in value.items()}
    if isinstance(value, list) or value is None:
        return value
    return draw(st.one_of(st.booleans(), st.integers(-1, 2), st.sampled_from(["", "a", "TCP"])))


@settings(max_examples=300, deadline=None)
@given(case=objects(), ignored=IGNORED, data=st.data())
def test_remembered_fields_are_those_of_the_object_itself(
    case: tuple[Shape, dict[str, Any]], ignored: FieldSet, data: st.DataObject
) -> None:
    """An object of the structure of one seen before gets that one's fields, which are its
    own; each answer is a FieldsV1 of its own."""
    shape, first = case
    second = _restructured(first, data.draw)
    created = CreatedFields(ignored, UNTRACKED)
    seen = created(first, shape)
    again = created(second, shape)
    expected = created_fields_v1(second, shape, ignored, UNTRACKED)
    assert json.dumps(again) == json.dumps(expected)
    assert json.dumps(seen) == json.dumps(created_fields_v1(first, shape, ignored, UNTRACKED))
    seen["f:x"] = {}
    assert "f:x" not in created(first, shape)


def test_objects_of_one_template_with_other_list_items_set_their_own_fields() -> None:
    first, second = deployment(), deployment()
    second["spec"]["template"]["spec"]["containers"][0]["name"] = "b"
    shape = kind_shape("Deployment")
    assert shape is not None
    created = CreatedFields(FieldSet.of(("f:status",)), UNTRACKED)
    created(first, shape)
    got = created(second, shape)
    assert 'k:{"name":"b"}' in got["f:spec"]["f:template"]["f:spec"]["f:containers"]


def test_a_null_and_a_value_where_the_empty_object_holds_a_null_set_different_fields() -> None:
    shape = kind_shape("Pod")
    assert shape is not None
    created = CreatedFields(FieldSet.of(("f:status",)), UNTRACKED)
    null = created({"apiVersion": "v1", "kind": "Pod", "spec": {"containers": None}}, shape)
    value = created({"apiVersion": "v1", "kind": "Pod", "spec": {"containers": "x"}}, shape)
    assert (null, value) == ({}, {"f:spec": {"f:containers": {}}})
