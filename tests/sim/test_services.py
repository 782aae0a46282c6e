"""Endpoints in the simulated mode: the documentation's node-failure example with a Service in
front of its web pods. When general-2 is lost its pods are marked not Ready, and leave the
Service's ready addresses; once evicted they are terminating in its EndpointSlice, and their
replacements take their place."""

from __future__ import annotations

from collections import Counter

from tests.sim.test_examples import GRACE, MONITOR_PERIOD, TOLERATION, example

from pinnace.api import catalog
from pinnace.api.objects import Object
from pinnace.sim import Simulation

ENDPOINTS = catalog.kind("", "endpoints")
SLICES = catalog.kind("discovery.k8s.io", "endpointslices")
SERVICE = {
    "apiVersion": "v1",
    "kind": "Service",
    "metadata": {"name": "web"},
    "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]},
}


def addresses(sim: Simulation, key: str) -> Counter[str]:
    ep = sim.run_coroutine(sim.client.get(ENDPOINTS, "default", "web"))
    return Counter(a["nodeName"] for s in ep.get("subsets") or [] for a in s.get(key) or [])


def slice_endpoints(sim: Simulation) -> list[Object]:
    listed = sim.run_coroutine(
        sim.client.list(SLICES, "default", label_selector="kubernetes.io/service-name=web")
    )
    return [e for s in listed["items"] for e in s["endpoints"]]


def test_a_lost_nodes_pods_leave_the_services_ready_addresses() -> None:
    data = example("node-failure.yaml")
    data["spec"]["until"] = "14m"
    data["spec"]["objects"].append(SERVICE)
    with Simulation(data) as sim:
        sim.advance(299)
        ready = addresses(sim, "addresses")
        assert sum(ready.values()) == 6 and ready["general-2"] > 0
        lost = ready["general-2"]
        sim.advance(300 + GRACE + 2 * MONITOR_PERIOD + 1)  # advance takes a moment, not a span
        assert "general-2" not in addresses(sim, "addresses")
        assert addresses(sim, "notReadyAddresses") == {"general-2": lost}
        sim.advance(300 + GRACE + TOLERATION + 4 * MONITOR_PERIOD + 30)
        assert sum(addresses(sim, "addresses").values()) == 6
        assert "general-2" not in addresses(sim, "addresses") | addresses(sim, "notReadyAddresses")
        gone = [e for e in slice_endpoints(sim) if e.get("nodeName") == "general-2"]
        assert len(gone) == lost
        assert all(e["conditions"]["terminating"] and not e["conditions"]["ready"] for e in gone)
