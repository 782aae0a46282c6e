"""CustomResourceDefinitions and their custom resources on the virtual clock: a CRD is
validated, named and established as apiextensions-apiserver v1.32 does it, its kind is served
with the schema's validation, pruning and defaults, and deleting it deletes its resources."""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest
from tests.http.test_app import call
from tests.support import SimulatedCluster

from pinnace.api import catalog
from pinnace.api.kind import Kind
from pinnace.api.objects import Object
from pinnace.api.options import ListOptions, WriteOptions
from pinnace.api.patch import PatchType
from pinnace.api.status import StatusError
from pinnace.api.tables import to_table
from pinnace.cluster import ClusterOptions

CRDS = catalog.kind("apiextensions.k8s.io", "customresourcedefinitions")
NAMESPACES = catalog.kind("", "namespaces")
NAME = "crontabs.stable.example.com"

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "required": ["cronSpec"],
            "properties": {
                "cronSpec": {
                    "type": "string",
                    "pattern": r"^(\d+|\*)(/\d+)?(\s+(\d+|\*)(/\d+)?){4}$",
                },
                "image": {"type": "string", "minLength": 3, "maxLength": 20},
                "replicas": {"type": "integer", "minimum": 1, "maximum": 10, "default": 1},
                "policy": {"type": "string", "enum": ["Allow", "Forbid"]},
                "port": {"x-kubernetes-int-or-string": True},
                "note": {"type": "string", "nullable": True},
                "args": {"type": "array", "maxItems": 2, "items": {"type": "string"}},
                "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            },
        },
        "status": {"type": "object", "properties": {"phase": {"type": "string"}}},
    },
}


def crontab_crd(**spec: Any) -> Object:
    body: Object = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": NAME},
        "spec": {
            "group": "stable.example.com",
            "scope": "Namespaced",
            "names": {"plural": "crontabs", "kind": "CronTab", "shortNames": ["ct"]},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": copy.deepcopy(SCHEMA)},
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": [
                        {"name": "Spec", "type": "string", "jsonPath": ".spec.cronSpec"},
                        {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
                    ],
                }
            ],
        },
    }
    body["spec"].update(spec)
    return body


def crontab(name: str = "a", **spec: Any) -> Object:
    return {
        "apiVersion": "stable.example.com/v1",
        "kind": "CronTab",
        "metadata": {"name": name},
        "spec": {"cronSpec": "* * * * */5", **spec},
    }


@pytest.fixture
def cluster() -> Iterator[SimulatedCluster]:
    c = SimulatedCluster(ClusterOptions(scheduler=False, controllers=False))
    try:
        yield c
    finally:
        c.close()


def established(c: SimulatedCluster, body: Object | None = None) -> Kind:
    c.run(c.client.create(CRDS, "", body or crontab_crd()))
    c.wait(1)
    kind = c.server.kinds.by_resource("stable.example.com", "crontabs")
    assert kind is not None
    return kind


def following(c: SimulatedCluster, kind: Kind) -> asyncio.Task[list[str]]:
    """A watch of the kind's resources in "default": the types of its events once it ends."""

    async def follow() -> list[str]:
        return [event["type"] async for event in c.server.watch(kind, "default")]

    return c.loop.create_task(follow())


def invalid(c: SimulatedCluster, kind: Kind, body: Object) -> str:
    with pytest.raises(StatusError) as e:
        c.run(c.server.create(kind, "default" if kind.namespaced else "", body))
    assert e.value.code == 422, e.value.message
    return e.value.message


# --- the CRD ----------------------------------------------------------------------------------


def test_a_crd_is_named_and_established(cluster: SimulatedCluster) -> None:
    established(cluster)
    crd = cluster.run(cluster.client.get(CRDS, "", NAME))
    status = crd["status"]
    assert status["acceptedNames"] == {
        "plural": "crontabs",
        "singular": "crontab",
        "kind": "CronTab",
        "listKind": "CronTabList",
        "shortNames": ["ct"],
    }
    assert status["storedVersions"] == ["v1"]
    conditions = {c["type"]: (c["status"], c["reason"]) for c in status["conditions"]}
    assert conditions == {
        "NamesAccepted": ("True", "NoConflicts"),
        "Established": ("True", "InitialNamesAccepted"),
    }
    assert crd["spec"]["conversion"] == {"strategy": "None"}
    assert crd["metadata"]["generation"] == 1


