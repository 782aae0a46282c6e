"""kubectl drain against `pinnace up --nodes 2` waits on a PodDisruptionBudget: with both pods
of a two-replica deployment on the drained node and minAvailable 1, the first eviction goes,
the second is refused (429) and retried until the replacement is Ready on the other node."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.http.conftest import Cluster, launch, stop

BUDGET = """
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: web}}
"""


@pytest.fixture(scope="module")
def nodes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    running = launch(tmp_path_factory.mktemp("pinnace-up-budget"), flags=("--nodes", "2"))
    yield running
    stop(running)


def test_drain_waits_for_the_budget(nodes: Cluster) -> None:
    drained, other = nodes.ok("get", "nodes", "-o", "name").split()
    drained, other = drained.removeprefix("node/"), other.removeprefix("node/")
    nodes.ok("cordon", other)
    nodes.ok("create", "deployment", "web", "--image=nginx:1.27", "--replicas=2")
    nodes.ok("apply", "-f", "-", stdin=BUDGET)
    nodes.ok("rollout", "status", "deployment/web", "--timeout=30s")
    nodes.ok("uncordon", other)
    placed = nodes.ok("get", "pods", "-l", "app=web", "-o", "jsonpath={.items[*].spec.nodeName}")
    assert placed.split() == [drained, drained]
    header, row = nodes.ok("get", "pdb", "web").splitlines()
    assert header.split()[:6] == ["NAME", "MIN", "AVAILABLE", "MAX", "UNAVAILABLE", "ALLOWED"]
    assert row.split()[:4] == ["web", "1", "N/A", "1"]

    done = nodes.kubectl("drain", drained, "--ignore-daemonsets", "--timeout=90s")

    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == f"node/{drained} drained"
    assert "Cannot evict pod as it would violate the pod's disruption budget." in done.stderr, (
        done.stderr
    )
    assert done.stdout.count(" evicted") == 2
    placed = nodes.ok("get", "pods", "-l", "app=web", "-o", "jsonpath={.items[*].spec.nodeName}")
    assert placed.split() == [other, other]
    nodes.ok("rollout", "status", "deployment/web", "--timeout=30s")
    status = nodes.ok(
        "get",
        "pdb",
        "web",
        "-o",
        "jsonpath={.status.currentHealthy}/{.status.desiredHealthy}/{.status.expectedPods}",
    )
    assert status == "2/1/2"


TERMINATING = """
apiVersion: v1
kind: Namespace
metadata: {name: leaving}
---
apiVersion: v1
kind: Pod
metadata: {name: kept, namespace: leaving, finalizers: [example.com/keep]}
spec:
  containers: [{name: app, image: nginx}]
"""


def test_no_eviction_in_a_terminating_namespace(nodes: Cluster) -> None:
    """The create handler's admission sees an Eviction as any create: NamespaceLifecycle
    refuses it while the namespace terminates (what kubectl drain takes as the pod going)."""
    nodes.ok("apply", "-f", "-", stdin=TERMINATING)
    nodes.ok("delete", "namespace", "leaving", "--wait=false")
    eviction = '{"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "kept"}}'
    done = nodes.kubectl(
        "create",
        "--raw",
        "/api/v1/namespaces/leaving/pods/kept/eviction",
        "-f",
        "-",
        stdin=eviction,
    )
    assert done.returncode != 0
    assert (
        'pods "kept" is forbidden: unable to create new content in namespace leaving because it '
        "is being terminated" in done.stderr
    ), done.stderr
    nodes.ok(
        "patch",
        "pod",
        "kept",
        "-n",
        "leaving",
        "--type=merge",
        "-p",
        '{"metadata": {"finalizers": null}}',
    )


EVERY_POD = """
apiVersion: v1
kind: Namespace
metadata: {name: every}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: all, namespace: every}
spec:
  minAvailable: 2
  selector: {}
"""


def test_an_empty_selector_guards_every_pod_of_the_namespace(nodes: Cluster) -> None:
    """policy/v1's `selector: {}` counts every pod of its namespace, and the eviction API
    spends it for any of them (v1.29 on)."""
    nodes.ok("apply", "-f", "-", stdin=EVERY_POD)
    for name, app in (("one", "a"), ("two", "b")):
        nodes.ok("run", name, "-n", "every", "--image=nginx", f"--labels=app={app}")
    nodes.ok("wait", "-n", "every", "--for=condition=Ready", "pod/one", "pod/two")
    nodes.ok(
        "wait",
        "-n",
        "every",
        "--for=jsonpath={.status.currentHealthy}=2",
        "pdb/all",
        "--timeout=20s",
    )
    _, row = nodes.ok("get", "pdb", "-n", "every").splitlines()
    assert row.split()[:4] == ["all", "2", "N/A", "0"]

    eviction = '{"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "one"}}'
    done = nodes.kubectl(
        "create", "--raw", "/api/v1/namespaces/every/pods/one/eviction", "-f", "-", stdin=eviction
    )

    assert done.returncode != 0
    assert (
        "Error from server (TooManyRequests): Cannot evict pod as it would violate the pod's "
        "disruption budget." in done.stderr
    ), done.stderr
