"""NamespaceLifecycle, as kube-apiserver v1.32's admission plugin of that name.

- `default`, `kube-system` and `kube-public` may not be deleted (`kube-node-lease` may).
- Nothing may be created or updated in a namespace that does not exist: 404.
- Nothing may be created in a namespace being terminated, so that the namespace controller
  can finish emptying it: 403. Updates there go through.

Namespaces themselves, cluster-scoped objects, deletes, and LocalSubjectAccessReviews (whose
404 would reveal which namespaces exist) are always let through. The plugin handles CREATE,
UPDATE and DELETE only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pinnace.api import status
from pinnace.api.core.namespace import NAMESPACE_TERMINATING

IMMORTAL_NAMESPACES = ("default", "kube-system", "kube-public")

_ACCESS_REVIEWS = frozenset({("authorization.k8s.io", "localsubjectaccessreviews")})


def check(
    operation: str,
    resource: str,
    namespace: str,
    name: str,
    namespace_obj: Mapping[str, Any] | None,
    *,
    group: str = "",
) -> None:
    """Admit a request for `resource` (of API `group`) in `namespace`, or raise.

    `name` is the request's name; for a create before its name is generated, the object's
    generateName (`errors.object_name` gives it). `namespace_obj` is the namespace as stored,
    or None when it does not exist.
    """
    if resource == "namespaces" and not group:
        if operation == "DELETE" and name in IMMORTAL_NAMESPACES:
            raise status.forbidden(resource, name, "this namespace may not be deleted")
        return
    if not namespace or operation not in ("CREATE", "UPDATE"):
        return
    if (group, resource) in _ACCESS_REVIEWS:
        return
    if namespace_obj is None:
        raise status.not_found("namespaces", namespace)
    if operation == "CREATE" and _phase(namespace_obj) == NAMESPACE_TERMINATING:
        raise _terminating(resource, group, name or "Unknown", namespace)


def _phase(namespace_obj: Mapping[str, Any]) -> Any:
    ns_status = namespace_obj.get("status")
    if type(ns_status) is dict or isinstance(ns_status, Mapping):  # a dict: no ABC check
        return ns_status.get("phase")
    return None


def _terminating(resource: str, group: str, name: str, namespace: str) -> status.StatusError:
    error = status.forbidden(
        resource,
        name,
        f"unable to create new content in namespace {namespace} because it is being terminated",
        group,
    )
    assert error.details is not None
    error.details["causes"] = [
        {
            "reason": status.NAMESPACE_TERMINATING_CAUSE,
            "message": f"namespace {namespace} is being terminated",
            "field": "metadata.namespace",
        }
    ]
    return error
