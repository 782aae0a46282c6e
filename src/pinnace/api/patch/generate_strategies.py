"""Regenerate `strategies.py` from a Kubernetes OpenAPI v2 definitions file.

    python -m pinnace.api.patch.generate_strategies DEFINITIONS.json > strategies.py

DEFINITIONS.json is kube-apiserver's `api/openapi-spec/swagger.json` ("definitions") or a
JSON-schema rendering of it ("$defs"); only the served kinds and the types they reach are kept.
"""

from __future__ import annotations

import json
import sys
from typing import Any

# (group, version, kind) of every kind Pinnace serves.
SERVED = (
    ("", "v1", "Binding"),
    ("", "v1", "ConfigMap"),
    ("", "v1", "Endpoints"),
    ("", "v1", "Event"),
    ("", "v1", "LimitRange"),
    ("", "v1", "Namespace"),
    ("", "v1", "Node"),
    ("", "v1", "PersistentVolume"),
    ("", "v1", "PersistentVolumeClaim"),
    ("", "v1", "Pod"),
    ("", "v1", "PodTemplate"),
    ("", "v1", "ReplicationController"),
    ("", "v1", "ResourceQuota"),
    ("", "v1", "Secret"),
    ("", "v1", "Service"),
    ("", "v1", "ServiceAccount"),
    ("apps", "v1", "ControllerRevision"),
    ("apps", "v1", "DaemonSet"),
    ("apps", "v1", "Deployment"),
    ("apps", "v1", "ReplicaSet"),
    ("apps", "v1", "StatefulSet"),
    ("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
    ("authentication.k8s.io", "v1", "SelfSubjectReview"),
    ("authentication.k8s.io", "v1", "TokenReview"),
    ("authorization.k8s.io", "v1", "LocalSubjectAccessReview"),
    ("authorization.k8s.io", "v1", "SelfSubjectAccessReview"),
    ("authorization.k8s.io", "v1", "SelfSubjectRulesReview"),
    ("authorization.k8s.io", "v1", "SubjectAccessReview"),
    ("autoscaling", "v2", "HorizontalPodAutoscaler"),
    ("batch", "v1", "CronJob"),
    ("batch", "v1", "Job"),
    ("certificates.k8s.io", "v1", "CertificateSigningRequest"),
    ("coordination.k8s.io", "v1", "Lease"),
    ("discovery.k8s.io", "v1", "EndpointSlice"),
    ("networking.k8s.io", "v1", "Ingress"),
    ("networking.k8s.io", "v1", "IngressClass"),
    ("networking.k8s.io", "v1", "NetworkPolicy"),
    ("node.k8s.io", "v1", "RuntimeClass"),
    ("policy", "v1", "PodDisruptionBudget"),
    ("rbac.authorization.k8s.io", "v1", "ClusterRole"),
    ("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding"),
    ("rbac.authorization.k8s.io", "v1", "Role"),
    ("rbac.authorization.k8s.io", "v1", "RoleBinding"),
    ("scheduling.k8s.io", "v1", "PriorityClass"),
    ("storage.k8s.io", "v1", "CSIDriver"),
    ("storage.k8s.io", "v1", "CSINode"),
    ("storage.k8s.io", "v1", "StorageClass"),
)
# Kinds served at a second version too, converted to and from the stored one above; server-side
# apply and the OpenAPI documents need their own types.
ALSO_SERVED = (
    ("autoscaling", "v1", "HorizontalPodAutoscaler"),
    ("events.k8s.io", "v1", "Event"),
)

# Definitions that are scalars on the wire (smd treats them as untyped scalars).
SCALAR_TYPES = {
    "io.k8s.apimachinery.pkg.api.resource.Quantity",
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Time",
    "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime",
    # Opaque JSON: compared and merged as one value.
    "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1",
    "io.k8s.apimachinery.pkg.runtime.RawExtension",
    # A JSON schema's JSON-valued fields (default, example, enum's values, items,
    # additionalProperties, additionalItems, dependencies): any JSON, one value.
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrArray",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrBool",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrStringArray",
}

# `+default=` markers on list-map key fields, which the OpenAPI rendering may drop
# (staging/src/k8s.io/api/core/v1/types.go: ContainerPort.Protocol and ServicePort.Protocol
# +default="TCP").
KEY_DEFAULTS = {
    ("core.v1.ContainerPort", "protocol"): "TCP",
    ("core.v1.ServicePort", "protocol"): "TCP",
}


PREFIXES = (
    "io.k8s.api.",
    "io.k8s.apimachinery.pkg.apis.",
    "io.k8s.apiextensions-apiserver.pkg.apis.",
)
"""What `short` takes off a definition's name: "io.k8s.api.core.v1.Pod" is "core.v1.Pod"."""


def short(name: str) -> str:
    for prefix in PREFIXES:
        if name.startswith(prefix):
            return name[len(prefix) :]
    return name


def _ref(prop: dict[str, Any]) -> str | None:
    ref = prop.get("$ref")
    if ref is None:
        for key in ("allOf", "oneOf"):
            for sub in prop.get(key, []):
                if "$ref" in sub:
                    ref = sub["$ref"]
    return ref.rsplit("/", 1)[-1] if ref else None


def _type_ref(prop: dict[str, Any], todo: list[str]) -> str:
    """ "" for a scalar, a type name, "[elem" for a list, "{elem" for a map."""
    ref = _ref(prop)
    if ref is not None:
        if ref in SCALAR_TYPES:
            return ""
        todo.append(ref)
        return short(ref)
    if isinstance(prop.get("items"), dict):
        return "[" + _type_ref(prop["items"], todo)
    if isinstance(prop.get("additionalProperties"), dict):
        return "{" + _type_ref(prop["additionalProperties"], todo)
    return ""


def generate(definitions: dict[str, Any]) -> str:
    roots: dict[tuple[str, str], str] = {}
    versions: dict[str, str] = {}
    for name, schema in definitions.items():
        for gvk in schema.get("x-kubernetes-group-version-kind", []):
            served = (gvk["group"], gvk["version"], gvk["kind"])
            if served in SERVED or served in ALSO_SERVED:
                group = gvk["group"]
                api_version = f"{group}/{gvk['version']}" if group else gvk["version"]
                roots[(api_version, gvk["kind"])] = short(name)
                if served in SERVED:
                    versions[gvk["kind"]] = api_version
    todo = [name for name in definitions if short(name) in roots.values()]
    types: dict[str, tuple[str, dict[str, tuple[Any, ...]], str]] = {}
    atomic: set[str] = set()
    while todo:
        name = todo.pop()
        if short(name) in types:
            continue
        schema = definitions[name]
        if schema.get("x-kubernetes-map-type") == "atomic":
            atomic.add(short(name))
        leaves: list[str] = []
        complex_fields: dict[str, tuple[Any, ...]] = {}
        for field, prop in sorted((schema.get("properties") or {}).items()):
            ref = _type_ref(prop, todo)
            relationship = prop.get("x-kubernetes-list-type") or prop.get(
                "x-kubernetes-map-type", ""
            )
            if relationship == "granular":
                relationship = ""
            strategy = prop.get("x-kubernetes-patch-strategy", "")
            merge_key = prop.get("x-kubernetes-patch-merge-key", "")
            keys = tuple(prop.get("x-kubernetes-list-map-keys", ()))
            if not (ref or relationship or strategy or merge_key or keys):
                leaves.append(field)
                continue
            complex_fields[field] = (ref, strategy, merge_key, relationship, keys)
        required = " ".join(sorted(schema.get("required", ())))
        types[short(name)] = (" ".join(leaves), complex_fields, required)
    return _render(roots, versions, types, atomic)


def _render(
    roots: dict[tuple[str, str], str],
    versions: dict[str, str],
    types: dict[str, tuple[str, dict[str, tuple[Any, ...]], str]],
    atomic: set[str],
) -> str:
    out = [
        '"""Patch strategies and list/map semantics of the served kinds, Kubernetes v1.32.',
        "",
        "Generated by `python -m pinnace.api.patch.generate_strategies` from the v1.32.0 OpenAPI",
        "definitions (kubernetes/kubernetes api/openapi-spec/swagger.json at v1.32.0, as rendered",
        "in kubernetes-validate's v1.32.0-local/_definitions.json): the Go struct tags",
        "patchStrategy/patchMergeKey appear there as x-kubernetes-patch-strategy/-merge-key, and",
        "+listType/+listMapKey/+mapType/+structType as x-kubernetes-list-type/-list-map-keys/",
        "-map-type. Do not edit by hand.",
        "",
        "ROOTS[(apiVersion, kind)] is the type of each served kind at each served version;",
        "API_VERSIONS[kind] the version it is stored at.",
        "",
        "TYPES[type] = (scalar fields, {field: (ref, patch strategy, merge key, list or map type,",
        'list map keys)}, required fields). A ref is "" for a scalar, a type name, "[ref" for a',
        'list of ref or "{ref" for a map of string to ref.',
        '"""',
        "",
        "# ruff: noqa: E501",
        "# fmt: off",
        "ROOTS: dict[tuple[str, str], str] = {",
        *(f"    {key!r}: {name!r}," for key, name in sorted(roots.items(), key=_by_kind)),
        "}",
        "",
        f"API_VERSIONS = {json.dumps(dict(sorted(versions.items())), indent=4)}",
        "",
        f"ATOMIC_TYPES = frozenset({json.dumps(sorted(atomic), indent=4)})",
        "",
        f"KEY_DEFAULTS = {KEY_DEFAULTS!r}",
        "",
        "FieldEntry = tuple[str, str, str, str, tuple[str, ...]]",
        "TYPES: dict[str, tuple[str, dict[str, FieldEntry], str]] = {",
    ]
    for name in sorted(types):
        leaves, complex_fields, required = types[name]
        out.append(f"    {name!r}: (")
        out.append(f"        {leaves!r},")
        out.append("        {")
        for field, spec in complex_fields.items():
            out.append(f"            {field!r}: {spec!r},")
        out.append("        },")
        out.append(f"        {required!r},")
        out.append("    ),")
    out.append("}")
    out.append("# fmt: on")
    return "\n".join(out) + "\n"


def _by_kind(item: tuple[tuple[str, str], str]) -> tuple[str, str]:
    (api_version, kind), _ = item
    return kind, api_version


def main() -> None:
    with open(sys.argv[1]) as f:
        document = json.load(f)
    definitions = document.get("definitions") or document.get("$defs") or {}
    sys.stdout.write(generate(definitions))


if __name__ == "__main__":
    main()
