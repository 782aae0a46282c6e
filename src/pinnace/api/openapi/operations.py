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
CUSTOM_PATCH_CONTENT_TYPES = (
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/apply-patch+yaml",
)
"""What a custom resource's PATCH takes (apiextensions-apiserver's builder): no strategic merge
patch, so `kubectl apply` sends a merge patch."""
_CUSTOM_RESPONSE_CONTENT_TYPES = ("application/json", "application/yaml")


def _content_types(item: PathItem, op: Operation) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(request, response) content types of an operation, for the bodies it has."""
    patches = CUSTOM_PATCH_CONTENT_TYPES if item.custom else PATCH_CONTENT_TYPES
    request: tuple[str, ...] = patches if op.request == PATCH else ("*/*",)
    if item.custom:
        return request, _CUSTOM_RESPONSE_CONTENT_TYPES
    watch = _WATCH_CONTENT_TYPES if op.action == "list" else ()
    return request, _RESPONSE_CONTENT_TYPES + watch


_STATUS_TEXT = {"200": "OK", "201": "Created", "202": "Accepted"}


# action -> (HTTP method, operationId verb, query parameters, status codes)
_ACTIONS: dict[str, tuple[str, str, tuple[str, ...], tuple[str, ...]]] = {
    "list": ("get", "list", _LIST, ("200",)),
    "get": ("get", "read", (), ("200",)),
    "post": ("post", "create", _WRITE, ("200", "201", "202")),
    "put": ("put", "replace", _WRITE, ("200", "201")),
    "patch": ("patch", "patch", _PATCH, ("200", "201")),
    "delete": ("delete", "delete", _DELETE, ("200", "202")),
    "deletecollection": ("delete", "deleteCollection", _DELETE_COLLECTION, ("200",)),
}


@dataclass(frozen=True)
class Operation:
    action: str
    """x-kubernetes-action: get, list, post, put, patch, delete, deletecollection."""
    name: str
    """The operationId without its verb: "CoreV1NamespacedPodStatus"."""
    description: str
    gvk: dict[str, str]
    response: str
    """Definition name of the response body; "" for plain text."""
    request: str = ""
    """Definition name of the request body; PATCH for patches."""
    query: tuple[str, ...] | None = None
    """Query parameters, when not the action's usual ones."""

    @property
    def method(self) -> str:
        return _ACTIONS[self.action][0]

    @property
    def operation_id(self) -> str:
        return _ACTIONS[self.action][1] + self.name

    @property
    def parameters(self) -> tuple[str, ...]:
        return _ACTIONS[self.action][2] if self.query is None else self.query

    @property
    def responses(self) -> tuple[str, ...]:
        return _ACTIONS[self.action][3]


@dataclass(frozen=True)
class PathItem:
    path: str
    parameters: tuple[str, ...]
    """Path-level parameters: the path's placeholders, then pretty."""
    operations: tuple[Operation, ...]
    kind: str
    """The kind the path serves, for parameter descriptions."""
    custom: bool = False
    """A custom resource's path: JSON and YAML only, and no strategic merge patch."""


def _group_word(group: str) -> str:
    return group.split(".")[0] or "core"


def tag(kind: Kind) -> str:
    return f"{_group_word(kind.group)}_{kind.version}"


def _prefix(kind: Kind) -> str:
    return f"/apis/{kind.group}/{kind.version}" if kind.group else f"/api/{kind.version}"


