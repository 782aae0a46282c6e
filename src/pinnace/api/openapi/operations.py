"""The REST operations kube-apiserver documents for each served resource, and their
rendering as OpenAPI v3 and Swagger 2.0 path items.

kubectl reads two things from them: a PATCH operation carrying the kind's
x-kubernetes-group-version-kind and a `fieldValidation` parameter means the server validates
fields itself (so kubectl skips client-side validation), and `application/strategic-merge-patch
+json` among that operation's request bodies lets `kubectl apply` send strategic merge patches.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pinnace.api.kind import Kind
from pinnace.api.openapi.definitions import (
    DELETE_OPTIONS,
    PATCH,
    STATUS,
    SUBRESOURCE_KINDS,
    definition_name,
    gvk,
    subresource_kind,
)
from pinnace.api.patch import strategies

# name -> (type, description); all but the path parameters are in the query.
PARAMETERS: dict[str, tuple[str, str]] = {
    "name": ("string", "The name of the {kind}."),
    "namespace": ("string", "The namespace the object lives in."),
    "pretty": ("string", "If 'true', the response is indented for reading."),
    "dryRun": (
        "string",
        "'All' runs every stage of the request without persisting anything.",
    ),
    "fieldManager": (
        "string",
        "The name of the actor making the change, recorded in managedFields; required for "
        "apply patches, at most 128 printable characters.",
    ),
    "fieldValidation": (
        "string",
        "What the server does with unknown or duplicate fields in the body: Ignore drops "
        "them, Warn drops them and answers with a warning each, Strict rejects the request.",
    ),
    "force": (
        "boolean",
        "Apply patches only: take over fields other managers own instead of failing with a "
        "conflict.",
    ),
    "allowWatchBookmarks": ("boolean", "Watch only: ask for BOOKMARK events."),
    "continue": ("string", "The continue token of the previous page of a paginated list."),
    "fieldSelector": ("string", "Only objects whose fields match this selector."),
    "labelSelector": ("string", "Only objects whose labels match this selector."),
    "limit": ("integer", "The most objects to return in one page."),
    "resourceVersion": (
        "string",
        "Which version of the data the list or watch may be served from; see resourceVersionMatch.",
    ),
    "resourceVersionMatch": (
        "string",
        "How resourceVersion applies to a list: Exact or NotOlderThan.",
    ),
    "sendInitialEvents": (
        "boolean",
        "Watch only: start with synthetic ADDED events for the current state.",
    ),
    "timeoutSeconds": ("integer", "End the list or watch call after this many seconds."),
    "watch": ("boolean", "Stream changes instead of returning a list."),
    "gracePeriodSeconds": (
        "integer",
        "Seconds to wait before the object is deleted; 0 deletes at once, unset uses the "
        "kind's default.",
    ),
    "ignoreStoreReadErrorWithClusterBreakingPotential": (
        "boolean",
        "Delete an object that cannot be read from storage (corrupt) without its usual "
        "finalizers and checks.",
    ),
    "orphanDependents": ("boolean", "Deprecated: use propagationPolicy."),
    "propagationPolicy": (
        "string",
        "What happens to dependents: Orphan, Background or Foreground.",
    ),
    "container": ("string", "The container to read logs of; needed when the pod has several."),
    "follow": ("boolean", "Stream the log as it grows."),
    "insecureSkipTLSVerifyBackend": (
        "boolean",
        "Skip verifying the kubelet's serving certificate when reading the log.",
    ),
    "limitBytes": ("integer", "Stop after this many bytes of log."),
    "previous": ("boolean", "The log of the previous, terminated, instance of the container."),
    "sinceSeconds": ("integer", "Only log lines newer than this many seconds."),
    "stream": ("string", "Which stream to read: All, Stdout or Stderr."),
    "tailLines": ("integer", "Only the last this many lines."),
    "timestamps": ("boolean", "Prefix each line with its RFC 3339 timestamp."),
}
_PATH_PARAMETERS = frozenset({"name", "namespace"})

_LIST = (
    "allowWatchBookmarks",
    "continue",
    "fieldSelector",
    "labelSelector",
    "limit",
    "resourceVersion",
    "resourceVersionMatch",
    "sendInitialEvents",
    "timeoutSeconds",
    "watch",
)
_WRITE = ("dryRun", "fieldManager", "fieldValidation")
_PATCH = ("dryRun", "force", "fieldManager", "fieldValidation")
_DELETE = (
    "gracePeriodSeconds",
    "ignoreStoreReadErrorWithClusterBreakingPotential",
    "orphanDependents",
    "propagationPolicy",
    "dryRun",
)
_DELETE_COLLECTION = (
    "continue",
    "dryRun",
    "fieldSelector",
    "gracePeriodSeconds",
    "ignoreStoreReadErrorWithClusterBreakingPotential",
    "labelSelector",
    "limit",
    "orphanDependents",
    "propagationPolicy",
    "resourceVersion",
    "resourceVersionMatch",
    "sendInitialEvents",
    "timeoutSeconds",
)
_LOG = (
    "container",
    "follow",
    "insecureSkipTLSVerifyBackend",
    "limitBytes",
    "previous",
    "sinceSeconds",
    "stream",
    "tailLines",
    "timestamps",
)

PATCH_CONTENT_TYPES = (
    "application/apply-patch+yaml",
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
)
_RESPONSE_CONTENT_TYPES = (
    "application/json",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
)
_WATCH_CONTENT_TYPES = (
    "application/json;stream=watch",
    "application/vnd.kubernetes.protobuf;stream=watch",
)
_STATUS_TEXT = {"200": "OK", "201": "Created", "202": "Accepted"}


@dataclass(frozen=True)
class Operation:
    method: str
    """"get", "put", "post", "patch" or "delete"."""
    action: str
    """x-kubernetes-action: get, list, post, put, patch, delete, deletecollection."""
    operation_id: str
    description: str
    gvk: dict[str, str]
    parameters: tuple[str, ...]
    responses: tuple[str, ...]
    """Status codes."""
    response: str
    """Definition name of the response body; "" for plain text."""
    request: str = ""
    """Definition name of the request body; PATCH for patches."""


@dataclass(frozen=True)
class PathItem:
    path: str
    parameters: tuple[str, ...]
    """Path-level parameters: the path's placeholders, then pretty."""
    operations: tuple[Operation, ...]
    kind: str
    """The kind the path serves, for parameter descriptions."""