def test_a_name_another_crd_took_is_not_accepted(cluster: SimulatedCluster) -> None:
    established(cluster)
    other = crontab_crd(names={"plural": "crontabs2", "kind": "CronTab2", "shortNames": ["ct"]})
    other["metadata"]["name"] = "crontabs2.stable.example.com"
    cluster.run(cluster.client.create(CRDS, "", other))
    cluster.wait(1)
    crd = cluster.run(cluster.client.get(CRDS, "", "crontabs2.stable.example.com"))
    conditions = {c["type"]: c for c in crd["status"]["conditions"]}
    assert conditions["NamesAccepted"]["status"] == "False"
    assert conditions["NamesAccepted"]["reason"] == "ShortNamesConflict"
    assert conditions["NamesAccepted"]["message"] == '"ct" is already in use'
    assert conditions["Established"]["reason"] == "NotAccepted"
    assert cluster.server.kinds.by_resource("stable.example.com", "crontabs2") is None


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"metadata": {"name": "crontabs.example.com"}},
            'metadata.name: Invalid value: "crontabs.example.com": '
            'must be spec.names.plural+"."+spec.group',
        ),
        ({"spec": {"scope": "Global"}}, 'spec.scope: Unsupported value: "Global"'),
        (
            {"spec": {"group": "example"}},
            'spec.group: Invalid value: "example": should be a domain with at least one dot',
        ),
        (
            {"spec": {"versions": [{"name": "v1", "served": True, "storage": False}]}},
            "must have exactly one version marked as storage version",
        ),
        (
            {"spec": {"versions": [{"name": "v1", "served": True, "storage": True}]}},
            "spec.versions[0].schema.openAPIV3Schema: Required value: schemas are required",
        ),
        (
            {
                "spec": {
                    "versions": [
                        {
                            "name": "v1",
                            "served": True,
                            "storage": True,
                            "schema": {
                                "openAPIV3Schema": {
                                    "type": "object",
                                    "properties": {"spec": {"properties": {}}},
                                }
                            },
                        }
                    ]
                }
            },
            "spec.versions[0].schema.openAPIV3Schema.properties[spec].type: Required value: "
            "must not be empty for specified object fields",
        ),
        (
            {"metadata": {"name": "crontabs.stable.k8s.io"}, "spec": {"group": "stable.k8s.io"}},
            "metadata.annotations[api-approved.kubernetes.io]: Required value: protected groups "
            'must have approval annotation "api-approved.kubernetes.io", see '
            "https://github.com/kubernetes/enhancements/pull/1111",
        ),
        (
            {
                "metadata": {
                    "name": "crontabs.kubernetes.io",
                    "annotations": {"api-approved.kubernetes.io": "bad value"},
                },
                "spec": {"group": "kubernetes.io"},
            },
            'metadata.annotations[api-approved.kubernetes.io]: Invalid value: "bad value": '
            'protected groups must have approval annotation "api-approved.kubernetes.io" with '
            'either a URL or a reason starting with "unapproved"',
        ),
        (
            {"pattern": "+"},
            "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[image].pattern: "
            'Invalid value: "+": must be a valid regular expression, but isn\'t: ',
        ),
        (
            {"pattern": "(?<=a)b"},  # Go's regexp (RE2) has no lookbehind; Python's re has
            "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[image].pattern: "
            'Invalid value: "(?<=a)b": must be a valid regular expression, but isn\'t: ',
        ),
        (
            {"spec": {"conversion": {"strategy": "Webhook"}}},
            "spec.conversion.webhook: Required value: required when strategy is set to Webhook",
        ),
        (
            {"columns": [{"name": "X", "type": "text", "jsonPath": ".spec.x"}]},
            (
                'spec.versions[0].additionalPrinterColumns[0].type: Invalid value: "text": '
                "must be one of boolean,date,integer,number,string"
            ),
        ),
    ],
)
def test_crd_validation(cluster: SimulatedCluster, change: Object, message: str) -> None:
    body = crontab_crd()
    body["metadata"].update(change.get("metadata", {}))
    body["spec"].update(change.get("spec", {}))
    if "columns" in change:
        body["spec"]["versions"][0]["additionalPrinterColumns"] = change["columns"]
    if "pattern" in change:
        schema = body["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        schema["properties"]["spec"]["properties"]["image"]["pattern"] = change["pattern"]
    assert message in invalid(cluster, CRDS, body)


@pytest.mark.parametrize(
    "approval", ["https://github.com/kubernetes/kubernetes/pull/78458", "unapproved, testing"]
)
def test_a_protected_group_with_an_approval(cluster: SimulatedCluster, approval: str) -> None:
    body = crontab_crd(group="stable.k8s.io")
    body["metadata"] = {
        "name": "crontabs.stable.k8s.io",
        "annotations": {"api-approved.kubernetes.io": approval},
    }
    cluster.run(cluster.client.create(CRDS, "", body))
    cluster.wait(1)  # named and established
    created = copy.deepcopy(cluster.run(cluster.client.get(CRDS, "", "crontabs.stable.k8s.io")))
    created["metadata"]["annotations"]["api-approved.kubernetes.io"] = "unapproved, another"
    cluster.run(cluster.client.update(CRDS, created))  # approved or bypassed: allowed
    created = copy.deepcopy(cluster.run(cluster.client.get(CRDS, "", "crontabs.stable.k8s.io")))
    del created["metadata"]["annotations"]
    with pytest.raises(StatusError) as e:
        cluster.run(cluster.client.update(CRDS, created))
    assert "protected groups must have approval annotation" in e.value.message


# --- its custom resources ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            {"replicas": "three"},
            'spec.replicas: Invalid value: "string": spec.replicas in body must be of type '
            'integer: "string"',
        ),
        (
            {"replicas": 0},
            "spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or "
            "equal to 1",
        ),
        (
            {"replicas": 11},
            "spec.replicas: Invalid value: 11: spec.replicas in body should be less than or "
            "equal to 10",
        ),
        (
            {"cronSpec": "bad"},
            'spec.cronSpec: Invalid value: "bad": spec.cronSpec in body should match',
        ),
        (
            {"image": "ab"},
            'spec.image: Invalid value: "ab": spec.image in body should be at least 3 chars long',
        ),
        ({"image": "a" * 21}, "spec.image: Too long: must have at most 20 bytes"),
        (
            {"policy": "Maybe"},
            'spec.policy: Unsupported value: "Maybe": supported values: "Allow", "Forbid"',
        ),
        (
            {"port": True},
            'spec.port: Invalid value: "boolean": spec.port in body must be of type '
            'integer,string: "boolean"',
        ),
        (
            {"args": ["a", "b", "c"]},
            "spec.args: Too many: 3: must have at most 2 items",
        ),
        (
            {"args": [1]},
            'spec.args[0]: Invalid value: "integer": spec.args[0] in body must be of type '
            'string: "integer"',
        ),
        (
            {"args": [None]},  # a field's null is dropped or defaulted, a list item's is not
            'spec.args[0]: Invalid value: "null": spec.args[0] in body must be of type string: '
            '"null"',
        ),
    ],
)
def test_custom_resource_validation(
    cluster: SimulatedCluster, spec: dict[str, Any], message: str
) -> None:
    kind = established(cluster)
    got = invalid(cluster, kind, crontab(**spec))
    assert got.startswith('CronTab.stable.example.com "a" is invalid: ')
    assert message in got


