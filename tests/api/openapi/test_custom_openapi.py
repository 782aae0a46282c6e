"""A CRD's served versions in the published OpenAPI documents, as apiextensions-apiserver
v1.32's openapi builder publishes them, following the CRD as it is added, changed and removed."""

from __future__ import annotations

from typing import Any

from pinnace.api.apiextensions.custom import served_kinds
from pinnace.api.openapi.documents import PublishedDocuments
from pinnace.api.registry import KindRegistry
from pinnace.apiserver.http.openapi_protobuf import PublishedProtobuf

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "required": ["size"],
            "properties": {
                "size": {"type": "integer", "minimum": 1, "default": 1},
                "colour": {"type": "string", "enum": ["red", "blue"], "nullable": True},
                "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            },
        }
    },
}


def crd(*versions: str, schema: dict[str, Any] = SCHEMA) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.stable.example.com"},
        "spec": {
            "group": "stable.example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [
                {
                    "name": v,
                    "served": True,
                    "storage": i == 0,
                    "schema": {"openAPIV3Schema": schema},
                    "subresources": {"status": {}},
                }
                for i, v in enumerate(versions)
            ],
        },
    }


def serve(kinds: KindRegistry, definition: dict[str, Any]) -> None:
    stored, others = served_kinds(definition)
    kinds.add("widgets.stable.example.com", stored, others, source=definition["spec"])


def test_each_served_version_is_published_then_withdrawn() -> None:
    kinds = KindRegistry()
    documents = PublishedDocuments(kinds)
    assert "apis/stable.example.com/v1" not in documents.v3_index()["paths"]
    serve(kinds, crd("v1", "v2"))
    index = documents.v3_index()["paths"]
    assert {"apis/stable.example.com/v1", "apis/stable.example.com/v2"} <= set(index)
    assert "api/v1" in index  # the built-in documents stay
    doc = documents.v3("apis/stable.example.com/v2")
    assert doc is not None
    schemas = doc["components"]["schemas"]
    widget = schemas["com.example.stable.v2.Widget"]
    assert widget["x-kubernetes-group-version-kind"] == [
        {"group": "stable.example.com", "kind": "Widget", "version": "v2"}
    ]
    assert widget["properties"]["spec"] == SCHEMA["properties"]["spec"]
    assert widget["properties"]["metadata"]["allOf"] == [
        {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}
    ]
    assert {"apiVersion", "kind"} <= set(widget["properties"])
    listed = schemas["com.example.stable.v2.WidgetList"]
    assert listed["properties"]["items"]["items"] == {
        "$ref": "#/components/schemas/com.example.stable.v2.Widget"
    }
    assert "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta" in schemas
    one = "/apis/stable.example.com/v2/namespaces/{namespace}/widgets/{name}"
    patches = doc["paths"][one]["patch"]["requestBody"]["content"]
    assert "application/strategic-merge-patch+json" not in patches
    assert one + "/status" in doc["paths"]

    kinds.remove("widgets.stable.example.com")
    assert "apis/stable.example.com/v1" not in documents.v3_index()["paths"]
    assert documents.v3("apis/stable.example.com/v1") is None


def test_swagger_2_gets_what_it_can_say_and_encodes_as_protobuf() -> None:
    kinds = KindRegistry()
    documents = PublishedDocuments(kinds)
    encoded = PublishedProtobuf(documents)
    built_in = encoded.v2()
    serve(kinds, crd("v1"))
    v2 = documents.v2()
    spec = v2["definitions"]["com.example.stable.v1.Widget"]["properties"]["spec"]
    assert spec["properties"]["size"] == {"type": "integer"}
    assert spec["properties"]["colour"] == {}  # nullable: any type
    assert spec["required"] == ["size"]
    assert "io.k8s.api.core.v1.Pod" in v2["definitions"]
    assert "/apis/stable.example.com/v1/namespaces/{namespace}/widgets" in v2["paths"]
    assert len(encoded.v2()) > len(built_in)


def test_a_root_that_keeps_unknown_fields_is_a_bare_object_in_swagger_2() -> None:
    kinds = KindRegistry()
    documents = PublishedDocuments(kinds)
    serve(kinds, crd("v1", schema={"type": "object", "x-kubernetes-preserve-unknown-fields": True}))
    widget = documents.v2()["definitions"]["com.example.stable.v1.Widget"]
    assert widget == {
        "type": "object",
        "x-kubernetes-group-version-kind": [
            {"group": "stable.example.com", "kind": "Widget", "version": "v1"}
        ],
    }


def test_a_scale_subresource_publishes_the_scale_kind() -> None:
    """A CRD with a scale subresource (what an HPA or `kubectl scale` targets) references
    autoscaling/v1 Scale from its /scale paths; both documents define it."""
    definition = crd("v1")
    definition["spec"]["versions"][0]["subresources"]["scale"] = {
        "specReplicasPath": ".spec.size",
        "statusReplicasPath": ".status.size",
    }
    kinds = KindRegistry()
    documents = PublishedDocuments(kinds)
    serve(kinds, definition)
    scale = "io.k8s.api.autoscaling.v1.Scale"
    v3 = documents.v3("apis/stable.example.com/v1")
    assert v3 is not None
    assert scale in v3["components"]["schemas"]
    assert "/apis/stable.example.com/v1/namespaces/{namespace}/widgets/{name}/scale" in v3["paths"]
    assert scale in documents.v2()["definitions"]
