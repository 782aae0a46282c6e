"""The OpenAPI documents as kubectl reads them: the /openapi/v3 index, one v3 document per
group version (kubectl explain, the server-side field validation check, apply's strategic
merge patches) and the Swagger 2.0 document."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from pinnace.api.openapi import openapi_v2, openapi_v3, openapi_v3_index
from pinnace.api.openapi.documents import (
    build_v3,
    build_v3_index,
    documented_as_custom,
    documented_kinds,
)

V3 = "#/components/schemas/"
POD = "io.k8s.api.core.v1.Pod"
DEPLOYMENT = "io.k8s.api.apps.v1.Deployment"


def _group_version_paths() -> set[str]:
    return {
        f"apis/{k.group}/{k.version}" if k.group else f"api/{k.version}"
        for k in (*documented_kinds(), *documented_as_custom())
    }


def _schemas(path: str) -> dict[str, Any]:
    doc = openapi_v3(path)
    assert doc is not None
    schemas: dict[str, Any] = doc["components"]["schemas"]
    return schemas


def _refs(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "$ref" and isinstance(item, str):
                yield item
            else:
                yield from _refs(item)
    elif isinstance(value, list):
        for item in value:
            yield from _refs(item)


def _operations(doc: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in doc["paths"].items():
        for method, op in item.items():
            if method != "parameters":
                yield path, method, op


def _resolve(schemas: dict[str, Any], prop: dict[str, Any]) -> dict[str, Any]:
    ref = prop["allOf"][0]["$ref"] if "allOf" in prop else prop["$ref"]
    resolved: dict[str, Any] = schemas[ref.removeprefix(V3)]
    return resolved


def test_index_links_every_served_group_version_by_content_hash() -> None:
    index = openapi_v3_index()
    assert set(index["paths"]) == _group_version_paths()
    for path, entry in index["paths"].items():
        url = entry["serverRelativeURL"]
        match = re.fullmatch(r"/openapi/v3/(.+)\?hash=([0-9A-F]{128})", url)
        assert match, url
        assert match.group(1) == path
    assert openapi_v3_index() == index


def test_hash_follows_the_document_content() -> None:
    core = tuple(k for k in documented_kinds() if not k.group)
    fewer = tuple(k for k in core if k.kind != "ConfigMap")
    assert build_v3_index(build_v3(core)) == build_v3_index(build_v3(core))
    assert build_v3_index(build_v3(fewer)) != build_v3_index(build_v3(core))


def test_unknown_group_versions_have_no_document() -> None:
    assert openapi_v3("apis/apps") is None
    assert openapi_v3("apis/apps/v1beta1") is None
    assert openapi_v3("apis/example.com/v1") is None


def test_pod_containers_are_a_list_map_keyed_by_name() -> None:
    schemas = _schemas("api/v1")
    pod = schemas[POD]
    assert pod["x-kubernetes-group-version-kind"] == [{"group": "", "kind": "Pod", "version": "v1"}]
    spec = _resolve(schemas, pod["properties"]["spec"])
    containers = spec["properties"]["containers"]
    assert containers["type"] == "array"
    assert containers["items"] == {"$ref": V3 + "io.k8s.api.core.v1.Container"}
    assert containers["x-kubernetes-list-type"] == "map"
    assert containers["x-kubernetes-list-map-keys"] == ["name"]
    assert containers["x-kubernetes-patch-merge-key"] == "name"
    assert containers["x-kubernetes-patch-strategy"] == "merge"
    assert "containers" in spec["required"]
    assert "name" in schemas["io.k8s.api.core.v1.Container"]["required"]
    selector = schemas["io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector"]
    assert selector["x-kubernetes-map-type"] == "atomic"
    finalizers = schemas["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"]["properties"][
        "finalizers"
    ]
    assert finalizers["x-kubernetes-list-type"] == "set"


def test_fields_and_kinds_carry_descriptions() -> None:
    schemas = _schemas("api/v1")
    assert schemas[POD]["description"].startswith("Pod is a collection of containers")
    spec = _resolve(schemas, schemas[POD]["properties"]["spec"])
    assert "at least one container" in spec["properties"]["containers"]["description"]
    assert schemas[POD]["properties"]["metadata"]["description"]
    container = schemas["io.k8s.api.core.v1.Container"]["properties"]
    assert container["image"]["description"].startswith("Container image name.")


# Fields v1.32's OpenAPI leaves without a description: IngressRuleValue's inlined `http`, and
# the JSON Schema keywords of apiextensions v1's JSONSchemaProps and ExternalDocumentation,
# none of which has a doc comment.
_EXTENSIONS = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1."
_SCHEMA_KEYWORDS = (
    "$ref $schema additionalItems additionalProperties allOf anyOf definitions dependencies "
    "description enum example exclusiveMaximum exclusiveMinimum externalDocs id items maxItems "
    "maxLength maxProperties maximum minItems minLength minProperties minimum multipleOf not "
    "nullable oneOf pattern patternProperties properties required title type uniqueItems"
)
UNDOCUMENTED = {
    ("io.k8s.api.networking.v1.IngressRule", "http"),
    ("io.k8s.api.certificates.v1.CertificateSigningRequest", "metadata"),
    (_EXTENSIONS + "ExternalDocumentation", "description"),
    (_EXTENSIONS + "ExternalDocumentation", "url"),
    *((_EXTENSIONS + "JSONSchemaProps", keyword) for keyword in _SCHEMA_KEYWORDS.split()),
}


def test_every_field_of_every_served_kind_is_documented_as_v1_32_documents_it() -> None:
    for path in openapi_v3_index()["paths"]:
        schemas = _schemas(path)
        for name, schema in schemas.items():
            for field, prop in schema.get("properties", {}).items():
                if name.endswith("List") or field in ("apiVersion", "kind"):
                    continue
                if (name, field) in UNDOCUMENTED:
                    assert "description" not in prop
                    continue
                assert prop.get("description"), f"{name}.{field} has no description"
    container = _schemas("api/v1")["io.k8s.api.core.v1.Container"]["properties"]
    assert container["resources"]["description"].startswith("Compute Resources required")


def test_scalar_types_are_shared_definitions() -> None:
    schemas = _schemas("api/v1")
    resources = schemas["io.k8s.api.core.v1.ResourceRequirements"]["properties"]
    quantity = "io.k8s.apimachinery.pkg.api.resource.Quantity"
    assert resources["limits"]["additionalProperties"] == {"$ref": V3 + quantity}
    assert schemas[quantity]["oneOf"] == [{"type": "string"}, {"type": "number"}]
    meta = schemas["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"]["properties"]
    time = _resolve(schemas, meta["creationTimestamp"])
    assert time["format"] == "date-time"
    assert meta["generation"] == {
        "type": "integer",
        "format": "int64",
        "description": meta["generation"]["description"],
    }
    port = schemas["io.k8s.api.core.v1.HTTPGetAction"]["properties"]["port"]
    assert _resolve(schemas, port)["format"] == "int-or-string"


def test_apps_document_has_deployment_and_everything_it_references() -> None:
    schemas = _schemas("apis/apps/v1")
    assert schemas[DEPLOYMENT]["x-kubernetes-group-version-kind"] == [
        {"group": "apps", "kind": "Deployment", "version": "v1"}
    ]
    assert "io.k8s.api.core.v1.PodSpec" in schemas
    assert POD not in schemas  # only what apps/v1 reaches
    for path in _group_version_paths():
        doc = openapi_v3(path)
        for ref in _refs(doc):
            assert ref.removeprefix(V3) in _schemas(path), (path, ref)


def test_every_write_accepts_field_validation() -> None:
    for path in _group_version_paths():
        doc = openapi_v3(path)
        assert doc is not None
        for route, method, op in _operations(doc):
            names = [p["name"] for p in op.get("parameters", ())]
            if method in ("post", "put", "patch"):
                assert "fieldValidation" in names, (route, method)
                assert "dryRun" in names and "fieldManager" in names


def test_each_kind_has_a_patch_operation_for_its_kind_with_strategic_merge() -> None:
    """What kubectl checks before trusting server-side validation and building a strategic
    merge patch: a PATCH operation tagged with the kind that takes fieldValidation."""
    for kind in documented_kinds():
        path = f"apis/{kind.group}/{kind.version}" if kind.group else f"api/{kind.version}"
        doc = openapi_v3(path)
        assert doc is not None
        wanted = {"group": kind.group, "kind": kind.kind, "version": kind.version}
        patches = [
            op
            for _, method, op in _operations(doc)
            if method == "patch" and op["x-kubernetes-group-version-kind"] == wanted
        ]
        if "patch" not in kind.verbs:
            continue
        assert patches, kind.kind
        for op in patches:
            content = op["requestBody"]["content"]
            assert "application/strategic-merge-patch+json" in content
            assert "application/apply-patch+yaml" in content


def test_resource_paths_and_subresources() -> None:
    doc = openapi_v3("api/v1")
    assert doc is not None
    paths = doc["paths"]
    pods = paths["/api/v1/namespaces/{namespace}/pods"]
    assert pods["get"]["x-kubernetes-action"] == "list"
    assert pods["post"]["operationId"] == "createCoreV1NamespacedPod"
    assert [p["name"] for p in pods["parameters"]] == ["namespace", "pretty"]
    assert paths["/api/v1/pods"]["get"]["operationId"] == "listCoreV1PodForAllNamespaces"
    assert set(paths["/api/v1/nodes/{name}"]) >= {"get", "put", "patch", "delete"}
    binding = paths["/api/v1/namespaces/{namespace}/pods/{name}/binding"]["post"]
    assert binding["x-kubernetes-group-version-kind"]["kind"] == "Binding"
    eviction = paths["/api/v1/namespaces/{namespace}/pods/{name}/eviction"]["post"]
    assert eviction["x-kubernetes-group-version-kind"] == {
        "group": "policy",
        "kind": "Eviction",
        "version": "v1",
    }
    apps = openapi_v3("apis/apps/v1")
    assert apps is not None
    scale = apps["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale"]
    assert scale["patch"]["x-kubernetes-group-version-kind"]["group"] == "autoscaling"
    assert "io.k8s.api.autoscaling.v1.Scale" in apps["components"]["schemas"]


def test_swagger_v2_defines_every_served_kind() -> None:
    doc = openapi_v2()
    assert doc["swagger"] == "2.0"
    definitions = doc["definitions"]
    tagged = {
        (gvk["group"], gvk["version"], gvk["kind"])
        for schema in definitions.values()
        for gvk in schema.get("x-kubernetes-group-version-kind", ())
    }
    for kind in documented_kinds():
        assert (kind.group, kind.version, kind.kind) in tagged
    for ref in _refs(doc):
        assert ref.startswith("#/definitions/")
        assert ref.removeprefix("#/definitions/") in definitions
    patch = doc["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]["patch"]
    assert "fieldValidation" in [p["name"] for p in patch["parameters"]]
    assert "application/strategic-merge-patch+json" in patch["consumes"]


@pytest.mark.parametrize("path", sorted(_group_version_paths()))
def test_documents_serialize_to_json(path: str) -> None:
    doc = openapi_v3(path)
    assert json.loads(json.dumps(doc)) == doc
    assert json.loads(json.dumps(openapi_v3_index())) == openapi_v3_index()


def test_v2_serializes_to_json() -> None:
    assert json.loads(json.dumps(openapi_v2())) == openapi_v2()
