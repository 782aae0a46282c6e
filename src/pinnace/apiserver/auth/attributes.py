"""What an HTTP request does, for authorization: kube-apiserver v1.32's RequestInfoFactory
(staging/src/k8s.io/apiserver/pkg/endpoints/request/requestinfo.go), which reads the method
and the path alone, whether or not the path names something served.

`/api/v1/...` and `/apis/<group>/<version>/...` with a resource are resource requests (verb
from the method: get, list, watch, create, update, patch, delete, deletecollection; `watch/`
and `proxy/` as the verb when the path starts so); every other path is a non-resource request
whose verb is the method in lower case.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pinnace.api.fieldselector import parse_field_selector
from pinnace.api.labels import SelectorError
from pinnace.api.meta import is_path_segment_name
from pinnace.apiserver.auth.rules import Attributes
from pinnace.apiserver.auth.user import UserInfo
from pinnace.apiserver.http.params import go_bool

_METHOD_VERBS = {
    "POST": "create",
    "GET": "get",
    "HEAD": "get",
    "PUT": "update",
    "PATCH": "patch",
    "DELETE": "delete",
}
_SPECIAL_VERBS = ("proxy", "watch")
_NAMESPACE_SUBRESOURCES = ("status", "finalize")


def request_attributes(
    user: UserInfo, method: str, path: str, query: Mapping[str, Sequence[str]]
) -> Attributes:
    parts = [p for p in path.strip("/").split("/") if p] if path.strip("/") else []
    non_resource = Attributes(user, method.lower(), resource_request=False, path=path)
    if len(parts) < 3 or parts[0] not in ("api", "apis"):
        return non_resource
    group = ""
    rest = parts[1:]
    if parts[0] == "apis":
        if len(rest) < 3:
            return non_resource
        group, rest = rest[0], rest[1:]
    version, rest = rest[0], rest[1:]
    if rest[0] in _SPECIAL_VERBS:
        if len(rest) < 2:
            return non_resource  # kube-apiserver cannot tell the kind: it fails the request
        verb, rest = rest[0], rest[1:]
    else:
        verb = _METHOD_VERBS.get(method.upper(), "")
    namespace = ""
    if rest[0] == "namespaces" and len(rest) > 1:
        namespace = rest[1]
        if len(rest) > 2 and rest[2] not in _NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
    resource = rest[0]
    name = rest[1] if len(rest) >= 2 else ""
    subresource = rest[2] if len(rest) >= 3 and verb != "proxy" else ""
    if not name and verb == "get":
        verb = "watch" if go_bool(query, "watch") else "list"
        selected = _exact_name(_first(query, "fieldSelector"))
        if selected and not is_path_segment_name(selected):
            name = selected
    if not name and verb == "delete":
        verb = "deletecollection"
    return Attributes(
        user,
        verb,
        namespace=namespace,
        api_group=group,
        api_version=version,
        resource=resource,
        subresource=subresource,
        name=name,
        path=path,
        field_selector=_first(query, "fieldSelector"),
    )


def _first(query: Mapping[str, Sequence[str]], key: str) -> str:
    values = query.get(key) or ()
    return values[0] if values else ""


def _exact_name(selector: str) -> str:
    """The name a field selector requires (`metadata.name=x`), else "" (also when it does not
    parse, as the request then reads as a list without a name)."""
    try:
        return parse_field_selector(selector).requires_exact_match("metadata.name") or ""
    except SelectorError:
        return ""
