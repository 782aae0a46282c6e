"""`pinnace plan remove`: cluster-autoscaler's scale-down simulation, worked out by hand."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.plan.manifests import deployment, pod, pool, snapshot

from pinnace.plan.remove import removable


def test_two_of_three_nodes_go_and_the_last_has_no_room(tmp_path: Path) -> None:
    cluster = snapshot(tmp_path, pool("general", 3), objects=[deployment("web", 3, "1")])
    plan = removable(cluster).document
    assert [r["node"] for r in plan["removable"]] == ["general-1", "general-2"]
    assert plan["removable"][1]["moves"][0]["to"] == "general-3"
    (last,) = plan["unremovable"]
    assert (last["node"], last["reason"]) == ("general-3", "NoPlaceToMovePods")
    assert last["detail"] == "no nodes available to schedule pods"  # it was the last node
    assert (plan["nodesBefore"], plan["nodesAfter"]) == (3, 1)
    assert plan["compactionRatio"] == pytest.approx(2 / 3, abs=1e-6)
    assert [n["name"] for n in plan["nodes"]] == ["general-3"]
    assert plan["nodes"][0]["requested"]["cpu"] == "3"


def _on_first(**changes: Any) -> list[Any]:
    """A Deployment's one pod pinned to general-1, changed by `changes`."""
    pinned = deployment("app", 1, "1", nodeSelector={"kubernetes.io/hostname": "general-1"})
    pinned["spec"]["template"]["spec"]["nodeSelector"] = {"kubernetes.io/hostname": "general-1"}
    for where, value in changes.items():
        if where == "namespace":
            pinned["metadata"]["namespace"] = value
        elif where == "annotations":
            pinned["spec"]["template"]["metadata"]["annotations"] = value
        else:
            pinned["spec"]["template"]["spec"][where] = value
    return [pinned]


LOCAL = [{"name": "scratch", "emptyDir": {}}]
BUDGET = {
    "apiVersion": "policy/v1",
    "kind": "PodDisruptionBudget",
    "metadata": {"name": "app", "namespace": "default"},
    "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "app"}}},
}


@pytest.mark.parametrize(
    ("objects", "reason"),
    [
        ([pod("lonely", "1", nodeName="general-1")], "NotReplicated"),
        (_on_first(volumes=LOCAL), "LocalStorageRequested"),
        (
            _on_first(annotations={"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"}),
            "NotSafeToEvictAnnotation",
        ),
        (_on_first(namespace="kube-system"), "UnmovableKubeSystemPod"),
        ([*_on_first(), BUDGET], "NotEnoughPdb"),
    ],
)
def test_the_pod_that_blocks_a_node(tmp_path: Path, objects: list[Any], reason: str) -> None:
    cluster = snapshot(tmp_path, pool("general", 2), objects=objects)
    plan = removable(cluster).document
    blocked = {r["node"]: r for r in plan["unremovable"]}["general-1"]
    assert (blocked["reason"], blocked["blockingReason"]) == ("BlockedByPod", reason)
    assert [r["node"] for r in plan["removable"]] == ["general-2"]


def test_what_lifts_a_block(tmp_path: Path) -> None:
    # memory-backed emptyDir, safe-to-evict "true", a budget with room: the node can go
    budget = {**BUDGET, "spec": {**BUDGET["spec"], "minAvailable": 0}}
    memory = [{"name": "scratch", "emptyDir": {"medium": "Memory"}}]
    safe = {"cluster-autoscaler.kubernetes.io/safe-to-evict": "true"}
    for objects in (_on_first(volumes=memory), _on_first(annotations=safe), [*_on_first(), budget]):
        cluster = snapshot(tmp_path, pool("general", 2, cpu="8"), objects=objects)
        removed = [r["node"] for r in removable(cluster).document["removable"]]
        assert "general-1" in removed or "general-2" in removed


def test_a_threshold_keeps_busy_nodes(tmp_path: Path) -> None:
    cluster = snapshot(tmp_path, pool("general", 2), objects=[deployment("web", 2, "3")])
    plan = removable(cluster, threshold=0.5).document
    assert {r["reason"] for r in plan["unremovable"]} == {"NotUnderutilized"}
    assert plan["removable"] == []
