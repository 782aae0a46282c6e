"""The cluster file of `pinnace up --config`: node pools, each a number of simulated nodes of
one shape, with labels, taints, images and a kubelet configuration in KubeletConfiguration's
field names (docs/nodes.md).

    apiVersion: pinnace.dev/v1alpha1
    kind: Cluster
    nodePools:
    - name: gpu            # nodes gpu-1 … gpu-<count>
      count: 2
      capacity: {cpu: "16", memory: 64Gi, nvidia.com/gpu: "4"}
      labels: {accelerator: a100}
      taints: [{key: nvidia.com/gpu, effect: NoSchedule}]
      kubelet: {kubeReserved: {cpu: 500m, memory: 1Gi}, cpuManagerPolicy: static}
      minSize: 0           # with maxSize, the cluster autoscaler grows and shrinks the pool
      maxSize: 6           # within these bounds (docs/autoscaling.md); without, it does not
      cost: 3.2            # per node and hour, for the simulation's report
      unknownCommands: {runSeconds: 30, exitCode: 0}   # see below
      imagefs: {capacity: 200Gi}   # images and writable layers on a filesystem of their own
    unknownCommands: {runSeconds: 10}   # every pool's unless it says

`unknownCommands` is what a program the node's shell model does not know does in a container
that is to finish (a Job's, an init container): it runs `runSeconds`, then exits `exitCode`
(`pinnace.kubelet.behaviour`).

A bad file is refused with a `ClusterConfigError` whose message names the file, the line and
the field (`cluster.yaml:9: nodePools[1].capacity.cpu: Invalid value: "x": ...`). The pools
alone can be read from a mapping another file holds (`parse_pools`, for the simulation's
Scenario), with the field's path in the error for that file to place.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, NoReturn

from pinnace.api import field
from pinnace.api.core.node import validate_taints
from pinnace.api.field import FieldError, Path
from pinnace.api.labels import validate_label_name
from pinnace.api.manifest import ManifestError, load_document
from pinnace.api.names import is_dns1123_label, is_qualified_name, is_valid_label_value
from pinnace.api.validation import is_int, validate_resource_quantity
from pinnace.clock.duration import parse_duration
from pinnace.kubelet.config import DEFAULT_CAPACITY, NODE_POOL_LABEL, NodeConfig
from pinnace.kubelet.cpu_manager import (
    CPU_MANAGER_POLICIES,
    NO_RESERVED_CPUS,
    parse_cpuset,
    static_policy,
)
from pinnace.kubelet.image_service import size_key
from pinnace.resources.names import CPU, EPHEMERAL_STORAGE, MEMORY, PIDS, PODS
from pinnace.resources.node import parse_eviction_thresholds
from pinnace.resources.quantity import Quantity

API_VERSION = "pinnace.dev/v1alpha1"
KIND = "Cluster"
KUBELET_API_VERSION = "kubelet.config.k8s.io/v1beta1"
KUBELET_KIND = "KubeletConfiguration"

_POOL_FIELDS = (
    "name",
    "count",
    "capacity",
    "labels",
    "taints",
    "images",
    "imagePullBandwidth",
    "kubelet",
    "minSize",
    "maxSize",
    "cost",
    "unknownCommands",
    "imagefs",
)
_RESERVABLE = (CPU, MEMORY, EPHEMERAL_STORAGE, PIDS)
"""What kubeReserved and systemReserved may hold, as the kubelet validates them."""
_NAME_SUFFIX_ROOM = 10
"""Room a pool name leaves for the node number: node names are DNS-1123 labels too."""


class ClusterConfigError(ValueError):
    """A bad cluster file; the message names the field."""

    def __init__(self, message: str, field: str = "") -> None:
        super().__init__(message)
        self.field = field
        """The path of the field it is about ("" if it is about the whole)."""


@dataclass(frozen=True)
class NodePool:
    name: str
    count: int
    node: NodeConfig
    """The shape every node of the pool shares (its name and index are the pool's)."""
    min_size: int = 0
    max_size: int | None = None
    """The most nodes the cluster autoscaler may grow the pool to; None: it leaves the pool
    alone."""
    cost: float | None = None
    """What a node of the pool costs an hour (any currency), if given."""

    @property
    def autoscaled(self) -> bool:
        return self.max_size is not None

    def node_configs(self, first_index: int) -> list[NodeConfig]:
        return [self.numbered(i, first_index + i - 1) for i in range(1, self.count + 1)]

    def numbered(self, number: int, index: int) -> NodeConfig:
        """The pool's node `<name>-<number>`, the `index`-th of the cluster (its addresses)."""
        return replace(self.node, name=f"{self.name}-{number}", index=index)


def load_file(path: str) -> list[NodeConfig]:
    """Every node the cluster file at `path` describes, pool after pool."""
    return node_configs(load_pools(path))


def load_pools(path: str) -> list[NodePool]:
    try:
        with open(path) as f:
            text = f.read()
    except OSError as e:
        raise ClusterConfigError(f"{path}: {e.strerror}") from None
    return parse(text, path)


def node_configs(pools: list[NodePool]) -> list[NodeConfig]:
    configs: list[NodeConfig] = []
    for pool in pools:
        configs += pool.node_configs(len(configs) + 1)
    return configs


def parse(text: str, source: str = "") -> list[NodePool]:
    """The pools of a cluster file; with its `source`, an error names it and the field's line."""
    try:
        document = load_document(text, source or "<cluster file>")
    except ManifestError as e:
        raise ClusterConfigError(str(e)) from None
    try:
        return from_mapping(document.value)
    except ClusterConfigError as e:
        if not source:
            raise
        raise ClusterConfigError(f"{source}:{document.line(e.field)}: {e}", e.field) from None


def from_mapping(raw: Any) -> list[NodePool]:
    """The pools of a cluster file read from YAML."""
    if not isinstance(raw, dict):
        raise ClusterConfigError(f"a {KIND} must be a YAML mapping")
    _expect(raw, "apiVersion", API_VERSION, Path("apiVersion"))
    _expect(raw, "kind", KIND, Path("kind"))
    _unknown(raw, ("apiVersion", "kind", "nodePools", "registry", "unknownCommands"), Path())
    registry = _registry(raw.get("registry"), Path("registry"))
    unknown = _unknown_commands(raw.get("unknownCommands"), Path("unknownCommands"))
    pools = parse_pools(raw.get("nodePools"), Path("nodePools"))
    return [
        replace(
            p,
            node=replace(
                p.node,
                **registry,
                **{k: v for k, v in unknown.items() if getattr(p.node, k) is None},
            ),
        )
        for p in pools
    ]


def _unknown_commands(raw: Any, path: Path) -> dict[str, Any]:
    """unknownCommands: runSeconds and exitCode, as NodeConfig fields."""
    given = _mapping(raw, path)
    _unknown(given, ("runSeconds", "exitCode"), path)
    settings: dict[str, Any] = {}
    seconds = given.get("runSeconds")
    if seconds is not None:
        if isinstance(seconds, bool) or not isinstance(seconds, int | float) or seconds < 0:
            _fail(field.invalid(path.child("runSeconds"), seconds, "must be a number, at least 0"))
        settings["unknown_command_seconds"] = float(seconds)
    code = given.get("exitCode")
    if code is not None:
        if not is_int(code) or not 0 <= code <= 255:
            _fail(field.invalid(path.child("exitCode"), code, "must be 0 to 255"))
        settings["unknown_command_exit_code"] = int(code)
    return settings


def _registry(raw: Any, path: Path) -> dict[str, Any]:
    """The simulated registry every node pulls from: the images it does not have
    (`missing`) and image sizes (`sizes`, by image or repository), as NodeConfig fields."""
    given = _mapping(raw, path)
    _unknown(given, ("missing", "sizes"), path)
    missing = given.get("missing") or []
    if not isinstance(missing, list) or not all(isinstance(m, str) and m for m in missing):
        _fail(field.invalid(path.child("missing"), missing, "must be a list of image names"))
    sizes = {}
    for name, value in _mapping(given.get("sizes"), path.child("sizes")).items():
        sizes[size_key(name)] = _bytes(value, path.child("sizes").key(name))
    return {"missing_images": tuple(missing), "image_sizes": sizes}


def _bytes(value: Any, path: Path) -> int:
    """A number of bytes, as a quantity ("72M", "1Gi") or a whole number."""
    try:
        amount = Quantity(str(value) if is_int(value) else value).value()
    except (TypeError, ValueError):
        _fail(field.invalid(path, value, 'must be a quantity such as "72M" or "1Gi"'))
    if amount <= 0:
        _fail(field.invalid(path, value, "must be greater than 0"))
    return amount


def parse_pools(raw: Any, path: Path) -> list[NodePool]:
    """The node pools of the list `raw`, the field at `path` (None: no pools)."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        _fail(field.type_invalid(path, raw, "must be of type array"))
    pools = [_pool(p, path.index(i)) for i, p in enumerate(raw)]
    seen: set[str] = set()
    for i, pool in enumerate(pools):
        if pool.name in seen:
            _fail(field.duplicate(path.index(i).child("name"), pool.name))
        seen.add(pool.name)
    return pools


def _pool(raw: Any, path: Path) -> NodePool:
    if not isinstance(raw, dict):
        _fail(field.type_invalid(path, raw, "must be of type object"))
    _unknown(raw, _POOL_FIELDS, path)
    name = raw.get("name")
    if not name:
        _fail(field.required(path.child("name")))
    if not isinstance(name, str):
        _fail(field.type_invalid(path.child("name"), name, "must be of type string"))
    for message in is_dns1123_label(name + "-" + "1" * _NAME_SUFFIX_ROOM):
        _fail(field.invalid(path.child("name"), name, message))
    count = raw.get("count", 1)
    if not is_int(count) or count < 0:
        _fail(field.invalid(path.child("count"), count, "must be a whole number, at least 0"))
    labels = _labels(raw.get("labels"), path.child("labels"))
    taints = raw.get("taints") or []
    errors = validate_taints(taints, path.child("taints"))
    if errors:
        _fail(errors[0])
    kubelet = _kubelet(raw.get("kubelet"), path.child("kubelet"))
    capacity = _capacity(raw.get("capacity"), path.child("capacity"), kubelet)
    node = NodeConfig(
        name=name,
        capacity=capacity,
        labels={NODE_POOL_LABEL: name, **labels},
        taints=tuple(dict(t) for t in taints),
        images=_images(raw.get("images"), path.child("images")),
        **_unknown_commands(raw.get("unknownCommands"), path.child("unknownCommands")),
        **{k: v for k, v in kubelet.items() if k != "max_pods"},
    )
    imagefs = _mapping(raw.get("imagefs"), path.child("imagefs"))
    _unknown(imagefs, ("capacity",), path.child("imagefs"))
    if imagefs:
        at = path.child("imagefs", "capacity")
        node = replace(node, imagefs_capacity=_bytes(imagefs.get("capacity"), at))
    bandwidth = raw.get("imagePullBandwidth")
    if bandwidth is not None:
        at = path.child("imagePullBandwidth")
        node = replace(node, image_pull_bandwidth=float(_bytes(bandwidth, at)))
    try:
        node.allocatable_list()
    except ValueError as e:
        _fail_at(path.child("kubelet"), str(e))
    policy = static_policy(node)
    if policy is not None and not policy.reserved:
        _fail_at(path.child("kubelet", "cpuManagerPolicy"), NO_RESERVED_CPUS)
    min_size, max_size = _sizes(raw, path)
    return NodePool(
        name, count, node, min_size, max_size, _cost(raw.get("cost"), path.child("cost"))
    )


def _sizes(raw: Mapping[str, Any], path: Path) -> tuple[int, int | None]:
    """minSize and maxSize, as cluster-autoscaler's --nodes=min:max:name takes them."""
    min_size, max_size = raw.get("minSize", 0), raw.get("maxSize")
    if not is_int(min_size) or min_size < 0:
        _fail(field.invalid(path.child("minSize"), min_size, "must be a whole number, at least 0"))
    if max_size is None:
        return int(min_size), None
    if not is_int(max_size) or max_size < 1:
        _fail(field.invalid(path.child("maxSize"), max_size, "must be a whole number, at least 1"))
    if max_size < min_size:
        _fail(field.invalid(path.child("maxSize"), max_size, "must be at least minSize"))
    return int(min_size), int(max_size)


def _cost(raw: Any, path: Path) -> float | None:
    if raw is None:
        return None
    if isinstance(raw, bool) or not isinstance(raw, int | float) or raw < 0:
        _fail(field.invalid(path, raw, "must be a number, at least 0"))
    return float(raw)


def _capacity(raw: Any, path: Path, kubelet: Mapping[str, Any]) -> dict[str, str]:
    given = _mapping(raw, path)
    capacity = dict(DEFAULT_CAPACITY)
    for resource, value in given.items():
        at = path.child(resource)
        for message in is_qualified_name(resource):
            _fail(field.invalid(at, resource, message))
        text = str(value) if is_int(value) else value
        errors = validate_resource_quantity(resource, text, at)
        if errors:
            _fail(errors[0])
        capacity[resource] = text
    max_pods = kubelet.get("max_pods")
    if max_pods is not None:
        if PODS in given and str(given[PODS]) != str(max_pods):
            _fail(field.invalid(path.child(PODS), given[PODS], "differs from kubelet.maxPods"))
        capacity[PODS] = str(max_pods)
    return capacity


def _labels(raw: Any, path: Path) -> dict[str, str]:
    labels = _mapping(raw, path)
    for key, value in labels.items():
        errors = validate_label_name(key, path.key(key))
        if not isinstance(value, str):
            errors.append(field.type_invalid(path.key(key), value, "must be of type string"))
        else:
            errors += [field.invalid(path.key(key), value, m) for m in is_valid_label_value(value)]
        if errors:
            _fail(errors[0])
    return labels


def _images(raw: Any, path: Path) -> tuple[Mapping[str, Any], ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        _fail(field.type_invalid(path, raw, "must be of type array"))
    images = []
    for i, image in enumerate(raw):
        at = path.index(i)
        if not isinstance(image, dict):
            _fail(field.type_invalid(at, image, "must be of type object"))
        _unknown(image, ("names", "sizeBytes"), at)
        names = image.get("names")
        if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
            _fail(field.invalid(at.child("names"), names, "must be a list of image names"))
        size = image.get("sizeBytes", 0)
        if not is_int(size) or size < 0:
            _fail(field.invalid(at.child("sizeBytes"), size, "must be a whole number of bytes"))
        images.append({"names": list(names), "sizeBytes": size})
    return tuple(images)


# --- kubelet configuration ---------------------------------------------------------------------


def _kubelet(raw: Any, path: Path) -> dict[str, Any]:
    """The KubeletConfiguration fields given, as NodeConfig keyword arguments (and max_pods)."""
    given = _mapping(raw, path)
    if "apiVersion" in given:
        _expect(given, "apiVersion", KUBELET_API_VERSION, path.child("apiVersion"))
    if "kind" in given:
        _expect(given, "kind", KUBELET_KIND, path.child("kind"))
    _unknown(given, ("apiVersion", "kind", *_KUBELET_FIELDS), path)
    settings: dict[str, Any] = {}
    for name, value in given.items():
        if name in _KUBELET_FIELDS:
            attribute, convert = _KUBELET_FIELDS[name]
            settings[attribute] = convert(value, path.child(name))
    parallel = settings.get("max_parallel_image_pulls")
    if parallel is not None and parallel > 1 and settings.get("serialize_image_pulls", True):
        # As the kubelet's configuration validation has it.
        _fail_at(
            path.child("maxParallelImagePulls"),
            f"{parallel} must be 1 or unset when serializeImagePulls is true",
        )
    high = settings.get("image_gc_high_threshold_percent", 85)
    low = settings.get("image_gc_low_threshold_percent", 80)
    if low >= high:
        # As the kubelet's configuration validation has it.
        _fail_at(
            path.child("imageGCLowThresholdPercent"),
            f"imageGCLowThresholdPercent (--image-gc-low-threshold) {low} must be less than "
            f"imageGCHighThresholdPercent (--image-gc-high-threshold) {high}",
        )
    if "nodeStatusUpdateFrequency" in given and "nodeStatusReportFrequency" not in given:
        # As the kubelet defaults it, for compatibility with kubelets from before the split.
        settings["node_status_report_frequency"] = settings["node_status_update_frequency"]
    eviction = {
        "hard": given.get("evictionHard"),
        "soft": given.get("evictionSoft"),
        "soft_grace_periods": given.get("evictionSoftGracePeriod"),
        "minimum_reclaim": given.get("evictionMinimumReclaim"),
    }
    try:
        parse_eviction_thresholds(**eviction)
    except ValueError as e:  # its message starts with the field below `path`
        at = f"{path}.{str(e).partition(': ')[0]}"
        raise ClusterConfigError(f"{path}.{e}", at) from None
    reserved_cpus = settings.get("reserved_system_cpus")
    if reserved_cpus:
        # The kubelet takes reservedSystemCPUs as the whole CPU reservation.
        settings["kube_reserved"] = {
            k: v for k, v in settings.get("kube_reserved", {}).items() if k != CPU
        }
        settings["system_reserved"] = {
            **settings.get("system_reserved", {}),
            CPU: str(len(reserved_cpus)),
        }
    return settings


def _reserved(value: Any, path: Path) -> dict[str, str]:
    reserved = _mapping(value, path)
    for resource, amount in reserved.items():
        at = path.child(resource)
        if resource not in _RESERVABLE:
            _fail(field.not_supported(at, resource, _RESERVABLE))
        text = str(amount) if is_int(amount) else amount
        errors = validate_resource_quantity(resource, text, at)
        if errors:
            _fail(errors[0])
        reserved[resource] = text
    return reserved


def _thresholds(value: Any, path: Path) -> dict[str, str]:
    return _mapping(value, path)  # checked together by parse_eviction_thresholds


def _grace_periods(value: Any, path: Path) -> dict[str, float]:
    return {
        signal: _duration(text, path.key(signal)) for signal, text in _mapping(value, path).items()
    }


def _duration(value: Any, path: Path) -> float:
    if not isinstance(value, str):
        _fail(field.invalid(path, value, 'must be a duration such as "1m30s"'))
    try:
        nanos = parse_duration(value)
    except ValueError as e:
        _fail_at(path, str(e))
    if nanos < 0:
        _fail(field.invalid(path, value, "must not be negative"))
    return nanos / 1e9


def _positive_duration(value: Any, path: Path) -> float:
    seconds = _duration(value, path)
    if seconds <= 0:
        _fail(field.invalid(path, value, "must be greater than 0"))
    return seconds


def _integer(minimum: int) -> Callable[[Any, Path], int]:
    def convert(value: Any, path: Path) -> int:
        if not is_int(value) or value < minimum:
            _fail(field.invalid(path, value, f"must be a whole number, at least {minimum}"))
        return int(value)

    return convert


def _percent(value: Any, path: Path) -> int:
    if not is_int(value) or not 0 <= value <= 100:
        _fail(field.invalid(path, value, "must be between 0 and 100, inclusive"))
    return int(value)


def _boolean(value: Any, path: Path) -> bool:
    if not isinstance(value, bool):
        _fail(field.type_invalid(path, value, "must be of type boolean"))
    return value


def _policy(value: Any, path: Path) -> str:
    if value not in CPU_MANAGER_POLICIES:
        _fail(field.not_supported(path, value, CPU_MANAGER_POLICIES))
    return str(value)


def _cpuset(value: Any, path: Path) -> frozenset[int]:
    try:
        return parse_cpuset(value if isinstance(value, str) else str(value))
    except ValueError as e:
        _fail(field.invalid(path, value, str(e)))


_KUBELET_FIELDS: dict[str, tuple[str, Callable[[Any, Path], Any]]] = {
    "kubeReserved": ("kube_reserved", _reserved),
    "systemReserved": ("system_reserved", _reserved),
    "reservedSystemCPUs": ("reserved_system_cpus", _cpuset),
    "evictionHard": ("eviction_hard", _thresholds),
    "evictionSoft": ("eviction_soft", _thresholds),
    "evictionSoftGracePeriod": ("eviction_soft_grace_period", _grace_periods),
    "evictionMaxPodGracePeriod": ("eviction_max_pod_grace_period", _integer(0)),
    "evictionMinimumReclaim": ("eviction_minimum_reclaim", _thresholds),
    "evictionPressureTransitionPeriod": ("eviction_pressure_transition_period", _duration),
    "maxPods": ("max_pods", _integer(1)),
    "podPidsLimit": ("pod_pids_limit", _integer(-1)),
    "cpuManagerPolicy": ("cpu_manager_policy", _policy),
    "nodeStatusUpdateFrequency": ("node_status_update_frequency", _positive_duration),
    "nodeStatusReportFrequency": ("node_status_report_frequency", _positive_duration),
    "nodeLeaseDurationSeconds": ("lease_duration_seconds", _integer(1)),
    "serializeImagePulls": ("serialize_image_pulls", _boolean),
    "maxParallelImagePulls": ("max_parallel_image_pulls", _integer(1)),
    "containerLogMaxSize": ("container_log_max_size", _bytes),
    "imageGCHighThresholdPercent": ("image_gc_high_threshold_percent", _percent),
    "imageGCLowThresholdPercent": ("image_gc_low_threshold_percent", _percent),
    "imageMinimumGCAge": ("image_minimum_gc_age", _duration),
    "imageMaximumGCAge": ("image_maximum_gc_age", _duration),
    "containerLogMaxFiles": ("container_log_max_files", _integer(2)),
}
"""KubeletConfiguration field -> (NodeConfig attribute, how its value is checked and read)."""


# --- shapes ------------------------------------------------------------------------------------


def _mapping(value: Any, path: Path) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        _fail(field.type_invalid(path, value, "must be of type object"))
    return dict(value)


def _expect(raw: Mapping[str, Any], key: str, wanted: str, path: Path) -> None:
    if raw.get(key) != wanted:
        _fail(field.not_supported(path, raw.get(key, ""), [wanted]))


def _unknown(raw: Mapping[str, Any], known: tuple[str, ...], path: Path) -> None:
    for key in raw:
        if key not in known:
            where = f"{path}: " if str(path) else ""
            raise ClusterConfigError(f'{where}unknown field "{key}"', str(path.child(key)))


def _fail(error: FieldError) -> NoReturn:
    raise ClusterConfigError(str(error), error.field)


def _fail_at(path: Path, message: str) -> NoReturn:
    raise ClusterConfigError(f"{path}: {message}", str(path))
