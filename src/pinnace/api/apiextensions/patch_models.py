"""The merge semantics of apiextensions.k8s.io/v1 CustomResourceDefinition's fields, for
server-side apply (`kubectl apply --server-side` of a CRD, as prometheus-operator's install
asks), in the layout of the generated `pinnace.api.patch.strategies` table: per type, its
scalar fields, its other fields as (type, patch strategy, merge key, list or map type, keys),
and its required fields.

Taken from k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1/types.go and
types_jsonschema.go (v1.32): lists without a +listType are atomic, status.conditions is a map
keyed by type and x-kubernetes-validations one keyed by rule. The JSON-valued fields of a
schema (default, example, items, additionalProperties, additionalItems) are atomic values.
"""

from __future__ import annotations

KIND = "CustomResourceDefinition"
API_VERSION = "apiextensions.k8s.io/v1"
_T = "apiextensions.v1."
PATCH_ROOT = _T + "CustomResourceDefinition"

Ref = tuple[str, str, str, str, tuple[str, ...]]
_STRINGS: Ref = ("[", "", "", "atomic", ())
_PROPS = _T + "JSONSchemaProps"


def _struct(type_name: str) -> Ref:
    return (_T + type_name, "", "", "", ())


def _atomic_list(type_name: str) -> Ref:
    return ("[" + _T + type_name, "", "", "atomic", ())


def _map_list(type_name: str, key: str) -> Ref:
    return ("[" + _T + type_name, "", "", "map", (key,))


_SCHEMA_SCALARS = (
    "id $schema $ref description type format title default maximum exclusiveMaximum minimum "
    "exclusiveMinimum maxLength minLength pattern maxItems minItems uniqueItems multipleOf "
    "maxProperties minProperties nullable example items additionalProperties additionalItems "
    "x-kubernetes-preserve-unknown-fields x-kubernetes-embedded-resource "
    "x-kubernetes-int-or-string x-kubernetes-list-type x-kubernetes-map-type"
)

PATCH_TYPES: dict[str, tuple[str, dict[str, Ref], str]] = {
    PATCH_ROOT: (
        "apiVersion kind",
        {
            "metadata": ("meta.v1.ObjectMeta", "", "", "", ()),
            "spec": _struct("CustomResourceDefinitionSpec"),
            "status": _struct("CustomResourceDefinitionStatus"),
        },
        "spec",
    ),
    _T + "CustomResourceDefinitionSpec": (
        "group scope preserveUnknownFields",
        {
            "names": _struct("CustomResourceDefinitionNames"),
            "versions": _atomic_list("CustomResourceDefinitionVersion"),
            "conversion": _struct("CustomResourceConversion"),
        },
        "group names scope versions",
    ),
    _T + "CustomResourceDefinitionNames": (
        "plural singular kind listKind",
        {"shortNames": _STRINGS, "categories": _STRINGS},
        "plural kind",
    ),
    _T + "CustomResourceDefinitionVersion": (
        "name served storage deprecated deprecationWarning",
        {
            "schema": _struct("CustomResourceValidation"),
            "subresources": _struct("CustomResourceSubresources"),
            "additionalPrinterColumns": _atomic_list("CustomResourceColumnDefinition"),
            "selectableFields": _atomic_list("SelectableField"),
        },
        "name served storage",
    ),
    _T + "CustomResourceValidation": ("", {"openAPIV3Schema": _struct("JSONSchemaProps")}, ""),
    _PROPS: (
        _SCHEMA_SCALARS,
        {
            "enum": ("[", "", "", "atomic", ()),
            "required": _STRINGS,
            "x-kubernetes-list-map-keys": _STRINGS,
            "properties": ("{" + _PROPS, "", "", "", ()),
            "patternProperties": ("{" + _PROPS, "", "", "", ()),
            "definitions": ("{" + _PROPS, "", "", "", ()),
            "dependencies": ("{", "", "", "", ()),
            "allOf": _atomic_list("JSONSchemaProps"),
            "oneOf": _atomic_list("JSONSchemaProps"),
            "anyOf": _atomic_list("JSONSchemaProps"),
            "not": _struct("JSONSchemaProps"),
            "externalDocs": _struct("ExternalDocumentation"),
            "x-kubernetes-validations": _map_list("ValidationRule", "rule"),
        },
        "",
    ),
    _T + "ExternalDocumentation": ("description url", {}, ""),
    _T + "ValidationRule": (
        "rule message messageExpression reason fieldPath optionalOldSelf",
        {},
        "rule",
    ),
    _T + "CustomResourceSubresources": (
        "",
        {
            "status": _struct("CustomResourceSubresourceStatus"),
            "scale": _struct("CustomResourceSubresourceScale"),
        },
        "",
    ),
    _T + "CustomResourceSubresourceStatus": ("", {}, ""),
    _T + "CustomResourceSubresourceScale": (
        "specReplicasPath statusReplicasPath labelSelectorPath",
        {},
        "specReplicasPath statusReplicasPath",
    ),
    _T + "CustomResourceColumnDefinition": (
        "name type format description priority jsonPath",
        {},
        "name type jsonPath",
    ),
    _T + "SelectableField": ("jsonPath", {}, "jsonPath"),
    _T + "CustomResourceConversion": (
        "strategy",
        {"webhook": _struct("WebhookConversion")},
        "strategy",
    ),
    _T + "WebhookConversion": (
        "",
        {"clientConfig": _struct("WebhookClientConfig"), "conversionReviewVersions": _STRINGS},
        "conversionReviewVersions",
    ),
    _T + "WebhookClientConfig": ("url caBundle", {"service": _struct("ServiceReference")}, ""),
    _T + "ServiceReference": ("namespace name path port", {}, "namespace name"),
    _T + "CustomResourceDefinitionStatus": (
        "",
        {
            "acceptedNames": _struct("CustomResourceDefinitionNames"),
            "conditions": _map_list("CustomResourceDefinitionCondition", "type"),
            "storedVersions": _STRINGS,
        },
        "",
    ),
    _T + "CustomResourceDefinitionCondition": (
        "type status lastTransitionTime reason message",
        {},
        "type status",
    ),
}
