"""The controllers keep no state outside the API: `pinnace up --nodes 3 --data-dir D` stopped in
the middle of a rolling update, a Job's run, a foreground deletion and with a DaemonSet's pods
running, then started again on D, finishes each of them as if it had never stopped.

One cluster is staged, stopped and restarted for the whole module (two start-ups are most of
its time); each test checks one workload on the restarted cluster, through kubectl."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from tests.http.conftest import Cluster, launch, stop
from tests.support import eventually

from pinnace.clock import parse_time

WAIT = 45.0
"""Real seconds a restarted cluster gets to finish what it had begun."""
NODES = ("pinnace-node-1", "pinnace-node-2", "pinnace-node-3")
REPLICAS = 6
COMPLETIONS = 6
HASH = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"

WORKLOADS = f"""
apiVersion: batch/v1
kind: Job
metadata: {{name: batch}}
spec:
  completions: {COMPLETIONS}
  parallelism: 3
  template:
    spec:
      restartPolicy: Never
      containers: [{{name: work, image: busybox, command: [sleep, "3"]}}]
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {{name: agent}}
spec:
  selector: {{matchLabels: {{app: agent}}}}
  template:
    metadata: {{labels: {{app: agent}}}}
    spec: {{containers: [{{name: agent, image: busybox, command: [sleep, infinity]}}]}}
"""


def deployment(name: str, replicas: int, stop_seconds: int = 0) -> str:
    # One pod at a time, each available a second after it is ready: slow enough to stop
    # half-way through.
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}}}
spec:
  replicas: {replicas}
  minReadySeconds: 1
  strategy: {{rollingUpdate: {{maxSurge: 1, maxUnavailable: 0}}}}
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata:
      labels: {{app: {name}}}
      annotations: {{sim.pinnace.dev/stop-seconds: "{stop_seconds}"}}
    spec: {{containers: [{{name: nginx, image: "nginx:1.26"}}]}}
"""


@dataclass
class Restarted:
    cluster: Cluster
    before: dict[str, Any]
    """What the API held when pinnace up was stopped: kind -> kubectl's JSON list."""


def items(cluster: Cluster, *args: str) -> list[dict[str, Any]]:
    return json.loads(cluster.ok("get", *args, "-o", "json"))["items"]


def new_replica_set_partly_scaled(cluster: Cluster) -> list[dict[str, Any]] | None:
    sets = items(cluster, "rs", "-l", "app=web")
    new = [rs for rs in sets if "1.27" in json.dumps(rs["spec"]["template"])]
    return sets if new and 2 <= new[0]["spec"]["replicas"] < REPLICAS else None


@pytest.fixture(scope="module")
def restarted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Restarted]:
    workdir: Path = tmp_path_factory.mktemp("pinnace-restart")
    storage = ("--data-dir", str(workdir / "data"))
    flags = ("--nodes", "3")
    first = launch(workdir, *storage, flags=flags)
    try:
        first.ok(
            "apply",
            "-f",
            "-",
            stdin=deployment("web", REPLICAS) + "---" + deployment("doomed", 2, stop_seconds=10),
        )
        first.ok("rollout", "status", "deployment/web", "--timeout=60s")
        first.ok("rollout", "status", "deployment/doomed", "--timeout=60s")
        first.ok("create", "namespace", "tenant")
        first.ok("apply", "-n", "tenant", "-f", "-", stdin=deployment("app", 2, stop_seconds=10))
        first.ok("apply", "-f", "-", stdin=WORKLOADS)
        eventually(lambda: len(items(first, "pods", "-l", "app=agent")) == 3, WAIT)
        first.ok("set", "image", "deployment/web", "nginx=nginx:1.27")
        eventually(lambda: new_replica_set_partly_scaled(first), WAIT)
        first.ok("rollout", "status", "-n", "tenant", "deployment/app", "--timeout=60s")
        first.ok("delete", "deployment", "doomed", "--cascade=foreground", "--wait=false")
        first.ok("delete", "namespace", "tenant", "--wait=false")
        before = {kind: items(first, kind) for kind in ("rs", "pods", "jobs", "deployments")}
        before["namespaces"] = items(first, "namespaces")
    except BaseException:
        stop(first)
        raise
    stop(first)  # SIGTERM, in the middle of all of it
    second = launch(workdir, *storage, flags=flags)
    yield Restarted(second, before)
    stop(second)


