"""The failures of patching, as kube-apiserver v1.32 reports them.

Each maps to the error a step of staging/src/k8s.io/apiserver/pkg/endpoints/handlers/patch.go
returns: undecodable bodies are 400 BadRequest, patches that cannot be applied are 422 with
apimachinery's generic wording (the library's own message is dropped there), and errors the
handler does not convert (strategic merge internals, typed conversion) reach the client as
500s with an empty reason and the Go error text.
"""

from __future__ import annotations

from typing import Any

from pinnace.api.gofloat import PRINT_V_E_FROM, format_float
from pinnace.api.status import StatusError, bad_request

__all__ = [
    "bad_request",
    "go_value",
    "gvk",
    "gvknn",
    "not_applicable",
    "too_many_operations",
    "unconverted",
]


def not_applicable() -> StatusError:
    """NewGenericServerResponse(422, ...): its message ignores the server message."""
    return StatusError(
        422, "Invalid", "the server rejected our request due to an error in our request", {}
    )


def too_many_operations(limit: int, count: int) -> StatusError:
    return StatusError(
        413,
        "RequestEntityTooLarge",
        "Request entity too large: "
        f"The allowed maximum operations in a JSON patch is {limit}, got {count}",
    )


def unconverted(message: str) -> StatusError:
    """A plain Go error the handler returns as is: ErrorToAPIStatus makes it a 500."""
    return StatusError(500, "", message)


def go_value(value: Any) -> str:
    """`%v` of a decoded JSON value in Go: map[a:1 b:[x y]] (maps print sorted by key)."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return format_float(value, PRINT_V_E_FROM)
    if isinstance(value, list):
        return "[" + " ".join(go_value(v) for v in value) + "]"
    if isinstance(value, dict):
        items = " ".join(f"{k}:{go_value(value[k])}" for k in sorted(value))
        return f"map[{items}]"
    return str(value)


def gvk(obj: dict[str, Any]) -> str:
    """A GroupVersionKind as Go prints it: `apps/v1, Kind=Deployment`, `/v1, Kind=Pod`."""
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    group, _, version = (api_version if isinstance(api_version, str) else "").rpartition("/")
    kind = kind if isinstance(kind, str) else ""
    return f"{group}/{version}, Kind={kind}"


def gvknn(obj: dict[str, Any]) -> str:
    """The field manager's objectGVKNN: `namespace/name; ` and the GroupVersionKind."""
    metadata = obj.get("metadata")
    if not isinstance(metadata, dict):
        metadata = {}
    return f"{metadata.get('namespace', '')}/{metadata.get('name', '')}; {gvk(obj)}"
