"""Many simulated nodes in one NodeAgentPool: one pod informer, one heartbeat wheel."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest
from tests.client.conftest import CONFIG_MAPS, config_map
from tests.kubelet.conftest import LEASES, NODES, PODS, pod
from tests.support import SimulatedCluster

from pinnace.api.options import LogOptions
from pinnace.apiserver.logs import log_text
from pinnace.client import Informer, PatchType
from pinnace.clock import parse_time
from pinnace.cluster import ClusterOptions
from pinnace.kubelet import NodeConfig, node_configs
from pinnace.kubelet.agent import NodeAgent
from pinnace.kubelet.sources import SourceKind


def nodes_only(nodes: Sequence[NodeConfig]) -> SimulatedCluster:
    """The API server and the node agents, with neither scheduler nor controllers."""
    return SimulatedCluster(ClusterOptions(nodes=nodes, scheduler=False, controllers=False))


def test_pool_registers_every_node_and_renews_each_lease_every_10_seconds() -> None:
    cluster = nodes_only(node_configs(25, {"cpu": "1", "pods": "5"}))
    try:
        pool = cluster.plane.nodes
        nodes = cluster.run(cluster.client.list(NODES))["items"]
        assert len(nodes) == 25
        # No memory in capacity: the page sizes (0) take allocatable memory to 0.
        zero = {"hugepages-1Gi": "0", "hugepages-2Mi": "0", "memory": "0"}
        assert nodes[0]["status"]["allocatable"] == {"cpu": "1", "pods": "5", **zero}

        def renew_times() -> dict[str, float]:
            leases = cluster.run(cluster.client.list(LEASES, "kube-node-lease"))["items"]
            return {x["metadata"]["name"]: parse_time(x["spec"]["renewTime"]) for x in leases}

        cluster.wait(10)
        first = renew_times()
        cluster.wait(30)
        later = renew_times()
        assert len(later) == 25
        assert all(later[name] - first[name] == 30 for name in later)
        # spread over the interval, not all at once
        assert len({round(t % 10) for t in later.values()}) == 10
        assert pool.renewals == 25 * 4

        cluster.run(cluster.client.create(PODS, "default", pod("a", node="pinnace-node-7")))
        cluster.run(
            cluster.client.create(PODS, "default", pod("b", node="pinnace-node-8", log="hi"))
        )
        cluster.wait(1)
        a = cluster.run(cluster.client.get(PODS, "default", "a"))["status"]
        assert (a["phase"], a["hostIP"]) == ("Running", "10.0.0.7")
        b = cluster.run(cluster.client.get(PODS, "default", "b"))["status"]
        assert (b["phase"], b["hostIP"]) == ("Running", "10.0.0.8")
        # Each worker keeps its pod in the bytes the pool's pod informer caches, not a copy.
        worker = next(iter(pool.agents["pinnace-node-7"].workers.values()))
        assert worker._packed is pool._pods._cache["default/a"]
        assert worker.read_pod()["spec"]["nodeName"] == "pinnace-node-7"
        assert cluster.run(log_text(cluster.server, "default", "b", LogOptions())) == "hi\n"
    finally:
        cluster.close()


def test_a_labelled_node_created_through_the_api_is_adopted_and_its_deletion_ends_it() -> None:
    cluster = nodes_only([])
    try:
        pool = cluster.plane.nodes
        node = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "edge", "labels": {"pinnace.dev/simulated": "true", "zone": "a"}},
            "status": {"capacity": {"cpu": "3", "memory": "1Gi", "pods": "4"}},
        }
        cluster.run(cluster.client.create(NODES, "", node))
        cluster.run(cluster.client.create(PODS, "default", pod("early", node="edge")))
        cluster.wait(1)
        adopted = cluster.run(cluster.client.get(NODES, "", "edge"))
        assert adopted["metadata"]["labels"]["zone"] == "a"
        assert adopted["status"]["allocatable"] == {
            "cpu": "3",
            "hugepages-1Gi": "0",
            "hugepages-2Mi": "0",
            "memory": "924Mi",
            "pods": "4",
        }
        assert adopted["status"]["conditions"][-1]["status"] == "True"
        assert cluster.run(cluster.client.get(PODS, "default", "early"))["status"]["phase"] == (
            "Running"
        )
        cluster.wait(20)
        renewed = cluster.run(cluster.client.get(LEASES, "kube-node-lease", "edge"))
        cluster.run(cluster.client.delete(NODES, "", "edge"))
        cluster.wait(30)
        assert "edge" not in pool.agents
        still = cluster.run(cluster.client.get(LEASES, "kube-node-lease", "edge"))
        assert still["spec"]["renewTime"] == renewed["spec"]["renewTime"]
    finally:
        cluster.close()


def test_pool_nodes_start_containers_once_their_config_map_appears() -> None:
    cluster = nodes_only(node_configs(3))
    try:
        body = pod("app", node="pinnace-node-3")
        body["spec"]["containers"][0]["envFrom"] = [{"configMapRef": {"name": "settings"}}]
        cluster.run(cluster.client.create(PODS, "default", body))
        cluster.wait(1)
        app = cluster.run(cluster.client.get(PODS, "default", "app"))["status"]
        assert app["containerStatuses"][0]["state"]["waiting"]["reason"] == (
            "CreateContainerConfigError"
        )
        cluster.run(cluster.client.create(CONFIG_MAPS, "default", config_map("settings", a="1")))
        cluster.wait(1)
        app = cluster.run(cluster.client.get(PODS, "default", "app"))["status"]
        assert app["phase"] == "Running"
    finally:
        cluster.close()


def recording(agent: NodeAgent, told: list[str]) -> Callable[[SourceKind, Mapping[str, Any]], None]:
    """The agent's `source_changed`, noting in `told` each time its node is told."""
    heard = agent.source_changed

    def source_changed(kind: SourceKind, source: Mapping[str, Any]) -> None:
        told.append(agent.name)
        heard(kind, source)

    return source_changed