def test_a_required_field(cluster: SimulatedCluster) -> None:
    kind = established(cluster)
    body = crontab()
    del body["spec"]["cronSpec"]
    assert "spec.cronSpec: Required value" in invalid(cluster, kind, body)


def test_unknown_fields_are_pruned_and_defaults_filled_in(cluster: SimulatedCluster) -> None:
    kind = established(cluster)
    body = crontab(port="http", note=None, extra={"kept": {"deep": 1}}, unknown=1)
    body["other"] = {"x": 1}
    result = cluster.run(cluster.server.create(kind, "default", body))
    spec = result.obj["spec"]
    assert "unknown" not in spec and "other" not in result.obj
    assert spec["replicas"] == 1
    assert spec["extra"] == {"kept": {"deep": 1}}
    assert spec["note"] is None and spec["port"] == "http"
    assert sorted(result.warnings) == ['unknown field "other"', 'unknown field "spec.unknown"']


def test_nulls_where_null_is_not_allowed(cluster: SimulatedCluster) -> None:
    """As v1.32 decodes them (a Helm chart's `image: null`): a field with a default gets it,
    one without is dropped (no warning), a nullable one stays null."""
    kind = established(cluster)
    result = cluster.run(
        cluster.server.create(kind, "default", crontab(image=None, replicas=None, note=None))
    )
    spec = result.obj["spec"]
    assert "image" not in spec
    assert spec["replicas"] == 1
    assert spec["note"] is None
    assert result.warnings == []


