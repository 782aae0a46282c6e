"""`kubectl get pods` rows for every path through printers.go's printPod."""

from __future__ import annotations

from typing import Any

import pytest

from pinnace.api.core.pod import POD
from pinnace.api.tables import to_table
from pinnace.clock.rfc3339 import parse_time

NOW = parse_time("2025-01-01T01:00:00Z")
CREATED = "2025-01-01T00:00:00Z"


def pod(
    status: dict[str, Any] | None = None,
    *,
    containers: int = 1,
    init: int = 0,
    sidecars: int = 0,
    deleted: bool = False,
    **spec: Any,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "web", "namespace": "default", "creationTimestamp": CREATED}
    if deleted:
        meta["deletionTimestamp"] = "2025-01-01T00:59:00Z"
    init_containers = [{"name": f"init{i}", "image": "busybox"} for i in range(init)]
    init_containers += [
        {"name": f"side{i}", "image": "envoy", "restartPolicy": "Always"} for i in range(sidecars)
    ]
    return {
        "metadata": meta,
        "spec": {
            "containers": [{"name": f"c{i}", "image": "nginx"} for i in range(containers)],
            **({"initContainers": init_containers} if init_containers else {}),
            **spec,
        },
        "status": status or {"phase": "Pending"},
    }


def running(name: str = "c0", ready: bool = True, restarts: int = 0) -> dict[str, Any]:
    return {
        "name": name,
        "ready": ready,
        "restartCount": restarts,
        "started": True,
        "state": {"running": {"startedAt": CREATED}},
    }


def waiting(name: str, reason: str, restarts: int = 0, finished: str = "") -> dict[str, Any]:
    status: dict[str, Any] = {
        "name": name,
        "ready": False,
        "restartCount": restarts,
        "state": {"waiting": {"reason": reason}},
    }
    if finished:
        status["lastState"] = {"terminated": {"exitCode": 1, "finishedAt": finished}}
    return status


def terminated(name: str, reason: str = "", exit_code: int = 0, signal: int = 0) -> dict[str, Any]:
    state: dict[str, Any] = {"exitCode": exit_code}
    if reason:
        state["reason"] = reason
    if signal:
        state["signal"] = signal
    return {"name": name, "ready": False, "restartCount": 0, "state": {"terminated": state}}


def cells(p: dict[str, Any]) -> list[Any]:
    table = to_table(POD, [p], now=NOW, list_meta={})
    return table["rows"][0]["cells"]


def summary(p: dict[str, Any]) -> tuple[str, str, str]:
    name, ready, status, restarts, *_ = cells(p)
    assert name == "web"
    return ready, status, restarts


READY = {"type": "Ready", "status": "True"}
INITIALIZED = {"type": "Initialized", "status": "True"}