def test_a_config_map_change_reaches_only_the_nodes_whose_pods_use_it() -> None:
    cluster = nodes_only(node_configs(3))
    try:
        pool = cluster.plane.nodes
        create = cluster.client.create
        cluster.run(create(CONFIG_MAPS, "default", config_map("sport", sport="football")))
        waiting = pod("waiting", node="pinnace-node-1")
        waiting["spec"]["containers"][0]["envFrom"] = [{"configMapRef": {"name": "settings"}}]
        reader = pod("reader", node="pinnace-node-2")
        reader["spec"]["containers"][0].update(
            image="busybox",
            command=["sh", "-c", "while true; do cat /etc/config/sport; echo; sleep 10; done"],
            volumeMounts=[{"name": "config", "mountPath": "/etc/config"}],
        )
        reader["spec"]["volumes"] = [{"name": "config", "configMap": {"name": "sport"}}]
        for body in (waiting, reader, pod("plain", node="pinnace-node-3")):
            cluster.run(create(PODS, "default", body))
        cluster.wait(15)
        told: list[str] = []
        for agent in pool.agents.values():
            agent.source_changed = recording(agent, told)  # type: ignore[method-assign,assignment]

        cluster.run(create(CONFIG_MAPS, "default", config_map("settings", a="1")))
        cluster.wait(1)
        assert told == ["pinnace-node-1"]
        app = cluster.run(cluster.client.get(PODS, "default", "waiting"))["status"]
        assert app["phase"] == "Running"

        told.clear()
        patch = {"data": {"sport": "cricket"}}
        cluster.run(cluster.client.patch(CONFIG_MAPS, "default", "sport", patch, PatchType.MERGE))
        cluster.wait(20)
        assert told == ["pinnace-node-2"]
        printed = cluster.run(log_text(cluster.server, "default", "reader", LogOptions()))
        assert printed.split()[0] == "football" and printed.split()[-1] == "cricket"
    finally:
        cluster.close()


def test_simulated_agents_share_the_controllers_informer_on_bound_pods(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # As kube-controller-manager's controllers share their pod informer, the simulated mode's
    # node agents share the node lifecycle and taint eviction controllers' one: each change of
    # a bound pod is watched and cached once for all of them. The live mode's pool keeps its
    # own, packed (its workers share the cached bytes).
    selectors: list[str] = []
    created = Informer.__init__

    def counted(self: Informer, client: Any, kind: Any, *args: Any, **kwargs: Any) -> None:
        if kind == PODS:
            selectors.append(kwargs.get("field_selector") or "")
        created(self, client, kind, *args, **kwargs)

    monkeypatch.setattr(Informer, "__init__", counted)
    for simulated, watches in ((True, 1), (False, 2)):
        selectors.clear()
        cluster = SimulatedCluster(ClusterOptions(nodes=node_configs(2), simulated=simulated))
        try:
            assert selectors.count("spec.nodeName!=") == watches
            cluster.run(cluster.client.create(PODS, "default", pod("a", node="pinnace-node-1")))
            cluster.wait(1)
            a = cluster.run(cluster.client.get(PODS, "default", "a"))["status"]
            assert a["phase"] == "Running"
        finally:
            cluster.close()