def path_items(kind: Kind, root: str = "") -> Iterator[PathItem]:
    """The documented paths of `kind`: collection, all-namespaces list, object, subresources.
    `root`: the definition of a kind outside the strategies table (a custom resource's)."""
    custom = bool(root)
    root = root or definition_name(strategies.ROOTS[(kind.api_version, kind.kind)])
    listed = root + "List"
    own = gvk(kind.group, kind.version, kind.kind)
    gv = _group_word(kind.group).capitalize() + kind.version.capitalize()
    name = f"{gv}{'Namespaced' if kind.namespaced else ''}{kind.kind}"
    base = f"{_prefix(kind)}/namespaces/{{namespace}}" if kind.namespaced else _prefix(kind)
    holder = ("namespace",) if kind.namespaced else ()
    verbs = set(kind.verbs)
    listing = f"list or watch objects of kind {kind.kind}"

    collection = [
        op
        for verb, op in (
            ("list", Operation("list", name, listing, own, listed)),
            ("create", Operation("post", name, f"create a {kind.kind}", own, root, root)),
            (
                "deletecollection",
                Operation(
                    "deletecollection",
                    name,
                    f"delete collection of {kind.kind}",
                    own,
                    STATUS,
                    DELETE_OPTIONS,
                ),
            ),
        )
        if verb in verbs
    ]
    if collection:
        yield PathItem(f"{base}/{kind.plural}", holder, tuple(collection), kind.kind, custom)
    if kind.namespaced and "list" in verbs:
        everywhere = Operation("list", f"{gv}{kind.kind}ForAllNamespaces", listing, own, listed)
        yield PathItem(f"{_prefix(kind)}/{kind.plural}", (), (everywhere,), kind.kind, custom)

    item = (*holder, "name")
    single = [
        op
        for verb, op in (
            ("get", Operation("get", name, f"read the specified {kind.kind}", own, root)),
            *_writes(name, f"the specified {kind.kind}", own, root),
            (
                "delete",
                Operation("delete", name, f"delete a {kind.kind}", own, STATUS, DELETE_OPTIONS),
            ),
        )
        if verb in verbs
    ]
    if single:
        yield PathItem(f"{base}/{kind.plural}/{{name}}", item, tuple(single), kind.kind, custom)
    for sub in sorted(kind.subresources):
        found = _subresource(kind, sub, name, own, root)
        if found:
            path = f"{base}/{kind.plural}/{{name}}/{sub}"
            yield PathItem(path, item, found, kind.kind, custom)


def _writes(
    name: str, target: str, own: dict[str, str], body: str
) -> tuple[tuple[str, Operation], ...]:
    """(verb, operation) for replacing and patching `target`."""
    return (
        ("update", Operation("put", name, f"replace {target}", own, body, body)),
        ("patch", Operation("patch", name, f"partially update {target}", own, body, PATCH)),
    )


def _subresource(
    kind: Kind, sub: str, name: str, own: dict[str, str], root: str
) -> tuple[Operation, ...]:
    """The operations of one subresource; () for the streaming ones (exec, attach,
    portforward, proxy), which carry no schema."""
    title = "EphemeralContainers" if sub == "ephemeralcontainers" else sub.capitalize()
    name = f"{name}{title}"
    target = f"{sub} of the specified {kind.kind}"
    if sub in ("status", "approval", "ephemeralcontainers", "resize", "scale"):
        body, body_gvk = subresource_kind(sub) if sub in SUBRESOURCE_KINDS else (root, own)
        read = Operation("get", name, f"read {target}", body_gvk, body)
        return (read, *(op for _, op in _writes(name, target, body_gvk, body)))
    if sub == "finalize":
        return (_writes(name, target, own, root)[0][1],)
    if sub == "binding":
        binding = definition_name(strategies.ROOTS[("v1", "Binding")])
        description = f"create binding of a {kind.kind}"
        return (Operation("post", name, description, gvk("", "v1", "Binding"), binding, binding),)
    if sub == "eviction":
        eviction, eviction_gvk = subresource_kind(sub)
        description = f"create eviction of a {kind.kind}"
        return (Operation("post", name, description, eviction_gvk, eviction, eviction),)
    if sub == "log":
        return (
            Operation("get", name, f"read log of the specified {kind.kind}", own, "", "", _LOG),
        )
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
        types: tuple[str, ...]
        request_types, response_types = _content_types(item, op)
        if op.request:
            schema = {"$ref": refs + op.request}
            rendered["requestBody"] = {
                "content": {t: {"schema": schema} for t in request_types},
                "required": op.method != "delete",
            }
        responses: dict[str, Any] = {}
        for code in op.responses:
            if op.response:
                types, schema = response_types, {"$ref": refs + op.response}
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
        request_types, response_types = _content_types(item, op)
        rendered: dict[str, Any] = {
            "description": op.description,
            "consumes": list(request_types),
            "produces": list(response_types if op.response else ("text/plain",)),
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