@pytest.mark.parametrize(
    ("p", "expected"),
    [
        pytest.param(pod(), ("0/1", "Pending", "0"), id="pending"),
        pytest.param(
            pod(
                {
                    "phase": "Pending",
                    "conditions": [
                        {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}
                    ],
                }
            ),
            ("0/1", "SchedulingGated", "0"),
            id="scheduling-gated",
        ),
        pytest.param(
            pod({"phase": "Pending", "containerStatuses": [waiting("c0", "ContainerCreating")]}),
            ("0/1", "ContainerCreating", "0"),
            id="container-creating",
        ),
        pytest.param(
            pod({"phase": "Running", "containerStatuses": [running()]}),
            ("1/1", "Running", "0"),
            id="running",
        ),
        pytest.param(
            pod({"phase": "Running", "containerStatuses": [running(ready=False)]}),
            ("0/1", "Running", "0"),
            id="running-not-ready",
        ),
        pytest.param(
            pod(
                {
                    "phase": "Running",
                    "containerStatuses": [
                        waiting("c0", "CrashLoopBackOff", 3, "2025-01-01T00:58:00Z")
                    ],
                }
            ),
            ("0/1", "CrashLoopBackOff", "3 (2m ago)"),
            id="crash-loop",
        ),
        pytest.param(
            pod({"phase": "Succeeded", "containerStatuses": [terminated("c0", "Completed")]}),
            ("0/1", "Completed", "0"),
            id="completed",
        ),
        pytest.param(
            pod({"phase": "Running", "containerStatuses": [terminated("c0", "OOMKilled", 137)]}),
            ("0/1", "OOMKilled", "0"),
            id="oom-killed",
        ),
        pytest.param(
            pod({"phase": "Failed", "containerStatuses": [terminated("c0", exit_code=2)]}),
            ("0/1", "ExitCode:2", "0"),
            id="exit-code",
        ),
        pytest.param(
            pod({"phase": "Failed", "containerStatuses": [terminated("c0", signal=9)]}),
            ("0/1", "Signal:9", "0"),
            id="signal",
        ),
        pytest.param(
            pod({"phase": "Failed", "reason": "Evicted", "message": "low on memory"}),
            ("0/1", "Evicted", "0"),
            id="evicted",
        ),
        pytest.param(
            pod({"phase": "Running", "containerStatuses": [running()]}, deleted=True),
            ("1/1", "Terminating", "0"),
            id="terminating",
        ),
        pytest.param(
            pod(
                {"phase": "Succeeded", "containerStatuses": [terminated("c0", "Completed")]},
                deleted=True,
            ),
            ("0/1", "Completed", "0"),
            id="deleted-after-success",
        ),
        pytest.param(
            pod({"phase": "Running", "reason": "NodeLost"}, deleted=True),
            ("0/1", "Unknown", "0"),
            id="node-lost",
        ),
        pytest.param(
            pod({"phase": "Pending", "initContainerStatuses": [running("init0")]}, init=1),
            ("0/1", "Init:0/1", "0"),
            id="init-running",
        ),
        pytest.param(
            pod(
                {
                    "phase": "Pending",
                    "initContainerStatuses": [
                        terminated("init0", "Completed"),
                        waiting("init1", "PodInitializing"),
                    ],
                },
                init=2,
            ),
            ("0/1", "Init:1/2", "0"),
            id="init-second-of-two",
        ),
        pytest.param(
            pod(
                {
                    "phase": "Pending",
                    "initContainerStatuses": [
                        waiting("init0", "CrashLoopBackOff", 4, "2025-01-01T00:57:30Z")
                    ],
                    "containerStatuses": [waiting("c0", "PodInitializing")],
                },
                init=1,
            ),
            ("0/1", "Init:CrashLoopBackOff", "4 (2m30s ago)"),
            id="init-crash-loop",
        ),
        pytest.param(
            pod(
                {"phase": "Failed", "initContainerStatuses": [terminated("init0", "Error", 1)]},
                init=1,
            ),
            ("0/1", "Init:Error", "0"),
            id="init-error",
        ),
        pytest.param(
            pod(
                {"phase": "Failed", "initContainerStatuses": [terminated("init0", exit_code=3)]},
                init=1,
            ),
            ("0/1", "Init:ExitCode:3", "0"),
            id="init-exit-code",
        ),
        pytest.param(
            pod(
                {
                    "phase": "Failed",
                    "initContainerStatuses": [terminated("init0", exit_code=143, signal=15)],
                },
                init=1,
            ),
            ("0/1", "Init:Signal:15", "0"),
            id="init-signal",
        ),
        pytest.param(
            pod(
                {
                    "phase": "Running",
                    "conditions": [READY],
                    "containerStatuses": [terminated("c0", "Completed"), running("c1")],
                },
                containers=2,
            ),
            ("1/2", "Running", "0"),
            id="one-completed-one-running-ready",
        ),
        pytest.param(
            pod(
                {
                    "phase": "Running",
                    "containerStatuses": [terminated("c0", "Completed"), running("c1")],
                },
                containers=2,
            ),
            ("1/2", "NotReady", "0"),
            id="one-completed-one-running-not-ready",
        ),
        pytest.param(
            pod(
                {
                    "phase": "Running",
                    "containerStatuses": [
                        waiting("c0", "ImagePullBackOff"),
                        waiting("c1", "ErrImagePull"),
                    ],
                },
                containers=2,
            ),
            ("0/2", "ImagePullBackOff", "0"),
            id="first-container-wins",
        ),
        pytest.param(
            pod(
                {
                    "phase": "Running",
                    "conditions": [INITIALIZED, READY],
                    "initContainerStatuses": [
                        {
                            **running("side0", restarts=2),
                            "lastState": {
                                "terminated": {"exitCode": 1, "finishedAt": "2025-01-01T00:50:00Z"}
                            },
                        },
                    ],
                    "containerStatuses": [running("c0", restarts=1)],
                },
                sidecars=1,
            ),
            ("2/2", "Running", "3 (10m ago)"),
            id="sidecar",
        ),
        pytest.param(
            pod(
                {
                    "phase": "Running",
                    "conditions": [INITIALIZED],
                    "initContainerStatuses": [terminated("init0", "Completed")],
                    "containerStatuses": [running("c0")],
                },
                init=1,
            ),
            ("1/1", "Running", "0"),
            id="initialized",
        ),
    ],
)
def test_pod_status_paths(p: dict[str, Any], expected: tuple[str, str, str]) -> None:
    assert summary(p) == expected


