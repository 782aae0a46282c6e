"""Ephemeral containers on a node agent, as the v1.32 kubelet runs them (kuberuntime's
computePodActions and SyncPod): one added to a running pod is started, never restarted, and
stopped with the pod; it shows in ephemeralContainerStatuses and leaves the pod's phase and
readiness alone."""

from __future__ import annotations

from typing import Any

from tests.kubelet.conftest import EVENTS, PODS, Node, pod
from tests.kubelet.test_agent_restart import restart
from tests.kubelet.test_exec import Terminal
from tests.kubelet.test_lifecycle import holds_its_cpu_until_stopped

from pinnace.api.options import DeleteOptions, LogOptions
from pinnace.api.patch import PatchType
from pinnace.api.streams import StreamOptions
from pinnace.apiserver.logs import log_text


def debug(node: Node, pod_name: str, name: str, *command: str, **fields: Any) -> None:
    """What `kubectl debug POD --image=busybox -- COMMAND` patches in."""
    container = {"name": name, "image": "busybox", "command": list(command), **fields}
    patch = {"spec": {"ephemeralContainers": [container]}}
    node.run(
        node.client.patch(
            PODS,
            "default",
            pod_name,
            patch,
            PatchType.STRATEGIC_MERGE,
            subresource="ephemeralcontainers",
        )
    )


def ephemeral_status(node: Node, pod_name: str, name: str) -> dict[str, Any]:
    statuses = node.get_pod(pod_name)["status"]["ephemeralContainerStatuses"]
    return next(s for s in statuses if s["name"] == name)


def state(node: Node, pod_name: str, name: str) -> str:
    return next(iter(ephemeral_status(node, pod_name, name)["state"]))


def events_of(node: Node, field_path: str) -> list[str]:
    items = node.run(node.client.list(EVENTS, "default"))["items"]
    return [e["reason"] for e in items if e["involvedObject"].get("fieldPath") == field_path]


def running_pod(node: Node, name: str = "web", restart_policy: str = "", **model: str) -> None:
    node.create_pod(pod(name, node="node-1", restart_policy=restart_policy, **model))
    node.settle(5)
    assert node.get_pod(name)["status"]["phase"] == "Running"