def test_metadata_is_decoded_as_an_object_meta(cluster: SimulatedCluster) -> None:
    """Unknown metadata fields are dropped with a warning, mistyped ones are a 400, as for any
    kind (v1.32's GetObjectMetaWithOptions), rather than stored as sent."""
    kind = established(cluster)
    body = crontab()
    body["metadata"]["bogus"] = 1
    result = cluster.run(cluster.server.create(kind, "default", body))
    assert "bogus" not in result.obj["metadata"]
    assert result.warnings == ['unknown field "metadata.bogus"']
    body = crontab("b")
    body["metadata"]["uid"] = 5
    with pytest.raises(StatusError) as e:
        cluster.run(cluster.server.create(kind, "default", body))
    assert (e.value.code, e.value.message) == (
        400,
        'CronTab in version "v1" cannot be handled as a CronTab: json: cannot unmarshal number '
        "into Go struct field ObjectMeta.uid of type string",
    )


def test_generation_and_the_status_subresource(cluster: SimulatedCluster) -> None:
    kind = established(cluster)
    created = cluster.run(
        cluster.client.create(kind, "default", {**crontab(), "status": {"phase": "x"}})
    )
    assert "status" not in created and created["metadata"]["generation"] == 1
    status_write = {**created, "status": {"phase": "Running"}, "spec": {"cronSpec": "1 * * * *"}}
    status_write["metadata"] = {**created["metadata"], "labels": {"ignored": "yes"}}
    written = cluster.run(cluster.client.update_status(kind, status_write))
    assert written["status"] == {"phase": "Running"}
    assert written["spec"]["cronSpec"] == "* * * * */5"
    assert written["metadata"]["generation"] == 1
    assert "labels" not in written["metadata"]
    spec_write = {**written, "spec": {**written["spec"], "replicas": 2}}
    updated = cluster.run(cluster.client.update(kind, spec_write))
    assert updated["metadata"]["generation"] == 2
    assert updated["status"] == {"phase": "Running"}


def test_the_printer_columns(cluster: SimulatedCluster) -> None:
    kind = established(cluster)
    obj = cluster.run(cluster.client.create(kind, "default", crontab(replicas=3)))
    table = to_table(kind, [obj], now=cluster.clock.now(), list_meta={})
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Spec", "Replicas"]
    assert table["rows"][0]["cells"] == ["a", "* * * * */5", 3]


def test_without_printer_columns_the_table_has_name_and_age(cluster: SimulatedCluster) -> None:
    body = crontab_crd()
    del body["spec"]["versions"][0]["additionalPrinterColumns"]
    kind = established(cluster, body)
    obj = cluster.run(cluster.client.create(kind, "default", crontab()))
    table = to_table(kind, [obj], now=cluster.clock.now() + 5, list_meta={})
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Age"]
    assert table["rows"][0]["cells"] == ["a", "5s"]


