"""The StatefulSet controller on the virtual clock: stable names and identities, ordered or
parallel creation, scale down from the highest ordinal, rolling updates in reverse ordinal
order honouring the partition, OnDelete, ControllerRevision history and status."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from tests.controllers.workloads import PODS, Workloads

from pinnace.api.objects import Object, clone
from pinnace.client import PatchType
from pinnace.controllers.history import CONTROLLER_REVISIONS
from pinnace.controllers.statefulset_util import STATEFUL_SETS

READY_AFTER = 10
"""Each pod turns Ready this many seconds after it starts (its readiness probe's delay)."""


def stateful_set(replicas: int = 3, **spec: Any) -> Object:
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "web"},
        "spec": {
            "serviceName": "nginx",
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "nginx"}},
            "template": {
                "metadata": {"labels": {"app": "nginx"}},
                "spec": {
                    "terminationGracePeriodSeconds": 10,
                    "containers": [
                        {
                            "name": "nginx",
                            "image": "nginx:1.27",
                            "readinessProbe": {
                                "exec": {"command": ["true"]},
                                "initialDelaySeconds": READY_AFTER,
                                "periodSeconds": 1,
                            },
                        }
                    ],
                },
            },
            **spec,
        },
    }


@pytest.fixture
def cluster() -> Iterator[Workloads]:
    c = Workloads(nodes=2)
    yield c
    c.close()


class Timeline:
    """Every pod creation and deletion, in order, with the virtual time it happened."""

    def __init__(self, cluster: Workloads) -> None:
        self.cluster = cluster
        self.seen: list[tuple[str, str, float]] = []
        self.ready: dict[str, float] = {}
        self._task = cluster.loop.create_task(self._follow())
        cluster.run(asyncio.sleep(0))

    async def _follow(self) -> None:
        start = (await self.cluster.client.list(PODS, "default"))["metadata"]["resourceVersion"]
        async for event in self.cluster.client.watch(PODS, "default", resource_version=start):
            pod, now = event["object"], self.cluster.clock.now()
            name = pod["metadata"]["name"]
            if event["type"] in ("ADDED", "DELETED"):
                self.seen.append((event["type"], name, now))
            conditions = (pod.get("status") or {}).get("conditions") or []
            if any(c["type"] == "Ready" and c["status"] == "True" for c in conditions):
                self.ready.setdefault(name, now)

    def names(self, kind: str) -> list[str]:
        return [name for k, name, _ in self.seen if k == kind]

    def at(self, kind: str, name: str) -> float:
        return next(t for k, n, t in self.seen if k == kind and n == name)

    def stop(self) -> None:
        self._task.cancel()


def create(cluster: Workloads, body: Object) -> None:
    cluster.run(cluster.client.create(STATEFUL_SETS, "default", body))


def sts(cluster: Workloads) -> Object:
    return cluster.get(STATEFUL_SETS, "web")


def pods(cluster: Workloads) -> dict[str, Object]:
    return {p["metadata"]["name"]: p for p in cluster.pods(app="nginx")}


def revision_of(pod: Object) -> str:
    return pod["metadata"]["labels"]["controller-revision-hash"]


def scale(cluster: Workloads, replicas: int) -> None:
    patch = {"spec": {"replicas": replicas}}
    cluster.run(cluster.client.patch(STATEFUL_SETS, "default", "web", patch))


def set_image(cluster: Workloads, image: str) -> None:
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "nginx", "image": image}]}}}}
    cluster.run(cluster.client.patch(STATEFUL_SETS, "default", "web", patch))


def images(cluster: Workloads) -> dict[str, str]:
    return {n: p["spec"]["containers"][0]["image"] for n, p in sorted(pods(cluster).items())}


