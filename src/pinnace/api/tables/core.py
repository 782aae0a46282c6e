"""The small core/v1 kinds: namespaces, configmaps, secrets, service accounts, resource
quotas and component statuses."""

from __future__ import annotations

from typing import Any

from pinnace.api.tables.columns import (
    Column,
    Object,
    Printer,
    Row,
    age_column,
    age_of,
    doc,
    name_column,
    name_of,
    section,
)
from pinnace.api.tables.formats import quantity


def _size(value: Any) -> int:
    return len(value) if isinstance(value, dict) else 0


NAMESPACES = Printer(
    (name_column(), Column("Status", "string", "The status of the namespace"), age_column()),
    lambda ns, now: Row(
        [name_of(ns), str(section(ns, "status").get("phase", "")), age_of(ns, now)]
    ),
)

CONFIG_MAPS = Printer(
    (name_column(), Column("Data", "string", doc("V1ConfigMap", "data")), age_column()),
    lambda cm, now: Row(
        [name_of(cm), _size(cm.get("data")) + _size(cm.get("binaryData")), age_of(cm, now)]
    ),
)

SECRETS = Printer(
    (
        name_column(),
        Column("Type", "string", doc("V1Secret", "type")),
        Column("Data", "string", doc("V1Secret", "data")),
        age_column(),
    ),
    lambda secret, now: Row(
        [
            name_of(secret),
            str(secret.get("type") or ""),
            _size(secret.get("data")),
            age_of(secret, now),
        ]
    ),
)

SERVICE_ACCOUNTS = Printer(
    (
        name_column(),
        Column("Secrets", "string", doc("V1ServiceAccount", "secrets")),
        age_column(),
    ),
    lambda sa, now: Row([name_of(sa), _length(sa.get("secrets")), age_of(sa, now)]),
)


def _length(value: Any) -> int:
    return len(value) if isinstance(value, list) else 0


def quota_usage(quota: Object) -> tuple[str, str]:
    """The REQUEST and LIMIT cells: `resource: used/hard` for every hard limit in status,
    sorted by resource name, with the `limits.*` resources in the second cell."""
    status = section(quota, "status")
    hard, used = section(status, "hard"), section(status, "used")
    requests: list[str] = []
    limits: list[str] = []
    for resource in sorted(hard):
        pieces = resource.split(".")
        column = limits if len(pieces) > 1 and pieces[0] == "limits" else requests
        column.append(f"{resource}: {quantity(used.get(resource, '0'))}/{quantity(hard[resource])}")
    return ", ".join(requests), ", ".join(limits)


def _quota_row(quota: Object, now: float) -> Row:
    requests, limits = quota_usage(quota)
    return Row([name_of(quota), requests, limits, age_of(quota, now)])


RESOURCE_QUOTAS = Printer(
    (
        name_column(),
        Column(
            "Request",
            "string",
            "Request represents a minimum amount of cpu/memory that a container may consume.",
        ),
        Column(
            "Limit",
            "string",
            "Limits control the maximum amount of cpu/memory that a container may use "
            "independent of contention on the node.",
        ),
        age_column(),
    ),
    _quota_row,
)


def _component_status_row(status: Object, now: float) -> Row:
    """printComponentStatus: the Healthy condition's status, message and error."""
    shown, message, error = "Unknown", "", ""
    for condition in status.get("conditions") or ():
        if isinstance(condition, dict) and condition.get("type") == "Healthy":
            shown = "Healthy" if condition.get("status") == "True" else "Unhealthy"
            message, error = condition.get("message", ""), condition.get("error", "")
            break
    return Row([name_of(status), shown, str(message), str(error)])


COMPONENT_STATUSES = Printer(
    (
        name_column(),
        Column("Status", "string", "Status of the component conditions"),
        Column("Message", "string", "Message of the component conditions"),
        Column("Error", "string", "Error of the component conditions"),
    ),
    _component_status_row,
)
