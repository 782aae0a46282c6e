"""The KubeSchedulerConfiguration kube-scheduler v1.32 shows at /configz: the file (or nothing)
defaulted as kubescheduler.config.k8s.io/v1's defaults.go and default_plugins.go default it,
then converted to the internal type (pkg/scheduler/apis/config/types.go) that configz
marshals. That type has no JSON tags, so its fields go out under their Go names, each one
written whether set or not (`"Extenders":null`), and only its apiVersion of TypeMeta.

Defaulting, as v1.32's SetDefaults_KubeSchedulerConfiguration: parallelism 16, leader
election on a Lease named kube-scheduler in kube-system (15s, 10s, 2s), a protobuf client
connection at 50 QPS (burst 100), profiling on, backoff 1s to 10s, one default-scheduler
profile when none is given. Each profile's multiPoint is the default plugins merged with the
file's (mergePluginSet: a disabled one dropped, "*" drops them all, an enabled one of the same
name takes its place, the others follow), its other extension points as written; then each
enabled plugin that takes arguments and has none gets its defaulted arguments, in name order,
after those written (which are defaulted too).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pinnace.clock import format_duration, parse_duration
from pinnace.scheduler.config import (
    API_VERSION,
    MULTI_POINT,
    PluginSet,
    ProfileConfig,
    SchedulerConfiguration,
)
from pinnace.scheduler.plugins import DEFAULT_WEIGHTS, default_plugins

_LEADER_ELECTION = {
    "leaderElect": True,
    "leaseDuration": "15s",
    "renewDeadline": "10s",
    "retryPeriod": "2s",
    "resourceLock": "leases",
    "resourceName": "kube-scheduler",
    "resourceNamespace": "kube-system",
}
_DURATIONS = ("leaseDuration", "renewDeadline", "retryPeriod")
_CLIENT_CONNECTION = {
    "kubeconfig": "",
    "acceptContentTypes": "",
    "contentType": "application/vnd.kubernetes.protobuf",
    "qps": 50,
    "burst": 100,
}
_GO_NAMES = {"qps": "QPS", "urlPrefix": "URLPrefix", "tlsConfig": "TLSConfig"}
_GO_NAMES |= {"httpTimeout": "HTTPTimeout", "caFile": "CAFile", "caData": "CAData"}
"""The Go names of the fields whose JSON names do not just capitalize them."""
_POINTS = (
    *("preEnqueue", "queueSort", "preFilter", "filter", "postFilter", "preScore", "score"),
    *("reserve", "permit", "preBind", "bind", "postBind", MULTI_POINT),
)
"""The internal Plugins struct's extension points, in its order."""
_DEFAULT_RESOURCES = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]


def component_config(
    config: SchedulerConfiguration, leader_election: Mapping[str, Any], kubeconfig: str = ""
) -> dict[str, Any]:
    """`config` as /configz shows it; `leader_election`, its leaderElection with the flags
    given put over it; `kubeconfig`, --kubeconfig (which v1.32 takes only without a file)."""
    written = config.written
    election = dict(leader_election)
    for name in _DURATIONS:
        if name in election:
            election[name] = format_duration(parse_duration(str(election[name])))
    connection = dict(written.get("clientConnection") or {})
    if not written:
        connection["kubeconfig"] = kubeconfig
    profiling = written.get("enableProfiling", True)
    return {
        "apiVersion": API_VERSION,
        "Parallelism": written.get("parallelism", 16),
        "LeaderElection": _go_names(_unless_zero(election, _LEADER_ELECTION)),
        "ClientConnection": _go_names(_unless_zero(connection, _CLIENT_CONNECTION)),
        "EnableProfiling": profiling,
        # On by default only where profiling is.
        "EnableContentionProfiling": written.get("enableContentionProfiling", profiling),
        "PercentageOfNodesToScore": config.percentage_of_nodes_to_score,
        "PodInitialBackoffSeconds": written.get("podInitialBackoffSeconds", 1),
        "PodMaxBackoffSeconds": written.get("podMaxBackoffSeconds", 10),
        "Profiles": [_profile(p) for p in config.profiles],
        "Extenders": _go_names(written.get("extenders")),
        "DelayCacheUntilActive": written.get("delayCacheUntilActive", False),
    }


def _unless_zero(written: Mapping[str, Any], defaults: Mapping[str, Any]) -> dict[str, Any]:
    """Each of `defaults`' fields as written, unless absent or its zero value ("", 0, "0s"),
    which takes the default; a boolean is kept as written (component-base's defaulting of
    leaderElection, and kube-scheduler's of clientConnection)."""
    out = dict(defaults)
    for name, value in written.items():
        if isinstance(value, bool) or value not in (None, "", 0, "0s"):
            out[name] = value
    return out