def _camel(group: str, version: str) -> str:
    return (group.split(".")[0] or "core").capitalize() + version.capitalize()


def _tag(group: str, version: str) -> str:
    return f"{(group.split('.')[0] or 'core')}_{version}"


def tag(kind: Kind) -> str:
    return _tag(kind.group, kind.version)


def _prefix(kind: Kind) -> str:
    return f"/apis/{kind.group}/{kind.version}" if kind.group else f"/api/{kind.version}"


def path_items(kind: Kind) -> Iterator[PathItem]:
    """The documented paths of `kind`: collection, all-namespaces list, object, subresources."""
    root = definition_name(strategies.ROOTS[kind.kind])
    own = gvk(kind.group, kind.version, kind.kind)
    gv = _camel(kind.group, kind.version)
    scope = "Namespaced" if kind.namespaced else ""
    base = f"{_prefix(kind)}/namespaces/{{namespace}}" if kind.namespaced else _prefix(kind)
    holder = ("namespace",) if kind.namespaced else ()
    verbs = set(kind.verbs)
    listed = root + "List"
    name = f"{gv}{scope}{kind.kind}"

    collection = []
    if "list" in verbs:
        collection.append(
            Operation(
                "get",
                "list",
                f"list{name}",
                f"list or watch objects of kind {kind.kind}",
                own,
                _LIST,
                ("200",),
                listed,
            )
        )
    if "create" in verbs:
        collection.append(
            Operation(
                "post",
                "post",
                f"create{name}",
                f"create a {kind.kind}",
                own,
                _WRITE,
                ("200", "201", "202"),
                root,
                root,
            )
        )
    if "deletecollection" in verbs:
        collection.append(
            Operation(
                "delete",
                "deletecollection",
                f"deleteCollection{name}",
                f"delete collection of {kind.kind}",
                own,
                _DELETE_COLLECTION,
                ("200",),
                STATUS,
                DELETE_OPTIONS,
            )
        )
    if collection:
        yield PathItem(f"{base}/{kind.plural}", holder, tuple(collection), kind.kind)
    if kind.namespaced and "list" in verbs:
        yield PathItem(
            f"{_prefix(kind)}/{kind.plural}",
            (),
            (
                Operation(
                    "get",
                    "list",
                    f"list{gv}{kind.kind}ForAllNamespaces",
                    f"list or watch objects of kind {kind.kind}",
                    own,
                    _LIST,
                    ("200",),
                    listed,
                ),
            ),
            kind.kind,
        )
    item = (*holder, "name")
    single = []
    if "get" in verbs:
        single.append(
            Operation(
                "get",
                "get",
                f"read{name}",
                f"read the specified {kind.kind}",
                own,
                (),
                ("200",),
                root,
            )
        )
    single.extend(_writes(verbs, name, kind.kind, own, root))
    if "delete" in verbs:
        single.append(
            Operation(
                "delete",
                "delete",
                f"delete{name}",
                f"delete a {kind.kind}",
                own,
                _DELETE,
                ("200", "202"),
                STATUS,
                DELETE_OPTIONS,
            )
        )
    if single:
        yield PathItem(f"{base}/{kind.plural}/{{name}}", item, tuple(single), kind.kind)
    for sub in sorted(kind.subresources):
        found = _subresource(kind, sub, name, own, root)
        if found:
            yield PathItem(f"{base}/{kind.plural}/{{name}}/{sub}", item, found, kind.kind)


