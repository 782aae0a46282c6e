"""Cluster events that can make an unschedulable pod schedulable (framework.ClusterEvent).

A plugin lists the events that can undo its rejections (`events_to_register`); the queue moves
a pod it parked as unschedulable back for another attempt when one of them happens and one of
the plugins that rejected the pod registered it. The action names are kube-scheduler v1.32's
ActionType names.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

NODE = "Node"
POD = "Pod"
ASSIGNED_POD = "AssignedPod"  # a pod bound to a node: what other pods' placement depends on

ADD = "Add"
DELETE = "Delete"
UPDATE = "Update"  # any update
UPDATE_NODE_ALLOCATABLE = "UpdateNodeAllocatable"
UPDATE_NODE_LABEL = "UpdateNodeLabel"
UPDATE_NODE_TAINT = "UpdateNodeTaint"  # taints or spec.unschedulable
UPDATE_NODE_CONDITION = "UpdateNodeCondition"
UPDATE_NODE_ANNOTATION = "UpdateNodeAnnotation"
UPDATE_POD_LABEL = "UpdatePodLabel"
UPDATE_POD_SCALE_DOWN = "UpdatePodScaleDown"
UPDATE_POD_TOLERATIONS = "UpdatePodTolerations"
UPDATE_POD_SCHEDULING_GATES_ELIMINATED = "UpdatePodSchedulingGatesEliminated"

_UPDATE_ACTIONS = frozenset(
    {
        UPDATE,
        UPDATE_NODE_ALLOCATABLE,
        UPDATE_NODE_LABEL,
        UPDATE_NODE_TAINT,
        UPDATE_NODE_CONDITION,
        UPDATE_NODE_ANNOTATION,
        UPDATE_POD_LABEL,
        UPDATE_POD_SCALE_DOWN,
        UPDATE_POD_TOLERATIONS,
        UPDATE_POD_SCHEDULING_GATES_ELIMINATED,
    }
)


class ClusterEvent(NamedTuple):
    resource: str
    action: str

    def matches(self, happened: ClusterEvent) -> bool:
        """Whether this registered event covers `happened` (a plain Update covers every
        kind of update of the resource; WILDCARD covers everything)."""
        if self.resource == "*":
            return True
        if self.resource != happened.resource:
            return False
        if self.action == happened.action:
            return True
        return self.action == UPDATE and happened.action in _UPDATE_ACTIONS


WILDCARD = ClusterEvent("*", "*")
"""What a plugin that registers no events gets: any event may help, as in kube-scheduler."""
NODE_ADD = ClusterEvent(NODE, ADD)
ASSIGNED_POD_DELETE = ClusterEvent(ASSIGNED_POD, DELETE)
UNSCHEDULABLE_TIMEOUT = ClusterEvent("UnschedulableTimeout", "")
"""Not a cluster change: a pod parked for 5 minutes goes back to the queue anyway."""


def node_update_events(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[ClusterEvent]:
    """What changed between two versions of a node, as kube-scheduler's
    nodeSchedulingPropertiesChange sees it."""
    actions = []
    old_status, new_status = old.get("status") or {}, new.get("status") or {}
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    old_meta, new_meta = old.get("metadata") or {}, new.get("metadata") or {}
    if old_status.get("allocatable") != new_status.get("allocatable"):
        actions.append(UPDATE_NODE_ALLOCATABLE)
    if old_meta.get("labels") != new_meta.get("labels"):
        actions.append(UPDATE_NODE_LABEL)
    if old_spec.get("taints") != new_spec.get("taints") or bool(
        old_spec.get("unschedulable")
    ) != bool(new_spec.get("unschedulable")):
        actions.append(UPDATE_NODE_TAINT)
    if _conditions(old_status) != _conditions(new_status):
        actions.append(UPDATE_NODE_CONDITION)
    if old_meta.get("annotations") != new_meta.get("annotations"):
        actions.append(UPDATE_NODE_ANNOTATION)
    return [ClusterEvent(NODE, action) for action in actions]


def _conditions(status: Mapping[str, Any]) -> dict[str, Any]:
    return {c.get("type"): c.get("status") for c in status.get("conditions") or ()}
