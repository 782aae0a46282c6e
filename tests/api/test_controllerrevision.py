"""ControllerRevision (apps/v1) through the in-process API server: validation with field
paths and 422s (v1.32), immutable data, a revision that may change, and its table."""

from __future__ import annotations

from typing import Any

import pytest

from pinnace.api import catalog
from pinnace.api.status import StatusError
from pinnace.api.tables import to_table
from pinnace.clock.rfc3339 import parse_time

REVISIONS = catalog.kind("apps", "controllerrevisions")


def revision(name: str = "agent-5d8f7c9b6", **fields: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": {"name": name, "namespace": "default"},
        **fields,
    }


def test_a_revision_is_stored_with_its_data_and_number(api: Any) -> None:
    data = {"spec": {"template": {"$patch": "replace", "spec": {"containers": []}}}}
    created = api.call(api.server.create, REVISIONS, "default", revision(data=data, revision=3))
    obj = created.obj
    assert (obj["data"], obj["revision"]) == (data, 3)
    assert obj["metadata"]["uid"] and "generation" not in obj["metadata"]


def test_a_missing_revision_number_is_0(api: Any) -> None:
    created = api.call(api.server.create, REVISIONS, "default", revision(data={"a": 1})).obj
    assert created["revision"] == 0


def test_missing_data_negative_revision_and_bad_name_are_422(api: Any) -> None:
    causes = api.invalid_causes(
        api.server.create, REVISIONS, "default", revision("Bad_Name", revision=-1)
    )
    assert causes == [
        'metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain must consist '
        "of lower case alphanumeric characters, '-' or '.', and must start and end with an "
        "alphanumeric character (e.g. 'example.com', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
        "data: Required value: data is mandatory",
        "revision: Invalid value: -1: must be greater than or equal to 0",
    ]
    with pytest.raises(StatusError) as e:
        api.call(api.server.create, REVISIONS, "default", revision(data=None))
    assert e.value.message == (
        'ControllerRevision.apps "agent-5d8f7c9b6" is invalid: data: Required value: '
        "data is mandatory"
    )


def test_data_is_immutable_but_the_revision_number_may_change(api: Any) -> None:
    created = api.call(
        api.server.create, REVISIONS, "default", revision(data={"a": 1}, revision=1)
    ).obj
    renumbered = {**created, "revision": 4}
    updated = api.call(
        api.server.update, REVISIONS, "default", created["metadata"]["name"], renumbered
    )
    assert updated.obj["revision"] == 4
    changed = {**updated.obj, "data": {"a": 2}}
    causes = api.invalid_causes(
        api.server.update, REVISIONS, "default", created["metadata"]["name"], changed
    )
    assert causes == ['data: Invalid value: {"a":2}: field is immutable']


def test_the_table_names_the_controller_and_revision() -> None:
    owner = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "name": "agent",
        "uid": "u",
        "controller": True,
    }
    obj = revision(data={}, revision=2)
    obj["metadata"].update(creationTimestamp="2025-01-01T00:00:00Z", ownerReferences=[owner])
    table = to_table(REVISIONS, [obj], now=parse_time("2025-01-01T00:05:00Z"), list_meta={})
    assert [c["name"] for c in table["columnDefinitions"]] == [
        "Name",
        "Controller",
        "Revision",
        "Age",
    ]
    assert table["rows"][0]["cells"] == ["agent-5d8f7c9b6", "daemonset.apps/agent", 2, "5m"]
    del obj["metadata"]["ownerReferences"]
    orphan = to_table(REVISIONS, [obj], now=parse_time("2025-01-01T00:05:00Z"), list_meta={})
    assert orphan["rows"][0]["cells"][1] == "<none>"
