"""Server-side apply of custom resources on the virtual clock, as apiextensions-apiserver v1.32
does it with the type converter of the served version's structural schema: managedFields at
the resource's apiVersion, conflicts between managers, list maps merged by key, a field left
out of the applied configuration removed, and the status subresource."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
from tests.apiextensions.test_crds import SCHEMA, crontab_crd
from tests.support import SimulatedCluster

from pinnace.api import catalog
from pinnace.api.kind import Kind
from pinnace.api.objects import Object
from pinnace.api.options import WriteOptions
from pinnace.api.patch import PatchType
from pinnace.api.status import StatusError
from pinnace.cluster import ClusterOptions

CRDS = catalog.kind("apiextensions.k8s.io", "customresourcedefinitions")


def _schema() -> dict[str, Any]:
    schema = copy.deepcopy(SCHEMA)
    spec = schema["properties"]["spec"]["properties"]
    spec["ports"] = {
        "type": "array",
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["name"],
        "items": {
            "type": "object",
            "required": ["name"],
            "properties": {"name": {"type": "string"}, "port": {"type": "integer"}},
        },
    }
    spec["labels"] = {"type": "object", "additionalProperties": {"type": "string"}}
    return schema


@pytest.fixture
def cluster() -> Iterator[SimulatedCluster]:
    c = SimulatedCluster(ClusterOptions(scheduler=False, controllers=False))
    try:
        body = crontab_crd()
        body["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = _schema()
        c.run(c.client.create(CRDS, "", body))
        c.wait(1)
        yield c
    finally:
        c.close()


def _kind(c: SimulatedCluster) -> Kind:
    kind = c.server.kinds.by_resource("stable.example.com", "crontabs")
    assert kind is not None
    return kind


def _apply(
    c: SimulatedCluster, manager: str, spec: Object, *, force: bool = False, subresource: str = ""
) -> Object:
    body: Object = {
        "apiVersion": "stable.example.com/v1",
        "kind": "CronTab",
        "metadata": {"name": "a", "namespace": "default"},
    }
    body["status" if subresource else "spec"] = spec
    options = WriteOptions(field_manager=manager, force=force)
    patch = c.server.patch(_kind(c), "default", "a", PatchType.APPLY, body, options, subresource)
    return c.run(patch).obj


def _managers(obj: Object) -> dict[str, Object]:
    return {e["manager"]: e for e in obj["metadata"]["managedFields"]}


def test_apply_creates_and_records_the_manager_at_the_resource_version(
    cluster: SimulatedCluster,
) -> None:
    obj = _apply(cluster, "argocd", {"cronSpec": "* * * * */5", "image": "cron:1"})
    assert obj["spec"] == {"cronSpec": "* * * * */5", "image": "cron:1", "replicas": 1}
    entry = _managers(obj)["argocd"]
    assert (entry["operation"], entry["apiVersion"]) == ("Apply", "stable.example.com/v1")
    assert entry["fieldsV1"] == {"f:spec": {"f:cronSpec": {}, "f:image": {}}}


def test_a_second_manager_conflicts_until_it_forces(cluster: SimulatedCluster) -> None:
    _apply(cluster, "argocd", {"cronSpec": "* * * * */5", "image": "cron:1"})
    with pytest.raises(StatusError) as e:
        _apply(cluster, "flux", {"cronSpec": "* * * * */5", "image": "cron:2"})
    assert e.value.code == 409
    assert e.value.message == 'Apply failed with 1 conflict: conflict with "argocd": .spec.image'

    obj = _apply(cluster, "flux", {"cronSpec": "* * * * */5", "image": "cron:2"}, force=True)
    assert obj["spec"]["image"] == "cron:2"
    managers = _managers(obj)
    assert managers["flux"]["fieldsV1"] == {"f:spec": {"f:cronSpec": {}, "f:image": {}}}
    assert managers["argocd"]["fieldsV1"] == {"f:spec": {"f:cronSpec": {}}}


def test_a_list_map_merges_by_key_and_maps_by_entry(cluster: SimulatedCluster) -> None:
    first = {"ports": [{"name": "http", "port": 80}], "labels": {"a": "1"}}
    _apply(cluster, "one", {"cronSpec": "* * * * */5", **first})
    obj = _apply(cluster, "two", {"ports": [{"name": "https", "port": 443}], "labels": {"b": "2"}})
    assert obj["spec"]["ports"] == [{"name": "http", "port": 80}, {"name": "https", "port": 443}]
    assert obj["spec"]["labels"] == {"a": "1", "b": "2"}
    assert _managers(obj)["two"]["fieldsV1"] == {
        "f:spec": {
            "f:labels": {"f:b": {}},
            "f:ports": {'k:{"name":"https"}': {".": {}, "f:name": {}, "f:port": {}}},
        }
    }


def test_a_field_left_out_of_the_applied_configuration_is_removed(
    cluster: SimulatedCluster,
) -> None:
    ports = [{"name": "http", "port": 80}, {"name": "https", "port": 443}]
    _apply(cluster, "argocd", {"cronSpec": "* * * * */5", "image": "cron:1", "ports": ports})
    obj = _apply(cluster, "argocd", {"cronSpec": "* * * * */5", "ports": ports[:1]})
    assert obj["spec"] == {"cronSpec": "* * * * */5", "ports": ports[:1], "replicas": 1}


def test_an_atomic_list_is_replaced_and_owned_whole(cluster: SimulatedCluster) -> None:
    _apply(cluster, "one", {"cronSpec": "* * * * */5", "args": ["a"]})
    with pytest.raises(StatusError) as e:
        _apply(cluster, "two", {"args": ["b"]})
    assert e.value.message == 'Apply failed with 1 conflict: conflict with "one": .spec.args'


def test_the_status_subresource_applies(cluster: SimulatedCluster) -> None:
    _apply(cluster, "argocd", {"cronSpec": "* * * * */5"})
    obj = _apply(cluster, "controller", {"phase": "Running"}, subresource="status")
    assert obj["status"] == {"phase": "Running"}
    entry = _managers(obj)["controller"]
    assert (entry["subresource"], entry["fieldsV1"]) == ("status", {"f:status": {"f:phase": {}}})


def test_fields_kept_by_preserve_unknown_fields_are_owned_one_by_one(
    cluster: SimulatedCluster,
) -> None:
    _apply(cluster, "one", {"cronSpec": "* * * * */5", "extra": {"a": {"x": 1}}})
    obj = _apply(cluster, "two", {"extra": {"b": 2}})
    assert obj["spec"]["extra"] == {"a": {"x": 1}, "b": 2}
    assert _managers(obj)["two"]["fieldsV1"] == {"f:spec": {"f:extra": {"f:b": {}}}}
    with pytest.raises(StatusError) as e:
        _apply(cluster, "two", {"extra": {"a": {"x": 2}}})
    assert e.value.message == 'Apply failed with 1 conflict: conflict with "one": .spec.extra.a'


def test_a_schema_that_keeps_unknown_fields_at_its_root(cluster: SimulatedCluster) -> None:
    body = crontab_crd(
        names={"plural": "things", "kind": "Thing"},
        versions=[
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "x-kubernetes-preserve-unknown-fields": True,
                    }
                },
            }
        ],
    )
    body["metadata"]["name"] = "things.stable.example.com"
    cluster.run(cluster.client.create(CRDS, "", body))
    cluster.wait(1)
    kind = cluster.server.kinds.by_resource("stable.example.com", "things")
    assert kind is not None
    thing = {"apiVersion": "stable.example.com/v1", "kind": "Thing", "metadata": {"name": "t"}}
    options = WriteOptions(field_manager="flux")
    applied = {**thing, "spec": {"size": 3}}
    patch = cluster.server.patch(kind, "default", "t", PatchType.APPLY, applied, options)
    obj = cluster.run(patch).obj
    assert obj["spec"] == {"size": 3}
    assert _managers(obj)["flux"]["operation"] == "Apply"


def test_apply_at_a_second_served_version(cluster: SimulatedCluster) -> None:
    body = crontab_crd(names={"plural": "betas", "kind": "Beta"})
    body["metadata"]["name"] = "betas.stable.example.com"
    v1 = body["spec"]["versions"][0]
    body["spec"]["versions"] = [{**copy.deepcopy(v1), "name": "v1beta1", "storage": False}, v1]
    cluster.run(cluster.client.create(CRDS, "", body))
    cluster.wait(1)
    found = cluster.server.kinds.at_version("stable.example.com", "v1beta1", "betas")
    assert found is not None and found[1] is not None
    stored, conversion = found
    applied = {
        "apiVersion": "stable.example.com/v1beta1",
        "kind": "Beta",
        "metadata": {"name": "b", "namespace": "default"},
        "spec": {"cronSpec": "* * * * */5"},
    }
    options = WriteOptions(field_manager="flux")
    patch = PatchType.APPLY
    obj = cluster.run(
        cluster.server.patch(stored, "default", "b", patch, applied, options, "", conversion)
    ).obj
    assert obj["apiVersion"] == "stable.example.com/v1"  # as stored
    entry = _managers(obj)["flux"]
    assert entry["apiVersion"] == "stable.example.com/v1beta1"
    assert entry["fieldsV1"] == {"f:spec": {"f:cronSpec": {}}}
