"""The namespace controller as a client of the API: a deleted namespace is emptied, reports
what holds it in the conditions kube-controller-manager writes, and goes when nothing is left."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from tests.support import SimulatedCluster

from pinnace.api import catalog
from pinnace.api.objects import Object
from pinnace.api.options import DeleteOptions
from pinnace.api.status import StatusError
from pinnace.client import EventRecorder
from pinnace.cluster import ClusterOptions
from pinnace.controllers.controller_utils import Expectations, PodControl
from pinnace.controllers.namespace import NAMESPACES

PODS = catalog.kind("", "pods")
CONFIGMAPS = catalog.kind("", "configmaps")


@pytest.fixture
def cluster() -> Iterator[SimulatedCluster]:
    """The API server and the namespace controller, which every cluster runs."""
    c = SimulatedCluster(ClusterOptions(scheduler=False, controllers=False))
    yield c
    c.close()


def settle(cluster: SimulatedCluster, seconds: float = 3.0) -> None:
    cluster.wait(seconds)


def conditions(cluster: SimulatedCluster) -> dict[str, tuple[str, str, str]]:
    ns = cluster.run(cluster.client.get(NAMESPACES, "", "team"))
    return {
        c["type"]: (c["status"], c["reason"], c["message"])
        for c in ns["status"].get("conditions", [])
    }


def test_a_deleted_namespace_reports_what_holds_it_then_goes(cluster: SimulatedCluster) -> None:
    client = cluster.client
    ns: Object = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}
    cluster.run(client.create(NAMESPACES, "", ns))
    # A pod on a node no agent runs stays terminating; a config map waits on its finalizer.
    pod = {
        "metadata": {"name": "stuck"},
        "spec": {"nodeName": "gone-node", "containers": [{"name": "c", "image": "nginx"}]},
    }
    cluster.run(client.create(PODS, "team", pod))
    held = {"metadata": {"name": "held", "finalizers": ["example.com/hold"]}, "data": {}}
    cluster.run(client.create(CONFIGMAPS, "team", held))
    cluster.run(client.create(CONFIGMAPS, "team", {"metadata": {"name": "plain"}}))

    cluster.run(client.delete(NAMESPACES, "", "team"))
    settle(cluster)
    assert conditions(cluster) == {
        "NamespaceDeletionDiscoveryFailure": (
            "False",
            "ResourcesDiscovered",
            "All resources successfully discovered",
        ),
        "NamespaceDeletionGroupVersionParsingFailure": (
            "False",
            "ParsedGroupVersions",
            "All legacy kube types successfully parsed",
        ),
        "NamespaceDeletionContentFailure": (
            "False",
            "ContentDeleted",
            "All content successfully deleted, may be waiting on finalization",
        ),
        "NamespaceContentRemaining": (
            "True",
            "SomeResourcesRemain",
            "Some resources are remaining: configmaps. has 1 resource instances, "
            "pods. has 1 resource instances",
        ),
        "NamespaceFinalizersRemaining": (
            "True",
            "SomeFinalizersRemain",
            "Some content in the namespace has finalizers remaining: example.com/hold in 1 "
            "resource instances",
        ),
    }

    cluster.run(client.delete(PODS, "team", "stuck", DeleteOptions(grace_period_seconds=0)))
    settle(cluster)
    remaining = conditions(cluster)["NamespaceContentRemaining"]
    assert remaining[2] == "Some resources are remaining: configmaps. has 1 resource instances"

    cluster.run(client.patch(CONFIGMAPS, "team", "held", {"metadata": {"finalizers": None}}))
    settle(cluster)
    with pytest.raises(StatusError) as gone:
        cluster.run(client.get(NAMESPACES, "", "team"))
    assert gone.value.code == 404


def test_a_pod_refused_in_a_terminating_namespace_is_no_error_and_no_event(
    cluster: SimulatedCluster, caplog: pytest.LogCaptureFixture
) -> None:
    """createPods records no FailedCreate for a NamespaceTerminating refusal (the event would
    be refused too), and the ReplicaSet and DaemonSet controllers take it as done."""
    client = cluster.client
    cluster.run(client.create(NAMESPACES, "", {"metadata": {"name": "team"}}))
    held = {"metadata": {"name": "held", "finalizers": ["example.com/hold"]}}
    cluster.run(client.create(CONFIGMAPS, "team", held))
    cluster.run(client.delete(NAMESPACES, "", "team"))
    settle(cluster)
    recorder = EventRecorder(client, "replicaset-controller")
    control = PodControl(client, recorder, Expectations(cluster.clock))
    owner = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "web", "namespace": "team", "uid": "8d5c0b6e"},
    }
    pod = {"metadata": {"generateName": "web-"}, "spec": {"containers": [{"name": "c"}]}}
    with caplog.at_level(logging.ERROR):
        cluster.run(control.create(owner, pod))
        cluster.run(recorder.flush())
    assert "server rejected event" not in caplog.text
    assert cluster.run(client.list(PODS, "team"))["items"] == []


def test_a_namespace_held_by_another_finalizer_only_is_emptied_all_the_same(
    cluster: SimulatedCluster,
) -> None:
    """The deleter empties a deleted namespace while spec.finalizers holds anything, and
    removes its own `kubernetes` only: another finalizer's owner lets the namespace go."""
    client = cluster.client
    ns = cluster.run(client.create(NAMESPACES, "", {"metadata": {"name": "team"}}))
    ns["spec"]["finalizers"] = ["example.com/hold"]
    cluster.run(client.update_finalize(NAMESPACES, ns))
    cluster.run(client.create(CONFIGMAPS, "team", {"metadata": {"name": "plain"}}))
    cluster.run(client.delete(NAMESPACES, "", "team"))
    settle(cluster)
    assert cluster.run(client.list(CONFIGMAPS, "team"))["items"] == []
    held = cluster.run(client.get(NAMESPACES, "", "team"))
    assert held["spec"]["finalizers"] == ["example.com/hold"]
    held["spec"]["finalizers"] = []
    cluster.run(client.update_finalize(NAMESPACES, held))
    with pytest.raises(StatusError) as gone:
        cluster.run(client.get(NAMESPACES, "", "team"))
    assert gone.value.code == 404
