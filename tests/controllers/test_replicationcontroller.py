"""The ReplicationController's controller (kube-controller-manager's replication manager,
v1.32): the ReplicaSet controller's behaviour on a kind whose selector is a plain map, on the
virtual clock."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.client.own_writes import Checked, checking
from tests.controllers.workloads import PODS, Workloads, template

from pinnace.api import catalog
from pinnace.api.objects import Object

RCS = catalog.kind("", "replicationcontrollers")


def replication_controller(replicas: int = 3) -> Object:
    return {
        "metadata": {"name": "web"},
        "spec": {"replicas": replicas, "template": template(app="web")},
    }


@pytest.fixture(autouse=True)
def own_writes_decoded(monkeypatch: pytest.MonkeyPatch) -> Iterator[Checked]:
    """The replication manager's status writes are its own (`update_status_own`), as the
    ReplicaSet controller's: each must be stored as decoding it would store it."""
    yield from checking(monkeypatch)


@pytest.fixture
def cluster() -> Iterator[Workloads]:
    c = Workloads(nodes=2)
    yield c
    c.close()


def test_keeps_its_replicas_owned_and_scales_through_the_scale_subresource(cluster: Workloads):
    rc = cluster.run(cluster.client.create(RCS, "default", replication_controller()))
    assert rc["spec"]["selector"] == {"app": "web"}
    cluster.settle(30)
    pods = cluster.pods(app="web")
    assert len(pods) == 3
    assert {p["metadata"]["ownerReferences"][0]["kind"] for p in pods} == {"ReplicationController"}
    status = cluster.get(RCS, "web")["status"]
    assert status == {
        "replicas": 3,
        "fullyLabeledReplicas": 3,
        "readyReplicas": 3,
        "availableReplicas": 3,
        "observedGeneration": 1,
    }
    assert len(cluster.events("SuccessfulCreate")) == 3

    scale = cluster.run(cluster.client.update_scale(RCS, "default", "web", 1))
    assert scale["status"]["selector"] == "app=web"
    cluster.settle(60)
    assert (
        len([p for p in cluster.pods(app="web") if not p["metadata"].get("deletionTimestamp")]) == 1
    )
    assert cluster.get(RCS, "web")["status"]["replicas"] == 1


def test_adopts_a_matching_orphan_and_releases_a_pod_that_stops_matching(cluster: Workloads):
    orphan = {"metadata": {"name": "orphan", **template(app="web")["metadata"]}}
    orphan["spec"] = template()["spec"]
    cluster.run(cluster.client.create(PODS, "default", orphan))
    cluster.run(cluster.client.create(RCS, "default", replication_controller(replicas=1)))
    cluster.settle(30)
    pods = cluster.pods(app="web")
    assert [p["metadata"]["name"] for p in pods] == ["orphan"]
    assert pods[0]["metadata"]["ownerReferences"][0]["name"] == "web"

    patch = {"metadata": {"labels": {"app": "other"}}}
    cluster.run(cluster.client.patch(PODS, "default", "orphan", patch))
    cluster.settle(30)
    assert not cluster.get(PODS, "orphan")["metadata"].get("ownerReferences")
    assert len(cluster.pods(app="web")) == 1