def test_ordered_ready_creates_one_pod_at_a_time_with_a_stable_identity(cluster: Workloads):
    timeline = Timeline(cluster)
    create(cluster, stateful_set())
    cluster.settle(60)
    timeline.stop()
    assert timeline.names("ADDED") == ["web-0", "web-1", "web-2"]
    # Each pod is created only once its predecessor is Running and Ready.
    assert timeline.at("ADDED", "web-1") >= timeline.ready["web-0"]
    assert timeline.at("ADDED", "web-2") >= timeline.ready["web-1"]
    assert timeline.ready["web-0"] - timeline.at("ADDED", "web-0") >= READY_AFTER
    pod = pods(cluster)["web-1"]
    assert pod["metadata"]["generateName"] == "web-"
    labels = pod["metadata"]["labels"]
    assert labels["statefulset.kubernetes.io/pod-name"] == "web-1"
    assert labels["apps.kubernetes.io/pod-index"] == "1"
    assert (pod["spec"]["hostname"], pod["spec"]["subdomain"]) == ("web-1", "nginx")
    [owner] = pod["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("StatefulSet", "web", True)
    status = sts(cluster)["status"]
    [revision] = cluster.run(cluster.client.list(CONTROLLER_REVISIONS, "default"))["items"]
    name = revision["metadata"]["name"]
    assert status == {
        "observedGeneration": 1,
        "replicas": 3,
        "readyReplicas": 3,
        "currentReplicas": 3,
        "updatedReplicas": 3,
        "availableReplicas": 3,
        "currentRevision": name,
        "updateRevision": name,
        "collisionCount": 0,
    }
    assert {revision_of(p) for p in pods(cluster).values()} == {name}
    assert cluster.events("SuccessfulCreate") == [
        f"create Pod web-{i} in StatefulSet web successful" for i in range(3)
    ]


def test_parallel_creates_and_deletes_all_at_once(cluster: Workloads):
    timeline = Timeline(cluster)
    create(cluster, stateful_set(podManagementPolicy="Parallel"))
    cluster.settle(1)
    assert sorted(pods(cluster)) == ["web-0", "web-1", "web-2"]
    assert {t for k, _, t in timeline.seen if k == "ADDED"} == {timeline.at("ADDED", "web-0")}
    cluster.settle(30)
    scale(cluster, 0)
    cluster.settle(1)
    assert all(p["metadata"].get("deletionTimestamp") for p in pods(cluster).values())
    cluster.settle(30)
    timeline.stop()
    assert pods(cluster) == {}


def test_scale_down_goes_from_the_highest_ordinal_one_at_a_time(cluster: Workloads):
    body = stateful_set(replicas=4)
    # Each pod takes 5 s to stop, so the one-at-a-time order shows in time.
    body["spec"]["template"]["spec"]["containers"][0]["lifecycle"] = {
        "preStop": {"exec": {"command": ["sleep", "5"]}}
    }
    create(cluster, body)
    cluster.settle(90)
    timeline = Timeline(cluster)
    scale(cluster, 1)
    cluster.settle(1)
    assert [
        n for n, p in sorted(pods(cluster).items()) if p["metadata"].get("deletionTimestamp")
    ] == ["web-3"]
    cluster.settle(60)
    timeline.stop()
    assert timeline.names("DELETED") == ["web-3", "web-2", "web-1"]
    assert timeline.at("DELETED", "web-2") >= timeline.at("DELETED", "web-3") + 5
    assert timeline.at("DELETED", "web-1") >= timeline.at("DELETED", "web-2") + 5
    assert sorted(pods(cluster)) == ["web-0"]
    assert sts(cluster)["status"]["replicas"] == 1
    # Scaling up again brings back the same names.
    scale(cluster, 3)
    cluster.settle(60)
    assert sorted(pods(cluster)) == ["web-0", "web-1", "web-2"]


def test_rolling_update_honours_the_partition_in_reverse_ordinal_order(cluster: Workloads):
    create(
        cluster,
        stateful_set(updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"partition": 2}}),
    )
    cluster.settle(60)
    first = sts(cluster)["status"]["currentRevision"]
    set_image(cluster, "nginx:1.28")
    cluster.settle(60)
    assert images(cluster) == {"web-0": "nginx:1.27", "web-1": "nginx:1.27", "web-2": "nginx:1.28"}
    status = sts(cluster)["status"]
    second = status["updateRevision"]
    assert second != first and status["currentRevision"] == first
    assert (status["currentReplicas"], status["updatedReplicas"]) == (2, 1)

    # Lowering the partition to 0 updates the rest, highest ordinal first.
    timeline = Timeline(cluster)
    patch = {"spec": {"updateStrategy": {"rollingUpdate": {"partition": 0}}}}
    cluster.run(cluster.client.patch(STATEFUL_SETS, "default", "web", patch))
    cluster.settle(120)
    timeline.stop()
    assert timeline.names("DELETED") == ["web-1", "web-0"]
    assert timeline.at("DELETED", "web-0") > timeline.ready["web-1"]
    assert set(images(cluster).values()) == {"nginx:1.28"}
    status = sts(cluster)["status"]
    assert status["currentRevision"] == status["updateRevision"] == second
    assert status["currentReplicas"] == status["updatedReplicas"] == 3