def test_a_second_served_version_rewrites_the_api_version(cluster: SimulatedCluster) -> None:
    body = crontab_crd()
    v1 = body["spec"]["versions"][0]
    body["spec"]["versions"] = [{**copy.deepcopy(v1), "name": "v1beta1", "storage": False}, v1]
    established(cluster, body)
    found = cluster.server.kinds.at_version("stable.example.com", "v1beta1", "crontabs")
    assert found is not None
    stored, conversion = found
    assert stored.version == "v1" and conversion is not None
    assert conversion.from_stored({"apiVersion": "stable.example.com/v1"}) == {
        "apiVersion": "stable.example.com/v1beta1"
    }


# --- deletion ---------------------------------------------------------------------------------


def test_deleting_the_crd_deletes_its_resources_and_its_kind(cluster: SimulatedCluster) -> None:
    kind = established(cluster)
    cluster.run(cluster.client.create(kind, "default", crontab("a")))
    cluster.run(cluster.client.create(kind, "default", crontab("b")))
    marked = cluster.run(cluster.client.delete(CRDS, "", NAME))
    assert marked["metadata"]["finalizers"] == ["customresourcecleanup.apiextensions.k8s.io"]
    terminating = [c for c in marked["status"]["conditions"] if c["type"] == "Terminating"]
    assert terminating[0]["reason"] == "InstanceDeletionPending"
    cluster.wait(2)
    assert cluster.run(cluster.client.list(CRDS, ""))["items"] == []
    assert cluster.server.kinds.by_resource("stable.example.com", "crontabs") is None
    assert cluster.run(cluster.store.list("stable.example.com/crontabs/")).items == []


def test_deleting_the_crd_ends_the_watches_on_its_resources(cluster: SimulatedCluster) -> None:
    kind = established(cluster)
    cluster.run(cluster.client.create(kind, "default", crontab("a")))
    watch = following(cluster, kind)
    cluster.wait(1)
    assert not watch.done()
    cluster.run(cluster.client.delete(CRDS, "", NAME))
    cluster.wait(2)
    assert watch.done() and watch.result() == ["ADDED", "DELETED"]


def test_deleting_a_namespace_deletes_its_custom_resources(cluster: SimulatedCluster) -> None:
    kind = established(cluster)
    cluster.run(cluster.client.create(NAMESPACES, "", {"metadata": {"name": "team"}}))
    cluster.run(cluster.client.create(kind, "team", crontab("a")))
    cluster.run(cluster.client.delete(NAMESPACES, "", "team"))
    cluster.wait(3)
    assert cluster.run(cluster.client.list(kind, ""))["items"] == []


def test_the_scale_subresource(cluster: SimulatedCluster) -> None:
    body = crontab_crd()
    body["spec"]["versions"][0]["subresources"]["scale"] = {
        "specReplicasPath": ".spec.replicas",
        "statusReplicasPath": ".status.replicas",
        "labelSelectorPath": ".status.selector",
    }
    body["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"][
        "properties"
    ] |= {"replicas": {"type": "integer"}, "selector": {"type": "string"}}
    kind = established(cluster, body)
    assert kind.subresources == ("status", "scale")
    obj = cluster.run(cluster.client.create(kind, "default", crontab(replicas=2)))
    cluster.run(
        cluster.client.update_status(kind, {**obj, "status": {"replicas": 2, "selector": "a=b"}})
    )
    scale = cluster.run(cluster.client.get_scale(kind, "default", "a"))
    assert scale["spec"] == {"replicas": 2}
    assert scale["status"] == {"replicas": 2, "selector": "a=b"}
    cluster.run(cluster.client.update_scale(kind, "default", "a", 4))
    assert cluster.run(cluster.client.get(kind, "default", "a"))["spec"]["replicas"] == 4
    with pytest.raises(StatusError) as e:
        cluster.run(cluster.client.update_scale(kind, "default", "a", 11))
    assert "spec.replicas in body should be less than or equal to 10" in e.value.message


