"""Pinnace's own trace format, what `pinnace record` writes: newline-delimited JSON, a header
line, then one line per change a watch reported, in the order they came.

    {"apiVersion": "sim.pinnace.dev/v1alpha1", "kind": "Recording", "server": "...",
     "started": "2025-01-01T12:00:00Z"}
    {"t": 0, "type": "ADDED", "object": {"apiVersion": "v1", "kind": "Node", ...}}
    {"t": 12.5, "type": "MODIFIED", "object": {...}}
    {"t": 30.25, "type": "DELETED", "object": {...}}

`t` is seconds since the recording started; what existed then is ADDED at 0. Objects are as
the API server returned them, without managedFields.

Replayed, the recording's objects are made again at their times, as a user or a client made
them: an object a controller made (a ReplicaSet's Deployment, a Job's pods: its controller's
ownerReference names an object of the recording of a kind Pinnace serves) is left to the
simulation's controller; every other one is created (without its status, server-set fields
and owner references; a pod without its node, for the simulation's scheduler to place), its
spec, labels and annotations updated when they changed, and deleted when its deletion began.
A bare pod that ran and finished without saying how long it runs
(`sim.pinnace.dev/run-seconds`) runs as long as the recording saw it run. Nodes become the
cluster's: those there at simulated time zero from the start, later ones joining and leaving
at their times.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from pinnace.api import catalog
from pinnace.api.objects import Object
from pinnace.kubelet import behaviour
from pinnace.kubelet.config import DEFAULT_CAPACITY, NodeConfig
from pinnace.sim.traces.files import TraceFileError, json_lines
from pinnace.sim.traces.model import AddNode, NodeEvent, ObjectChange, RemoveNode, Trace
from pinnace.sim.traces.options import Format

API_VERSION = "sim.pinnace.dev/v1alpha1"
KIND = "Recording"
ADDED, MODIFIED, DELETED = "ADDED", "MODIFIED", "DELETED"
RECORDED = (
    ("", "namespaces"),
    ("scheduling.k8s.io", "priorityclasses"),
    ("", "nodes"),
    ("apps", "deployments"),
    ("apps", "replicasets"),
    ("apps", "statefulsets"),
    ("apps", "daemonsets"),
    ("batch", "jobs"),
    ("", "pods"),
)
"""(group, resource) of what `pinnace record` watches, in the order it lists them: what an
object refers to (its namespace, its priority class, its owner) comes first."""
COLUMNS = ("kind", "namespace", "name")
SUPPORTING = ("Namespace", "PriorityClass")
"""What the workload objects need: always replayed, whatever the filter, sample and limit."""
DROPPED_ANNOTATIONS = (
    "kubectl.kubernetes.io/last-applied-configuration",
    "deployment.kubernetes.io/revision",
)
JOB_LABELS = (
    "controller-uid",
    "batch.kubernetes.io/controller-uid",
    "job-name",
    "batch.kubernetes.io/job-name",
)
"""The labels kube-apiserver gives a Job's pod template; made again for the new Job."""
FINISHED = ("Succeeded", "Failed")


def header(server: str, started: str) -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": KIND, "server": server, "started": started}


@dataclass
class _Life:
    """One object's life in the recording, from its first line to its deletion (a name
    used again after that is another life)."""

    number: int
    api_version: str
    kind: str
    namespace: str
    name: str
    uid: str
    owner: str
    """Its controller's uid ("" if none)."""
    lines: list[tuple[float, str, Object]] = field(default_factory=list)


def _read(trace: Trace, files: Mapping[str, str]) -> Trace:
    lives = list(_lives(trace.path))
    kinds = {life.uid: life.kind for life in lives}
    nodes = [life for life in lives if life.kind == "Node" and life.api_version == "v1"]
    initial, later = _nodes(trace, nodes) if trace.nodes else ((), ())
    changes: list[ObjectChange] = []
    for life in lives:
        if life.kind == "Node" or _made_by_controller(life, kinds):
            continue
        cells = {"kind": life.kind, "namespace": life.namespace, "name": life.name}
        if life.kind in SUPPORTING or trace.keeps(cells):
            changes.extend(_changes(life))
    changes.sort(key=lambda c: c.at)  # stable: a time's changes keep the recording's order
    return replace(trace, initial_nodes=initial, node_events=later, changes=tuple(changes))


