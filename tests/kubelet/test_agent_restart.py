"""A node agent restarted (its process stopped and started again) takes its pods back where
their status left them, as a restarted kubelet finds its containers still running: same start
times, container IDs, IPs and restart counts, a run that ends when it would have, completed
init containers not run again; back-offs forgotten, as a restarted kubelet forgets them."""

from __future__ import annotations

from typing import Any

import pytest
from tests.kubelet.conftest import CONFIG, PODS, Node, pod

from pinnace.api.options import LogOptions
from pinnace.api.status import StatusError
from pinnace.apiserver.logs import log_text
from pinnace.clock import parse_time
from pinnace.kubelet import NodeAgent

DOWN = 3.0
"""How long the agent is down."""


def restart(node: Node) -> None:
    """Stop the agent (its containers go with its process), wait DOWN seconds, and start a
    fresh agent of the same node over the same API server."""
    node.task.cancel()
    node.agent.shut_down()
    node.settle(DOWN)
    node.agent = NodeAgent(node.client, CONFIG)
    node.server.log_source = node.agent.read_log
    node.task = node.loop.create_task(node.agent.run())
    node.settle()


def status(node: Node, name: str) -> dict[str, Any]:
    return node.get_pod(name)["status"]


def app(node: Node, name: str) -> dict[str, Any]:
    return status(node, name)["containerStatuses"][0]


def test_a_running_container_carries_on_and_ends_when_it_would_have(node: Node) -> None:
    node.create_pod(pod("sleepy", node="node-1", restart_policy="Never", run_seconds="10"))
    created = node.client.clock.now()
    node.settle(2)
    before = status(node, "sleepy")
    assert before["phase"] == "Running"

    restart(node)
    after = status(node, "sleepy")
    for key in ("phase", "startTime", "podIP", "podIPs", "containerStatuses", "conditions"):
        assert after[key] == before[key], key

    node.settle(created + 9.5 - node.client.clock.now())
    assert list(app(node, "sleepy")["state"]) == ["running"]
    node.settle(1)
    done = status(node, "sleepy")
    assert done["phase"] == "Succeeded"
    [entry] = done["containerStatuses"]
    terminated = entry["state"]["terminated"]
    assert (
        terminated["startedAt"] == before["containerStatuses"][0]["state"]["running"]["startedAt"]
    )
    assert parse_time(terminated["finishedAt"]) - parse_time(terminated["startedAt"]) == 10
    assert terminated["containerID"] == before["containerStatuses"][0]["containerID"]
    assert (terminated["reason"], entry["restartCount"]) == ("Completed", 0)