def _writes(
    verbs: set[str], name: str, kind: str, own: dict[str, str], body: str, what: str = ""
) -> list[Operation]:
    out = []
    target = f"{what} of the specified {kind}" if what else f"the specified {kind}"
    if "update" in verbs:
        out.append(
            Operation(
                "put",
                "put",
                f"replace{name}",
                f"replace {target}",
                own,
                _WRITE,
                ("200", "201"),
                body,
                body,
            )
        )
    if "patch" in verbs:
        out.append(
            Operation(
                "patch",
                "patch",
                f"patch{name}",
                f"partially update {target}",
                own,
                _PATCH,
                ("200", "201"),
                body,
                PATCH,
            )
        )
    return out


def _subresource(
    kind: Kind, sub: str, name: str, own: dict[str, str], root: str
) -> tuple[Operation, ...]:
    """The operations of one subresource; () for the streaming ones (exec, attach,
    portforward, proxy), which carry no schema."""
    title = "EphemeralContainers" if sub == "ephemeralcontainers" else sub.capitalize()
    op_name = f"{name}{title}"
    if sub in ("status", "ephemeralcontainers", "resize", "scale"):
        body, body_gvk = subresource_kind(sub) if sub in SUBRESOURCE_KINDS else (root, own)
        description = f"read {sub} of the specified {kind.kind}"
        read = Operation("get", "get", f"read{op_name}", description, body_gvk, (), ("200",), body)
        return (read, *_writes({"update", "patch"}, op_name, kind.kind, body_gvk, body, sub))
    if sub == "finalize":
        return tuple(_writes({"update"}, op_name, kind.kind, own, root, "finalize"))
    if sub in ("binding", "eviction"):
        if sub == "binding":
            body, body_gvk = definition_name(strategies.ROOTS["Binding"]), gvk("", "v1", "Binding")
        else:
            body, body_gvk = subresource_kind(sub)
        description = f"create {sub} of a {kind.kind}"
        created = ("200", "201", "202")
        return (
            Operation(
                "post",
                "post",
                f"create{op_name}",
                description,
                body_gvk,
                _WRITE,
                created,
                body,
                body,
            ),
        )
    if sub == "log":
        description = f"read log of the specified {kind.kind}"
        return (Operation("get", "get", f"read{op_name}", description, own, _LOG, ("200",), ""),)
    return ()


