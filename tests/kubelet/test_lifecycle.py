"""Pods through their lives on a node agent: restarts with back-off, init containers, graceful
deletion, logs."""

from __future__ import annotations

import pytest
from tests.kubelet.conftest import EVENTS, PODS, Node, pod

from pinnace.api.options import DeleteOptions, LogOptions
from pinnace.api.status import StatusError
from pinnace.apiserver.logs import log_text
from pinnace.clock import parse_time


def container(node: Node, name: str) -> dict:
    return node.get_pod(name)["status"]["containerStatuses"][0]


def test_container_exiting_1_under_always_goes_crash_loop_back_off_doubling(node: Node) -> None:
    node.create_pod(pod("crash", node="node-1", run_seconds="1", exit_code="1"))
    node.settle(0.5)
    assert container(node, "crash")["restartCount"] == 0
    node.settle(1)  # exits at 1 s and is restarted at once
    first = container(node, "crash")
    assert first["restartCount"] == 1
    assert list(first["state"]) == ["running"]
    terminated = first["lastState"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (1, "Error")

    # Each later exit waits out a back-off that doubles: 10 s, 20 s, 40 s ...
    pod_id = node.get_pod("crash")["metadata"]["uid"]
    for restarts, backoff in [(1, "10s"), (2, "20s"), (3, "40s"), (4, "1m20s")]:
        node.settle(1)  # it runs 1 s and exits again
        waiting = container(node, "crash")
        assert waiting["state"]["waiting"] == {
            "reason": "CrashLoopBackOff",
            "message": f"back-off {backoff} restarting failed container=app "
            f"pod=crash_default({pod_id})",
        }
        assert waiting["restartCount"] == restarts
        assert waiting["ready"] is False
        assert node.get_pod("crash")["status"]["phase"] == "Running"
        seconds = {"10s": 10, "20s": 20, "40s": 40, "1m20s": 80}[backoff]
        node.settle(seconds - 1)  # half a second before the back-off ends
        assert container(node, "crash")["restartCount"] == restarts
        node.settle(1)  # half a second after the restart
        assert container(node, "crash")["restartCount"] == restarts + 1


def test_a_container_that_exits_as_it_starts_is_never_reported_running_or_ready(
    node: Node,
) -> None:
    """The kubelet sees containers through relists a second apart: a run that takes no time
    (`sh -c "exit 1"`) is seen exited, never running, so its pod is never ready (a
    Deployment of it then times out rather than counting it available for an instant)."""
    written: list[dict] = []

    async def follow() -> None:
        start = (await node.client.list(PODS, "default"))["metadata"]["resourceVersion"]
        async for event in node.client.watch(PODS, "default", resource_version=start):
            written.append(event["object"].get("status") or {})

    watch = node.loop.create_task(follow())
    crash = pod("crash", node="node-1")
    crash["spec"]["containers"][0]["command"] = ["sh", "-c", "exit 1"]
    node.create_pod(crash)
    node.settle(10 + 20 + 1)  # two back-offs: three restarts
    watch.cancel()
    assert container(node, "crash")["restartCount"] == 3
    states = [next(iter(c["state"])) for s in written for c in s.get("containerStatuses") or []]
    assert "terminated" in states and "running" not in states
    ready = [
        c["status"] for s in written for c in s.get("conditions") or [] if c["type"] == "Ready"
    ]
    assert ready and set(ready) == {"False"}


def test_back_off_stops_at_five_minutes(node: Node) -> None:
    node.create_pod(pod("crash", node="node-1", run_seconds="0", exit_code="2"))
    node.settle(10 + 20 + 40 + 80 + 160 + 300 + 1)
    waiting = container(node, "crash")["state"]["waiting"]
    assert waiting["message"].startswith("back-off 5m0s restarting failed container=app")


def test_on_failure_restarts_only_failures_and_never_restarts_nothing(node: Node) -> None:
    node.create_pod(pod("ok", node="node-1", restart_policy="OnFailure", run_seconds="3"))
    node.create_pod(
        pod("bad", node="node-1", restart_policy="Never", run_seconds="3", exit_code="1")
    )
    node.settle(5)
    ok, bad = node.get_pod("ok")["status"], node.get_pod("bad")["status"]
    assert ok["phase"] == "Succeeded"
    assert bad["phase"] == "Failed"
    assert bad["containerStatuses"][0]["state"]["terminated"]["reason"] == "Error"
    assert bad["containerStatuses"][0]["restartCount"] == 0


def test_init_containers_run_in_order_before_the_app(node: Node) -> None:
    body = pod("init", node="node-1")
    body["spec"]["initContainers"] = [
        {"name": "first", "image": "busybox"},
        {"name": "second", "image": "busybox"},
    ]
    annotations = body["metadata"]["annotations"]
    annotations["sim.pinnace.dev/run-seconds.first"] = "5"
    annotations["sim.pinnace.dev/run-seconds.second"] = "5"
    node.create_pod(body)
    node.settle(2)
    status = node.get_pod("init")["status"]
    assert status["phase"] == "Pending"
    first, second = status["initContainerStatuses"]
    assert list(first["state"]) == ["running"]
    assert second["state"] == {"waiting": {"reason": "PodInitializing"}}
    assert status["containerStatuses"][0]["state"] == {"waiting": {"reason": "PodInitializing"}}
    initialized = status["conditions"][1]
    assert initialized["status"] == "False"
    assert initialized["reason"] == "ContainersNotInitialized"
    assert initialized["message"] == "containers with incomplete status: [first second]"
    node.settle(5)
    first, second = node.get_pod("init")["status"]["initContainerStatuses"]
    assert first["state"]["terminated"]["reason"] == "Completed"
    assert list(second["state"]) == ["running"]
    node.settle(5)
    status = node.get_pod("init")["status"]
    assert status["phase"] == "Running"
    assert list(status["containerStatuses"][0]["state"]) == ["running"]


def test_an_init_container_is_ready_once_it_has_exited_0_not_while_it_runs(node: Node) -> None:
    body = pod("init", node="node-1", restart_policy="Never")
    body["spec"]["initContainers"] = [
        {"name": "setup", "image": "busybox"},
        {"name": "check", "image": "busybox"},
    ]
    annotations = body["metadata"]["annotations"]
    annotations["sim.pinnace.dev/run-seconds.setup"] = "5"
    annotations["sim.pinnace.dev/run-seconds.check"] = "5"
    annotations["sim.pinnace.dev/exit-code.check"] = "1"
    node.create_pod(body)
    node.settle(2)
    setup, _ = node.get_pod("init")["status"]["initContainerStatuses"]
    assert list(setup["state"]) == ["running"]
    assert (setup["started"], setup["ready"]) == (True, False)
    node.settle(5)
    setup, check = node.get_pod("init")["status"]["initContainerStatuses"]
    assert setup["state"]["terminated"]["exitCode"] == 0
    assert (setup["started"], setup["ready"]) == (False, True)
    assert list(check["state"]) == ["running"]
    assert check["ready"] is False
    node.settle(5)
    status = node.get_pod("init")["status"]
    assert status["phase"] == "Failed"
    _, check = status["initContainerStatuses"]
    assert check["state"]["terminated"]["exitCode"] == 1
    assert check["ready"] is False


def test_graceful_deletion_completes_after_the_grace_period(node: Node) -> None:
    node.create_pod(pod("slow", node="node-1", stop_seconds="600"))
    node.settle()
    node.run(node.client.delete(PODS, "default", "slow", DeleteOptions(grace_period_seconds=30)))
    node.settle(29)
    terminating = node.get_pod("slow")
    assert terminating["metadata"]["deletionGracePeriodSeconds"] == 30
    node.settle(2)
    with pytest.raises(StatusError) as gone:
        node.get_pod("slow")
    assert gone.value.code == 404


@pytest.mark.parametrize(
    "command",
    [
        ["sleep", "3600"],
        ["sh", "-c", "while true; do sleep 5; done"],
        ["sh", "-c", "echo started; exec sleep 3600"],
    ],
)
def test_a_pid_1_without_a_sigterm_handler_is_killed_when_its_grace_period_ends(
    node: Node, command: list[str]
) -> None:
    """The kernel does not deliver SIGTERM to a PID 1 that has no handler for it: busybox's
    sleep, or a shell (whose children never see it), runs on until SIGKILL at the end of the
    grace period: 137, Error."""
    body = pod("sleeper", node="node-1")
    body["spec"]["containers"][0].update(image="busybox", command=command)
    node.create_pod(body)
    node.settle()
    node.run(node.client.delete(PODS, "default", "sleeper"))
    node.settle(29)
    assert list(container(node, "sleeper")["state"]) == ["running"]
    node.run(node.agent.recorder.flush())
    found = node.run(node.client.list(EVENTS, "default"))["items"]
    assert [e["message"] for e in found if e["reason"] == "Killing"] == ["Stopping container app"]
    node.settle(2)
    with pytest.raises(StatusError):
        node.get_pod("sleeper")


def test_a_container_that_stops_on_term_goes_before_its_grace_period(node: Node) -> None:
    node.create_pod(pod("quick", node="node-1", stop_seconds="2"))
    node.settle()
    node.run(node.client.delete(PODS, "default", "quick"))
    node.settle(3)
    with pytest.raises(StatusError):
        node.get_pod("quick")
    assert not node.agent.workers


def test_pod_log_is_served_by_the_node_agent(node: Node) -> None:
    node.create_pod(pod("talk", node="node-1", log="hello\nworld"))
    node.settle()
    text = node.run(log_text(node.server, "default", "talk", LogOptions()))
    assert text == "hello\nworld\n"
    tail = node.run(log_text(node.server, "default", "talk", LogOptions(tail_lines=1)))
    assert tail == "world\n"
    with pytest.raises(StatusError) as previous:
        node.run(log_text(node.server, "default", "talk", LogOptions(previous=True)))
    assert previous.value.message == ('previous terminated container "app" in pod "talk" not found')


def test_a_bad_model_annotation_is_a_create_container_config_error(node: Node) -> None:
    node.create_pod(pod("odd", node="node-1", run_seconds="soon"))
    node.settle()
    waiting = container(node, "odd")["state"]["waiting"]
    assert waiting["reason"] == "CreateContainerConfigError"
    assert "sim.pinnace.dev/run-seconds" in waiting["message"]


def test_a_second_delete_with_a_shorter_grace_period_kills_sooner(node: Node) -> None:
    node.create_pod(pod("stubborn", node="node-1", stop_seconds="600"))
    node.settle()
    node.run(
        node.client.delete(PODS, "default", "stubborn", DeleteOptions(grace_period_seconds=60))
    )
    node.settle(5)
    node.run(node.client.delete(PODS, "default", "stubborn", DeleteOptions(grace_period_seconds=5)))
    node.settle(4)
    assert node.get_pod("stubborn")["metadata"]["deletionGracePeriodSeconds"] == 5
    node.settle(2)
    with pytest.raises(StatusError):
        node.get_pod("stubborn")


def test_a_sidecar_runs_beside_the_app_and_stops_when_the_pod_completes(node: Node) -> None:
    body = pod("job", node="node-1", restart_policy="Never")
    body["spec"]["initContainers"] = [
        {"name": "proxy", "image": "envoy", "restartPolicy": "Always"},
    ]
    body["metadata"]["annotations"]["sim.pinnace.dev/run-seconds.app"] = "5"
    body["metadata"]["annotations"]["sim.pinnace.dev/stop-seconds.proxy"] = "1"
    node.create_pod(body)
    node.settle()
    status = node.get_pod("job")["status"]
    assert status["phase"] == "Running"
    [proxy] = status["initContainerStatuses"]
    assert list(proxy["state"]) == ["running"]
    assert proxy["ready"] is True
    assert list(status["containerStatuses"][0]["state"]) == ["running"]
    node.settle(6)
    status = node.get_pod("job")["status"]
    assert status["phase"] == "Succeeded"
    [proxy] = status["initContainerStatuses"]
    assert proxy["state"]["terminated"]["exitCode"] == 143


def sidecars(name: str, *names: str, restart_policy: str = "", **annotations: str) -> dict:
    """A pod whose app container is `app`, with the sidecars `names` in that order."""
    body = pod(name, node="node-1", restart_policy=restart_policy, **annotations)
    body["spec"]["initContainers"] = [
        {"name": n, "image": "envoy", "restartPolicy": "Always"} for n in names
    ]
    return body


def finished_at(status: dict) -> float:
    return parse_time(status["state"]["terminated"]["finishedAt"])


def test_a_completed_pods_sidecars_stop_last_first_each_after_the_one_after_it(
    node: Node,
) -> None:
    """terminationOrdering: once the app containers are done, the last sidecar is told to
    stop first, and each earlier one only once the one after it has stopped."""
    model = {"stop_seconds.first": "2", "stop_seconds.second": "2", "run_seconds.app": "1"}
    node.create_pod(sidecars("done", "first", "second", restart_policy="Never", **model))
    node.settle(8)
    status = node.get_pod("done")["status"]
    assert status["phase"] == "Succeeded"
    first, second = status["initContainerStatuses"]
    app = finished_at(status["containerStatuses"][0])
    assert (finished_at(second) - app, finished_at(first) - app) == (2, 4)


def test_a_deleted_pods_sidecar_waits_for_its_turn_no_longer_than_the_grace_period(
    node: Node,
) -> None:
    """The app ignores SIGTERM and is killed when the 10 s are up; the sidecar's wait for it
    ends then too, and it gets the kubelet's minimum of 2 s more to stop."""
    node.create_pod(sidecars("stubborn", "proxy", stop_seconds="600"))
    node.settle()
    node.run(
        node.client.delete(PODS, "default", "stubborn", DeleteOptions(grace_period_seconds=10))
    )
    node.settle(11)
    status = node.get_pod("stubborn")["status"]
    [proxy] = status["initContainerStatuses"]
    assert list(proxy["state"]) == ["running"]
    node.settle(2)
    with pytest.raises(StatusError):
        node.get_pod("stubborn")


def test_a_completed_pod_holds_its_cpu_until_its_sidecar_has_stopped(node: Node) -> None:
    # filterOutInactivePods counts a terminal pod whose termination is under way until the
    # pod worker has stopped all of its containers.
    body = pod("job", node="node-1", cpu="2", restart_policy="Never")
    body["spec"]["initContainers"] = [
        {"name": "proxy", "image": "envoy", "restartPolicy": "Always"},
    ]
    body["metadata"]["annotations"]["sim.pinnace.dev/run-seconds.app"] = "5"
    body["metadata"]["annotations"]["sim.pinnace.dev/stop-seconds.proxy"] = "10"
    node.create_pod(body)
    node.settle(7)  # the app is done, the sidecar is being stopped
    assert node.get_pod("job")["status"]["phase"] == "Running"
    holds_its_cpu_until_stopped(node)


def holds_its_cpu_until_stopped(node: Node) -> None:
    """The 2-CPU pod "job" on node-1's 2 CPUs, done but with a container still stopping for
    the next 10 s, keeps its CPU for admission until then (v1.32's terminating pod worker)."""
    node.create_pod(pod("early", node="node-1", cpu="2"))
    node.settle()
    assert node.get_pod("early")["status"]["reason"] == "OutOfcpu"
    node.settle(10)
    assert node.get_pod("job")["status"]["phase"] == "Succeeded"
    node.create_pod(pod("later", node="node-1", cpu="2"))
    node.settle(5)
    assert node.get_pod("later")["status"]["phase"] == "Running"


def test_previous_log_is_the_last_run_before_the_restart(node: Node) -> None:
    node.create_pod(pod("flaky", node="node-1", run_seconds="2", exit_code="1", log="booting"))
    node.settle(2.5)  # the first run ended at 2 s, the second started at once
    assert container(node, "flaky")["restartCount"] == 1
    previous = LogOptions(container="app", previous=True, timestamps=True)
    text = node.run(log_text(node.server, "default", "flaky", previous))
    started = node.get_pod("flaky")["status"]["containerStatuses"][0]["lastState"]
    first_start = started["terminated"]["startedAt"]
    assert text == f"{first_start[:-1]}.000000000Z booting\n"


def test_active_deadline_fails_the_pod_and_kills_its_containers(node: Node) -> None:
    body = pod("bounded", node="node-1", stop_seconds="3")
    body["spec"]["activeDeadlineSeconds"] = 60
    node.create_pod(body)
    node.settle(59)
    assert node.get_pod("bounded")["status"]["phase"] == "Running"
    node.settle(5)
    status = node.get_pod("bounded")["status"]
    assert (status["phase"], status["reason"], status["message"]) == (
        "Failed",
        "DeadlineExceeded",
        "Pod was active on the node longer than the specified deadline",
    )
    terminated = status["containerStatuses"][0]["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (0, "Completed")  # nginx shut down
    assert not node.agent.usage.pods


def test_back_off_is_forgotten_only_ten_minutes_after_the_last_restart(node: Node) -> None:
    """client-go's Backoff stamps an entry when the kubelet restarts the container (Next sets
    lastUpdate to now) and forgets it once an exit comes more than 2 x 5 min after that. A
    container that runs 500 s each time never gets there: its back-off keeps doubling (10 s,
    20 s ... 2m40s) to 5 minutes, though its exits lie more than 10 minutes apart once the
    wait before a restart is counted."""
    node.create_pod(pod("slow", node="node-1", run_seconds="500", exit_code="1"))
    # Exits at 500 (restarted at once), 1000 (+10 s), 1510 (+20), 2030 (+40), 2570 (+80),
    # 3150 (+160), then 3810: 500 s after its last restart, with 5 minutes to wait.
    node.settle(3810 + 1)
    status = container(node, "slow")
    assert status["restartCount"] == 6
    assert status["state"]["waiting"]["message"].startswith(
        "back-off 5m0s restarting failed container=app"
    )


def test_a_container_that_ran_over_ten_minutes_restarts_at_once(node: Node) -> None:
    node.create_pod(pod("long", node="node-1", run_seconds="601", exit_code="1"))
    node.settle(601 * 3 + 1)
    status = container(node, "long")
    assert status["restartCount"] == 3
    assert list(status["state"]) == ["running"]