def test_the_world_was_stopped_mid_flight(restarted: Restarted) -> None:
    """The stage: each workload was half-way when pinnace up stopped."""
    sets = {rs["metadata"]["name"]: rs["spec"]["replicas"] for rs in restarted.before["rs"]}
    web = [n for n in sets if n.startswith("web-")]
    assert len(web) == 2 and all(0 < sets[n] < REPLICAS + 1 for n in web)
    [job] = restarted.before["jobs"]
    assert job["status"].get("succeeded", 0) < COMPLETIONS
    assert job["status"].get("active", 0) > 0
    doomed = [d for d in restarted.before["deployments"] if d["metadata"]["name"] == "doomed"]
    assert doomed and "foregroundDeletion" in doomed[0]["metadata"].get("finalizers", [])
    [tenant] = [n for n in restarted.before["namespaces"] if n["metadata"]["name"] == "tenant"]
    assert tenant["status"]["phase"] == "Terminating"


def web_pods_settled(cluster: Cluster) -> list[dict[str, Any]]:
    """The web pods once there are REPLICAS of them, all running and none being deleted;
    otherwise an AssertionError naming each pod's state, which `eventually` shows if it lasts."""
    pods = items(cluster, "pods", "-l", "app=web")
    states = sorted(
        (
            p["metadata"]["name"],
            p["status"].get("phase"),
            p["metadata"].get("deletionTimestamp"),
            p["spec"].get("nodeName"),
        )
        for p in pods
    )
    assert len(pods) == REPLICAS and all(
        phase == "Running" and not deleting for _, phase, deleting, _ in states
    ), f"web pods (name, phase, deletionTimestamp, node): {states}"
    return pods


