"""ComponentStatus (core/v1, deprecated since v1.19): the health of the control plane's
components as kube-apiserver v1.32 reports it (pkg/registry/core/componentstatus). Nothing is
stored: each GET or LIST checks the scheduler, the controller manager and the store at that
moment; the kind takes get and list only, and every answer about it carries a deprecation
Warning. Its table is printComponentStatus's: the Healthy condition's status, message, error.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from pinnace.api.kind import Kind
from pinnace.api.objects import Object
from pinnace.api.tables.columns import Column, Printer, Row, name_column, name_of

__all__ = ["COMPONENT_STATUS", "ComponentHealth", "component_status"]


class ComponentHealth(NamedTuple):
    """One component's check, as componentstatus' Server.DoServerCheck answers it."""

    name: str
    """"scheduler", "controller-manager", "etcd-0"."""
    status: str
    """The Healthy condition's status: "True", "False" (a check that failed, with why in
    `message`) or "Unknown" (one that could not be made, with `error`)."""
    message: str = ""
    error: str = ""


def component_status(health: ComponentHealth) -> Object:
    """The ComponentStatus of a check, its condition's fields in Go's order (message and
    error left out when empty)."""
    condition: dict[str, Any] = {"type": "Healthy", "status": health.status}
    if health.message:
        condition["message"] = health.message
    if health.error:
        condition["error"] = health.error
    return {
        "kind": "ComponentStatus",
        "apiVersion": "v1",
        "metadata": {"name": health.name},
        "conditions": [condition],
    }


def _row(status: Object, now: float) -> Row:
    shown, message, error = "Unknown", "", ""
    for condition in status.get("conditions") or ():
        if isinstance(condition, dict) and condition.get("type") == "Healthy":
            shown = "Healthy" if condition.get("status") == "True" else "Unhealthy"
            message, error = condition.get("message", ""), condition.get("error", "")
            break
    return Row([name_of(status), shown, str(message), str(error)])


PRINTER = Printer(
    (
        name_column(),
        Column("Status", "string", "Status of the component conditions"),
        Column("Message", "string", "Message of the component conditions"),
        Column("Error", "string", "Error of the component conditions"),
    ),
    _row,
)

COMPONENT_STATUS = Kind(
    group="",
    version="v1",
    kind="ComponentStatus",
    plural="componentstatuses",
    namespaced=False,
    model="V1ComponentStatus",
    short_names=("cs",),
    verbs=("get", "list"),
    warning="v1 ComponentStatus is deprecated in v1.19+",
    printer=PRINTER,
)