def _lives(path: str) -> Iterator[_Life]:
    lines = json_lines(path)
    first = next(lines, None)
    if first is None or first[1].get("kind") != KIND or first[1].get("apiVersion") != API_VERSION:
        raise TraceFileError(f"{path}:1: expected the header of a {API_VERSION} {KIND}")
    current: dict[tuple[str, str, str, str], _Life] = {}
    done: list[_Life] = []
    count = 0
    for number, line in lines:
        at, kind, obj = _line(line, f"{path}:{number}")
        meta = obj["metadata"]
        key = (obj["apiVersion"], obj["kind"], meta.get("namespace") or "", meta["name"])
        life = current.get(key)
        if life is None or (meta.get("uid") and meta.get("uid") != life.uid):
            count += 1
            life = current[key] = _Life(count, *key, meta.get("uid") or "", _controller(meta))
            done.append(life)
        life.lines.append((at, kind, obj))
        if kind == DELETED:
            del current[key]
    return iter(done)


def _line(line: Mapping[str, Any], where: str) -> tuple[float, str, Object]:
    at, kind, obj = line.get("t"), line.get("type"), line.get("object")
    if not isinstance(at, int | float) or isinstance(at, bool) or at < 0:
        raise TraceFileError(f"{where}: t: expected the seconds since the recording started")
    if kind not in (ADDED, MODIFIED, DELETED):
        raise TraceFileError(f"{where}: type: expected {ADDED}, {MODIFIED} or {DELETED}")
    if (
        not isinstance(obj, dict)
        or not isinstance(obj.get("metadata"), dict)
        or not obj["metadata"].get("name")
        or not obj.get("kind")
        or not obj.get("apiVersion")
    ):
        raise TraceFileError(f"{where}: object: expected an object with its kind and name")
    return float(at), kind, obj


def _controller(meta: Mapping[str, Any]) -> str:
    for ref in meta.get("ownerReferences") or ():
        if ref.get("controller"):
            return str(ref.get("uid") or "")
    return ""


def _made_by_controller(life: _Life, kinds: Mapping[str, str]) -> bool:
    """Whether its controller is in the recording and of a kind the simulation runs."""
    owner = kinds.get(life.owner) if life.owner else None
    return owner is not None and any(k.kind == owner for k in catalog.kinds())


# --- nodes ------------------------------------------------------------------------------------


def _nodes(
    trace: Trace, lives: list[_Life]
) -> tuple[tuple[NodeConfig, ...], tuple[NodeEvent, ...]]:
    initial: list[NodeConfig] = []
    later: list[NodeEvent] = []
    for life in lives:
        first, _, node = life.lines[0]
        config = _node_config(node)
        if trace.at(first) <= 0:
            initial.append(config)
        else:
            later.append(AddNode(trace.at(first), config))
        gone = _deleted_at(life)
        if gone is not None and trace.at(gone) > 0:
            later.append(RemoveNode(trace.at(gone), config.name))
        elif gone is not None and config in initial:
            initial.remove(config)
    later.sort(key=lambda e: e.at)
    return tuple(initial), tuple(later)


def _node_config(node: Object) -> NodeConfig:
    meta, spec = node["metadata"], node.get("spec") or {}
    capacity = (node.get("status") or {}).get("capacity") or DEFAULT_CAPACITY
    return NodeConfig(
        name=meta["name"],
        capacity=dict(capacity),
        labels=dict(meta.get("labels") or {}),
        taints=tuple(
            {k: v for k, v in taint.items() if k != "timeAdded"}
            for taint in spec.get("taints") or ()
            if not taint.get("key", "").startswith("node.kubernetes.io/")
        ),
    )


# --- objects ----------------------------------------------------------------------------------


