"""postStart and preStop hooks on a node agent, on the virtual clock: a postStart hook holds
up the container's start and the containers after it, a failed one kills it; preStop runs on
graceful deletion before SIGTERM, within the grace period."""

from __future__ import annotations

import re
from typing import Any

import pytest
from tests.kubelet.conftest import PODS, Node, pod
from tests.kubelet.test_probes import events

from pinnace.api.options import DeleteOptions
from pinnace.api.status import StatusError
from pinnace.clock import parse_time


def hooked(name: str, hook: str, command: list[str], **annotations: str) -> dict[str, Any]:
    body = pod(name, node="node-1", **annotations)
    body["spec"]["containers"][0]["lifecycle"] = {hook: {"exec": {"command": command}}}
    return body


def gone(node: Node, name: str) -> bool:
    try:
        node.get_pod(name)
    except StatusError as e:
        return e.code == 404
    return False


def delete(node: Node, name: str, grace: int) -> None:
    node.run(node.client.delete(PODS, "default", name, DeleteOptions(grace_period_seconds=grace)))


def test_post_start_holds_up_the_container_and_the_next_ones(node: Node) -> None:
    body = hooked("warm", "postStart", ["sh", "-c", "sleep 5"])
    second = {"name": "second", "image": "busybox", "command": ["sleep", "infinity"]}
    body["spec"]["containers"].append(second)
    node.create_pod(body)
    node.settle(3)
    status = node.get_pod("warm")["status"]
    assert status["phase"] == "Pending"
    first, second = status["containerStatuses"]
    assert first["state"] == {"waiting": {"reason": "ContainerCreating"}}
    assert (first["started"], first["ready"]) == (False, False)
    assert second["state"] == {"waiting": {"reason": "ContainerCreating"}}
    assert "containerID" not in second  # not created before the hook completes
    node.settle(3)
    status = node.get_pod("warm")["status"]
    assert status["phase"] == "Running"
    assert [list(c["state"]) for c in status["containerStatuses"]] == [["running"], ["running"]]
    assert all(c["ready"] for c in status["containerStatuses"])


def test_a_failed_post_start_hook_kills_the_container(node: Node) -> None:
    body = hooked("broken", "postStart", ["sh", "-c", "exit 3"], stop_seconds="5")
    node.create_pod(body)
    node.settle(2)  # killed, and taking 5 s to stop
    status = node.get_pod("broken")["status"]["containerStatuses"][0]
    uid = node.get_pod("broken")["metadata"]["uid"]
    assert status["state"]["waiting"] == {
        "reason": "PostStartHookError",
        "message": "Exec lifecycle hook ([sh -c exit 3]) for Container "
        f'"app" in Pod "broken_default({uid})" failed - error: '
        "command 'sh -c exit 3' exited with 3: , message: \"\"",
    }
    found = events(node, "broken")
    assert ("Warning", "FailedPostStartHook", "PostStartHook failed", 1) in found
    assert ("Normal", "Killing", "FailedPostStartHook", 1) in found
    node.settle(5)  # stopped at 5 s and started again at once, to fail again
    assert node.get_pod("broken")["status"]["containerStatuses"][0]["restartCount"] == 1
    node.settle(5)
    status = node.get_pod("broken")["status"]["containerStatuses"][0]
    assert status["state"]["waiting"]["reason"] == "CrashLoopBackOff"


def test_a_hook_tells_the_time_by_the_nodes_clock(node: Node) -> None:
    """What a hook prints comes from the node's clock (here the virtual one), never the
    machine's: the same simulation prints the same, whenever it runs."""
    command = ["sh", "-c", "date +%s; exit 1"]
    node.create_pod(hooked("clocked", "postStart", command, stop_seconds="5"))
    node.settle(2)
    created = node.get_pod("clocked")["metadata"]["creationTimestamp"]
    status = node.get_pod("clocked")["status"]["containerStatuses"][0]
    printed = re.search(r"exited with 1: (\d+)", status["state"]["waiting"]["message"])
    assert printed is not None
    assert 0 <= int(printed[1]) - parse_time(created) <= 2


def test_pre_stop_runs_before_sigterm_within_the_grace_period(node: Node) -> None:
    node.create_pod(hooked("drain", "preStop", ["sleep", "5"]))
    node.settle()
    delete(node, "drain", 30)
    node.settle(4.5)  # the hook runs 5 s; only then SIGTERM, which stops it at once
    assert not gone(node, "drain")
    node.settle(1)
    assert gone(node, "drain")


def test_a_pre_stop_hook_longer_than_the_grace_period_is_cut_short(node: Node) -> None:
    node.create_pod(hooked("stuck", "preStop", ["sleep", "60"], stop_seconds="600"))
    node.settle()
    delete(node, "stuck", 10)
    # The grace period ends during the hook: SIGTERM then, SIGKILL 2 s later.
    node.settle(11.5)
    assert not gone(node, "stuck")
    node.settle(1)
    assert gone(node, "stuck")


def test_a_failing_pre_stop_hook_is_reported_and_the_container_stopped(node: Node) -> None:
    node.create_pod(hooked("bad", "preStop", ["sh", "-c", "sleep 1; exit 1"]))
    node.settle()
    delete(node, "bad", 30)
    node.settle(0.5)
    assert ("Normal", "Killing", "Stopping container app", 1) in events(node, "bad")
    node.settle(1)
    assert ("Warning", "FailedPreStopHook", "PreStopHook failed", 1) in events(node, "bad")
    assert gone(node, "bad")


def test_hook_annotations_set_the_time_and_the_failure(node: Node) -> None:
    body = pod("web", node="node-1", post_start_seconds="4", post_start_fails="true")
    body["spec"]["containers"][0]["lifecycle"] = {
        "postStart": {"httpGet": {"path": "/warm", "port": 80}}
    }
    node.create_pod(body)
    node.settle(3.5)
    assert all(e[1] != "FailedPostStartHook" for e in events(node, "web"))
    node.settle(1)
    assert ("Warning", "FailedPostStartHook", "PostStartHook failed", 1) in events(node, "web")


def test_a_bad_hook_annotation_keeps_the_container_from_being_created(node: Node) -> None:
    node.create_pod(hooked("typo", "preStop", ["sleep", "5"], pre_stop_seconds="soon"))
    node.settle()
    waiting = node.get_pod("typo")["status"]["containerStatuses"][0]["state"]["waiting"]
    assert waiting["reason"] == "CreateContainerConfigError"
    assert waiting["message"].startswith("annotation sim.pinnace.dev/pre-stop-seconds: invalid")


@pytest.mark.parametrize("hook", ["postStart", "preStop"])
def test_a_sleep_action_takes_its_seconds(node: Node, hook: str) -> None:
    body = pod("nap", node="node-1")
    body["spec"]["containers"][0]["lifecycle"] = {hook: {"sleep": {"seconds": 3}}}
    node.create_pod(body)
    node.settle(2.5)
    running = node.get_pod("nap")["status"]["phase"] == "Running"
    assert running is (hook == "preStop")
    node.settle(1)
    delete(node, "nap", 30)
    node.settle(2.5)
    assert gone(node, "nap") is (hook == "postStart")
    node.settle(1)
    assert gone(node, "nap")


def test_a_pod_deleted_during_its_post_start_hook_is_stopped(node: Node) -> None:
    node.create_pod(hooked("early", "postStart", ["sleep", "60"]))
    node.settle(2)
    delete(node, "early", 30)
    node.settle(1)
    assert gone(node, "early")
    assert ("Normal", "Killing", "Stopping container app", 1) in events(node, "early")
