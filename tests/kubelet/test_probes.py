"""Readiness, liveness and startup probes on a node agent, on the virtual clock: when they run,
what they decide, and what a user sees of it (container and pod status, events)."""

from __future__ import annotations

from typing import Any

import pytest
from tests.kubelet.conftest import EVENTS, Node, pod

from pinnace.kubelet.behaviour import BehaviourError
from pinnace.kubelet.probes import STARTUP_SECONDS, duration_annotation


def with_probes(name: str, restart_policy: str = "", **annotations: str) -> dict[str, Any]:
    return pod(name, node="node-1", restart_policy=restart_policy, **annotations)


def container(node: Node, name: str) -> dict[str, Any]:
    return node.get_pod(name)["status"]["containerStatuses"][0]


def conditions(node: Node, name: str) -> dict[str, tuple[str, str | None]]:
    status = node.get_pod(name)["status"]
    return {c["type"]: (c["status"], c.get("message")) for c in status["conditions"]}


def events(node: Node, name: str) -> list[tuple[str, str, str, int]]:
    """(type, reason, message, count) of the pod's events, oldest first."""
    node.run(node.agent.recorder.flush())
    found = node.run(
        node.client.list(EVENTS, "default", field_selector=f"involvedObject.name={name}")
    )
    return [(e["type"], e["reason"], e["message"], e.get("count", 1)) for e in found["items"]]


@pytest.mark.parametrize(
    ("text", "seconds"), [("30", 30.0), ("1m30s", 90.0), (".5m", 30.0), ("+1500ms", 1.5)]
)
def test_probe_annotations_take_seconds_or_go_durations(text: str, seconds: float) -> None:
    assert duration_annotation((STARTUP_SECONDS, text)) == seconds


@pytest.mark.parametrize("text", ["-30s", "30d", "soon", "inf"])
def test_probe_annotations_refuse_what_is_not_a_duration(text: str) -> None:
    with pytest.raises(BehaviourError) as bad:
        duration_annotation((STARTUP_SECONDS, text))
    assert str(bad.value) == (
        f'annotation {STARTUP_SECONDS}: invalid value "{text}": must be a non-negative duration '
        '("30", "30s", "1m30s")'
    )


def test_readiness_probe_makes_the_pod_ready_and_unready_again(node: Node) -> None:
    body = with_probes("web", readiness_fails_after="30s")
    body["spec"]["containers"][0]["readinessProbe"] = {"httpGet": {"path": "/ready", "port": 80}}
    node.create_pod(body)
    node.settle()  # probed as soon as the container starts
    assert container(node, "web")["ready"] is True
    assert conditions(node, "web")["Ready"] == ("True", None)

    # Failing from 30 s on: probes at 30, 40 and 50 s fail, the third makes it unready.
    node.settle(44)
    assert container(node, "web")["ready"] is True
    node.settle(6)
    status = container(node, "web")
    assert (status["ready"], status["started"], status["restartCount"]) == (False, True, 0)
    unready = ("False", "containers with unready status: [app]")
    assert conditions(node, "web")["Ready"] == unready
    assert conditions(node, "web")["ContainersReady"] == unready
    assert (
        "Warning",
        "Unhealthy",
        "Readiness probe failed: HTTP probe failed with statuscode: 500",
        3,
    ) in events(node, "web")


def test_readiness_needs_success_threshold_successes_in_a_row(node: Node) -> None:
    body = with_probes("slow", startup_seconds="15")
    body["spec"]["containers"][0]["readinessProbe"] = {
        "tcpSocket": {"port": 5432},
        "periodSeconds": 5,
        "successThreshold": 2,
    }
    node.create_pod(body)
    node.settle()
    assert container(node, "slow")["ready"] is False
    ip = node.get_pod("slow")["status"]["podIP"]
    refused = f"Readiness probe failed: dial tcp {ip}:5432: connect: connection refused"
    # Serving from 15 s: successes at 15 and 20 s.
    node.settle(16.5)
    assert container(node, "slow")["ready"] is False
    node.settle(5)
    assert container(node, "slow")["ready"] is True
    # Failed at start, then at 5 and 10 s.
    assert ("Warning", "Unhealthy", refused, 3) in events(node, "slow")