# --- rendering --------------------------------------------------------------------------------


def _parameter_v3(name: str, kind: str) -> dict[str, Any]:
    type_, description = PARAMETERS[name]
    out: dict[str, Any] = {
        "description": description.format(kind=kind),
        "in": "path" if name in _PATH_PARAMETERS else "query",
        "name": name,
    }
    if name in _PATH_PARAMETERS:
        out["required"] = True
    return out | {"schema": {"type": type_, "uniqueItems": True}}


def _parameter_v2(name: str, kind: str) -> dict[str, Any]:
    type_, description = PARAMETERS[name]
    out: dict[str, Any] = {
        "description": description.format(kind=kind),
        "in": "path" if name in _PATH_PARAMETERS else "query",
        "name": name,
        "type": type_,
        "uniqueItems": True,
    }
    if name in _PATH_PARAMETERS:
        out["required"] = True
    return out


def _extensions(op: Operation) -> dict[str, Any]:
    return {"x-kubernetes-action": op.action, "x-kubernetes-group-version-kind": op.gvk}


def path_item_v3(item: PathItem, tag_name: str, refs: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for op in item.operations:
        rendered: dict[str, Any] = {
            "description": op.description,
            "operationId": op.operation_id,
        }
        if op.parameters:
            rendered["parameters"] = [_parameter_v3(p, item.kind) for p in op.parameters]
        if op.request:
            types = PATCH_CONTENT_TYPES if op.request == PATCH else ("*/*",)
            schema = {"$ref": refs + op.request}
            rendered["requestBody"] = {
                "content": {t: {"schema": schema} for t in types},
                "required": op.method != "delete",
            }
        responses: dict[str, Any] = {}
        for code in op.responses:
            if op.response:
                types = _RESPONSE_CONTENT_TYPES + (
                    _WATCH_CONTENT_TYPES if op.action == "list" else ()
                )
                schema = {"$ref": refs + op.response}
            else:
                types, schema = ("text/plain",), {"type": "string"}
            responses[code] = {
                "content": {t: {"schema": schema} for t in types},
                "description": _STATUS_TEXT[code],
            }
        rendered["responses"] = responses | {"401": {"description": "Unauthorized"}}
        rendered["tags"] = [tag_name]
        out[op.method] = rendered | _extensions(op)
    out["parameters"] = [_parameter_v3(p, item.kind) for p in (*item.parameters, "pretty")]
    return out


def path_item_v2(item: PathItem, tag_name: str, refs: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for op in item.operations:
        rendered: dict[str, Any] = {
            "description": op.description,
            "consumes": list(PATCH_CONTENT_TYPES if op.request == PATCH else ("*/*",)),
            "produces": list(_RESPONSE_CONTENT_TYPES if op.response else ("text/plain",))
            + (list(_WATCH_CONTENT_TYPES) if op.action == "list" else []),
            "schemes": ["https"],
            "tags": [tag_name],
            "operationId": op.operation_id,
        }
        parameters = [_parameter_v2(p, item.kind) for p in op.parameters]
        if op.request:
            body = {"in": "body", "name": "body", "schema": {"$ref": refs + op.request}}
            parameters.insert(0, body | {"required": op.method != "delete"})
        if parameters:
            rendered["parameters"] = parameters
        responses: dict[str, Any] = {}
        for code in op.responses:
            schema = {"$ref": refs + op.response} if op.response else {"type": "string"}
            responses[code] = {"description": _STATUS_TEXT[code], "schema": schema}
        rendered["responses"] = responses | {"401": {"description": "Unauthorized"}}
        out[op.method] = rendered | _extensions(op)
    out["parameters"] = [_parameter_v2(p, item.kind) for p in (*item.parameters, "pretty")]
    return out


def referenced(item: PathItem) -> set[str]:
    """The definitions the path's operations name."""
    return {name for op in item.operations for name in (op.request, op.response) if name}
