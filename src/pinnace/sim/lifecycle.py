"""What a simulation records of each pod, and how it reads that from Pod objects and Events.

A pod's story is read off the changes its informer sees, at the simulated time each arrives:
created (first seen), unschedulable (PodScheduled False with reason Unschedulable: no node
fits it; SchedulerError, an error rather than a fit, is not that), scheduled (bound:
spec.nodeName set, which the binding writes with PodScheduled True), running (first seen
Running), finished (Succeeded or Failed), deleted.
What disrupted a pod is read as v1.32 records it: the DisruptionTarget condition's reason
(PreemptionByScheduler, DeletionByTaintManager, EvictionByEvictionAPI, DeletionByPodGC,
TerminationByKubelet), and status.reason Evicted for the kubelet's node-pressure eviction.
OOM kills are container terminations with reason OOMKilled, each counted once (by container
ID). The scheduler's FailedScheduling messages are split into the reasons of kube-scheduler's
FitError ("0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated taint
{x: y}." has "Insufficient cpu" and "node(s) had untolerated taint {x: y}").
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pinnace.api.objects import Object
from pinnace.client.correlator import COMBINED_PREFIX
from pinnace.kubelet.eviction import REASON as KUBELET_EVICTED
from pinnace.kubelet.runtime import REASON_OOM_KILLED
from pinnace.resources.lists import scheduler_value
from pinnace.resources.names import PODS
from pinnace.resources.pod import pod_requests, spec_resources_key
from pinnace.scheduler.adapter import POD_SCHEDULED, UNSCHEDULABLE
from pinnace.sim.ledger import tracked

SUCCEEDED = "Succeeded"
FAILED = "Failed"
RUNNING = "Running"
PENDING = "Pending"
FINISHED = (SUCCEEDED, FAILED)

DISRUPTION_TARGET = "DisruptionTarget"
POD_TEMPLATE_HASH = "pod-template-hash"
_FIT_ERROR = re.compile(r"0/\d+ nodes are available: (.*?)\.(?: |$)")
_COUNTED = re.compile(r"(\d+) (.+?)(?=, \d+ |$)")


@dataclass(slots=True)
class PodRecord:
    """One pod's lifecycle; times in seconds of simulated time since the observer started."""

    namespace: str
    name: str
    uid: str
    owner_kind: str
    owner_name: str
    workload: str
    """The workload the pod belongs to: "Deployment ns/name" for a ReplicaSet of a Deployment,
    "<kind> ns/name" of its controller otherwise, "Pod ns/<generateName or name>" for a bare
    pod."""
    shape: int
    """Its requests, as an index into the observer's shapes."""
    created: float
    node: str = ""
    scheduled: float | None = None
    running: float | None = None
    finished: float | None = None
    deleted: float | None = None
    phase: str = PENDING
    restarts: int = 0
    oom_kills: int = 0
    evicted: str = ""
    """Why it was disrupted, as above ("" if it was not)."""
    evicted_at: float | None = None
    unschedulable: bool = False
    """The scheduler found no node for it at some point: its PodScheduled condition was False
    with reason Unschedulable (not SchedulerError, an error rather than a fit)."""
    failed_scheduling: int = 0
    """FailedScheduling events about it (counting repeats)."""
    last_failed_scheduling: str = ""
    """The last FailedScheduling message."""
    ooms_seen: tuple[str, ...] = ()
    """The OOM kills counted (few pods have any, so a tuple rather than a set each)."""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def controller_of(pod: Object) -> tuple[str, str]:
    """The kind and name of the pod's controller ("", "" for none)."""
    for ref in pod["metadata"].get("ownerReferences") or ():
        if ref.get("controller"):
            return ref.get("kind", ""), ref.get("name", "")
    return "", ""


