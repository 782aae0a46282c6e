"""`kubectl get pods`: READY, STATUS and RESTARTS as printers.go derives them from the pod's
status, plus the wide IP, NODE, NOMINATED NODE and READINESS GATES columns.

STATUS is the last word of a chain: the phase, replaced by status.reason, by SchedulingGated,
by the first init container still initialising (`Init:0/2`, `Init:CrashLoopBackOff`), then by
the first app container that is waiting or terminated (`ContainerCreating`, `OOMKilled`,
`Completed`), and finally by Terminating (or Unknown for a pod lost with its node).
"""

from __future__ import annotations

from dataclasses import dataclass

from pinnace.api.tables.age import human_duration, timestamp
from pinnace.api.tables.columns import (
    Column,
    Object,
    Printer,
    Row,
    age_column,
    age_of,
    doc,
    integer,
    items,
    meta,
    name_column,
    name_of,
    section,
)

_SUCCEEDED = [
    {
        "type": "Completed",
        "status": "True",
        "reason": "Succeeded",
        "message": "The pod has completed successfully.",
    }
]
_FAILED = [
    {"type": "Completed", "status": "True", "reason": "Failed", "message": "The pod failed."}
]


@dataclass
class _Restarts:
    count: int = 0
    last: float | None = None
    """When the most recently restarted container last terminated."""

    def add(self, status: Object) -> None:
        self.count += integer(status.get("restartCount"))
        finished = timestamp(section(status, "lastState", "terminated").get("finishedAt"))
        if finished is not None and (self.last is None or finished > self.last):
            self.last = finished

    def cell(self, now: float) -> str:
        if self.count and self.last is not None:
            return f"{self.count} ({human_duration(now - self.last)} ago)"
        return str(self.count)


def _condition_true(pod: Object, kind: str) -> bool:
    return any(
        c.get("type") == kind and c.get("status") == "True"
        for c in items(pod, "status", "conditions")
    )


def _has(state: Object, key: str) -> bool:
    """The container state is set (a non-nil pointer in Go)."""
    return isinstance(state.get(key), dict)


def _is_sidecar(container: Object | None) -> bool:
    return container is not None and container.get("restartPolicy") == "Always"


def _terminated_reason(terminated: Object, prefix: str) -> str:
    if terminated.get("reason"):
        return prefix + str(terminated["reason"])
    if integer(terminated.get("signal")):
        return f"{prefix}Signal:{integer(terminated.get('signal'))}"
    return f"{prefix}ExitCode:{integer(terminated.get('exitCode'))}"


@dataclass
class _Summary:
    reason: str
    ready: int
    total: int
    restarts: _Restarts


def summarize(pod: Object) -> _Summary:
    """READY, STATUS and RESTARTS of a pod."""
    spec, status = section(pod, "spec"), section(pod, "status")
    phase = str(status.get("phase", ""))
    reason = str(status.get("reason") or phase)
    for condition in items(status, "conditions"):
        if condition.get("type") == "PodScheduled" and condition.get("reason") == (
            "SchedulingGated"
        ):
            reason = "SchedulingGated"

    init_specs = {str(c.get("name", "")): c for c in items(spec, "initContainers")}
    total = len(items(spec, "containers")) + sum(map(_is_sidecar, init_specs.values()))
    ready = 0
    every_restart, sidecar_restarts = _Restarts(), _Restarts()

    initializing = False
    init_statuses = items(status, "initContainerStatuses")
    for index, container in enumerate(init_statuses):
        every_restart.add(container)
        sidecar = _is_sidecar(init_specs.get(str(container.get("name", ""))))
        if sidecar:
            sidecar_restarts.add(container)
        state = section(container, "state")
        terminated, waiting = section(state, "terminated"), section(state, "waiting")
        if _has(state, "terminated") and integer(terminated.get("exitCode")) == 0:
            continue
        if sidecar and container.get("started") is True:
            ready += bool(container.get("ready"))
            continue
        initializing = True
        if _has(state, "terminated"):
            reason = _terminated_reason(terminated, "Init:")
        elif waiting.get("reason") and waiting.get("reason") != "PodInitializing":
            reason = f"Init:{waiting['reason']}"
        else:
            reason = f"Init:{index}/{len(items(spec, 'initContainers'))}"
        break

    restarts = every_restart
    if not initializing or _condition_true(pod, "Initialized"):
        restarts = sidecar_restarts
        running = False
        for container in reversed(items(status, "containerStatuses")):
            restarts.add(container)
            state = section(container, "state")
            waiting, terminated = section(state, "waiting"), section(state, "terminated")
            if waiting.get("reason"):
                reason = str(waiting["reason"])
            elif _has(state, "terminated"):
                reason = _terminated_reason(terminated, "")
            elif container.get("ready") and _has(state, "running"):
                running = True
                ready += 1
        if reason == "Completed" and running:
            reason = "Running" if _condition_true(pod, "Ready") else "NotReady"

    if meta(pod).get("deletionTimestamp"):
        if status.get("reason") == "NodeLost":
            reason = "Unknown"
        elif phase not in ("Succeeded", "Failed"):
            reason = "Terminating"
    return _Summary(reason, ready, total, restarts)


def _readiness_gates(pod: Object) -> str:
    gates = items(pod, "spec", "readinessGates")
    if not gates:
        return "<none>"
    first_by_type: dict[str, Object] = {}
    for condition in items(pod, "status", "conditions"):
        first_by_type.setdefault(str(condition.get("type")), condition)
    true = sum(
        first_by_type.get(str(g.get("conditionType")), {}).get("status") == "True" for g in gates
    )
    return f"{true}/{len(gates)}"


def _row(pod: Object, now: float) -> Row:
    summary = summarize(pod)
    status = section(pod, "status")
    ips = items(status, "podIPs")
    conditions = {"Succeeded": _SUCCEEDED, "Failed": _FAILED}.get(str(status.get("phase")), [])
    return Row(
        [
            name_of(pod),
            f"{summary.ready}/{summary.total}",
            summary.reason,
            summary.restarts.cell(now),
            age_of(pod, now),
            str(ips[0].get("ip") or "<none>") if ips else "<none>",
            str(section(pod, "spec").get("nodeName") or "<none>"),
            str(status.get("nominatedNodeName") or "<none>"),
            _readiness_gates(pod),
        ],
        [dict(c) for c in conditions],
    )


PODS = Printer(
    (
        name_column(),
        Column(
            "Ready", "string", "The aggregate readiness state of this pod for accepting traffic."
        ),
        Column("Status", "string", "The aggregate status of the containers in this pod."),
        Column(
            "Restarts",
            "string",
            "The number of times the containers in this pod have been restarted and when the "
            "last container in this pod has restarted.",
        ),
        age_column(),
        Column("IP", "string", doc("V1PodStatus", "podIP"), 1),
        Column("Node", "string", doc("V1PodSpec", "nodeName"), 1),
        Column("Nominated Node", "string", doc("V1PodStatus", "nominatedNodeName"), 1),
        Column("Readiness Gates", "string", doc("V1PodSpec", "readinessGates"), 1),
    ),
    _row,
)