def _profile(profile: ProfileConfig) -> dict[str, Any]:
    sets = {point: _merged([], profile.plugins.get(point)) for point in _POINTS}
    sets[MULTI_POINT] = _merged(_default_multi_point(), profile.plugins.get(MULTI_POINT))
    enabled = sorted({p["Name"] for s in sets.values() for p in s["Enabled"] or ()})
    configs = [
        {"Name": name, "Args": _args(name, args)} for name, args in profile.plugin_config.items()
    ]
    configs += [
        {"Name": name, "Args": _ARGS[name]({})}
        for name in enabled
        if name in _ARGS and name not in profile.plugin_config
    ]
    return {
        "SchedulerName": profile.scheduler_name,
        "PercentageOfNodesToScore": profile.percentage_of_nodes_to_score,
        "Plugins": {point[0].upper() + point[1:]: sets[point] for point in _POINTS},
        "PluginConfig": configs,
    }


def _default_multi_point() -> list[dict[str, Any]]:
    """default_plugins.go's MultiPoint: the default plugins, with their score weights."""
    return [
        {"Name": p.name, "Weight": DEFAULT_WEIGHTS.get(p.name, 0)}
        for p in default_plugins(lambda binding: None)
    ]


def _merged(defaults: list[dict[str, Any]], written: PluginSet | None) -> dict[str, Any]:
    """mergePluginSet of the defaults and the file's set (nil lists stay null)."""
    written = written or PluginSet()
    custom = [{"Name": ref.name, "Weight": ref.weight} for ref in written.enabled]
    by_name = {plugin["Name"]: i for i, plugin in enumerate(custom)}
    replaced: set[int] = set()
    enabled = []
    if "*" not in written.disabled:
        for plugin in defaults:
            if plugin["Name"] in written.disabled:
                continue
            if plugin["Name"] in by_name:
                replaced.add(by_name[plugin["Name"]])
                plugin = custom[by_name[plugin["Name"]]]
            enabled.append(plugin)
    enabled += [plugin for i, plugin in enumerate(custom) if i not in replaced]
    disabled = [{"Name": name, "Weight": 0} for name in written.disabled]
    return {"Enabled": enabled or None, "Disabled": disabled or None}


def _args(name: str, written: Mapping[str, Any]) -> Any:
    """A plugin's arguments, defaulted if in-tree; another's as written (runtime.Unknown)."""
    if name in _ARGS:
        return _ARGS[name](written)
    return dict(written)


def _resources(written: Any) -> list[dict[str, Any]]:
    """A resource list defaulted: cpu and memory when empty, a weight of 0 made 1."""
    if not written:
        return _go_names(_DEFAULT_RESOURCES)
    return [{"Name": r.get("name", ""), "Weight": r.get("weight") or 1} for r in written]


def _default_preemption(written: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "MinCandidateNodesPercentage": written.get("minCandidateNodesPercentage", 10),
        "MinCandidateNodesAbsolute": written.get("minCandidateNodesAbsolute", 100),
    }


def _inter_pod_affinity(written: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "HardPodAffinityWeight": written.get("hardPodAffinityWeight", 1),
        "IgnorePreferredTermsOfExistingPods": written.get(
            "ignorePreferredTermsOfExistingPods", False
        ),
    }


def _node_affinity(written: Mapping[str, Any]) -> dict[str, Any]:
    # A core/v1 NodeAffinity: its JSON names are its own.
    return {"AddedAffinity": written.get("addedAffinity")}


def _balanced_allocation(written: Mapping[str, Any]) -> dict[str, Any]:
    return {"Resources": _resources(written.get("resources"))}


def _fit(written: Mapping[str, Any]) -> dict[str, Any]:
    strategy = written.get("scoringStrategy") or {"type": "LeastAllocated"}
    ratio = strategy.get("requestedToCapacityRatio")
    return {
        "IgnoredResources": written.get("ignoredResources"),
        "IgnoredResourceGroups": written.get("ignoredResourceGroups"),
        "ScoringStrategy": {
            "Type": strategy.get("type", ""),
            "Resources": _resources(strategy.get("resources")),
            "RequestedToCapacityRatio": _go_names(ratio),
        },
    }


def _topology_spread(written: Mapping[str, Any]) -> dict[str, Any]:
    # core/v1 TopologySpreadConstraints: their JSON names are their own.
    return {
        "DefaultConstraints": written.get("defaultConstraints"),
        "DefaultingType": written.get("defaultingType") or "System",
    }


def _volume_binding(written: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "BindTimeoutSeconds": written.get("bindTimeoutSeconds", 600),
        "Shape": _go_names(written.get("shape")),
    }


_ARGS: dict[str, Callable[[Mapping[str, Any]], dict[str, Any]]] = {
    "DefaultPreemption": _default_preemption,
    "InterPodAffinity": _inter_pod_affinity,
    "NodeAffinity": _node_affinity,
    "NodeResourcesBalancedAllocation": _balanced_allocation,
    "NodeResourcesFit": _fit,
    "PodTopologySpread": _topology_spread,
    "VolumeBinding": _volume_binding,
}
"""The in-tree plugins with arguments (v1's <Name>Args kinds) and their defaulting."""


def _go_names(value: Any) -> Any:
    """`value` with each mapping's keys under their Go field names."""
    if isinstance(value, Mapping):
        return {_GO_NAMES.get(k, k[:1].upper() + k[1:]): _go_names(v) for k, v in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, str):
        return [_go_names(item) for item in value]
    return value