def test_a_subresource_the_crd_does_not_declare_is_its_objects_not_found(
    cluster: SimulatedCluster,
) -> None:
    # apiextensions-apiserver's crdHandler: not a missing path, the object's 404
    kind = established(cluster)
    cluster.run(cluster.client.create(kind, "default", crontab("a")))
    for request in (
        cluster.client.get_scale(kind, "default", "a"),
        cluster.client.update_scale(kind, "default", "a", 2),
    ):
        with pytest.raises(StatusError) as e:
            cluster.run(request)
        assert (e.value.code, e.value.message) == (404, 'crontabs.stable.example.com "a" not found')
    assert cluster.run(cluster.client.get(kind, "default", "a"))["spec"]["replicas"] == 1
    path = "/apis/stable.example.com/v1/namespaces/default/crontabs/a/scale"
    code, body = cluster.run(call(cluster.plane.http_app(), "GET", path))
    assert (code, json.loads(body)["details"]) == (
        404,
        {"name": "a", "group": "stable.example.com", "kind": "crontabs"},
    )


def test_a_terminating_crd_takes_no_creates(cluster: SimulatedCluster) -> None:
    kind = established(cluster)
    blocker = {**crontab("held"), "metadata": {"name": "held", "finalizers": ["example.com/x"]}}
    cluster.run(cluster.client.create(kind, "default", blocker))
    cluster.run(cluster.client.delete(CRDS, "", NAME))
    cluster.wait(1)
    served = cluster.server.kinds.by_resource("stable.example.com", "crontabs")
    assert served is not None and "create" not in served.verbs
    crd = cluster.run(cluster.client.get(CRDS, "", NAME))
    terminating = [c for c in crd["status"]["conditions"] if c["type"] == "Terminating"]
    assert terminating[0]["reason"] == "InstanceDeletionInProgress"
    held = cluster.run(cluster.client.get(served, "default", "held"))
    cluster.run(
        cluster.client.update(served, {**held, "metadata": {**held["metadata"], "finalizers": []}})
    )
    cluster.wait(2)
    assert cluster.run(cluster.client.list(CRDS, ""))["items"] == []


def test_server_side_apply_of_a_crd(cluster: SimulatedCluster) -> None:
    body = crontab_crd()
    apply = WriteOptions(field_manager="kubectl")
    cluster.run(cluster.server.patch(CRDS, "", NAME, PatchType.APPLY, body, apply))
    cluster.wait(1)
    body["spec"]["versions"][0]["additionalPrinterColumns"][1]["name"] = "Count"
    cluster.run(cluster.server.patch(CRDS, "", NAME, PatchType.APPLY, body, apply))
    crd = cluster.run(cluster.client.get(CRDS, "", NAME))
    assert crd["spec"]["versions"][0]["additionalPrinterColumns"][1]["name"] == "Count"
    assert crd["metadata"]["generation"] == 2
    assert {c["type"] for c in crd["status"]["conditions"]} == {"NamesAccepted", "Established"}


def test_the_garbage_collector_follows_custom_resources() -> None:
    c = SimulatedCluster(ClusterOptions(scheduler=False))
    try:
        kind = established(c)
        configmaps = catalog.kind("", "configmaps")
        owner = c.run(c.client.create(kind, "default", crontab("owner")))
        owned_by_crontab = {
            "metadata": {
                "name": "owned",
                "ownerReferences": [
                    {
                        "apiVersion": "stable.example.com/v1",
                        "kind": "CronTab",
                        "name": "owner",
                        "uid": owner["metadata"]["uid"],
                    }
                ],
            }
        }
        c.run(c.client.create(configmaps, "default", owned_by_crontab))
        config = c.run(c.client.create(configmaps, "default", {"metadata": {"name": "config"}}))
        dependent = crontab("dependent")
        dependent["metadata"]["ownerReferences"] = [
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "name": "config",
                "uid": config["metadata"]["uid"],
            }
        ]
        c.run(c.client.create(kind, "default", dependent))
        c.wait(1)
        c.run(c.client.delete(kind, "default", "owner"))
        c.run(c.client.delete(configmaps, "default", "config"))
        c.wait(5)
        left = [o["metadata"]["name"] for o in c.run(c.client.list(configmaps, "default"))["items"]]
        assert "owned" not in left
        assert [o["metadata"]["name"] for o in c.run(c.client.list(kind, "default"))["items"]] == []
    finally:
        c.close()


