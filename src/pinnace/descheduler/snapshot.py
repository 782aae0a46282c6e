"""The cluster as one descheduling cycle sees it: the nodes, the pods bound to them, and a
scheduler node table of both, so that "would this pod fit on another node" is answered by the
scheduler's own Filter plugins (NodeUnschedulable, NodeAffinity with the node selector,
TaintToleration, NodeResourcesFit)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pinnace.api import catalog
from pinnace.api.apps import as_label_selector
from pinnace.api.labels import LabelSelector
from pinnace.api.objects import Object
from pinnace.client import Client
from pinnace.controllers.node_lifecycle import condition
from pinnace.scheduler.framework import CycleState, FilterPlugin, PreFilterPlugin
from pinnace.scheduler.nodetable import NodeTable
from pinnace.scheduler.plugins.node_affinity import NodeAffinity
from pinnace.scheduler.plugins.node_resources_fit import NodeResourcesFit
from pinnace.scheduler.plugins.node_unschedulable import NodeUnschedulable
from pinnace.scheduler.plugins.taint_toleration import TaintToleration
from pinnace.scheduler.podinfo import PodInfo

NODES = catalog.kind("", "nodes")
PODS = catalog.kind("", "pods")
PRIORITY_CLASSES = catalog.kind("scheduling.k8s.io", "priorityclasses")
PDBS = catalog.kind("policy", "poddisruptionbudgets")
FIT_PLUGINS: tuple[FilterPlugin, ...] = (
    NodeUnschedulable(),
    NodeAffinity(),
    TaintToleration(),
    NodeResourcesFit(),
)
"""The checks of the descheduler's NodeFit, as the scheduler makes them."""


def _is_ready(node: Object) -> bool:
    ready = condition(node, "Ready")
    return ready is not None and ready.get("status") == "True"


def is_finished(pod: Object) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


@dataclass
class Snapshot:
    now: float
    nodes: list[Object]
    pods: list[Object]
    priority_classes: dict[str, int]
    budgets: list[Object] = field(default_factory=list)
    """The PodDisruptionBudgets, for the DefaultEvictor's ignorePodsWithoutPDB."""
    table: NodeTable = field(default_factory=NodeTable)
    by_node: dict[str, list[Object]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for node in self.nodes:
            self.table.add_node(node)
            self.by_node[node["metadata"]["name"]] = []
        for pod in self.pods:
            node = pod["spec"].get("nodeName")
            if node in self.by_node:
                self.by_node[node].append(pod)
                if not is_finished(pod):
                    self.table.add_pod(PodInfo.from_pod(pod), node)

    def pods_on(self, node: str, finished: bool = False) -> list[Object]:
        """The pods bound to `node`; finished ones (they hold no resources) only if asked,
        as the descheduler lists them only for RemoveFailedPods."""
        pods = self.by_node.get(node, [])
        return pods if finished else [p for p in pods if not is_finished(p)]

    def active_pods(self) -> list[Object]:
        """The pods on the nodes that neither finished nor are being deleted."""
        return [
            p
            for node in self.by_node
            for p in self.pods_on(node)
            if not p["metadata"].get("deletionTimestamp")
        ]

    def covered_by_budget(self, pod: Object) -> bool:
        """Whether a PodDisruptionBudget of the pod's namespace selects it (the descheduler's
        IsPodCoveredByPDB: a budget whose selector is absent or does not convert selects
        nothing)."""
        labels = pod["metadata"].get("labels") or {}
        namespace = pod["metadata"].get("namespace")
        for budget in self.budgets:
            if budget["metadata"].get("namespace") != namespace:
                continue
            selector = as_label_selector((budget.get("spec") or {}).get("selector"))
            if selector is not None and selector.matches(labels):
                return True
        return False

    def node(self, name: str) -> Mapping[str, Any] | None:
        i = self.table.index.get(name)
        return None if i is None else self.table.nodes[i]

    def feasible(self, pod: Object) -> np.ndarray:
        """Which nodes the scheduler's filters would accept `pod` on, counting the pods there
        now (the pod itself included where it runs)."""
        info = PodInfo.from_pod(pod)
        state = CycleState()
        mask = np.ones(len(self.table), bool)
        for plugin in FIT_PLUGINS:
            if isinstance(plugin, PreFilterPlugin):
                status = plugin.pre_filter(state, info, self.table)
                if status.is_skip():
                    continue
                if not status.is_success():
                    return np.zeros(len(self.table), bool)
            mask = plugin.filter(state, info, self.table, mask)
        return mask

    def fits_other_node(self, pod: Object) -> bool:
        mask = self.feasible(pod)
        own = self.table.index.get(pod["spec"].get("nodeName", ""))
        if own is not None:
            mask[own] = False
        return bool(mask.any())

    def fits_node(self, pod: Object, node: str) -> bool:
        i = self.table.index.get(node)
        return i is not None and bool(self.feasible(pod)[i])

    def usage(self, node: str, resources: tuple[str, ...]) -> dict[str, int]:
        """What the pods on `node` request (cpu in millicores, pods counted), per resource."""
        i = self.table.index[node]
        return {r: int(self.table.requested[i, self.table.column(r)]) for r in resources}

    def allocatable(self, node: str, resources: tuple[str, ...]) -> dict[str, int]:
        i = self.table.index[node]
        return {r: int(self.table.allocatable[i, self.table.column(r)]) for r in resources}


async def take_snapshot(client: Client, node_selector: LabelSelector | None) -> Snapshot:
    """The Ready nodes (those `node_selector` matches), every pod, the priority classes and
    the PodDisruptionBudgets."""
    nodes = [n for n in (await client.list(NODES, ""))["items"] if _is_ready(n)]
    if node_selector is not None:
        nodes = [n for n in nodes if node_selector.matches(n["metadata"].get("labels") or {})]
    pods = (await client.list(PODS, ""))["items"]
    classes = (await client.list(PRIORITY_CLASSES, ""))["items"]
    budgets = (await client.list(PDBS, ""))["items"]
    return Snapshot(
        client.clock.now(),
        nodes,
        pods,
        {c["metadata"]["name"]: int(c.get("value") or 0) for c in classes},
        budgets,
    )