def test_restarts_without_a_termination_time_show_only_the_count() -> None:
    p = pod({"phase": "Running", "containerStatuses": [running(restarts=7)]})
    assert summary(p) == ("1/1", "Running", "7")


def test_wide_cells() -> None:
    p = pod(
        {
            "phase": "Running",
            "podIP": "10.1.0.5",
            "podIPs": [{"ip": "10.1.0.5"}, {"ip": "fd00::5"}],
            "nominatedNodeName": "node-b",
            "conditions": [
                {"type": "example.com/lb", "status": "True"},
                {"type": "example.com/other", "status": "False"},
            ],
        },
        nodeName="node-a",
        readinessGates=[
            {"conditionType": "example.com/lb"},
            {"conditionType": "example.com/other"},
            {"conditionType": "example.com/missing"},
        ],
    )
    assert cells(p)[4:] == ["60m", "10.1.0.5", "node-a", "node-b", "1/3"]


def test_wide_cells_of_an_unscheduled_pod() -> None:
    assert cells(pod())[4:] == ["60m", "<none>", "<none>", "<none>", "<none>"]


def test_finished_pods_carry_a_completed_row_condition() -> None:
    done = pod({"phase": "Succeeded", "containerStatuses": [terminated("c0", "Completed")]})
    failed = pod({"phase": "Failed", "reason": "Evicted"})
    table = to_table(POD, [done, failed, pod()], now=NOW, list_meta={})
    conditions = [row.get("conditions") for row in table["rows"]]
    assert conditions == [
        [
            {
                "type": "Completed",
                "status": "True",
                "reason": "Succeeded",
                "message": "The pod has completed successfully.",
            }
        ],
        [{"type": "Completed", "status": "True", "reason": "Failed", "message": "The pod failed."}],
        None,
    ]


def test_pod_columns() -> None:
    table = to_table(POD, [], now=NOW, list_meta={"resourceVersion": "9"})
    columns = [
        (c["name"], c["type"], c["format"], c["priority"]) for c in table["columnDefinitions"]
    ]
    assert columns == [
        ("Name", "string", "name", 0),
        ("Ready", "string", "", 0),
        ("Status", "string", "", 0),
        ("Restarts", "string", "", 0),
        ("Age", "string", "", 0),
        ("IP", "string", "", 1),
        ("Node", "string", "", 1),
        ("Nominated Node", "string", "", 1),
        ("Readiness Gates", "string", "", 1),
    ]
    descriptions = {c["name"]: c["description"] for c in table["columnDefinitions"]}
    assert descriptions["Name"].startswith("Name must be unique within a namespace.")
    assert descriptions["Age"].startswith("CreationTimestamp is a timestamp")
    assert descriptions["IP"].startswith("podIP address allocated to the pod.")
    assert descriptions["Node"].startswith(
        "NodeName indicates in which node this pod is scheduled."
    )
    assert table["rows"] == []
