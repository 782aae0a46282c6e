"""`kubectl get nodes` rows."""

from __future__ import annotations

from typing import Any

import pytest

from pinnace.api.core.node import NODE
from pinnace.api.tables import to_table
from pinnace.clock.rfc3339 import parse_time

NOW = parse_time("2025-01-11T05:00:00Z")


def node(
    ready: str | None = "True", *, unschedulable: bool = False, labels: dict[str, str] | None = None
) -> dict[str, Any]:
    conditions = [{"type": "MemoryPressure", "status": "False"}]
    if ready is not None:
        conditions.append({"type": "Ready", "status": ready})
    return {
        "metadata": {
            "name": "node-1",
            "creationTimestamp": "2025-01-01T00:00:00Z",
            "labels": labels or {},
        },
        "spec": {"unschedulable": True} if unschedulable else {},
        "status": {
            "conditions": conditions,
            "addresses": [
                {"type": "Hostname", "address": "node-1"},
                {"type": "InternalIP", "address": "10.0.0.4"},
                {"type": "InternalIP", "address": "10.0.0.5"},
            ],
            "nodeInfo": {"kubeletVersion": "v1.32.0", "osImage": "Debian GNU/Linux 12"},
        },
    }


def cells(n: dict[str, Any]) -> list[Any]:
    return to_table(NODE, [n], now=NOW, list_meta={})["rows"][0]["cells"]


@pytest.mark.parametrize(
    ("ready", "unschedulable", "status"),
    [
        ("True", False, "Ready"),
        ("False", False, "NotReady"),
        ("Unknown", False, "NotReady"),
        (None, False, "Unknown"),
        ("True", True, "Ready,SchedulingDisabled"),
        ("Unknown", True, "NotReady,SchedulingDisabled"),
        (None, True, "Unknown,SchedulingDisabled"),
    ],
)
def test_node_status(ready: str | None, unschedulable: bool, status: str) -> None:
    assert cells(node(ready, unschedulable=unschedulable))[1] == status


@pytest.mark.parametrize(
    ("labels", "roles"),
    [
        ({}, "<none>"),
        ({"node-role.kubernetes.io/control-plane": ""}, "control-plane"),
        (
            {"node-role.kubernetes.io/worker": "", "node-role.kubernetes.io/control-plane": "x"},
            "control-plane,worker",
        ),
        ({"kubernetes.io/role": "master"}, "master"),
        ({"kubernetes.io/role": ""}, "<none>"),
        ({"node-role.kubernetes.io/": ""}, "<none>"),
        ({"kubernetes.io/role": "gpu", "node-role.kubernetes.io/gpu": ""}, "gpu"),
    ],
)
def test_node_roles(labels: dict[str, str], roles: str) -> None:
    assert cells(node(labels=labels))[2] == roles


def test_node_row_and_columns() -> None:
    table = to_table(NODE, [node()], now=NOW, list_meta={"resourceVersion": "77"})
    assert table["rows"][0]["cells"] == [
        "node-1",
        "Ready",
        "<none>",
        "10d",
        "v1.32.0",
        "10.0.0.4",
        "<none>",
        "Debian GNU/Linux 12",
        "<unknown>",
        "<unknown>",
    ]
    assert [(c["name"], c["priority"]) for c in table["columnDefinitions"]] == [
        ("Name", 0),
        ("Status", 0),
        ("Roles", 0),
        ("Age", 0),
        ("Version", 0),
        ("Internal-IP", 1),
        ("External-IP", 1),
        ("OS-Image", 1),
        ("Kernel-Version", 1),
        ("Container-Runtime", 1),
    ]
    assert table["metadata"] == {"resourceVersion": "77"}