def _changes(life: _Life) -> Iterator[ObjectChange]:
    """Its creation, the changes of what a user writes (spec, labels, annotations; a pod's
    are not replayed: they are the kubelet's and the scheduler's), its deletion."""

    def change(at: float, obj: Object | None) -> ObjectChange:
        return ObjectChange(
            at, life.api_version, life.kind, life.namespace, life.name, life.number, obj
        )

    first_at, _, first = life.lines[0]
    manifest = _manifest(first)
    if life.kind == "Pod" and life.api_version == "v1":
        _finishing(life, manifest)
    yield change(first_at, manifest)
    for at, kind, obj in life.lines[1:]:
        if kind == DELETED or obj["metadata"].get("deletionTimestamp"):
            yield change(at, None)
            return
        if life.kind == "Pod":
            continue
        written = _manifest(obj)
        if _written(written) != _written(manifest):
            manifest = written
            yield change(at, written)


def _deleted_at(life: _Life) -> float | None:
    for at, kind, obj in life.lines:
        if kind == DELETED or obj["metadata"].get("deletionTimestamp"):
            return at
    return None


def _written(obj: Object) -> tuple[Any, Any, Any]:
    meta = obj["metadata"]
    rest = {k: v for k, v in obj.items() if k not in ("metadata", "apiVersion", "kind")}
    return rest, meta.get("labels"), meta.get("annotations")


def _manifest(obj: Object) -> Object:
    """The object as a client would write it: no status, no server-set metadata, no owner
    references (their uids are the recorded cluster's), no node for a pod."""
    meta = obj["metadata"]
    kept: dict[str, Any] = {"name": meta["name"]}
    if meta.get("namespace"):
        kept["namespace"] = meta["namespace"]
    if meta.get("labels"):
        kept["labels"] = dict(meta["labels"])
    annotations = {
        k: v for k, v in (meta.get("annotations") or {}).items() if k not in DROPPED_ANNOTATIONS
    }
    if annotations:
        kept["annotations"] = annotations
    body = {k: copy.deepcopy(v) for k, v in obj.items() if k not in ("metadata", "status")}
    body["metadata"] = kept
    if obj["kind"] == "Pod":
        _new_pod(body.get("spec", {}))
    elif obj["kind"] == "Job":
        _new_job(body)
    elif obj["kind"] == "Namespace":
        body.pop("spec", None)
    return body


def _new_pod(spec: dict[str, Any]) -> None:
    """Without its node, for the simulation's scheduler to place it, and without what priority
    admission derived from its PriorityClass (admission derives it again)."""
    spec.pop("nodeName", None)
    spec.pop("priority", None)
    if spec.get("priorityClassName"):
        spec.pop("preemptionPolicy", None)


def _new_job(job: Object) -> None:
    """Without what kube-apiserver derived from the recorded Job's uid (its selector and its
    template's labels), for the new Job to derive again."""
    spec = job.get("spec") or {}
    if spec.get("manualSelector"):
        return
    spec.pop("selector", None)
    labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels")
    if labels:
        for key in JOB_LABELS:
            labels.pop(key, None)


def _finishing(life: _Life, pod: Object) -> None:
    """A bare pod the recording saw run and finish runs as long again, and ends the same way,
    unless its annotations already say how it behaves."""
    annotations = pod.setdefault("metadata", {}).setdefault("annotations", {})
    if any(k.startswith(behaviour.RUN_SECONDS) for k in annotations):
        return
    running = finished = None
    exit_code = 0
    for at, _, obj in life.lines:
        status = obj.get("status") or {}
        phase = status.get("phase")
        if phase == "Running" and running is None:
            running = at
        if phase in FINISHED:
            finished = at
            exit_code = _exit_code(status)
            break
    if running is None or finished is None:
        if not annotations:
            del pod["metadata"]["annotations"]
        return
    annotations[behaviour.RUN_SECONDS] = behaviour.seconds_value(finished - running)
    if exit_code:
        annotations[behaviour.EXIT_CODE] = str(exit_code)


def _exit_code(status: Mapping[str, Any]) -> int:
    for container in status.get("containerStatuses") or ():
        terminated = (container.get("state") or {}).get("terminated") or {}
        if terminated.get("exitCode"):
            return int(terminated["exitCode"])
    return 1 if status.get("phase") == "Failed" else 0


FORMAT = Format(
    name="pinnace",
    files={},
    columns=COLUMNS,
    options=lambda raw, path: {},
    option_names=(),
    read=_read,
)
