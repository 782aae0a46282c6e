"""The Scenario file of the simulated mode (docs/simulation.md), read into a frozen `Scenario`.

    apiVersion: sim.pinnace.dev/v1alpha1
    kind: Scenario
    metadata: {name: zone-loss}
    spec:
      seed: 1
      until: 2h
      cluster: {nodePools: [...], schedulerConfig: {...}, controllerManager: {...}}
      objects: [...]                                   # applied at time zero
      timeline: [{at: 10m, failZone: {zone: zone-a}}, {after: settled, recoverZone: ...}]
      workloads: [{name: batch, template: {...}, arrivals: {poisson: {ratePerMinute: 6}}}]
      metrics: {interval: 30s}

The node pools are the cluster file's of `pinnace up --config` (pinnace.kubelet.cluster_config),
the scheduler's configuration a KubeSchedulerConfiguration (pinnace.scheduler.config), the
controller timings kube-controller-manager's flags as `pinnace up` takes them, and manifests are
read as kubectl reads them (pinnace.api.manifest). A bad file is refused with a `ScenarioError`
naming the file, the line and the field: `scenario.yaml:12: spec.timeline[2].at: ...`.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from pinnace.api import catalog
from pinnace.api import field as fields
from pinnace.api.features import FeatureGates, feature_gates
from pinnace.api.field import Path
from pinnace.api.manifest import Document, ManifestError, load_document, load_manifests
from pinnace.api.names import is_dns1123_label, is_dns1123_subdomain
from pinnace.api.objects import Object
from pinnace.api.schema import SchemaError, normalize
from pinnace.api.validation import is_int
from pinnace.autoscaler.options import EXPANDERS, AutoscalerOptions
from pinnace.controllers.node_lifecycle import ZONE_LABEL, NodeLifecycleConfig
from pinnace.controllers.workloads import WorkloadOptions
from pinnace.kubelet import behaviour
from pinnace.kubelet.cluster_config import (
    ClusterConfigError,
    NodePool,
    load_pools,
    node_configs,
    parse_pools,
)
from pinnace.kubelet.config import NodeConfig
from pinnace.scheduler.config import (
    ConfigError,
    SchedulerConfiguration,
    build_profiles,
    from_mapping,
)
from pinnace.scheduler.config import load_file as load_scheduler_config
from pinnace.sim.distributions import (
    Constant,
    Distribution,
    Empirical,
    Exponential,
    LogNormal,
    Uniform,
)
from pinnace.sim.traces import Trace, parse_trace
from pinnace.sim.traces.model import AddNode
from pinnace.sim.values import ScenarioError
from pinnace.sim.values import byte_count as _bytes
from pinnace.sim.values import cores as _cores
from pinnace.sim.values import fail as _fail
from pinnace.sim.values import fail_at as _fail_at
from pinnace.sim.values import is_number as _is_number
from pinnace.sim.values import list_of as _list
from pinnace.sim.values import mapping as _object
from pinnace.sim.values import number as _number
from pinnace.sim.values import seconds as _time
from pinnace.sim.values import string as _string
from pinnace.sim.values import unknown as _unknown
from pinnace.sim.wording import counted

API_VERSION = "sim.pinnace.dev/v1alpha1"
KIND = "Scenario"
SETTLED: Literal["settled"] = "settled"
DEFAULT_METRICS_INTERVAL = 60.0
PATCH_TYPES = ("strategic", "merge", "json")
USAGE_ANNOTATIONS = {
    annotation.removeprefix(behaviour.ANNOTATION_PREFIX): annotation
    for annotation in (behaviour.CPU, behaviour.MEMORY, behaviour.EPHEMERAL_STORAGE, behaviour.PIDS)
}
"""What a container's usage may be drawn for ("cpu", "memory", "ephemeral-storage", "pids") ->
the annotation of the simulated container's behaviour that says it (docs/nodes.md)."""
_NUMBER_ROOM = 10
"""Room a workload's name leaves for the number of each object it creates."""


# --- the model ---------------------------------------------------------------------------------

PoolSpec = NodePool
"""A node pool: its name, its node count at the start and the shape of its nodes;
`pool.numbered(number, index)` is its node `<pool>-<number>`, for adding nodes."""


@dataclass(frozen=True)
class ClusterSpec:
    nodes: list[NodeConfig] = field(default_factory=list)
    pools: dict[str, PoolSpec] = field(default_factory=dict)
    scheduler_config: SchedulerConfiguration | None = None
    """None: kube-scheduler's defaults."""
    node_lifecycle: NodeLifecycleConfig = field(default_factory=NodeLifecycleConfig)
    workloads: WorkloadOptions = field(default_factory=WorkloadOptions)
    autoscaler: AutoscalerOptions | None = None
    """The cluster autoscaler's settings, when it runs."""
    features: FeatureGates = field(default_factory=FeatureGates)


@dataclass(frozen=True)
class Ref:
    """An object named by a timeline step."""

    api_version: str
    kind: str
    name: str
    namespace: str | None
    """None for a kind that is not namespaced."""


@dataclass(frozen=True)
class Apply:
    objects: list[Object]


