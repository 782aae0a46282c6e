"""A node's kubelet timings from its configuration: the lease renewed every quarter of
nodeLeaseDurationSeconds, the status computed every nodeStatusUpdateFrequency and posted
unchanged every nodeStatusReportFrequency."""

from __future__ import annotations

import itertools

from tests.kubelet.conftest import LEASES, NODES
from tests.support import SimulatedCluster

from pinnace.clock import parse_time
from pinnace.cluster import ClusterOptions
from pinnace.kubelet import NodeConfig


def test_each_pool_keeps_its_own_lease_and_status_timings() -> None:
    slow = NodeConfig(
        name="slow-1",
        index=1,
        lease_duration_seconds=60,
        node_status_update_frequency=30,
        node_status_report_frequency=30,
    )
    nodes = [slow, NodeConfig(name="default-1", index=2)]
    cluster = SimulatedCluster(ClusterOptions(nodes=nodes, scheduler=False, controllers=False))
    renewals: dict[str, list[float]] = {"slow-1": [], "default-1": []}
    heartbeats: dict[str, list[float]] = {"slow-1": [], "default-1": []}
    try:
        for _ in range(130):
            cluster.wait(1)
            for name in renewals:
                lease = cluster.run(cluster.client.get(LEASES, "kube-node-lease", name))
                renewals[name].append(parse_time(lease["spec"]["renewTime"]))
                node = cluster.run(cluster.client.get(NODES, "", name))
                ready = next(c for c in node["status"]["conditions"] if c["type"] == "Ready")
                heartbeats[name].append(parse_time(ready["lastHeartbeatTime"]))
    finally:
        cluster.close()

    def steps(times: list[float]) -> set[int]:
        """The gaps between writes, from the first heartbeat's on (not registration's)."""
        distinct = sorted(set(times))[1:]
        return {round(b - a) for a, b in itertools.pairwise(distinct)}

    assert steps(renewals["slow-1"]) == {15}  # a quarter of 60 s
    assert steps(renewals["default-1"]) == {10}
    assert steps(heartbeats["slow-1"]) == {30}
    assert heartbeats["default-1"][0] == heartbeats["default-1"][-1]  # unchanged: not posted
