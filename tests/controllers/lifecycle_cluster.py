"""Simulated nodes in zones, on the virtual clock, with the controllers `pinnace up` runs: the
node lifecycle and taint eviction controllers among them."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import pytest
from tests.client.conftest import EVENTS, NODES, PODS
from tests.kubelet.conftest import LEASES
from tests.support import SimulatedCluster

from pinnace.api.objects import Object
from pinnace.clock import parse_time
from pinnace.cluster import ClusterOptions
from pinnace.controllers.node_lifecycle import NodeLifecycleConfig
from pinnace.kubelet import NodeConfig

__all__ = ["EVENTS", "MODES", "MODE_IDS", "NODES", "PODS", "LifecycleCluster", "both_modes", "pod"]

ZONE_LABEL = "topology.kubernetes.io/zone"
MODES, MODE_IDS = [False, True], ["live", "simulated"]
"""A fixture's parameters for a cluster in each mode (`ClusterOptions.simulated`)."""
both_modes = pytest.mark.parametrize("simulated", MODES, ids=MODE_IDS)
"""A test taking `simulated` runs in each mode: the simulated one leaves out only what nobody
can observe, so what a test observes must be the same."""


def pod(name: str, node: str, tolerations: Iterable[dict[str, Any]] = ()) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "nodeName": node,
        "containers": [{"name": "app", "image": "nginx"}],
    }
    if tolerations:
        spec["tolerations"] = list(tolerations)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


class LifecycleCluster(SimulatedCluster):
    """Simulated nodes (`zones` maps a zone to its node count, nodes named <zone>-<i>) and the
    controllers; the scheduler only when asked for, as pods here name their nodes; in the
    simulated mode with `simulated` (`ClusterOptions.simulated`)."""

    def __init__(
        self,
        zones: dict[str, int],
        config: NodeLifecycleConfig | None = None,
        *,
        scheduler: bool = False,
        simulated: bool = False,
    ) -> None:
        names = [(zone, f"{zone}-{i}") for zone, count in zones.items() for i in range(count)]
        configs = [
            NodeConfig(name=name, index=index, labels={ZONE_LABEL: zone})
            for index, (zone, name) in enumerate(names, start=1)
        ]
        super().__init__(
            ClusterOptions(
                nodes=configs,
                scheduler=scheduler,
                node_lifecycle=config or NodeLifecycleConfig(),
                seed=3,
                simulated=simulated,
            )
        )
        self.pool = self.plane.nodes
        assert self.plane.node_lifecycle is not None
        self.lifecycle = self.plane.node_lifecycle

    def node(self, name: str) -> Object:
        return self.run(self.client.get(NODES, "", name))

    def ready(self, name: str) -> Object:
        conditions = self.node(name)["status"]["conditions"]
        return next(c for c in conditions if c["type"] == "Ready")

    def taints(self, name: str) -> set[str]:
        taints = self.node(name)["spec"].get("taints") or ()
        return {f"{t['key']}:{t['effect']}" for t in taints}

    def taint_time(self, name: str, key: str, effect: str = "NoExecute") -> float:
        taints = self.node(name)["spec"].get("taints") or ()
        return next(
            parse_time(t["timeAdded"]) for t in taints if (t["key"], t["effect"]) == (key, effect)
        )

    def no_execute_tainted(self) -> dict[str, float]:
        """Node -> when it got its unreachable NoExecute taint, for the tainted nodes."""
        nodes = self.run(self.client.list(NODES))["items"]
        return {
            n["metadata"]["name"]: parse_time(t["timeAdded"])
            for n in nodes
            for t in n["spec"].get("taints") or ()
            if (t["key"], t["effect"]) == ("node.kubernetes.io/unreachable", "NoExecute")
        }

    def lease_renewed(self, name: str) -> float:
        lease = self.run(self.client.get(LEASES, "kube-node-lease", name))
        return parse_time(lease["spec"]["renewTime"])

    def heartbeat(self, name: str) -> float:
        """When the node's kubelet last renewed its lease, as the node lifecycle controller
        sees it: its Lease, or the pool's account of the renewals the simulated mode does not
        write."""
        accounted = self.pool.last_renewal(name)
        return max(self.lease_renewed(name), -math.inf if accounted is None else accounted)

    def get_pod(self, name: str) -> Object:
        return self.run(self.client.get(PODS, "default", name))

    def events(self, reason: str) -> list[Object]:
        items = self.run(self.client.list(EVENTS, ""))["items"]
        return [e for e in items if e["reason"] == reason]