def liveness_exec_pod() -> dict[str, Any]:
    """The liveness example of the Kubernetes documentation (exec-liveness.yaml)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "liveness-exec", "namespace": "default"},
        "spec": {
            "nodeName": "node-1",
            "containers": [
                {
                    "name": "liveness",
                    "image": "registry.k8s.io/busybox:1.27.2",
                    "args": [
                        "/bin/sh",
                        "-c",
                        "touch /tmp/healthy; sleep 30; rm -f /tmp/healthy; sleep 600",
                    ],
                    "livenessProbe": {
                        "exec": {"command": ["cat", "/tmp/healthy"]},
                        "initialDelaySeconds": 5,
                        "periodSeconds": 5,
                    },
                }
            ],
        },
    }


def test_the_documentation_liveness_example_restarts_after_three_failures(node: Node) -> None:
    node.create_pod(liveness_exec_pod())
    node.settle(39)  # /tmp/healthy is gone at 30 s: probes fail at 30 and 35 s
    status = container(node, "liveness-exec")
    assert (status["restartCount"], list(status["state"])) == (0, ["running"])
    node.settle(2)  # the third failure, at 40 s, has it killed
    killing = "Container liveness failed liveness probe, will be restarted"
    assert ("Normal", "Killing", killing, 1) in events(node, "liveness-exec")
    # Its PID 1 (the script's last command, `sleep 600`, which sh execs) has no handler for
    # SIGTERM, so it runs on until its 30 s grace period ends and SIGKILL takes it.
    status = container(node, "liveness-exec")
    assert (status["restartCount"], list(status["state"])) == (0, ["running"])
    node.settle(30)
    status = container(node, "liveness-exec")
    assert (status["restartCount"], list(status["state"])) == (1, ["running"])
    terminated = status["lastState"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (137, "Error")
    failed = "Liveness probe failed: cat: can't open '/tmp/healthy': No such file or directory"
    assert ("Warning", "Unhealthy", failed, 3) in events(node, "liveness-exec")
    # The new run removes the file 30 s after its start too.
    node.settle(70)
    assert container(node, "liveness-exec")["restartCount"] == 2
    assert node.get_pod("liveness-exec")["status"]["phase"] == "Running"


def test_liveness_failure_under_never_fails_the_pod(node: Node) -> None:
    body = with_probes("once", restart_policy="Never", liveness_fails_after="0")
    # A PID 1 that ignores SIGTERM, killed when its grace period ends (nginx would shut down
    # and exit 0 at once: Succeeded).
    body["spec"]["containers"][0]["command"] = ["sleep", "3600"]
    body["spec"]["containers"][0]["livenessProbe"] = {
        "grpc": {"port": 9090},
        "periodSeconds": 1,
        "failureThreshold": 2,
    }
    body["spec"]["terminationGracePeriodSeconds"] = 10
    node.create_pod(body)
    node.settle(4)
    assert node.get_pod("once")["status"]["phase"] == "Running"
    node.settle(10)
    status = node.get_pod("once")["status"]
    assert status["phase"] == "Failed"
    assert status["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 137
    assert status["containerStatuses"][0]["restartCount"] == 0
    found = events(node, "once")
    assert ("Normal", "Killing", "Container app failed liveness probe", 1) in found
    unhealthy = 'Liveness probe failed: service unhealthy (responded with "NOT_SERVING")'
    assert ("Warning", "Unhealthy", unhealthy, 2) in found


def test_a_liveness_kill_waits_the_probe_termination_grace_period(node: Node) -> None:
    body = with_probes("stubborn", liveness_fails_after="0", stop_seconds="600")
    body["spec"]["containers"][0]["livenessProbe"] = {
        "exec": {"command": ["/bin/check"]},
        "periodSeconds": 1,
        "failureThreshold": 1,
        "terminationGracePeriodSeconds": 5,
    }
    node.create_pod(body)
    node.settle(5.5)  # killed at 1 s (SIGTERM ignored), SIGKILL at 6 s
    assert container(node, "stubborn")["restartCount"] == 0
    node.settle(1)
    status = container(node, "stubborn")
    assert status["restartCount"] == 1
    assert status["lastState"]["terminated"]["exitCode"] == 137


def test_startup_probe_holds_back_liveness_and_readiness(node: Node) -> None:
    body = with_probes("legacy", startup_seconds="25")
    spec = body["spec"]["containers"][0]
    spec["startupProbe"] = {"httpGet": {"path": "/", "port": 8080}, "periodSeconds": 5}
    spec["startupProbe"]["failureThreshold"] = 10
    # Alone, this liveness probe would kill the container at its first failure.
    spec["livenessProbe"] = {"httpGet": {"path": "/", "port": 8080}, "periodSeconds": 1}
    spec["livenessProbe"]["failureThreshold"] = 1
    spec["readinessProbe"] = {"httpGet": {"path": "/", "port": 8080}, "periodSeconds": 10}
    node.create_pod(body)
    node.settle(21)
    status = container(node, "legacy")
    assert (status["started"], status["ready"], status["restartCount"]) == (False, False, 0)
    node.settle(5)  # the startup probe succeeds at 25 s; readiness is probed at once
    status = container(node, "legacy")
    assert (status["started"], status["ready"], status["restartCount"]) == (True, True, 0)
    ip = node.get_pod("legacy")["status"]["podIP"]
    refused = (
        f'Startup probe failed: Get "http://{ip}:8080/": '
        f"dial tcp {ip}:8080: connect: connection refused"
    )
    found = events(node, "legacy")
    assert ("Warning", "Unhealthy", refused, 4) in found
    assert not [e for e in found if e[2].startswith(("Liveness", "Readiness"))]


def test_a_failed_startup_probe_restarts_the_container(node: Node) -> None:
    body = with_probes("stuck", startup_seconds="100")
    body["spec"]["containers"][0]["startupProbe"] = {
        "tcpSocket": {"port": 80},
        "periodSeconds": 5,
        "failureThreshold": 3,
    }
    node.create_pod(body)
    node.settle(16)
    assert container(node, "stuck")["restartCount"] == 1
    killing = "Container app failed startup probe, will be restarted"
    assert ("Normal", "Killing", killing, 1) in events(node, "stuck")


def test_a_sidecar_failing_its_startup_probe_is_restarted_as_an_init_container(
    node: Node,
) -> None:
    """computeInitContainerActions kills a sidecar whose startup probe failed to start it
    again, whatever the pod's restartPolicy, with words of its own."""
    body = with_probes("meshed", restart_policy="Never", **{"startup_seconds.proxy": "100"})
    body["spec"]["initContainers"] = [
        {
            "name": "proxy",
            "image": "envoy",
            "restartPolicy": "Always",
            "startupProbe": {"tcpSocket": {"port": 15000}, "periodSeconds": 5},
        }
    ]
    node.create_pod(body)
    node.settle(16)
    status = node.get_pod("meshed")["status"]
    assert status["initContainerStatuses"][0]["restartCount"] == 1
    killing = "Init container proxy failed startup probe"
    assert ("Normal", "Killing", killing, 1) in events(node, "meshed")