@dataclass(frozen=True)
class Delete:
    objects: list[Ref]


@dataclass(frozen=True)
class Scale:
    ref: Ref
    replicas: int


PatchType = Literal["strategic", "merge", "json"]


@dataclass(frozen=True)
class Patch:
    ref: Ref
    patch: Object | list[Object]
    """A mapping for a strategic or merge patch, a list of operations for a JSON patch."""
    patch_type: PatchType = "strategic"


@dataclass(frozen=True)
class Cordon:
    node: str


@dataclass(frozen=True)
class Uncordon:
    node: str


@dataclass(frozen=True)
class Drain:
    node: str


@dataclass(frozen=True)
class FailNode:
    node: str


@dataclass(frozen=True)
class RecoverNode:
    node: str


@dataclass(frozen=True)
class FailZone:
    zone: str


@dataclass(frozen=True)
class RecoverZone:
    zone: str


@dataclass(frozen=True)
class AddNodes:
    pool: str
    count: int = 1


@dataclass(frozen=True)
class RemoveNodes:
    pool: str
    count: int = 1


Action = (
    Apply
    | Delete
    | Scale
    | Patch
    | Cordon
    | Uncordon
    | Drain
    | FailNode
    | RecoverNode
    | FailZone
    | RecoverZone
    | AddNodes
    | RemoveNodes
)


@dataclass(frozen=True)
class Step:
    """One step of the timeline: its action at simulated time `at` (seconds), or once the
    cluster has settled after the step before (`after == "settled"`)."""

    at: float | None
    after: Literal["settled"] | None
    action: Action


@dataclass(frozen=True)
class Poisson:
    rate_per_second: float


@dataclass(frozen=True)
class FixedRate:
    interval_seconds: float


ArrivalProcess = Poisson | FixedRate


@dataclass(frozen=True)
class Arrivals:
    """A workload generator: objects made from `template` (a Pod or a Job), arriving by
    `process` from `start` until `stop` or `count` of them (seconds of simulated time)."""

    name: str
    template: Object
    process: ArrivalProcess
    start: float = 0.0
    stop: float | None = None
    count: int | None = None
    run_time: Distribution | None = None
    """Seconds each pod's containers run; None: as the template says."""
    usage: dict[str, Distribution] = field(default_factory=dict)
    """Resource (cpu in cores, memory and ephemeral-storage in bytes, pids) -> what each
    container uses."""
    namespace: str = "default"


@dataclass(frozen=True)
class MetricsSpec:
    interval: float = DEFAULT_METRICS_INTERVAL
    """Seconds of simulated time between samples."""


@dataclass(frozen=True)
class Scenario:
    name: str
    seed: int = 0
    until: float | None = None
    """Seconds of simulated time to run; None: until the command line or the caller says."""
    cluster: ClusterSpec = field(default_factory=ClusterSpec)
    objects: list[Object] = field(default_factory=list)
    timeline: list[Step] = field(default_factory=list)
    workloads: list[Arrivals] = field(default_factory=list)
    traces: list[Trace] = field(default_factory=list)
    """The trace workloads (docs/simulation.md, "Trace replay")."""
    metrics: MetricsSpec = field(default_factory=MetricsSpec)
    object_fields: list[str] = field(default_factory=list, compare=False, repr=False)
    """The field each of `objects` comes from: `spec.objects[2]`, or `spec.objects[0].path` for
    the objects of a file it names."""
    document: Document | None = field(default=None, compare=False, repr=False)
    """The YAML document it was read from, which knows each field's line; None for a mapping."""

    def object_field(self, index: int) -> str:
        """The field `objects[index]` comes from (`spec.objects` when nobody said)."""
        return self.object_fields[index] if index < len(self.object_fields) else "spec.objects"

    def line(self, field_path: str) -> int | None:
        """The line of the field (or of the nearest one above it) in the scenario's file."""
        return self.document.line(field_path) if self.document and field_path else None


# --- reading -----------------------------------------------------------------------------------