def test_an_added_ephemeral_container_runs_once_and_its_output_is_its_log(node: Node) -> None:
    running_pod(node)
    assert "ephemeralContainerStatuses" not in node.get_pod("web")["status"]
    debug(node, "web", "debugger", "sh", "-c", "echo dbg; sleep 30")
    node.settle(5)
    running = ephemeral_status(node, "web", "debugger")
    assert list(running["state"]) == ["running"]
    # The prober manager leaves an ephemeral container's status alone: never ready, and no
    # `started`.
    assert (running["ready"], running["restartCount"]) == (False, 0)
    assert "started" not in running
    assert events_of(node, "spec.ephemeralContainers{debugger}") == [
        "Pulling",
        "Pulled",
        "Created",
        "Started",
    ]
    logs = LogOptions(container="debugger")
    assert node.run(log_text(node.server, "default", "web", logs)) == "dbg\n"
    command = StreamOptions(container="debugger", command=("printenv", "HOSTNAME"), stdout=True)
    terminal = Terminal(node.client.clock)
    node.run(node.agent.exec(node.get_pod("web"), command)(terminal))
    assert terminal.text() == "web\n"

    node.settle(30 + 60)  # it exits; under restartPolicy Always it is not restarted
    done = ephemeral_status(node, "web", "debugger")
    terminated = done["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (0, "Completed")
    assert done["restartCount"] == 0
    pod_status = node.get_pod("web")["status"]
    assert pod_status["phase"] == "Running"
    ready = {c["type"]: c["status"] for c in pod_status["conditions"]}
    assert ready["Ready"] == ready["ContainersReady"] == "True"
    assert node.run(log_text(node.server, "default", "web", logs)) == "dbg\n"


def test_a_failed_ephemeral_container_is_not_restarted_and_a_second_one_starts(
    node: Node,
) -> None:
    running_pod(node)
    debug(node, "web", "first", "sh", "-c", "exit 3")
    node.settle(60)
    terminated = ephemeral_status(node, "web", "first")["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (3, "Error")
    assert events_of(node, "spec.ephemeralContainers{first}").count("Started") == 1

    debug(node, "web", "second", "sleep", "3600")
    node.settle(5)
    assert state(node, "web", "first") == "terminated"
    assert state(node, "web", "second") == "running"
    assert node.get_pod("web")["status"]["phase"] == "Running"


def test_an_ephemeral_container_added_before_the_pod_starts_waits_for_its_sandbox(
    node: Node,
) -> None:
    body = pod("later")
    body["spec"]["initContainers"] = [{"name": "init", "image": "busybox", "command": ["true"]}]
    node.create_pod(body)  # not bound yet: no node runs it
    debug(node, "later", "debugger", "sleep", "3600")
    node.settle()
    assert "ephemeralContainerStatuses" not in node.get_pod("later").get("status", {})
    node.run(node.client.bind(node.get_pod("later"), "node-1"))
    node.settle(5)
    assert state(node, "later", "debugger") == "running"
    assert node.get_pod("later")["status"]["phase"] == "Running"


def test_ephemeral_containers_stop_with_their_pod(node: Node) -> None:
    # The app container finishes: the pod is done, its ephemeral container is stopped.
    running_pod(node, "job", restart_policy="Never", run_seconds="20")
    debug(node, "job", "debugger", "sleep", "3600")
    node.settle(5)
    assert state(node, "job", "debugger") == "running"
    node.settle(30)
    assert "Killing" in events_of(node, "spec.ephemeralContainers{debugger}")
    node.settle(30)  # its sleep ignores SIGTERM: killed when the 30 s grace period ends
    assert node.get_pod("job")["status"]["phase"] == "Succeeded"
    assert state(node, "job", "debugger") == "terminated"
    assert "Killing" in events_of(node, "spec.ephemeralContainers{debugger}")

    # A deleted pod goes once its ephemeral container has stopped too.
    running_pod(node)
    debug(node, "web", "debugger", "sleep", "3600")
    node.settle(5)
    node.run(node.client.delete(PODS, "default", "web", DeleteOptions(grace_period_seconds=5)))
    node.settle(10)
    names = [p["metadata"]["name"] for p in node.run(node.client.list(PODS, "default"))["items"]]
    assert "web" not in names


def test_a_restarted_agent_takes_its_ephemeral_containers_back(node: Node) -> None:
    running_pod(node)
    debug(node, "web", "done", "true")
    debug(node, "web", "shell", "sleep", "3600")
    node.settle(5)
    before = node.get_pod("web")["status"]["ephemeralContainerStatuses"]
    restart(node)
    # Neither the one that ran nor the one running is started again.
    assert node.get_pod("web")["status"]["ephemeralContainerStatuses"] == before
    assert events_of(node, "spec.ephemeralContainers{done}").count("Started") == 1


def test_a_finished_pod_shows_its_phase_once_its_ephemeral_container_has_stopped(
    node: Node,
) -> None:
    # The status manager holds a terminal phase back while a container could still run
    # (mergePodStatus): here the debugger takes 10 s to stop once its app container is done.
    running_pod(node, "job", restart_policy="Never", run_seconds="20", stop_seconds="10")
    debug(node, "job", "debugger", "sleep", "3600")
    node.settle(20)
    assert "Killing" in events_of(node, "spec.ephemeralContainers{debugger}")
    assert state(node, "job", "debugger") == "running"
    assert node.get_pod("job")["status"]["phase"] == "Running"
    node.settle(15)
    assert state(node, "job", "debugger") == "terminated"
    assert node.get_pod("job")["status"]["phase"] == "Succeeded"


def test_an_ephemeral_container_present_at_the_first_sync_starts_after_the_init_container(
    node: Node,
) -> None:
    # computePodActions returns once it has planned the sandbox (and the first init
    # container): the ephemeral container starts on the next sync.
    body = pod("later")
    body["spec"]["initContainers"] = [
        {"name": "init", "image": "busybox", "command": ["sleep", "30"]}
    ]
    node.create_pod(body)
    debug(node, "later", "debugger", "sleep", "3600")
    node.run(node.client.bind(node.get_pod("later"), "node-1"))
    node.settle(5)
    assert state(node, "later", "debugger") == "running"
    items = node.run(node.client.list(EVENTS, "default"))["items"]
    started = [
        e["involvedObject"].get("fieldPath")
        for e in sorted(items, key=lambda e: e["metadata"]["name"])
        if e["reason"] == "Started"
    ]
    assert started == ["spec.initContainers{init}", "spec.ephemeralContainers{debugger}"]


def test_a_finished_pod_holds_its_resources_until_its_ephemeral_container_has_stopped(
    node: Node,
) -> None:
    # filterOutInactivePods keeps a terminal pod whose termination is under way among the
    # active pods that admission counts, until all of its containers have stopped.
    node.create_pod(
        pod(
            "job",
            node="node-1",
            cpu="2",
            restart_policy="Never",
            run_seconds="20",
            stop_seconds="10",
        )
    )
    node.settle(5)
    debug(node, "job", "debugger", "sleep", "3600")
    node.settle(20)
    assert state(node, "job", "debugger") == "running"  # being stopped
    holds_its_cpu_until_stopped(node)


def test_an_ephemeral_container_added_to_a_stopped_pod_gets_no_status(node: Node) -> None:
    # The v1.32 pod worker takes no more updates once it has terminated a pod: the kubelet
    # neither starts the container nor writes a status for it.
    running_pod(node, "job", restart_policy="Never", run_seconds="8")
    node.settle(10)
    assert node.get_pod("job")["status"]["phase"] == "Succeeded"
    debug(node, "job", "debugger", "sleep", "3600")
    node.settle(10)
    done = node.get_pod("job")
    assert [c["name"] for c in done["spec"]["ephemeralContainers"]] == ["debugger"]
    assert "ephemeralContainerStatuses" not in done["status"]
    assert events_of(node, "spec.ephemeralContainers{debugger}") == []
