"""`kubectl get nodes`: STATUS from the Ready condition (plus SchedulingDisabled when cordoned),
ROLES from the node-role labels, and the wide addresses and system info."""

from __future__ import annotations

from pinnace.api.tables.columns import (
    Column,
    Object,
    Printer,
    Row,
    age_column,
    age_of,
    doc,
    items,
    meta,
    name_column,
    name_of,
    section,
)

ROLE_PREFIX = "node-role.kubernetes.io/"
ROLE_LABEL = "kubernetes.io/role"


def node_status(node: Object) -> str:
    """`Ready`, `NotReady` (a Ready condition that is False or Unknown) or `Unknown` (none),
    with `,SchedulingDisabled` for an unschedulable node."""
    ready = {str(c.get("type")): c for c in items(node, "status", "conditions")}.get("Ready")
    if ready is None:
        words = ["Unknown"]
    else:
        words = ["Ready" if ready.get("status") == "True" else "NotReady"]
    if section(node, "spec").get("unschedulable") is True:
        words.append("SchedulingDisabled")
    return ",".join(words)


def node_roles(node: Object) -> str:
    labels = meta(node).get("labels")
    roles: set[str] = set()
    for key, value in (labels if isinstance(labels, dict) else {}).items():
        if key.startswith(ROLE_PREFIX) and key != ROLE_PREFIX:
            roles.add(key.removeprefix(ROLE_PREFIX))
        elif key == ROLE_LABEL and value:
            roles.add(str(value))
    return ",".join(sorted(roles)) or "<none>"


def _address(node: Object, kind: str) -> str:
    for address in items(node, "status", "addresses"):
        if address.get("type") == kind:
            return str(address.get("address", ""))
    return "<none>"


def _row(node: Object, now: float) -> Row:
    info = section(node, "status", "nodeInfo")
    return Row(
        [
            name_of(node),
            node_status(node),
            node_roles(node),
            age_of(node, now),
            str(info.get("kubeletVersion", "")),
            _address(node, "InternalIP"),
            _address(node, "ExternalIP"),
            str(info.get("osImage") or "<unknown>"),
            str(info.get("kernelVersion") or "<unknown>"),
            str(info.get("containerRuntimeVersion") or "<unknown>"),
        ]
    )


NODES = Printer(
    (
        name_column(),
        Column("Status", "string", "The status of the node"),
        Column("Roles", "string", "The roles of the node"),
        age_column(),
        Column("Version", "string", doc("V1NodeSystemInfo", "kubeletVersion")),
        Column("Internal-IP", "string", doc("V1NodeStatus", "addresses"), 1),
        Column("External-IP", "string", doc("V1NodeStatus", "addresses"), 1),
        Column("OS-Image", "string", doc("V1NodeSystemInfo", "osImage"), 1),
        Column("Kernel-Version", "string", doc("V1NodeSystemInfo", "kernelVersion"), 1),
        Column(
            "Container-Runtime", "string", doc("V1NodeSystemInfo", "containerRuntimeVersion"), 1
        ),
    ),
    _row,
)