def test_the_garbage_collector_follows_a_new_storage_version() -> None:
    c = SimulatedCluster(ClusterOptions(scheduler=False))
    try:
        established(c)
        crd = copy.deepcopy(c.run(c.client.get(CRDS, "", NAME)))
        versions = crd["spec"]["versions"]
        versions[0]["storage"] = False
        versions.append({**copy.deepcopy(versions[0]), "name": "v1beta1", "storage": True})
        c.run(c.client.update(CRDS, crd))
        c.wait(1)
        kind = c.server.kinds.by_resource("stable.example.com", "crontabs")
        assert kind is not None and kind.version == "v1beta1"
        configmaps = catalog.kind("", "configmaps")
        api_version = "stable.example.com/v1beta1"
        refs = []
        for name in ("kept", "owner"):
            owner = c.run(c.client.create(configmaps, "default", {"metadata": {"name": name}}))
            ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": name}
            refs.append(ref | {"uid": owner["metadata"]["uid"]})
        for name, owners in (("owned", refs[1:]), ("shared", refs)):
            body = {**crontab(name), "apiVersion": api_version}
            body["metadata"]["ownerReferences"] = owners
            c.run(c.client.create(kind, "default", body))
        c.wait(1)
        c.run(c.client.delete(configmaps, "default", "owner"))
        c.wait(5)
        (shared,) = c.run(c.store.list("stable.example.com/crontabs/default/")).items
        assert shared["metadata"]["ownerReferences"] == refs[:1]
        assert shared["apiVersion"] == api_version
    finally:
        c.close()


def test_names_changed_after_establishing_are_accepted(cluster: SimulatedCluster) -> None:
    established(cluster)
    crd = copy.deepcopy(cluster.run(cluster.client.get(CRDS, "", NAME)))
    crd["spec"]["names"]["shortNames"] = ["ct", "cron"]
    cluster.run(cluster.client.update(CRDS, crd))
    cluster.wait(1)
    crd = cluster.run(cluster.client.get(CRDS, "", NAME))
    assert crd["status"]["acceptedNames"]["shortNames"] == ["ct", "cron"]
    kind = cluster.server.kinds.by_resource("stable.example.com", "crontabs")
    assert kind is not None and kind.short_names == ("ct", "cron")


def test_a_quota_counts_custom_resources(cluster: SimulatedCluster) -> None:
    """`count/<plural>.<group>` is recounted from the stored custom resources, so a delete
    gives its count back (otherwise the quota's usage is never known and every create is
    refused)."""
    kind = established(cluster)
    quotas = catalog.kind("", "resourcequotas")
    resource = "count/crontabs.stable.example.com"
    cluster.run(cluster.client.create(kind, "default", crontab("a")))
    quota = {"metadata": {"name": "q"}, "spec": {"hard": {resource: "1"}}}
    cluster.run(cluster.client.create(quotas, "default", quota))
    used = cluster.run(cluster.client.get(quotas, "default", "q"))["status"]["used"]
    assert used == {resource: "1"}
    with pytest.raises(StatusError) as e:
        cluster.run(cluster.client.create(kind, "default", crontab("b")))
    assert e.value.code == 403
    cluster.run(cluster.client.delete(kind, "default", "a"))
    used = cluster.run(cluster.client.get(quotas, "default", "q"))["status"]["used"]
    assert used == {resource: "0"}
    cluster.run(cluster.client.create(kind, "default", crontab("b")))


