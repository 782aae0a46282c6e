"""Memory is not compressible: a container above its memory limit is OOMKilled and restarted
as its pod's restartPolicy says; a node out of memory kills by oom_score."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.http.conftest import launch, stop
from tests.kubelet.conftest import Node, pod
from tests.kubelet.test_usage import GI, MI, annotate, stats_of
from tests.support import eventually

from pinnace.kubelet.oom import OOMCandidate, oom_victim


def app(node: Node, name: str) -> dict[str, Any]:
    return node.get_pod(name)["status"]["containerStatuses"][0]


def memory_demo(name: str, vm_bytes: str, limit: str, request: str) -> dict[str, Any]:
    """The memory-demo pods of Kubernetes' "Assign Memory Resources" task."""
    body = pod(name, node="node-1")
    body["spec"]["containers"][0].update(
        name="memory-demo-ctr",
        image="polinux/stress",
        command=["stress"],
        args=["--vm", "1", "--vm-bytes", vm_bytes, "--vm-hang", "1"],
        resources={"limits": {"memory": limit}, "requests": {"memory": request}},
    )
    return body


def test_a_container_under_its_limit_runs_and_uses_what_stress_holds(node: Node) -> None:
    node.create_pod(memory_demo("memory-demo", "150M", "200Mi", "100Mi"))
    node.settle(60)
    status = app(node, "memory-demo")
    assert list(status["state"]) == ["running"]
    assert status["restartCount"] == 0
    [ctr] = stats_of(node, "memory-demo").containers
    assert ctr.memory_working_set_bytes == 150 * MI


