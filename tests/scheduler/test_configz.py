"""/configz's KubeSchedulerConfiguration (`pinnace.scheduler.configz`): kube-scheduler v1.32's
defaults, in its internal type's Go field names."""

from __future__ import annotations

from pinnace.scheduler.config import SchedulerConfiguration, parse
from pinnace.scheduler.configz import component_config

_EMPTY = {"Enabled": None, "Disabled": None}
_RESOURCES = [{"Name": "cpu", "Weight": 1}, {"Name": "memory", "Weight": 1}]


def test_without_a_file_everything_is_v1_32s_default() -> None:
    shown = component_config(SchedulerConfiguration(), {}, "/etc/kubernetes/scheduler.conf")
    [profile] = shown.pop("Profiles")
    assert shown == {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "Parallelism": 16,
        "LeaderElection": {
            "LeaderElect": True,
            "LeaseDuration": "15s",
            "RenewDeadline": "10s",
            "RetryPeriod": "2s",
            "ResourceLock": "leases",
            "ResourceName": "kube-scheduler",
            "ResourceNamespace": "kube-system",
        },
        "ClientConnection": {
            "Kubeconfig": "/etc/kubernetes/scheduler.conf",
            "AcceptContentTypes": "",
            "ContentType": "application/vnd.kubernetes.protobuf",
            "QPS": 50,
            "Burst": 100,
        },
        "EnableProfiling": True,
        "EnableContentionProfiling": True,
        "PercentageOfNodesToScore": 0,
        "PodInitialBackoffSeconds": 1,
        "PodMaxBackoffSeconds": 10,
        "Extenders": None,
        "DelayCacheUntilActive": False,
    }
    plugins = profile["Plugins"]
    assert list(plugins) == [
        "PreEnqueue",
        "QueueSort",
        "PreFilter",
        "Filter",
        "PostFilter",
        "PreScore",
        "Score",
        "Reserve",
        "Permit",
        "PreBind",
        "Bind",
        "PostBind",
        "MultiPoint",
    ]
    assert all(plugins[point] == _EMPTY for point in list(plugins)[:-1])
    weights = {p["Name"]: p["Weight"] for p in plugins["MultiPoint"]["Enabled"] if p["Weight"]}
    assert weights == {
        "TaintToleration": 3,
        "NodeAffinity": 2,
        "NodeResourcesFit": 1,
        "PodTopologySpread": 2,
        "InterPodAffinity": 2,
        "NodeResourcesBalancedAllocation": 1,
        "ImageLocality": 1,
    }
    assert len(plugins["MultiPoint"]["Enabled"]) == 18
    assert profile["PluginConfig"] == [
        {
            "Name": "DefaultPreemption",
            "Args": {"MinCandidateNodesPercentage": 10, "MinCandidateNodesAbsolute": 100},
        },
        {
            "Name": "InterPodAffinity",
            "Args": {"HardPodAffinityWeight": 1, "IgnorePreferredTermsOfExistingPods": False},
        },
        {"Name": "NodeAffinity", "Args": {"AddedAffinity": None}},
        {"Name": "NodeResourcesBalancedAllocation", "Args": {"Resources": _RESOURCES}},
        {
            "Name": "NodeResourcesFit",
            "Args": {
                "IgnoredResources": None,
                "IgnoredResourceGroups": None,
                "ScoringStrategy": {
                    "Type": "LeastAllocated",
                    "Resources": _RESOURCES,
                    "RequestedToCapacityRatio": None,
                },
            },
        },
        {
            "Name": "PodTopologySpread",
            "Args": {"DefaultConstraints": None, "DefaultingType": "System"},
        },
        {"Name": "VolumeBinding", "Args": {"BindTimeoutSeconds": 600, "Shape": None}},
    ]
    assert profile["SchedulerName"] == "default-scheduler"
    assert profile["PercentageOfNodesToScore"] is None


def test_disabling_every_default_leaves_only_what_is_enabled_and_its_arguments() -> None:
    config = parse(
        """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- plugins:
    multiPoint:
      disabled: [{name: "*"}]
      enabled: [{name: PrioritySort}, {name: NodeResourcesFit}, {name: DefaultBinder}]
    score:
      enabled: [{name: NodeResourcesFit, weight: 4}]
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: RequestedToCapacityRatio
        requestedToCapacityRatio:
          shape: [{utilization: 0, score: 0}, {utilization: 100, score: 10}]
"""
    )
    [profile] = component_config(config, {})["Profiles"]
    assert profile["Plugins"]["MultiPoint"] == {
        "Enabled": [
            {"Name": "PrioritySort", "Weight": 0},
            {"Name": "NodeResourcesFit", "Weight": 0},
            {"Name": "DefaultBinder", "Weight": 0},
        ],
        "Disabled": [{"Name": "*", "Weight": 0}],
    }
    assert profile["Plugins"]["Score"]["Enabled"] == [{"Name": "NodeResourcesFit", "Weight": 4}]
    [fit] = profile["PluginConfig"]
    assert fit["Args"]["ScoringStrategy"] == {
        "Type": "RequestedToCapacityRatio",
        "Resources": _RESOURCES,
        "RequestedToCapacityRatio": {
            "Shape": [{"Utilization": 0, "Score": 0}, {"Utilization": 100, "Score": 10}]
        },
    }


def test_a_zero_value_takes_the_default_and_contention_profiling_follows_profiling() -> None:
    config = parse(
        """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
enableProfiling: false
leaderElection: {leaderElect: false, leaseDuration: 0s, resourceLock: ""}
clientConnection: {qps: 0, burst: 5, contentType: ""}
"""
    )
    shown = component_config(config, config.leader_election)
    assert (shown["EnableProfiling"], shown["EnableContentionProfiling"]) == (False, False)
    election = shown["LeaderElection"]
    assert (election["LeaderElect"], election["LeaseDuration"], election["ResourceLock"]) == (
        False,
        "15s",
        "leases",
    )
    connection = shown["ClientConnection"]
    assert (connection["QPS"], connection["Burst"], connection["ContentType"]) == (
        50,
        5,
        "application/vnd.kubernetes.protobuf",
    )
