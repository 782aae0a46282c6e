"""ComponentStatus (core/v1, deprecated since v1.19): the health of the control plane's
components as kube-apiserver v1.32 reports it (pkg/registry/core/componentstatus). Nothing is
stored: each GET or LIST checks the scheduler, the controller manager and the store at that
moment; the kind takes get and list only, and every answer about it carries a deprecation
Warning. Its table is in `pinnace.api.tables.core`.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from pinnace.api.kind import Kind
from pinnace.api.objects import Object

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
)