def test_a_container_over_its_limit_is_oom_killed_then_crash_loops(node: Node) -> None:
    node.create_pod(memory_demo("memory-demo-2", "250M", "100Mi", "50Mi"))
    node.settle(0.5)
    status = app(node, "memory-demo-2")
    assert status["restartCount"] == 1  # killed at once, restarted at once
    last = status["lastState"]["terminated"]
    assert (last["exitCode"], last["reason"]) == (137, "OOMKilled")
    node.settle(1)
    status = app(node, "memory-demo-2")
    assert status["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    assert status["lastState"]["terminated"]["reason"] == "OOMKilled"
    node.settle(10)
    assert app(node, "memory-demo-2")["restartCount"] == 2
    assert node.get_pod("memory-demo-2")["status"]["phase"] == "Running"


def test_a_ramp_is_killed_when_it_reaches_the_limit(node: Node) -> None:
    body = pod("leak", node="node-1", memory="ramp 100Mi 600Mi 60s")
    body["spec"]["containers"][0]["resources"] = {"limits": {"memory": "500Mi"}}
    node.create_pod(body)
    node.settle(47.5)  # 500Mi is reached at 48 s
    running = app(node, "leak")
    assert (list(running["state"]), running["restartCount"]) == (["running"], 0)
    assert stats_of(node, "leak").memory_working_set_bytes > 490 * MI
    node.settle(1)
    restarted = app(node, "leak")
    assert restarted["restartCount"] == 1
    last = restarted["lastState"]["terminated"]
    assert (last["exitCode"], last["reason"]) == (137, "OOMKilled")
    # The ramp starts again with the container: the next kill is 48 s later, then back-off.
    assert stats_of(node, "leak").memory_working_set_bytes < 110 * MI
    node.settle(48)
    backing_off = app(node, "leak")
    assert backing_off["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    assert backing_off["restartCount"] == 1
    node.settle(10)
    assert app(node, "leak")["restartCount"] == 2


def test_under_restart_policy_never_an_oom_kill_fails_the_pod(node: Node) -> None:
    body = memory_demo("once", "250M", "100Mi", "50Mi")
    body["spec"]["restartPolicy"] = "Never"
    node.create_pod(body)
    node.settle()
    status = node.get_pod("once")["status"]
    assert status["phase"] == "Failed"
    terminated = status["containerStatuses"][0]["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (137, "OOMKilled")


def guaranteed(name: str, size: str, usage: str) -> dict[str, Any]:
    body = annotate(pod(name, node="node-1"), memory=usage)
    amounts = {"cpu": "100m", "memory": size}
    body["spec"]["containers"][0]["resources"] = {"requests": amounts, "limits": amounts}
    return body


def test_a_node_out_of_memory_kills_best_effort_before_guaranteed(node: Node) -> None:
    # node-1: 4Gi of memory, of which the system holds its 256Mi kube-reserved.
    node.create_pod(guaranteed("db", "2560Mi", "2560Mi"))
    node.create_pod(pod("cache", node="node-1", memory="ramp 0 2Gi 20s"))
    node.settle(12)  # 256Mi + 2560Mi + 1Gi reaches 4Gi at 12.5 s
    assert app(node, "cache")["restartCount"] == 0
    node.settle(1)
    cache = app(node, "cache")
    assert cache["restartCount"] == 1
    assert cache["lastState"]["terminated"]["reason"] == "OOMKilled"
    db = app(node, "db")
    assert (list(db["state"]), db["restartCount"]) == (["running"], 0)


def test_the_node_kills_again_until_the_rest_fits(node: Node) -> None:
    node.create_pod(guaranteed("db", "3Gi", "spike 100Mi 3Gi at 10s for 1h"))
    for name in ("a", "b"):
        node.create_pod(pod(name, node="node-1", restart_policy="Never", memory="1Gi"))
    node.settle(11)
    for name in ("a", "b"):
        status = node.get_pod(name)["status"]
        assert status["phase"] == "Failed"
        assert status["containerStatuses"][0]["state"]["terminated"]["reason"] == "OOMKilled"
    db = app(node, "db")
    assert (list(db["state"]), db["restartCount"]) == (["running"], 0)
    summary = node.agent.summary()
    assert summary.node.memory_working_set_bytes == 256 * MI + 3 * GI


def test_oom_score_is_usage_per_mille_plus_adj() -> None:
    capacity = 4 * GI
    best_effort_small = OOMCandidate("be", 100 * MI, 1000)  # 24 + 1000
    burstable_big = OOMCandidate("bu", 3 * GI, 750)  # 750 + 750
    guaranteed_big = OOMCandidate("g", 4 * GI, -997)  # 1000 - 997
    assert oom_victim([best_effort_small, burstable_big, guaranteed_big], capacity) == "bu"
    assert oom_victim([best_effort_small, guaranteed_big], capacity) == "be"
    assert oom_victim([OOMCandidate("pinned", GI, -1000)], capacity) is None


MEMORY_DEMO_2 = """\
apiVersion: v1
kind: Pod
metadata:
  name: memory-demo-2
spec:
  containers:
  - name: memory-demo-2-ctr
    image: polinux/stress
    resources:
      requests:
        memory: "50Mi"
      limits:
        memory: "100Mi"
    command: ["stress"]
    args: ["--vm", "1", "--vm-bytes", "250M", "--vm-hang", "1"]
"""


def test_kubectl_shows_the_docs_memory_demo_oom_killed_then_crash_looping(
    tmp_path: Path,
) -> None:
    cluster = launch(tmp_path, flags=("--nodes", "1"))
    try:
        cluster.ok("apply", "-f", "-", stdin=MEMORY_DEMO_2)

        def container() -> dict[str, Any] | None:
            got = json.loads(cluster.ok("get", "pod", "memory-demo-2", "-o", "json"))
            statuses = got["status"].get("containerStatuses") or [{}]
            waiting = statuses[0].get("state", {}).get("waiting", {})
            return statuses[0] if waiting.get("reason") == "CrashLoopBackOff" else None

        status = eventually(container)
        assert status is not None
        assert status["restartCount"] >= 1
        last = status["lastState"]["terminated"]
        assert (last["exitCode"], last["reason"]) == (137, "OOMKilled")
        table = cluster.ok("get", "pod", "memory-demo-2")
        assert "CrashLoopBackOff" in table
    finally:
        stop(cluster)


def test_the_node_kills_when_periodic_peaks_first_meet(node: Node) -> None:
    # 3.75Gi is left for pods. Two waves of 2Gi peaks, every 100 s and every 60 s: their sum
    # stays under until the peaks near 150 s, and reaches 3.75Gi at 147.66 s.
    node.create_pod(pod("slow", node="node-1", memory="periodic 0 2Gi 100s"))
    node.create_pod(pod("fast", node="node-1", memory="periodic 0 2Gi 60s"))
    node.settle(147)
    assert [app(node, n)["restartCount"] for n in ("slow", "fast")] == [0, 0]
    node.settle(1)
    slow = app(node, "slow")  # the larger of the two at that moment
    assert slow["restartCount"] == 1
    assert slow["lastState"]["terminated"]["reason"] == "OOMKilled"
    assert app(node, "fast")["restartCount"] == 0


def test_vish_stress_allocates_step_by_step_and_is_killed_when_it_reaches_its_limit(
    node: Node,
) -> None:
    # 4Ki every millisecond: 100Mi, the limit, is reached at 25.6 s of the 150Mi.
    body = pod("grow", node="node-1")
    body["spec"]["containers"][0].update(
        image="vish/stress",
        args=["-mem-total", "150Mi"],
        resources={"limits": {"memory": "100Mi"}},
    )
    node.create_pod(body)
    node.settle(13)
    assert stats_of(node, "grow").memory_working_set_bytes == pytest.approx(50 * MI, rel=0.05)
    node.settle(12)  # 25.5 s in all
    assert app(node, "grow")["restartCount"] == 0
    node.settle(1)
    grow = app(node, "grow")
    assert grow["restartCount"] == 1
    assert grow["lastState"]["terminated"]["reason"] == "OOMKilled"