def test_a_crd_of_a_built_in_resource_serves_nothing_and_deletes_nothing(
    cluster: SimulatedCluster,
) -> None:
    """The VerticalPodAutoscaler's own CRD (as the autoscaler's install applies it): the
    built-in kind keeps being served, and deleting the CRD leaves its objects alone."""
    vpas = catalog.kind("autoscaling.k8s.io", "verticalpodautoscalers")
    name = "verticalpodautoscalers.autoscaling.k8s.io"
    body = crontab_crd(
        group="autoscaling.k8s.io",
        names={"plural": "verticalpodautoscalers", "kind": "VerticalPodAutoscaler"},
    )
    approval = "https://github.com/kubernetes/kubernetes/pull/63797"
    body["metadata"] = {"name": name, "annotations": {"api-approved.kubernetes.io": approval}}
    target = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}
    vpa = {"metadata": {"name": "web"}, "spec": {"targetRef": target}}
    cluster.run(cluster.client.create(vpas, "default", vpa))
    cluster.run(cluster.client.create(CRDS, "", body))
    cluster.wait(1)
    assert cluster.server.kinds.added(name) is None
    assert cluster.server.kinds.by_resource("autoscaling.k8s.io", "verticalpodautoscalers") is vpas
    cluster.run(cluster.client.delete(CRDS, "", name))
    cluster.wait(2)
    assert cluster.run(cluster.client.list(CRDS, ""))["items"] == []
    assert [v["metadata"]["name"] for v in cluster.run(cluster.client.list(vpas, ""))["items"]] == [
        "web"
    ]


def test_a_custom_resource_lists_by_metadata_fields_only(cluster: SimulatedCluster) -> None:
    kind = established(cluster)
    cluster.run(cluster.client.create(kind, "default", crontab("a")))
    cluster.run(cluster.client.create(kind, "default", crontab("b")))
    by_name = ListOptions(field_selector="metadata.name=b")
    listed = cluster.run(cluster.server.list(kind, "default", by_name))["items"]
    assert [o["metadata"]["name"] for o in listed] == ["b"]
    with pytest.raises(StatusError) as e:
        cluster.run(cluster.server.list(kind, "", ListOptions(field_selector="spec.image=x")))
    assert (e.value.code, e.value.message) == (400, "field label not supported: spec.image")


def test_stored_custom_resources_are_counted_in_storage_metrics(cluster: SimulatedCluster) -> None:
    kind = established(cluster)
    cluster.run(cluster.client.create(kind, "default", crontab("a")))
    families = cluster.plane.registries["/metrics"].collect()
    counts = {
        s.labels["resource"]: s.value
        for family in families
        if family.name == "apiserver_storage_objects"
        for s in family.samples
    }
    assert counts["crontabs.stable.example.com"] == 1
    assert counts["pods"] == 0


def test_a_custom_kind_named_as_a_built_in_one_gets_no_built_in_managed_fields(
    cluster: SimulatedCluster,
) -> None:
    """stable.example.com's Deployment is not apps/v1's: its writes are tracked with its own
    schema's shape and apiVersion, not the built-in kind's."""
    body = crontab_crd(names={"plural": "deployments", "kind": "Deployment"})
    body["metadata"]["name"] = "deployments.stable.example.com"
    cluster.run(cluster.client.create(CRDS, "", body))
    cluster.wait(1)
    kind = cluster.server.kinds.by_resource("stable.example.com", "deployments")
    assert kind is not None
    obj = {**crontab("a"), "kind": "Deployment"}
    created = cluster.run(
        cluster.server.create(kind, "default", obj, WriteOptions(field_manager="me"))
    )
    entries = created.obj["metadata"]["managedFields"]
    assert [e["apiVersion"] for e in entries] == ["stable.example.com/v1"]
    assert "f:cronSpec" in str(entries)


def test_a_pattern_is_matched_in_linear_time(cluster: SimulatedCluster) -> None:
    """A nested quantifier that makes a backtracking matcher take 2^n steps is matched as Go's
    regexp matches it (RE2, linear): the write is refused at once, the server stays live."""
    body = crontab_crd()
    schema = body["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    schema["properties"]["spec"]["properties"]["image"]["pattern"] = "^(a+)+$"
    kind = established(cluster, body)
    message = invalid(cluster, kind, crontab("a", image="a" * 64 + "!"))
    assert "spec.image in body should match '^(a+)+$'" in message
