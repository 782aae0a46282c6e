"""The Deployment controller, with the ReplicaSet controller, scheduler and nodes, on the
virtual clock."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Iterator

import pytest
from tests.client.own_writes import Checked, checking
from tests.controllers.workloads import DEPLOYMENTS, PODS, REPLICA_SETS, Workloads, template

from pinnace.api.objects import Object
from pinnace.clock import parse_time

REVISION = "deployment.kubernetes.io/revision"


def deployment(replicas: int = 3, strategy: Object | None = None, **spec: object) -> Object:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": template(),
            **({"strategy": strategy} if strategy else {}),
            **spec,
        },
    }


@pytest.fixture(autouse=True)
def own_writes_decoded(monkeypatch: pytest.MonkeyPatch) -> Iterator[Checked]:
    """The Deployment and ReplicaSet controllers' status writes are their own
    (`update_status_own`): each must be stored as decoding it would store it, through every
    condition, count and rollout here."""
    yield from checking(monkeypatch)


@pytest.fixture
def cluster() -> Iterator[Workloads]:
    c = Workloads(nodes=2)
    yield c
    c.close()


def replica_sets(cluster: Workloads) -> list[Object]:
    items = cluster.run(cluster.client.list(REPLICA_SETS, "default"))["items"]
    return sorted(items, key=lambda rs: int(rs["metadata"]["annotations"][REVISION]))


def set_image(cluster: Workloads, image: str) -> None:
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "nginx", "image": image}]}}}}
    cluster.run(cluster.client.patch(DEPLOYMENTS, "default", "web", patch))


def rollout_done(d: Object) -> bool:
    """What `kubectl rollout status` waits for."""
    s = d.get("status") or {}
    want = d["spec"]["replicas"]
    return (
        s.get("observedGeneration", 0) >= d["metadata"]["generation"]
        and s.get("updatedReplicas", 0) == want
        and s.get("replicas", 0) == want
        and s.get("availableReplicas", 0) == want
    )


def rollout(cluster: Workloads, image: str) -> list[tuple[int, int, int]]:
    """After every change to a replica set until the rollout is done: (replicas wanted of
    all replica sets, available, replica sets wanting pods)."""
    seen: list[tuple[int, int, int]] = []
    sets: dict[str, Object] = {}

    async def follow() -> None:
        start = (await cluster.client.list(REPLICA_SETS, "default"))["metadata"]
        async for event in cluster.client.watch(
            REPLICA_SETS, "default", resource_version=start["resourceVersion"]
        ):
            rs = event["object"]
            if event["type"] == "DELETED":
                sets.pop(rs["metadata"]["name"], None)
            else:
                sets[rs["metadata"]["name"]] = rs
            seen.append(
                (
                    sum(x["spec"]["replicas"] for x in sets.values()),
                    sum(x.get("status", {}).get("availableReplicas", 0) for x in sets.values()),
                    sum(1 for x in sets.values() if x["spec"]["replicas"]),
                )
            )

    for rs in cluster.run(cluster.client.list(REPLICA_SETS, "default"))["items"]:
        sets[rs["metadata"]["name"]] = rs
    task = cluster.loop.create_task(follow())
    cluster.run(asyncio.sleep(0))
    set_image(cluster, image)
    try:
        for _ in range(600):
            cluster.run(asyncio.sleep(0.5))
            d = cluster.get(DEPLOYMENTS, "web")
            if rollout_done(d) and d["status"]["replicas"] == d["spec"]["replicas"]:
                return seen
    finally:
        task.cancel()
    raise AssertionError("rollout did not finish")


def test_a_deployment_runs_its_pods_through_a_hashed_replica_set(cluster: Workloads):
    cluster.run(cluster.client.create(DEPLOYMENTS, "default", deployment()))
    cluster.settle(5)
    [rs] = replica_sets(cluster)
    pod_hash = rs["metadata"]["labels"]["pod-template-hash"]
    assert rs["metadata"]["name"] == f"web-{pod_hash}"
    assert rs["spec"]["selector"]["matchLabels"] == {"app": "web", "pod-template-hash": pod_hash}
    assert rs["metadata"]["annotations"] == {
        REVISION: "1",
        "deployment.kubernetes.io/desired-replicas": "3",
        "deployment.kubernetes.io/max-replicas": "4",
    }
    assert rs["metadata"]["ownerReferences"][0]["kind"] == "Deployment"
    pods = cluster.pods(app="web")
    assert [p["status"]["phase"] for p in pods] == ["Running"] * 3
    assert all(p["metadata"]["labels"]["pod-template-hash"] == pod_hash for p in pods)

    d = cluster.get(DEPLOYMENTS, "web")
    assert d["metadata"]["annotations"][REVISION] == "1"
    assert rollout_done(d)
    status = d["status"]
    assert "unavailableReplicas" not in status and status["readyReplicas"] == 3
    conditions = {c["type"]: (c["status"], c["reason"]) for c in status["conditions"]}
    assert conditions == {
        "Available": ("True", "MinimumReplicasAvailable"),
        "Progressing": ("True", "NewReplicaSetAvailable"),
    }
    assert cluster.events("ScalingReplicaSet") == [
        f"Scaled up replica set {rs['metadata']['name']} from 0 to 3"
    ]


def test_rolling_update_stays_within_max_surge_and_max_unavailable(cluster: Workloads):
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 1}}
    cluster.run(cluster.client.create(DEPLOYMENTS, "default", deployment(4, strategy)))
    cluster.settle(5)
    seen = rollout(cluster, "nginx:1.28")
    assert max(wanted for wanted, _, _ in seen) == 5
    assert min(available for _, available, _ in seen) >= 3
    assert any(count == 2 for _, _, count in seen)  # old and new side by side

    old, new = replica_sets(cluster)
    assert (old["spec"]["replicas"], new["spec"]["replicas"]) == (0, 4)
    assert new["metadata"]["annotations"][REVISION] == "2"
    assert cluster.get(DEPLOYMENTS, "web")["metadata"]["annotations"][REVISION] == "2"
    images = {p["spec"]["containers"][0]["image"] for p in cluster.pods(app="web")}
    assert images == {"nginx:1.28"}
    new_name, old_name = new["metadata"]["name"], old["metadata"]["name"]
    scaling = cluster.events("ScalingReplicaSet")
    assert f"Scaled up replica set {new_name} from 0 to 1" in scaling
    assert any(
        m.startswith(f"Scaled down replica set {old_name} from ") and m.endswith(" to 0")
        for m in scaling
    )


def test_recreate_stops_every_old_pod_before_starting_new_ones(cluster: Workloads):
    cluster.run(cluster.client.create(DEPLOYMENTS, "default", deployment(3, {"type": "Recreate"})))
    cluster.settle(5)
    seen = rollout(cluster, "nginx:1.28")
    assert all(count <= 1 for _, _, count in seen)
    assert min(available for _, available, _ in seen) == 0
    old, new = replica_sets(cluster)
    scaling = cluster.events("ScalingReplicaSet")
    assert f"Scaled down replica set {old['metadata']['name']} from 3 to 0" in scaling
    assert f"Scaled up replica set {new['metadata']['name']} from 0 to 3" in scaling


def test_old_replica_sets_past_the_history_limit_are_deleted(cluster: Workloads):
    cluster.run(
        cluster.client.create(DEPLOYMENTS, "default", deployment(2, revisionHistoryLimit=1))
    )
    cluster.settle(5)
    for image in ("nginx:1.28", "nginx:1.29", "nginx:1.30"):
        rollout(cluster, image)
        cluster.settle(2)
    revisions = [rs["metadata"]["annotations"][REVISION] for rs in replica_sets(cluster)]
    assert revisions == ["3", "4"]


def test_going_back_to_an_old_template_reuses_its_replica_set_as_a_new_revision(
    cluster: Workloads,
):
    cluster.run(cluster.client.create(DEPLOYMENTS, "default", deployment(2)))
    cluster.settle(5)
    first = replica_sets(cluster)[0]["metadata"]["name"]
    rollout(cluster, "nginx:1.28")
    rollout(cluster, "nginx:1.27")
    newest = replica_sets(cluster)[-1]
    assert newest["metadata"]["name"] == first
    assert newest["metadata"]["annotations"][REVISION] == "3"
    assert newest["metadata"]["annotations"]["deployment.kubernetes.io/revision-history"] == "1"


def test_scaling_resizes_the_replica_set(cluster: Workloads):
    cluster.run(cluster.client.create(DEPLOYMENTS, "default", deployment(3)))
    cluster.settle(5)
    cluster.run(cluster.client.update_scale(DEPLOYMENTS, "default", "web", 5))
    cluster.settle(5)
    [rs] = replica_sets(cluster)
    assert rs["spec"]["replicas"] == 5
    assert rs["metadata"]["annotations"]["deployment.kubernetes.io/desired-replicas"] == "5"
    assert len(cluster.pods(app="web")) == 5
    assert f"Scaled up replica set {rs['metadata']['name']} from 3 to 5" in cluster.events(
        "ScalingReplicaSet"
    )
    assert rollout_done(cluster.get(DEPLOYMENTS, "web"))


def test_a_paused_deployment_does_not_roll_out_until_resumed(cluster: Workloads):
    cluster.run(cluster.client.create(DEPLOYMENTS, "default", deployment(2)))
    cluster.settle(5)
    cluster.run(cluster.client.patch(DEPLOYMENTS, "default", "web", {"spec": {"paused": True}}))
    set_image(cluster, "nginx:1.28")
    cluster.settle(5)
    assert len(replica_sets(cluster)) == 1
    progressing = {c["type"]: c for c in cluster.get(DEPLOYMENTS, "web")["status"]["conditions"]}
    assert (progressing["Progressing"]["status"], progressing["Progressing"]["reason"]) == (
        "Unknown",
        "DeploymentPaused",
    )
    cluster.run(cluster.client.patch(DEPLOYMENTS, "default", "web", {"spec": {"paused": False}}))
    cluster.settle(10)
    old, new = replica_sets(cluster)
    assert (old["spec"]["replicas"], new["spec"]["replicas"]) == (0, 2)
    assert rollout_done(cluster.get(DEPLOYMENTS, "web"))


def test_scaling_mid_rollout_spreads_new_replicas_in_proportion():
    """The documented example: 10 replicas, maxSurge 3, maxUnavailable 2, a rollout stuck
    with 8 old and 5 new pods, scaled to 15: 3 more old, 2 more new."""
    cluster = Workloads(nodes=0)
    try:
        strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 3, "maxUnavailable": 2}}
        cluster.run(cluster.client.create(DEPLOYMENTS, "default", deployment(10, strategy)))
        cluster.settle()
        for p in cluster.pods(app="web"):  # the old pods run on a node no agent serves
            cluster.run(cluster.client.bind(p, "n1"))
            got = cluster.get(PODS, p["metadata"]["name"])
            ready = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
            cluster.run(cluster.client.update_status(PODS, {**got, "status": ready}))
        cluster.settle()
        set_image(cluster, "nginx:1.28")  # its pods stay Pending: nothing schedules them
        cluster.settle()
        assert [rs["spec"]["replicas"] for rs in replica_sets(cluster)] == [8, 5]
        cluster.run(cluster.client.update_scale(DEPLOYMENTS, "default", "web", 15))
        cluster.settle()
        old, new = replica_sets(cluster)
        assert (old["spec"]["replicas"], new["spec"]["replicas"]) == (11, 7)
        assert old["metadata"]["annotations"]["deployment.kubernetes.io/max-replicas"] == "18"
    finally:
        cluster.close()


def test_a_rollout_without_progress_past_its_deadline_is_reported_stalled():
    cluster = Workloads(nodes=0)
    try:
        body = deployment(2, progressDeadlineSeconds=30)
        cluster.run(cluster.client.create(DEPLOYMENTS, "default", body))
        cluster.settle(10)
        conditions = {c["type"]: c for c in cluster.get(DEPLOYMENTS, "web")["status"]["conditions"]}
        assert conditions["Progressing"]["reason"] == "ReplicaSetUpdated"
        assert conditions["Available"]["reason"] == "MinimumReplicasUnavailable"
        cluster.settle(30)
        progressing = next(
            c
            for c in cluster.get(DEPLOYMENTS, "web")["status"]["conditions"]
            if c["type"] == "Progressing"
        )
        [name] = [rs["metadata"]["name"] for rs in replica_sets(cluster)]
        assert (progressing["status"], progressing["reason"], progressing["message"]) == (
            "False",
            "ProgressDeadlineExceeded",
            f'ReplicaSet "{name}" has timed out progressing.',
        )
    finally:
        cluster.close()


@contextlib.contextmanager
def failing_if_the_loop_is_stuck(seconds: int = 120) -> Iterator[None]:
    """A loop that never yields fails the test after `seconds` of wall time instead of hanging
    the suite (SystemExit is what leaves a spinning asyncio loop)."""

    def fail(signum: int, frame: object) -> None:
        raise SystemExit(f"the event loop has not yielded for {seconds} s")

    previous = signal.signal(signal.SIGALRM, fail)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def crash_looping(name: str, command: str, **spec: object) -> Object:
    body = deployment(1, **spec)
    body["metadata"] = {"name": name}
    body["spec"]["selector"] = {"matchLabels": {"app": name}}
    body["spec"]["template"] = template(app=name)
    body["spec"]["template"]["spec"]["containers"][0]["command"] = ["sh", "-c", command]
    return body


def test_crash_looping_deployments_past_their_deadlines_leave_the_clock_running():
    """A Deployment whose pod never gets ready times out at its deadline. One whose pod ran,
    then keeps crashing, had completed its rollout, which v1.32 does not time out (it
    estimates progress only while rolling out) but checks again through the rate limiter for
    as long as it lacks pods. Neither holds the loop: the kubelet's back-off timers (capped at
    5 minutes) go on restarting the first pod for half an hour."""
    cluster = Workloads(nodes=1)
    try:
        for body in (
            crash_looping("never-ready", "exit 1"),  # the default deadline, 600 s
            crash_looping("ran-once", "sleep 20; exit 1", progressDeadlineSeconds=10),
        ):
            cluster.run(cluster.client.create(DEPLOYMENTS, "default", body))
        with failing_if_the_loop_is_stuck():
            cluster.settle(30 * 60)

        never_ready = cluster.get(DEPLOYMENTS, "never-ready")
        progressing = next(
            c for c in never_ready["status"]["conditions"] if c["type"] == "Progressing"
        )
        assert (progressing["status"], progressing["reason"]) == (
            "False",
            "ProgressDeadlineExceeded",
        )
        timed_out_after = parse_time(progressing["lastUpdateTime"]) - parse_time(
            never_ready["metadata"]["creationTimestamp"]
        )
        assert 600 < timed_out_after < 605
        [pod] = cluster.pods(app="never-ready")
        assert pod["status"]["containerStatuses"][0]["restartCount"] >= 9

        ran_once = cluster.get(DEPLOYMENTS, "ran-once")
        conditions = {c["type"]: c["reason"] for c in ran_once["status"]["conditions"]}
        assert conditions["Progressing"] == "NewReplicaSetAvailable"
    finally:
        cluster.close()


def test_a_replica_set_its_cache_has_not_shown_yet_is_not_taken_for_a_hash_collision():
    """A create answered AlreadyExists for a replica set the informer does not hold yet is
    retried (as v1.32 does), not counted as a collision that would make a second one."""
    cluster = Workloads(nodes=0)
    try:
        # The cache lags from now on.
        cluster.run(cluster.controllers.informers.informer(REPLICA_SETS).stop())
        cluster.run(cluster.client.create(DEPLOYMENTS, "default", deployment(1)))
        cluster.settle(5)
        names = [rs["metadata"]["name"] for rs in replica_sets(cluster)]
        assert len(names) == 1
        assert "collisionCount" not in cluster.get(DEPLOYMENTS, "web").get("status", {})
    finally:
        cluster.close()
