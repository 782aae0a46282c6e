"""A fragmented cluster: three 4-CPU nodes with 3, 2 and 2 CPU requested, and a pod asking
for 3 CPU that fits on no node although 5 CPU are free in all. HighNodeUtilization (with the
scheduler scoring MostAllocated, as the descheduler's docs ask) moves a pod off an
underutilized node onto the fuller one; the large pod then gets the freed node, and every
deployment keeps its replicas."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.descheduler.cluster import DEPLOYMENTS, PODS, Descheduled, deployment, pod

HIGH_NODE_UTILIZATION = """
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: compact
  pluginConfig:
  - name: DefaultEvictor
    args:
      nodeFit: true
  - name: HighNodeUtilization
    args:
      thresholds:
        cpu: 60
  plugins:
    balance:
      enabled: [HighNodeUtilization]
"""


@pytest.fixture
def cluster() -> Iterator[Descheduled]:
    c = Descheduled()
    yield c
    c.close()


def fragment(cluster: Descheduled) -> tuple[str, str, str]:
    """Deployments a (3 pods), b and c (2 pods each), one node each, 1 CPU a pod; then a
    3-CPU pod that stays Pending."""
    first, second, third = cluster.node_names
    for name, replicas, node in (("a", 3, first), ("b", 2, second), ("c", 2, third)):
        others = [n for n in (first, second, third) if n != node]
        cluster.cordon(*others)
        cluster.cordon(node, unschedulable=False)
        cluster.create(DEPLOYMENTS, deployment(name, replicas))
        cluster.settle(10)
    cluster.cordon(first, second, third, unschedulable=False)
    cluster.create(PODS, pod("large", cpu="3"))
    cluster.settle(10)
    return first, second, third


def available(cluster: Descheduled, name: str) -> int:
    return (cluster.get(DEPLOYMENTS, name).get("status") or {}).get("availableReplicas", 0)


def test_high_node_utilization_makes_room_for_a_large_pod(cluster: Descheduled) -> None:
    first, second, third = fragment(cluster)
    placement = cluster.placement()
    assert [len(placement[n]) for n in (first, second, third)] == [3, 2, 2]
    assert cluster.get(PODS, "large")["spec"].get("nodeName") is None
    assert cluster.events("FailedScheduling")[-1].startswith("0/3 nodes are available")

    result = cluster.deschedule(HIGH_NODE_UTILIZATION)

    # The destination has 1 CPU to spare: one pod moves, from an underutilized node.
    (eviction,) = result.evictions
    assert eviction.strategy == "HighNodeUtilization"
    assert eviction.node in (second, third)
    assert eviction.reason == "node is underutilized (cpu 50%, memory 0%, pods 10%)"
    cluster.settle(60)
    large = cluster.get(PODS, "large")
    assert large["spec"]["nodeName"] == eviction.node
    assert large["status"]["phase"] == "Running"
    assert [available(cluster, d) for d in ("a", "b", "c")] == [3, 2, 2]
    assert len(cluster.placement()[first]) == 4


def test_dry_run_evicts_nothing(cluster: Descheduled) -> None:
    fragment(cluster)
    before = cluster.placement()
    result = cluster.deschedule(HIGH_NODE_UTILIZATION, dry_run=True)
    assert len(result.evictions) == 1
    cluster.settle(30)
    assert cluster.placement() == before
    assert cluster.get(PODS, "large")["spec"].get("nodeName") is None
