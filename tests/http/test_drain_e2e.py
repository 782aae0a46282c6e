"""kubectl drain as a real user runs it, against `pinnace up` with two nodes: the scheduler places
the pods, node agents run them, and a drain evicts gracefully (no --grace-period=0): the node
agent stops the containers and the pods go, the node stays cordoned, new pods avoid it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.http.conftest import Cluster, launch, stop
from tests.support import eventually

# The nodes compute their status every second (nodeStatusUpdateFrequency, 10 s by default), so
# a cordon's Event comes within a second.
CLUSTER_FILE = """\
apiVersion: pinnace.dev/v1alpha1
kind: Cluster
nodePools:
- name: node
  count: 2
  kubelet: {nodeStatusUpdateFrequency: 1s}
"""


@pytest.fixture(scope="module")
def nodes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    workdir = tmp_path_factory.mktemp("pinnace-up-nodes")
    (workdir / "cluster.yaml").write_text(CLUSTER_FILE)
    running = launch(workdir, flags=("--config", str(workdir / "cluster.yaml")))
    yield running
    stop(running)


def node_of(cluster: Cluster, pod: str) -> str:
    return cluster.ok("get", "pod", pod, "-o", "jsonpath={.spec.nodeName}")


def test_drain_moves_work_off_a_node(nodes: Cluster) -> None:
    for pod in ("first", "second"):
        nodes.ok("run", pod, "--image=nginx:1.27")
    nodes.ok("wait", "--for=condition=Ready", "pod/first", "pod/second", "--timeout=30s")
    drained = node_of(nodes, "first")
    # Bare pods need --force; the eviction keeps each pod's 30 s grace period, which the node
    # agent cuts short once its containers have stopped.
    done = nodes.kubectl("drain", drained, "--ignore-daemonsets", "--force", "--timeout=60s")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"node/{drained} cordoned"
    assert "pod/first evicted" in lines
    assert lines[-1] == f"node/{drained} drained"
    assert "Warning: deleting Pods that declare no controller: default/first" in done.stderr
    on_drained = nodes.ok(
        "get", "pods", "-o", "name", "--field-selector", f"spec.nodeName={drained}"
    )
    assert on_drained == ""
    assert "first" not in nodes.ok("get", "pods", "-o", "name")
    status = nodes.ok("get", "node", drained).splitlines()[1].split()[1]
    assert status == "Ready,SchedulingDisabled"
    killing = nodes.ok(
        "get", "events", "--field-selector", "involvedObject.name=first,reason=Killing"
    )
    assert "Stopping container first" in killing
    nodes.ok("run", "third", "--image=nginx:1.27")
    nodes.ok("wait", "--for=condition=Ready", "pod/third", "--timeout=30s")
    assert node_of(nodes, "third") != drained


def test_the_node_agent_records_a_cordon_and_an_uncordon(nodes: Cluster) -> None:
    schedulable = nodes.ok("get", "nodes", "--field-selector", "spec.unschedulable=false")
    node = schedulable.splitlines()[1].split()[0]

    def seen(reason: str) -> bool:
        selector = f"involvedObject.kind=Node,involvedObject.name={node},reason={reason}"
        messages = nodes.ok(
            "get", "events", "--field-selector", selector, "-o", "jsonpath={.items[*].message}"
        )
        return messages == f"Node {node} status is now: {reason}"

    nodes.ok("cordon", node)
    # At the node agent's next node status update (nodeStatusUpdateFrequency).
    eventually(lambda: seen("NodeNotSchedulable"), timeout=20)
    nodes.ok("uncordon", node)
    eventually(lambda: seen("NodeSchedulable"), timeout=20)