def test_the_rolling_update_finishes_on_the_replica_set_it_had_started(
    restarted: Restarted,
) -> None:
    cluster = restarted.cluster
    status = cluster.ok("rollout", "status", "deployment/web", "--timeout=60s")
    assert status.strip().endswith('deployment "web" successfully rolled out')
    pods = eventually(lambda: web_pods_settled(cluster), WAIT)

    sets = items(cluster, "rs", "-l", "app=web")
    assert sorted(rs["metadata"]["name"] for rs in sets) == sorted(
        rs["metadata"]["name"]
        for rs in restarted.before["rs"]
        if rs["metadata"]["name"][:4] == "web-"
    )
    hashes = [rs["metadata"]["labels"][HASH] for rs in sets]
    assert len(set(hashes)) == len(hashes) == 2
    by_revision = {rs["metadata"]["annotations"][REVISION]: rs for rs in sets}
    old, new = by_revision["1"], by_revision["2"]
    assert old["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.26"
    assert new["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.27"
    assert old["spec"]["replicas"] == 0 and old["status"]["replicas"] == 0
    assert new["spec"]["replicas"] == REPLICAS
    assert {p["metadata"]["labels"][HASH] for p in pods} == {new["metadata"]["labels"][HASH]}
    assert {p["spec"]["containers"][0]["image"] for p in pods} == {"nginx:1.27"}

    [web] = [d for d in items(cluster, "deployments") if d["metadata"]["name"] == "web"]
    assert web["metadata"]["annotations"][REVISION] == "2"
    assert web["status"]["updatedReplicas"] == web["status"]["availableReplicas"] == REPLICAS
    history = cluster.ok("rollout", "history", "deployment/web")
    assert [line.split()[0] for line in history.splitlines()[2:] if line.strip()] == ["1", "2"]


def test_the_job_completes_counting_each_pod_once(restarted: Restarted) -> None:
    cluster = restarted.cluster
    cluster.ok("wait", "--for=condition=complete", "job/batch", "--timeout=60s")
    [job] = items(cluster, "jobs")
    assert job["status"]["succeeded"] == COMPLETIONS
    assert "failed" not in job["status"]
    assert job["status"]["uncountedTerminatedPods"] == {}
    pods = items(cluster, "pods", "-l", "job-name=batch")
    assert sorted(p["status"]["phase"] for p in pods) == ["Succeeded"] * COMPLETIONS
    assert not any(p["metadata"].get("finalizers") for p in pods)
    done_before = {
        p["metadata"]["name"]
        for p in restarted.before["pods"]
        if p["metadata"]["name"].startswith("batch-") and p["status"]["phase"] == "Succeeded"
    }
    assert done_before <= {p["metadata"]["name"] for p in pods}


def test_a_foreground_deletion_is_finished_by_the_garbage_collector(
    restarted: Restarted,
) -> None:
    cluster = restarted.cluster

    def gone() -> bool:
        return not cluster.ok("get", "deploy,rs,pods", "-l", "app=doomed", "-o", "name").strip()

    eventually(gone, WAIT)
    missing = cluster.kubectl("get", "deployment", "doomed")
    assert 'deployments.apps "doomed" not found' in missing.stderr


def test_daemon_pods_are_taken_back_by_their_nodes(restarted: Restarted) -> None:
    cluster = restarted.cluster

    def ready() -> list[dict[str, Any]] | None:
        [ds] = items(cluster, "daemonsets")
        return (
            items(cluster, "pods", "-l", "app=agent")
            if ds["status"].get("numberReady") == 3
            else None
        )

    pods = eventually(ready, WAIT)
    assert sorted(p["spec"]["nodeName"] for p in pods) == list(NODES)
    assert all(p["status"]["phase"] == "Running" for p in pods)
    before = {
        p["metadata"]["name"]: p["spec"]["nodeName"]
        for p in restarted.before["pods"]
        if p["metadata"]["name"].startswith("agent-")
    }
    assert {p["metadata"]["name"]: p["spec"]["nodeName"] for p in pods} == before


def test_a_namespace_being_deleted_is_emptied_and_goes(restarted: Restarted) -> None:
    cluster = restarted.cluster

    def gone() -> bool:
        found = cluster.kubectl("get", "namespace", "tenant")
        return 'namespaces "tenant" not found' in found.stderr

    eventually(gone, WAIT)
    assert cluster.ok("get", "pods,rs,deployments", "-n", "tenant", "-o", "name") == ""


def test_no_pod_running_before_the_restart_is_failed_by_its_node(
    restarted: Restarted,
) -> None:
    """The nodes register again under their names and take back the pods bound to them."""
    cluster = restarted.cluster
    ran = {
        p["metadata"]["uid"]: p["spec"]["nodeName"]
        for p in restarted.before["pods"]
        if p["status"].get("phase") == "Running"
    }
    now = {p["metadata"]["uid"]: p for p in items(cluster, "pods", "-A")}
    for uid, node in ran.items():
        if uid in now:
            assert now[uid]["spec"]["nodeName"] == node
            assert now[uid]["status"]["phase"] != "Failed", now[uid]["metadata"]["name"]


def test_pods_running_before_the_restart_carry_on_where_they_were(restarted: Restarted) -> None:
    """Their nodes take them back as a restarted kubelet finds its containers still running:
    same start times, container and IP; a Job's `sleep 3` ends 3 s after it started, even if
    that was while pinnace up was down."""
    cluster = restarted.cluster
    # New pods running again: the nodes have taken back every pod they were handed first.
    cluster.ok("rollout", "status", "deployment/web", "--timeout=60s")
    now = {p["metadata"]["uid"]: p for p in items(cluster, "pods", "-A")}
    running = [
        p
        for p in restarted.before["pods"]
        if p["status"].get("phase") == "Running"
        and "running" in p["status"]["containerStatuses"][0]["state"]
        and p["metadata"]["uid"] in now
    ]
    daemons = [p for p in running if p["metadata"]["name"].startswith("agent-")]
    assert daemons
    for before in running:
        after = now[before["metadata"]["uid"]]["status"]
        was, entry = before["status"]["containerStatuses"][0], after["containerStatuses"][0]
        name = before["metadata"]["name"]
        assert after["startTime"] == before["status"]["startTime"], name
        assert after["podIP"] == before["status"]["podIP"], name
        assert entry["containerID"] == was["containerID"], name
        assert entry["restartCount"] == was["restartCount"], name
        # Running still, or stopped since (a Job's pod done, an old pod of the rollout).
        state = entry["state"].get("running") or entry["state"]["terminated"]
        started = was["state"]["running"]["startedAt"]
        assert state["startedAt"] == started, name
        if name.startswith("batch-"):
            assert parse_time(state["finishedAt"]) - parse_time(started) == 3, name