def test_a_container_in_back_off_restarts_at_once_its_back_off_forgotten(node: Node) -> None:
    node.create_pod(pod("crash", node="node-1", run_seconds="1", exit_code="1"))
    # Exits at 1 s (restarted at once), at 2 s (back-off 10 s), at 13 s (back-off 20 s).
    node.settle(13.5)
    before = app(node, "crash")
    assert before["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    assert before["state"]["waiting"]["message"].startswith("back-off 20s ")
    assert before["restartCount"] == 2

    back = node.client.clock.now() + DOWN  # when the fresh agent takes over
    restart(node)
    after = app(node, "crash")
    # Restarted as soon as the agent was back (not at 33 s, when the back-off would have
    # ended), ran its second, and its back-off started over at 10 s.
    assert after["restartCount"] == 3, "a restarted kubelet forgets its back-offs"
    rerun = after["lastState"]["terminated"]
    assert parse_time(rerun["startedAt"]) - back < 2
    assert rerun["containerID"] != before["lastState"]["terminated"]["containerID"]
    assert after["state"]["waiting"]["message"].startswith("back-off 10s ")


def test_a_container_whose_run_ended_while_the_agent_was_down_ends_then(node: Node) -> None:
    node.create_pod(pod("short", node="node-1", restart_policy="Never", run_seconds="3"))
    node.settle(2)
    started = app(node, "short")["state"]["running"]["startedAt"]
    restart(node)
    terminated = app(node, "short")["state"]["terminated"]
    assert terminated["startedAt"] == started
    assert parse_time(terminated["finishedAt"]) - parse_time(started) == 3
    assert status(node, "short")["phase"] == "Succeeded"


def test_completed_init_containers_are_not_run_again_and_ips_stay_taken(node: Node) -> None:
    body = pod("init", node="node-1")
    body["spec"]["initContainers"] = [{"name": "setup", "image": "busybox"}]
    body["metadata"]["annotations"]["sim.pinnace.dev/run-seconds.setup"] = "1"
    node.create_pod(body)
    node.settle(3)
    before = status(node, "init")
    assert before["phase"] == "Running"

    restart(node)
    after = status(node, "init")
    assert after["initContainerStatuses"] == before["initContainerStatuses"]
    assert after["containerStatuses"] == before["containerStatuses"]
    node.create_pod(pod("newcomer", node="node-1"))
    node.settle()
    newcomer = status(node, "newcomer")
    assert newcomer["phase"] == "Running"
    assert newcomer["podIP"] != before["podIP"]


def test_a_ready_container_stays_ready_and_its_usage_curve_goes_on(node: Node) -> None:
    body = pod("web", node="node-1", memory="ramp 0 100Mi 100s")
    body["spec"]["containers"][0]["readinessProbe"] = {"httpGet": {"path": "/", "port": 80}}
    node.create_pod(body)
    created = node.client.clock.now()
    node.settle(20)
    before = status(node, "web")
    assert app(node, "web")["ready"] is True

    restart(node)
    after = status(node, "web")
    assert after["conditions"] == before["conditions"]
    assert after["containerStatuses"] == before["containerStatuses"]
    [stats] = node.agent.summary().pods
    age = node.client.clock.now() - created
    used = stats.containers[0].memory_working_set_bytes
    assert abs(used - age / 100 * 100 * 2**20) < 2 * 2**20


def test_logs_before_the_restart_are_gone_and_later_lines_come_on_time(node: Node) -> None:
    body = pod("talk", node="node-1")
    script = "echo hello; sleep 5; echo later; sleep 600"
    body["spec"]["containers"][0]["command"] = ["sh", "-c", script]
    node.create_pod(body)
    node.settle(1)
    assert node.run(log_text(node.server, "default", "talk", LogOptions())) == "hello\n"

    restart(node)  # 1 + 3 + 1 s: "later" is due at 5 s
    assert node.run(log_text(node.server, "default", "talk", LogOptions())) == "later\n"
    node.settle(10)
    assert node.run(log_text(node.server, "default", "talk", LogOptions())) == "later\n"


def test_a_pod_being_deleted_has_its_containers_stopped_again(node: Node) -> None:
    node.create_pod(pod("leaving", node="node-1", stop_seconds="5"))
    node.settle(1)
    node.run(node.client.delete(PODS, "default", "leaving"))
    node.settle(1)
    restart(node)  # the new agent sends SIGTERM again: 5 s more
    assert node.get_pod("leaving")["metadata"]["deletionTimestamp"]
    assert app(node, "leaving")["restartCount"] == 0
    node.settle(3.5)
    assert node.get_pod("leaving")["status"]["phase"] == "Running"
    node.settle(1)
    with pytest.raises(StatusError) as gone:
        node.get_pod("leaving")
    assert gone.value.code == 404


def test_the_active_deadline_counts_from_the_pods_first_start(node: Node) -> None:
    body = pod("bounded", node="node-1", restart_policy="Never")
    body["spec"]["activeDeadlineSeconds"] = 10
    node.create_pod(body)
    created = node.client.clock.now()
    node.settle(2)
    restart(node)
    node.settle(created + 9.5 - node.client.clock.now())
    assert status(node, "bounded")["phase"] == "Running"
    node.settle(1)
    assert status(node, "bounded")["reason"] == "DeadlineExceeded"


def test_a_pod_changed_before_its_start_starts_as_it_is_then(node: Node) -> None:
    """A fresh pod starts after the pods handed over with it (so that those taken back hold
    their IPs first); a change that comes meanwhile is what it starts with."""
    created = node.create_pod(pod("quick", restart_policy="Never"))  # not handed over by itself
    bound = {**created, "spec": {**created["spec"], "nodeName": "node-1"}}
    annotations = {"sim.pinnace.dev/run-seconds": "2"}
    changed = {**bound, "metadata": {**bound["metadata"], "annotations": annotations}}
    node.agent.pod_added(bound)
    node.agent.pod_updated(bound, changed)
    node.settle(3)
    assert status(node, "quick")["phase"] == "Succeeded"


def test_a_resumed_container_is_oom_killed_when_its_usage_would_cross_its_limit(
    node: Node,
) -> None:
    body = pod("hungry", node="node-1", restart_policy="Never", memory="ramp 0 200Mi 20s")
    body["spec"]["containers"][0]["resources"] = {"limits": {"memory": "100Mi"}}
    node.create_pod(body)
    created = node.client.clock.now()
    node.settle(2)
    restart(node)
    node.settle(created + 9.5 - node.client.clock.now())
    assert list(app(node, "hungry")["state"]) == ["running"]
    node.settle(1)  # 100Mi at 10 s from its start
    terminated = app(node, "hungry")["state"]["terminated"]
    assert terminated["reason"] == "OOMKilled"
    assert parse_time(terminated["finishedAt"]) - parse_time(terminated["startedAt"]) == 10