def test_repeated_liveness_kills_end_in_crash_loop_back_off(node: Node) -> None:
    node.create_pod(liveness_exec_pod())
    # Killed 40 s into each run and gone 30 s later (its sleep ignores SIGTERM): a run lasts
    # 70 s. The back-off, counted from the run before each kill, grows 10, 20, 40, 80 s, and
    # only the fifth is longer than a run.
    node.settle(351)
    assert container(node, "liveness-exec")["restartCount"] == 5
    node.settle(70)
    status = container(node, "liveness-exec")
    assert status["restartCount"] == 5
    assert status["state"]["waiting"]["message"].startswith("back-off 1m20s restarting")
    assert status["lastState"]["terminated"]["exitCode"] == 137
    node.settle(80)  # 80 s after the last kill
    assert list(container(node, "liveness-exec")["state"]) == ["running"]


def test_a_sidecar_startup_probe_holds_back_the_app_containers(node: Node) -> None:
    body = with_probes("meshed", **{"startup_seconds.proxy": "12"})
    body["spec"]["initContainers"] = [
        {
            "name": "proxy",
            "image": "envoy",
            "restartPolicy": "Always",
            "startupProbe": {"tcpSocket": {"port": 15000}, "periodSeconds": 5},
        }
    ]
    node.create_pod(body)
    node.settle(11)
    status = node.get_pod("meshed")["status"]
    assert status["initContainerStatuses"][0]["started"] is False
    assert status["containerStatuses"][0]["state"] == {"waiting": {"reason": "PodInitializing"}}
    # GeneratePodInitializedCondition: a sidecar counts as initialized once started.
    assert conditions(node, "meshed")["Initialized"] == (
        "False",
        "containers with incomplete status: [proxy]",
    )
    node.settle(5)  # started at the 15 s probe
    status = node.get_pod("meshed")["status"]
    assert status["initContainerStatuses"][0]["started"] is True
    assert list(status["containerStatuses"][0]["state"]) == ["running"]
    assert conditions(node, "meshed")["Initialized"] == ("True", None)
    assert status["conditions"][2]["type"] == "Ready"
    assert status["conditions"][2]["status"] == "True"