def workload_of(pod: Object, kind: str, name: str) -> str:
    """The pod's workload (see PodRecord.workload); a ReplicaSet named as the Deployment
    controller names them (<deployment>-<pod-template-hash>) is taken to be a Deployment's."""
    meta = pod["metadata"]
    namespace = meta.get("namespace", "")
    if kind == "ReplicaSet":
        template_hash = (meta.get("labels") or {}).get(POD_TEMPLATE_HASH, "")
        if template_hash and name.endswith("-" + template_hash):
            return f"Deployment {namespace}/{name[: -len(template_hash) - 1]}"
    if kind:
        return f"{kind} {namespace}/{name}"
    return f"Pod {namespace}/{meta.get('generateName') or meta['name']}"


def _container_statuses(status: Any) -> Iterator[Any]:
    for entries in ("initContainerStatuses", "containerStatuses", "ephemeralContainerStatuses"):
        yield from status.get(entries) or ()


def restarts(pod: Object) -> int:
    """The restarts of all the pod's containers."""
    return sum(c.get("restartCount", 0) for c in _container_statuses(pod.get("status") or {}))


def oom_kills(pod: Object) -> Iterator[str]:
    """A key for each OOM kill the pod's status shows (current or last termination)."""
    for c in _container_statuses(pod.get("status") or {}):
        for state in (c.get("state"), c.get("lastState")):
            terminated = (state or {}).get("terminated")
            if terminated and terminated.get("reason") == REASON_OOM_KILLED:
                run = terminated.get("containerID") or terminated.get("finishedAt", "")
                yield f"{c.get('name', '')}/{run}"


def disruption(pod: Object) -> str:
    """Why the pod was disrupted, as above; "" if it was not."""
    status = pod.get("status") or {}
    if status.get("reason") == KUBELET_EVICTED:
        return KUBELET_EVICTED
    for c in status.get("conditions") or ():
        if c.get("type") == DISRUPTION_TARGET and c.get("status") == "True":
            return str(c.get("reason") or DISRUPTION_TARGET)
    return ""


def unschedulable(pod: Object) -> bool:
    """Its PodScheduled condition says the scheduler found no node for it."""
    return any(
        c.get("type") == POD_SCHEDULED and c.get("reason") == UNSCHEDULABLE
        for c in (pod.get("status") or {}).get("conditions") or ()
    )


def fit_error_reasons(message: str) -> list[str]:
    """The reasons in a FailedScheduling message, as kube-scheduler words them; a message that
    is no FitError (a PreFilter rejection, an error) is one reason, the message itself."""
    if message.startswith(COMBINED_PREFIX):
        message = message[len(COMBINED_PREFIX) :]
    m = _FIT_ERROR.match(message)
    if m is None:
        return [message]
    counted = _COUNTED.findall(m.group(1))
    return [reason for _, reason in counted] if counted else [m.group(1)]


@dataclass(slots=True)
class Shape:
    """A pod shape: requests (scheduler units, one pod among them) and the workloads whose
    pods asked for exactly that, in the order they were first seen."""

    requests: dict[str, int]
    workloads: list[str]

    @property
    def name(self) -> str:
        more = len(self.workloads) - 1
        return self.workloads[0] + (f" (+{more} more)" if more else "")


def requests_of(pod: Object) -> dict[str, int]:
    """The pod's requests as NodeResourcesFit counts them (one pod among them), in the
    scheduler's units, for the resources the ledger tracks; zero requests are left out."""
    key = spec_resources_key(pod)
    known = _REQUESTS.get(key)
    if known is None:
        out = {
            name: scheduler_value(name, q)
            for name, q in pod_requests(pod).items()
            if tracked(name) and name != PODS
        }
        known = {**{n: v for n, v in sorted(out.items()) if v > 0}, PODS: 1}
        if len(_REQUESTS) >= _REQUESTS_LIMIT:
            _REQUESTS.clear()
        _REQUESTS[key] = known
    return dict(known)


# Pods of one template share their requests: each distinct resources section is parsed once.
_REQUESTS: dict[bytes, dict[str, int]] = {}
_REQUESTS_LIMIT = 4096