def load_scenario(path: str | os.PathLike[str]) -> Scenario:
    """The scenario in the file at `path`; the files it names are relative to its directory."""
    source = os.fspath(path)
    try:
        with open(source, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise ScenarioError(f"{source}: {e.strerror}") from None
    return parse_scenario(text, source, os.path.dirname(source))


def parse_scenario(
    data: dict[str, Any] | str, source: str = "<dict>", base: str | os.PathLike[str] = ""
) -> Scenario:
    """The scenario `data` holds (its YAML text, or the mapping read from it); `source` names
    it in errors, and the files it names are relative to `base` (the working directory)."""
    document: Document | None = None
    if isinstance(data, str):
        try:
            document = load_document(data, source)
        except ManifestError as e:
            raise ScenarioError(str(e)) from None
        data = document.value
    try:
        return replace(_Reader(source, os.fspath(base)).scenario(data), document=document)
    except ScenarioError as e:
        where = f"{source}:{document.line(e.field)}" if document else source
        raise ScenarioError(f"{where}: {e}", e.field) from None


_ROOT_FIELDS = ("apiVersion", "kind", "metadata", "spec")
_SPEC_FIELDS = ("seed", "until", "cluster", "objects", "timeline", "workloads", "metrics")
_CLUSTER_FIELDS = (
    "nodePools", "clusterFile", "schedulerConfig", "controllerManager", "clusterAutoscaler",
    "featureGates",
)  # fmt: skip
_WORKLOAD_FIELDS = ("name", "template", "arrivals", "start", "stop", "count", "runTime", "usage")
_RATES = {"ratePerSecond": 1.0, "ratePerMinute": 60.0, "ratePerHour": 3600.0}
_DISTRIBUTIONS = ("constant", "uniform", "exponential", "lognormal", "empirical")


class _Reader:
    """Reads one scenario; it follows the node pools, nodes and zones through the timeline to
    refuse a step that names one that cannot exist."""

    def __init__(self, source: str, base: str) -> None:
        self.source = source
        self.base = base
        self.pools: dict[str, NodePool] = {}
        self.next_number: dict[str, int] = {}
        self.sizes: dict[str, int] = {}
        self.nodes: set[str] = set()
        self.zones: set[str] = set()

    def scenario(self, raw: Any) -> Scenario:
        root = Path()
        raw = _object(raw, root, _ROOT_FIELDS)
        _expect(raw, "apiVersion", API_VERSION, root)
        _expect(raw, "kind", KIND, root)
        metadata = _object(raw.get("metadata"), root.child("metadata"), ("name",))
        name = _name(metadata.get("name"), root.child("metadata", "name"), is_dns1123_subdomain)
        path = root.child("spec")
        spec = _object(raw.get("spec"), path, _SPEC_FIELDS)
        seed = spec.get("seed", 0)
        if not is_int(seed) or seed < 0:
            _fail(fields.invalid(path.child("seed"), seed, "must be a whole number, at least 0"))
        until = spec.get("until")
        cluster = self.cluster(spec.get("cluster"), path.child("cluster"))
        objects = self.located_objects(spec.get("objects"), path.child("objects"))
        # Before the timeline, which may name the nodes a trace brings.
        generators, traces = self.workloads(spec.get("workloads"), path.child("workloads"))
        cluster = replace(cluster, nodes=[*cluster.nodes, *self.trace_nodes(traces, cluster)])
        timeline = self.timeline(spec.get("timeline"), path.child("timeline"))
        metrics = _object(spec.get("metrics"), path.child("metrics"), ("interval",))
        return Scenario(
            name=name,
            seed=seed,
            until=None if until is None else _time(until, path.child("until"), positive=True),
            cluster=cluster,
            objects=[obj for obj, _ in objects],
            object_fields=[at for _, at in objects],
            timeline=timeline,
            workloads=generators,
            traces=traces,
            metrics=MetricsSpec(
                _time(metrics["interval"], path.child("metrics", "interval"), positive=True)
                if "interval" in metrics
                else DEFAULT_METRICS_INTERVAL
            ),
        )

    # --- cluster ---

    def cluster(self, raw: Any, path: Path) -> ClusterSpec:
        if raw is None:
            _fail(fields.required(path, "the cluster's nodePools or clusterFile"))
        raw = _object(raw, path, _CLUSTER_FIELDS)
        pools = self.node_pools(raw, path)
        self.pools = {pool.name: pool for pool in pools}
        self.sizes = {pool.name: pool.count for pool in pools}
        self.next_number = {pool.name: pool.count + 1 for pool in pools}
        nodes = node_configs(pools)
        for node in nodes:
            self.note_node(node.name, node.labels)
        lifecycle, workloads = _controller_manager(
            raw.get("controllerManager"), path.child("controllerManager")
        )
        return ClusterSpec(
            nodes=nodes,
            pools=self.pools,
            scheduler_config=self.scheduler_config(
                raw.get("schedulerConfig"), path.child("schedulerConfig")
            ),
            node_lifecycle=lifecycle,
            workloads=workloads,
            autoscaler=_autoscaler(raw, pools, path.child("clusterAutoscaler")),
            features=_feature_gates(raw.get("featureGates"), path.child("featureGates")),
        )

    def node_pools(self, raw: Mapping[str, Any], path: Path) -> list[NodePool]:
        given = [k for k in ("nodePools", "clusterFile") if k in raw]
        if not given:
            _fail(fields.required(path.child("nodePools"), "nodePools or clusterFile"))
        if len(given) == 2:
            _fail(fields.forbidden(path.child("clusterFile"), "may not be set with nodePools"))
        try:
            if "nodePools" in raw:
                return parse_pools(raw["nodePools"], path.child("nodePools"))
            return load_pools(self.file(raw["clusterFile"], path.child("clusterFile")))
        except ClusterConfigError as e:
            if "nodePools" in raw:
                raise ScenarioError(str(e), e.field) from None
            _fail_at(path.child("clusterFile"), str(e))

    def scheduler_config(self, raw: Any, path: Path) -> SchedulerConfiguration | None:
        if raw is None:
            return None
        if not isinstance(raw, dict):
            file = self.file(raw, path)
            try:
                return load_scheduler_config(file)
            except ConfigError as e:
                _fail_at(path, f"{file}: {e}")
        try:
            config = from_mapping(raw)
            config.source = f"{self.source}: {path}"
            config.plugin_dir = os.path.abspath(self.base)
            build_profiles(config, lambda binding: None)  # plugins import and take their args
        except ConfigError as e:  # its message starts with the field below `path`
            raise ScenarioError(f"{path}.{e}", f"{path}.{str(e).partition(': ')[0]}") from None
        return config

    def file(self, raw: Any, path: Path) -> str:
        if not isinstance(raw, str) or not raw:
            _fail(fields.type_invalid(path, raw, "must be a path (a string)"))
        return os.path.join(self.base, raw)

    def note_node(self, name: str, labels: Mapping[str, Any]) -> None:
        self.nodes.add(name)
        zone = labels.get(ZONE_LABEL)
        if isinstance(zone, str):
            self.zones.add(zone)

    # --- objects ---

    def objects(self, raw: Any, path: Path) -> list[Object]:
        """Manifests inline or `{path: file or directory}`."""
        return [obj for obj, _ in self.located_objects(raw, path)]

    def located_objects(self, raw: Any, path: Path) -> list[tuple[Object, str]]:
        """The manifests, each with the field it comes from."""
        located: list[tuple[Object, str]] = []
        for item, at in _items(raw, path):
            where = at.child("path") if isinstance(item, dict) and "path" in item else at
            located += [(obj, str(where)) for obj in self.manifests(item, at)]
        for obj, _ in located:
            if obj["kind"] == "Node" and obj.get("apiVersion") == "v1":
                metadata = obj.get("metadata") or {}
                self.note_node(str(metadata.get("name")), metadata.get("labels") or {})
        return located

    def manifests(self, raw: Any, path: Path) -> list[Object]:
        if not isinstance(raw, dict):
            _fail(fields.type_invalid(path, raw, "must be of type object"))
        if "path" not in raw:
            return [_manifest(raw, path)]
        _unknown(raw, ("path",), path)
        at = path.child("path")
        try:
            loaded = [m.obj for m in load_manifests(self.file(raw["path"], at))]
        except (ManifestError, OSError) as e:
            _fail_at(at, str(e))
        for obj in loaded:
            if catalog.by_kind(obj["apiVersion"], obj["kind"]) is None:
                _fail_at(at, f"{obj['apiVersion']} {obj['kind']}: {_NOT_SERVED}")
        return loaded

    # --- timeline ---

    def timeline(self, raw: Any, path: Path) -> list[Step]:
        steps: list[Step] = []
        last: tuple[float, Path] | None = None
        for i, item in enumerate(_list(raw, path)):
            step = self.step(item, path.index(i))
            if step.at is not None:
                at = path.index(i).child("at")
                if last is not None and step.at < last[0]:
                    detail = f"is before {last[1]}: steps run in order"
                    _fail(fields.invalid(at, item["at"], detail))
                last = (step.at, at)
            steps.append(step)
        return steps

    def step(self, raw: Any, path: Path) -> Step:
        raw = _object(raw, path, ("at", "after", *_ACTIONS))
        if "at" in raw and "after" in raw:
            _fail(fields.forbidden(path.child("after"), "may not be set with at"))
        if "at" not in raw and "after" not in raw:
            _fail(fields.required(path.child("at"), f'at (a time) or after: "{SETTLED}"'))
        actions = [key for key in raw if key in _ACTIONS]
        if not actions:
            _fail(fields.required(path, "one action: " + ", ".join(_ACTIONS)))
        if len(actions) > 1:
            _fail(fields.forbidden(path.child(actions[1]), f"one action a step, and {actions[0]}"))
        after = raw.get("after")
        if "after" in raw and after != SETTLED:
            _fail(fields.not_supported(path.child("after"), after, [SETTLED]))
        at = _time(raw["at"], path.child("at")) if "at" in raw else None
        action = _ACTIONS[actions[0]](self, raw[actions[0]], path.child(actions[0]))
        return Step(at=at, after=SETTLED if after is not None else None, action=action)

    def apply(self, raw: Any, path: Path) -> Apply:
        return Apply(self.objects(raw, path))

    def delete(self, raw: Any, path: Path) -> Delete:
        return Delete([_ref(_object(r, at, _REF_FIELDS), at) for r, at in _items(raw, path)])

    def scale(self, raw: Any, path: Path) -> Scale:
        raw = _object(raw, path, (*_REF_FIELDS, "replicas"))
        ref = _ref(raw, path)
        kind = catalog.by_kind(ref.api_version, ref.kind)
        if kind is None or "scale" not in kind.subresources:
            scalable = [k.kind for k in catalog.kinds() if "scale" in k.subresources]
            _fail(fields.not_supported(path.child("kind"), ref.kind, scalable))
        replicas = raw.get("replicas")
        if not is_int(replicas) or replicas < 0:
            detail = "must be a whole number, at least 0"
            _fail(fields.invalid(path.child("replicas"), replicas, detail))
        return Scale(ref, replicas)

    def patch(self, raw: Any, path: Path) -> Patch:
        raw = _object(raw, path, (*_REF_FIELDS, "patch", "type"))
        ref = _ref(raw, path)
        patch_type = raw.get("type", "strategic")
        if patch_type not in PATCH_TYPES:
            _fail(fields.not_supported(path.child("type"), patch_type, PATCH_TYPES))
        patch = raw.get("patch")
        wanted = list if patch_type == "json" else dict
        if not isinstance(patch, wanted):
            what = "array (of operations)" if wanted is list else "object"
            _fail(fields.type_invalid(path.child("patch"), patch, f"must be of type {what}"))
        return Patch(ref, patch, patch_type)

    def cordon(self, raw: Any, path: Path) -> Cordon:
        return Cordon(self.node(raw, path))

    def uncordon(self, raw: Any, path: Path) -> Uncordon:
        return Uncordon(self.node(raw, path))

    def drain(self, raw: Any, path: Path) -> Drain:
        return Drain(self.node(raw, path))

    def fail_node(self, raw: Any, path: Path) -> FailNode:
        return FailNode(self.node(raw, path))

    def recover_node(self, raw: Any, path: Path) -> RecoverNode:
        return RecoverNode(self.node(raw, path))

    def fail_zone(self, raw: Any, path: Path) -> FailZone:
        return FailZone(self.zone(raw, path))

    def recover_zone(self, raw: Any, path: Path) -> RecoverZone:
        return RecoverZone(self.zone(raw, path))

    def add_nodes(self, raw: Any, path: Path) -> AddNodes:
        pool, count = self.pool_count(raw, path)
        first = self.next_number[pool]
        for number in range(first, first + count):
            self.note_node(f"{pool}-{number}", self.pools[pool].node.labels)
        self.next_number[pool] += count
        self.sizes[pool] += count
        return AddNodes(pool, count)

    def remove_nodes(self, raw: Any, path: Path) -> RemoveNodes:
        pool, count = self.pool_count(raw, path)
        if count > self.sizes[pool]:
            detail = f"the pool has {counted(self.sizes[pool], 'node')} at this step"
            _fail(fields.invalid(path.child("count"), count, detail))
        self.sizes[pool] -= count
        return RemoveNodes(pool, count)

    def node(self, raw: Any, path: Path) -> str:
        name = _string(_object(raw, path, ("node",)).get("node"), path.child("node"))
        if name not in self.nodes:
            _fail(fields.not_found(path.child("node"), name))
        return name

    def zone(self, raw: Any, path: Path) -> str:
        zone = _string(_object(raw, path, ("zone",)).get("zone"), path.child("zone"))
        if zone not in self.zones:
            _fail(fields.invalid(path.child("zone"), zone, f"no node has {ZONE_LABEL}={zone}"))
        return zone

    def pool_count(self, raw: Any, path: Path) -> tuple[str, int]:
        raw = _object(raw, path, ("pool", "count"))
        pool = _string(raw.get("pool"), path.child("pool"))
        if pool not in self.pools:
            _fail(fields.not_supported(path.child("pool"), pool, sorted(self.pools)))
        count = raw.get("count", 1)
        if not is_int(count) or count < 1:
            _fail(fields.invalid(path.child("count"), count, "must be a whole number, at least 1"))
        return pool, count

    # --- workloads ---

    def workloads(self, raw: Any, path: Path) -> tuple[list[Arrivals], list[Trace]]:
        """The workload generators and the trace workloads."""
        generators: list[Arrivals] = []
        traces: list[Trace] = []
        seen: set[str] = set()
        for i, item in enumerate(_list(raw, path)):
            at = path.index(i)
            if isinstance(item, dict) and "trace" in item:
                traces.append(self.trace(item, at))
                name = traces[-1].name
            else:
                generators.append(_arrivals(item, at))
                name = generators[-1].name
            if name in seen:
                _fail(fields.duplicate(at.child("name"), name))
            seen.add(name)
        return generators, traces

    def trace(self, raw: dict[str, Any], path: Path) -> Trace:
        raw = _object(raw, path, ("name", "trace"))
        name = _name(raw.get("name"), path.child("name"), _with_number_room)
        return parse_trace(raw["trace"], path.child("trace"), name, self.base)

    def trace_nodes(self, traces: list[Trace], cluster: ClusterSpec) -> list[NodeConfig]:
        """The machines of the traces present at time zero, numbered after the pools' nodes;
        a name the cluster has already is refused."""
        nodes: list[NodeConfig] = []
        for trace in traces:
            joining = [e.config for e in trace.node_events if isinstance(e, AddNode)]
            taken = set(self.nodes)  # a trace's machine may leave and join again
            for node in [*trace.initial_nodes, *joining]:
                if node.name in taken:
                    detail = f"node {node.name} of trace {trace.name}: the cluster has one so named"
                    raise ScenarioError(f"spec.workloads: {detail}", "spec.workloads")
                self.note_node(node.name, node.labels)
            for node in trace.initial_nodes:
                nodes.append(replace(node, index=len(cluster.nodes) + len(nodes) + 1))
        return nodes


_ACTIONS: dict[str, Callable[[_Reader, Any, Path], Action]] = {
    "apply": _Reader.apply,
    "delete": _Reader.delete,
    "scale": _Reader.scale,
    "patch": _Reader.patch,
    "cordon": _Reader.cordon,
    "uncordon": _Reader.uncordon,
    "drain": _Reader.drain,
    "failNode": _Reader.fail_node,
    "recoverNode": _Reader.recover_node,
    "failZone": _Reader.fail_zone,
    "recoverZone": _Reader.recover_zone,
    "addNodes": _Reader.add_nodes,
    "removeNodes": _Reader.remove_nodes,
}
_REF_FIELDS = ("apiVersion", "kind", "namespace", "name")
_NOT_SERVED = "not a kind Pinnace serves"


def _manifest(raw: Mapping[str, Any], path: Path) -> Object:
    for key in ("apiVersion", "kind"):
        if not isinstance(raw.get(key), str) or not raw[key]:
            _fail(fields.required(path.child(key)))
    if catalog.by_kind(raw["apiVersion"], raw["kind"]) is None:
        detail = f"{raw['apiVersion']}: {_NOT_SERVED}"
        _fail(fields.invalid(path.child("kind"), raw["kind"], detail))
    metadata = raw.get("metadata")
    if not isinstance(metadata, dict):
        _fail(fields.required(path.child("metadata")))
    if not metadata.get("name") and not metadata.get("generateName"):
        _fail(fields.required(path.child("metadata", "name"), "name or generateName"))
    return dict(raw)


def _ref(raw: Mapping[str, Any], path: Path) -> Ref:
    kind_name = _string(raw.get("kind"), path.child("kind"))
    api_version = raw.get("apiVersion")
    if api_version is None:
        kind = catalog.resolve(kind_name)
    else:
        kind = catalog.by_kind(_string(api_version, path.child("apiVersion")), kind_name)
    if kind is None:
        _fail(fields.invalid(path.child("kind"), kind_name, _NOT_SERVED))
    name = _string(raw.get("name"), path.child("name"))
    namespace = raw.get("namespace")
    if not kind.namespaced:
        if namespace is not None:
            _fail(fields.forbidden(path.child("namespace"), f"{kind.kind} is not namespaced"))
        return Ref(kind.api_version, kind.kind, name, None)
    namespace = "default" if namespace is None else _string(namespace, path.child("namespace"))
    return Ref(kind.api_version, kind.kind, name, namespace)


# --- controller manager ------------------------------------------------------------------------


def _positive_time(value: Any, path: Path) -> float:
    return _time(value, path, positive=True)


def _rate(value: Any, path: Path) -> float:
    if not _is_number(value) or not 0 <= value < math.inf:
        _fail(fields.invalid(path, value, "must be a number of nodes per second, at least 0"))
    return float(value)


def _gc_threshold(value: Any, path: Path) -> int:
    if not is_int(value) or value < 0:
        _fail(fields.invalid(path, value, "must be a whole number of pods, at least 0"))
    return int(value)


_LIFECYCLE_FIELDS: dict[str, tuple[str, Callable[[Any, Path], Any]]] = {
    "nodeMonitorPeriod": ("node_monitor_period", _positive_time),
    "nodeMonitorGracePeriod": ("node_monitor_grace_period", _positive_time),
    "nodeStartupGracePeriod": ("node_startup_grace_period", _positive_time),
    "nodeEvictionRate": ("node_eviction_rate", _rate),
}
_WORKLOADS_FIELDS: dict[str, tuple[str, Callable[[Any, Path], Any]]] = {
    "terminatedPodGCThreshold": ("terminated_pod_gc_threshold", _gc_threshold),
    "horizontalPodAutoscalerSyncPeriod": ("horizontal_pod_autoscaler_sync_period", _positive_time),
    "horizontalPodAutoscalerDownscaleStabilization": (
        "horizontal_pod_autoscaler_downscale_stabilization",
        _positive_time,
    ),
}
"""kube-controller-manager's flags that `pinnace up` takes, by their camelCase names ->
(the option's attribute, how the value is read)."""


def _controller_manager(raw: Any, path: Path) -> tuple[NodeLifecycleConfig, WorkloadOptions]:
    raw = _object(raw, path, (*_LIFECYCLE_FIELDS, *_WORKLOADS_FIELDS))

    def read(table: dict[str, tuple[str, Callable[[Any, Path], Any]]]) -> dict[str, Any]:
        return {
            attribute: convert(raw[name], path.child(name))
            for name, (attribute, convert) in table.items()
            if name in raw
        }

    return (
        replace(NodeLifecycleConfig(), **read(_LIFECYCLE_FIELDS)),
        replace(WorkloadOptions(), **read(_WORKLOADS_FIELDS)),
    )


def _expander(value: Any, path: Path) -> str:
    if value not in EXPANDERS:
        _fail(fields.not_supported(path, value, EXPANDERS))
    return str(value)


def _threshold(value: Any, path: Path) -> float:
    if not _is_number(value) or not 0 <= value <= 1:
        _fail(fields.invalid(path, value, "must be a number from 0 to 1"))
    return float(value)


def _flag(value: Any, path: Path) -> bool:
    if not isinstance(value, bool):
        _fail(fields.type_invalid(path, value, "must be of type boolean"))
    return value


def _nodes_total(value: Any, path: Path) -> int:
    if not is_int(value) or value < 0:
        _fail(fields.invalid(path, value, "must be a whole number of nodes, at least 0"))
    return int(value)


_AUTOSCALER_FIELDS: dict[str, tuple[str, Callable[[Any, Path], Any]]] = {
    "scanInterval": ("scan_interval", _positive_time),
    "expander": ("expander", _expander),
    "maxNodesTotal": ("max_nodes_total", _nodes_total),
    "newPodScaleUpDelay": ("new_pod_scale_up_delay", _time),
    "nodeProvisioningDelay": ("provisioning_delay", _time),
    "scaleDownEnabled": ("scale_down_enabled", _flag),
    "scaleDownUtilizationThreshold": ("scale_down_utilization_threshold", _threshold),
    "scaleDownUnneededTime": ("scale_down_unneeded_time", _time),
    "scaleDownDelayAfterAdd": ("scale_down_delay_after_add", _time),
    "scaleDownDelayAfterDelete": ("scale_down_delay_after_delete", _time),
    "scaleDownDelayAfterFailure": ("scale_down_delay_after_failure", _time),
    "unremovableNodeRecheckTimeout": ("unremovable_node_recheck_timeout", _time),
}
"""cluster-autoscaler's flags that `pinnace up` takes, by their camelCase names (and
nodeProvisioningDelay, Pinnace's own) -> (the option's attribute, how the value is read)."""


def _feature_gates(raw: Any, path: Path) -> FeatureGates:
    """`featureGates`: `pinnace up --feature-gates` as a map of gate names to booleans."""
    values = _object(raw, path, tuple(raw) if isinstance(raw, dict) else ())
    for name, value in values.items():
        if not isinstance(value, bool):
            _fail(fields.type_invalid(path.child(name), value, "must be of type boolean"))
    try:
        return feature_gates(values)
    except ValueError as e:
        _fail_at(path, str(e))


def _autoscaler(
    raw: Mapping[str, Any], pools: list[NodePool], path: Path
) -> AutoscalerOptions | None:
    """`clusterAutoscaler:` runs it (`{}` with its defaults) over the pools with a maxSize."""
    if "clusterAutoscaler" not in raw:
        return None
    given = _object(raw["clusterAutoscaler"], path, tuple(_AUTOSCALER_FIELDS))
    settings = {
        attribute: convert(given[name], path.child(name))
        for name, (attribute, convert) in _AUTOSCALER_FIELDS.items()
        if name in given
    }
    return AutoscalerOptions(node_pools=pools, **settings)


# --- workload generators -----------------------------------------------------------------------


def _arrivals(raw: Any, path: Path) -> Arrivals:
    raw = _object(raw, path, _WORKLOAD_FIELDS)
    name = _name(raw.get("name"), path.child("name"), _with_number_room)
    template = _template(raw.get("template"), path.child("template"))
    start = _time(raw.get("start", 0), path.child("start"))
    stop = None if raw.get("stop") is None else _time(raw["stop"], path.child("stop"))
    if stop is not None and stop <= start:
        _fail(fields.invalid(path.child("stop"), raw["stop"], "must be after start"))
    count = raw.get("count")
    if count is not None and (not is_int(count) or count < 1):
        _fail(fields.invalid(path.child("count"), count, "must be a whole number, at least 1"))
    run_time = raw.get("runTime")
    if run_time is not None:
        run_time = _distribution(run_time, path.child("runTime"), _time)
    usage = _object(raw.get("usage"), path.child("usage"), tuple(USAGE_ANNOTATIONS))
    return Arrivals(
        name=name,
        template=template,
        process=_process(raw.get("arrivals"), path.child("arrivals")),
        start=start,
        stop=stop,
        count=count,
        run_time=run_time,
        usage={
            resource: _distribution(value, path.child("usage", resource), _UNITS[resource])
            for resource, value in usage.items()
        },
        namespace=(template.get("metadata") or {}).get("namespace") or "default",
    )


_TEMPLATE_KINDS = {("v1", "Pod"), ("batch/v1", "Job")}


def _template(raw: Any, path: Path) -> Object:
    if raw is None:
        _fail(fields.required(path))
    if not isinstance(raw, dict):
        _fail(fields.type_invalid(path, raw, "must be of type object"))
    if (raw.get("apiVersion"), raw.get("kind")) not in _TEMPLATE_KINDS:
        kind = f"{raw.get('apiVersion')} {raw.get('kind')}"
        _fail(fields.not_supported(path.child("kind"), kind, ["v1 Pod", "batch/v1 Job"]))
    metadata = raw.get("metadata") or {}
    if not isinstance(metadata, dict):
        _fail(fields.type_invalid(path.child("metadata"), metadata, "must be of type object"))
    if "name" in metadata or "generateName" in metadata:
        key = "name" if "name" in metadata else "generateName"
        detail = "each object is named <workload name>-<number>"
        _fail(fields.forbidden(path.child("metadata", key), detail))
    _check_fields(raw, path)
    return dict(raw)


def _check_fields(template: Object, path: Path) -> None:
    """Refuse a template field the kind does not have, or a value of the wrong type, as
    `kubectl apply` (strict field validation) would refuse the object: the API server,
    creating each arrival, would drop the field silently."""
    kind = catalog.by_kind(template["apiVersion"], template["kind"])
    assert kind is not None, "the kind was checked"
    named = {**template, "metadata": {**(template.get("metadata") or {}), "name": "template"}}
    try:
        unknown_fields = normalize(kind, named).unknown_fields
    except SchemaError as e:
        _fail_at(path, str(e))
    if unknown_fields:
        unknown = f"{path}.{unknown_fields[0]}"
        parent, name = _split_field(unknown)
        raise ScenarioError(f'{parent}: unknown field "{name}"', unknown)


def _split_field(field_path: str) -> tuple[str, str]:
    """`a.b[0].c` -> (`a.b[0]`, `c`)."""
    parent, _, name = field_path.rpartition(".")
    return parent, name


def _process(raw: Any, path: Path) -> ArrivalProcess:
    if raw is None:
        _fail(fields.required(path, "poisson or every"))
    raw = _object(raw, path, ("poisson", "every"))
    if len(raw) != 1:
        _fail(fields.invalid(path, raw, "must have exactly one of poisson and every"))
    if "every" in raw:
        return FixedRate(_time(raw["every"], path.child("every"), positive=True))
    at = path.child("poisson")
    rates = _object(raw["poisson"], at, tuple(_RATES))
    if len(rates) != 1:
        _fail(fields.invalid(at, rates, "must have exactly one of " + ", ".join(_RATES)))
    [(unit, rate)] = rates.items()
    if not _is_number(rate) or not 0 < rate < math.inf:
        _fail(fields.invalid(at.child(unit), rate, "must be a number greater than 0"))
    return Poisson(rate / _RATES[unit])


def _distribution(raw: Any, path: Path, unit: Callable[[Any, Path], float]) -> Distribution:
    """A distribution of values in `unit`; a value alone is a constant."""
    if not isinstance(raw, dict):
        return Constant(unit(raw, path))
    if len(raw) != 1 or next(iter(raw)) not in _DISTRIBUTIONS:
        _fail(fields.invalid(path, raw, "must be one of " + ", ".join(_DISTRIBUTIONS)))
    [(name, spec)] = raw.items()
    at = path.child(name)
    try:
        if name == "constant":
            return Constant(unit(spec, at))
        if name == "empirical":
            return Empirical([unit(v, at.index(i)) for i, v in enumerate(_list(spec, at))])
        if name == "uniform":
            spec = _object(spec, at, ("min", "max"))
            return Uniform(_need(spec, "min", at, unit), _need(spec, "max", at, unit))
        if name == "exponential":
            return Exponential(_need(_object(spec, at, ("mean",)), "mean", at, unit))
        return _lognormal(spec, at, unit)
    except ScenarioError:
        raise
    except ValueError as e:  # the distribution's own check of its parameters
        _fail(fields.invalid(at, spec, str(e)))


def _lognormal(raw: Any, path: Path, unit: Callable[[Any, Path], float]) -> LogNormal:
    raw = _object(raw, path, ("median", "mu", "sigma"))
    if ("median" in raw) == ("mu" in raw):
        _fail(fields.invalid(path, raw, "must have exactly one of median and mu"))
    sigma = _need(raw, "sigma", path, _number)
    if "mu" in raw:
        return LogNormal(_number(raw["mu"], path.child("mu")), sigma)
    return LogNormal.from_median(_need(raw, "median", path, unit), sigma)


def _need(
    raw: Mapping[str, Any], key: str, path: Path, read: Callable[[Any, Path], float]
) -> float:
    if key not in raw:
        _fail(fields.required(path.child(key)))
    return read(raw[key], path.child(key))


def _count(value: Any, path: Path) -> float:
    if not _is_number(value) or not 0 <= value < math.inf:
        _fail(fields.invalid(path, value, "must be a number, at least 0"))
    return float(value)


_UNITS: dict[str, Callable[[Any, Path], float]] = {
    "cpu": _cores,
    "memory": _bytes,
    "ephemeral-storage": _bytes,
    "pids": _count,
}


# --- values ------------------------------------------------------------------------------------


def _name(value: Any, path: Path, check: Callable[[str], list[str]]) -> str:
    name = _string(value, path)
    for message in check(name):
        _fail(fields.invalid(path, name, message))
    return name


def _with_number_room(name: str) -> list[str]:
    return is_dns1123_label(name + "-" + "1" * _NUMBER_ROOM)


def _items(value: Any, path: Path) -> list[tuple[Any, Path]]:
    """The items of a list, or a mapping alone, each with its path."""
    if isinstance(value, dict):
        return [(value, path)]
    return [(item, path.index(i)) for i, item in enumerate(_list(value, path))]


def _expect(raw: Mapping[str, Any], key: str, wanted: str, path: Path) -> None:
    if raw.get(key) != wanted:
        _fail(fields.not_supported(path.child(key), raw.get(key, ""), [wanted]))