def test_rollback_renumbers_the_old_revision(cluster: Workloads):
    create(cluster, stateful_set(replicas=2))
    cluster.settle(60)
    set_image(cluster, "nginx:1.28")
    cluster.settle(120)
    items = cluster.run(cluster.client.list(CONTROLLER_REVISIONS, "default"))["items"]
    first, second = sorted(items, key=lambda r: r["revision"])
    assert (first["revision"], second["revision"]) == (1, 2)
    # What `kubectl rollout undo sts/web` does: apply the older revision's data as a patch.
    cluster.run(
        cluster.client.patch(
            STATEFUL_SETS, "default", "web", first["data"], PatchType.STRATEGIC_MERGE
        )
    )
    cluster.settle(120)
    items = cluster.run(cluster.client.list(CONTROLLER_REVISIONS, "default"))["items"]
    numbers = {r["metadata"]["name"]: r["revision"] for r in items}
    assert numbers == {second["metadata"]["name"]: 2, first["metadata"]["name"]: 3}
    assert set(images(cluster).values()) == {"nginx:1.27"}
    assert sts(cluster)["status"]["currentRevision"] == first["metadata"]["name"]


def test_on_delete_replaces_a_pod_only_when_it_is_deleted(cluster: Workloads):
    create(cluster, stateful_set(replicas=2, updateStrategy={"type": "OnDelete"}))
    cluster.settle(60)
    set_image(cluster, "nginx:1.28")
    cluster.settle(60)
    assert set(images(cluster).values()) == {"nginx:1.27"}
    cluster.run(cluster.client.delete(PODS, "default", "web-0"))
    cluster.settle(60)
    assert images(cluster) == {"web-0": "nginx:1.28", "web-1": "nginx:1.27"}
    status = sts(cluster)["status"]
    assert (status["currentReplicas"], status["updatedReplicas"]) == (1, 1)
    assert status["currentRevision"] != status["updateRevision"]


def test_a_failed_pod_is_recreated_under_the_same_name(cluster: Workloads):
    create(cluster, stateful_set(replicas=1))
    cluster.settle(30)
    pod = clone(pods(cluster)["web-0"])
    # As the kubelet leaves a pod it evicted.
    pod["status"] = {**pod["status"], "phase": "Failed", "reason": "Evicted"}
    cluster.run(cluster.client.update_status(PODS, pod))
    cluster.settle(30)
    # v1.32 deletes it, with no Recreating* event, and makes the new one once it is gone.
    assert cluster.events("RecreatingFailedPod") == []
    assert cluster.events("SuccessfulDelete") == ["delete Pod web-0 in StatefulSet web successful"]
    again = pods(cluster)["web-0"]
    assert again["metadata"]["uid"] != pod["metadata"]["uid"]
    assert again["status"]["phase"] == "Running"


def test_min_ready_seconds_holds_the_next_pod_back(cluster: Workloads):
    timeline = Timeline(cluster)
    create(cluster, stateful_set(replicas=2, minReadySeconds=20))
    cluster.settle(120)
    timeline.stop()
    assert timeline.at("ADDED", "web-1") >= timeline.ready["web-0"] + 20
    assert sts(cluster)["status"]["availableReplicas"] == 2


def test_old_revisions_beyond_the_limit_are_deleted(cluster: Workloads):
    create(cluster, stateful_set(replicas=1, revisionHistoryLimit=1))
    cluster.settle(60)
    for image in ("nginx:1.28", "nginx:1.29"):
        set_image(cluster, image)
        cluster.settle(60)
    items = cluster.run(cluster.client.list(CONTROLLER_REVISIONS, "default"))["items"]
    assert sorted(r["revision"] for r in items) == [2, 3]
