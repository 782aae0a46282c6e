"""Columns and cells of every served kind but pods and nodes."""

from __future__ import annotations

from typing import Any

import pytest

from pinnace.api.coordination.lease import LEASE
from pinnace.api.core.configmap import CONFIG_MAP
from pinnace.api.core.event import EVENT
from pinnace.api.core.limitrange import LIMIT_RANGE
from pinnace.api.core.namespace import NAMESPACE
from pinnace.api.core.resourcequota import RESOURCE_QUOTA
from pinnace.api.kind import Kind
from pinnace.api.node.runtimeclass import RUNTIME_CLASS
from pinnace.api.scheduling.priorityclass import PRIORITY_CLASS
from pinnace.api.tables import to_table
from pinnace.clock.rfc3339 import parse_time

NOW = parse_time("2025-01-01T02:00:00Z")
META = {"name": "x", "namespace": "default", "creationTimestamp": "2025-01-01T00:00:00Z"}

# The apps, batch, autoscaling and policy kinds as tables see them (their modules may not
# exist yet; a table needs only the group, resource and kind).
DEPLOYMENT = Kind("apps", "v1", "Deployment", "deployments", True, "V1Deployment")
REPLICA_SET = Kind("apps", "v1", "ReplicaSet", "replicasets", True, "V1ReplicaSet")
DAEMON_SET = Kind("apps", "v1", "DaemonSet", "daemonsets", True, "V1DaemonSet")
JOB = Kind("batch", "v1", "Job", "jobs", True, "V1Job")
HPA = Kind(
    "autoscaling",
    "v2",
    "HorizontalPodAutoscaler",
    "horizontalpodautoscalers",
    True,
    "V2HorizontalPodAutoscaler",
)
PDB = Kind(
    "policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", True, "V1PodDisruptionBudget"
)


def table(kind: Kind, obj: dict[str, Any]) -> dict[str, Any]:
    return to_table(kind, [{"metadata": META, **obj}], now=NOW, list_meta={})


def row(kind: Kind, obj: dict[str, Any]) -> list[Any]:
    return table(kind, obj)["rows"][0]["cells"]


def columns(kind: Kind) -> list[tuple[str, str, int]]:
    return [(c["name"], c["type"], c["priority"]) for c in table(kind, {})["columnDefinitions"]]


TEMPLATE = {
    "metadata": {"labels": {"app": "web"}},
    "spec": {
        "containers": [{"name": "web", "image": "nginx:1"}, {"name": "log", "image": "fluent"}],
        "nodeSelector": {"zone": "a", "disk": "ssd"},
    },
}


def test_namespace() -> None:
    assert columns(NAMESPACE) == [
        ("Name", "string", 0),
        ("Status", "string", 0),
        ("Age", "string", 0),
    ]
    assert row(NAMESPACE, {"status": {"phase": "Terminating"}}) == ["x", "Terminating", "120m"]


def test_configmap_counts_data_and_binary_data() -> None:
    assert columns(CONFIG_MAP) == [
        ("Name", "string", 0),
        ("Data", "string", 0),
        ("Age", "string", 0),
    ]
    cm = {"data": {"a": "1", "b": "2"}, "binaryData": {"c": "AA=="}}
    assert row(CONFIG_MAP, cm) == ["x", 3, "120m"]
    assert row(CONFIG_MAP, {}) == ["x", 0, "120m"]


def test_limitrange_uses_the_default_table() -> None:
    t = table(LIMIT_RANGE, {"spec": {"limits": []}})
    assert [(c["name"], c["type"], c["format"]) for c in t["columnDefinitions"]] == [
        ("Name", "string", "name"),
        ("Created At", "date", ""),
    ]
    assert t["rows"][0]["cells"] == ["x", "2025-01-01T00:00:00Z"]


def test_resource_quota_splits_requests_and_limits() -> None:
    quota = {
        "status": {
            "hard": {
                "requests.cpu": "2",
                "limits.memory": "4Gi",
                "pods": "10",
                "limits.cpu": "4000m",
                "count/deployments.apps": "5",
            },
            "used": {"requests.cpu": "500m", "limits.memory": "1024Mi", "pods": "3"},
        }
    }
    assert row(RESOURCE_QUOTA, quota) == [
        "x",
        "count/deployments.apps: 0/5, pods: 3/10, requests.cpu: 500m/2",
        "limits.cpu: 0/4, limits.memory: 1Gi/4Gi",
        "120m",
    ]
    assert row(RESOURCE_QUOTA, {"spec": {"hard": {"pods": "1"}}}) == ["x", "", "", "120m"]
    assert [name for name, _, _ in columns(RESOURCE_QUOTA)] == ["Name", "Request", "Limit", "Age"]


def test_priority_class() -> None:
    assert columns(PRIORITY_CLASS) == [
        ("Name", "string", 0),
        ("Value", "integer", 0),
        ("Global-Default", "boolean", 0),
        ("Age", "string", 0),
        ("PreemptionPolicy", "string", 0),
    ]
    pc = {"value": 1000, "globalDefault": True, "preemptionPolicy": "Never"}
    assert row(PRIORITY_CLASS, pc) == ["x", 1000, True, "120m", "Never"]
    assert row(PRIORITY_CLASS, {"value": -5}) == ["x", -5, False, "120m", ""]


def test_lease() -> None:
    assert [name for name, _, _ in columns(LEASE)] == ["Name", "Holder", "Age"]
    assert row(LEASE, {"spec": {"holderIdentity": "node-1"}}) == ["x", "node-1", "120m"]
    assert row(LEASE, {"spec": {}}) == ["x", "", "120m"]


def test_runtime_class() -> None:
    assert columns(RUNTIME_CLASS) == [
        ("Name", "string", 0),
        ("Handler", "string", 0),
        ("Age", "string", 0),
    ]
    assert row(RUNTIME_CLASS, {"handler": "kata-fc"}) == ["x", "kata-fc", "120m"]


class TestEvents:
    def test_columns(self) -> None:
        assert columns(EVENT) == [
            ("Last Seen", "string", 0),
            ("Type", "string", 0),
            ("Reason", "string", 0),
            ("Object", "string", 0),
            ("Subobject", "string", 1),
            ("Source", "string", 1),
            ("Message", "string", 0),
            ("First Seen", "string", 1),
            ("Count", "string", 1),
            ("Name", "string", 1),
        ]

    def test_core_event(self) -> None:
        event = {
            "involvedObject": {"kind": "Pod", "name": "web-1", "fieldPath": "spec.containers{a}"},
            "reason": "Pulled",
            "message": "  Successfully pulled image  \n",
            "type": "Normal",
            "source": {"component": "kubelet", "host": "node-1"},
            "firstTimestamp": "2025-01-01T01:00:00Z",
            "lastTimestamp": "2025-01-01T01:55:00Z",
            "count": 4,
        }
        assert row(EVENT, event) == [
            "5m",
            "Normal",
            "Pulled",
            "pod/web-1",
            "spec.containers{a}",
            "kubelet, node-1",
            "Successfully pulled image",
            "60m",
            4,
            "x",
        ]

    def test_events_api_event_with_series(self) -> None:
        event = {
            "involvedObject": {"kind": "Node"},
            "reason": "Rebooted",
            "type": "Warning",
            "eventTime": "2025-01-01T01:30:00.000000Z",
            "reportingComponent": "kubelet",
            "reportingInstance": "node-2",
            "series": {"count": 12, "lastObservedTime": "2025-01-01T01:59:30.000000Z"},
        }
        assert row(EVENT, event) == [
            "30s",
            "Warning",
            "Rebooted",
            "node",
            "",
            "kubelet, node-2",
            "",
            "30m",
            12,
            "x",
        ]

    def test_singleton_without_times(self) -> None:
        event = {"involvedObject": {"kind": "Pod", "name": "p"}, "source": {"component": "sched"}}
        cells = row(EVENT, event)
        assert cells[0] == "<unknown>"
        assert cells[5] == "sched"
        assert cells[7:9] == ["<unknown>", 1]


def test_replica_set() -> None:
    assert columns(REPLICA_SET) == [
        ("Name", "string", 0),
        ("Desired", "integer", 0),
        ("Current", "integer", 0),
        ("Ready", "integer", 0),
        ("Age", "string", 0),
        ("Containers", "string", 1),
        ("Images", "string", 1),
        ("Selector", "string", 1),
    ]
    rs = {
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "web", "tier": "fe"}},
            "template": TEMPLATE,
        },
        "status": {"replicas": 3, "readyReplicas": 2},
    }
    assert row(REPLICA_SET, rs) == [
        "x",
        3,
        3,
        2,
        "120m",
        "web,log",
        "nginx:1,fluent",
        "app=web,tier=fe",
    ]


def test_deployment() -> None:
    assert columns(DEPLOYMENT) == [
        ("Name", "string", 0),
        ("Ready", "string", 0),
        ("Up-to-date", "string", 0),
        ("Available", "string", 0),
        ("Age", "string", 0),
        ("Containers", "string", 1),
        ("Images", "string", 1),
        ("Selector", "string", 1),
    ]
    deploy = {
        "spec": {
            "replicas": 4,
            "selector": {
                "matchLabels": {"app": "web"},
                "matchExpressions": [{"key": "env", "operator": "In", "values": ["prod", "dev"]}],
            },
            "template": TEMPLATE,
        },
        "status": {"readyReplicas": 1, "updatedReplicas": 2, "availableReplicas": 1},
    }
    assert row(DEPLOYMENT, deploy) == [
        "x",
        "1/4",
        2,
        1,
        "120m",
        "web,log",
        "nginx:1,fluent",
        "app=web,env in (dev,prod)",
    ]
    bad = {"spec": {"selector": {"matchExpressions": [{"key": "a", "operator": "Near"}]}}}
    assert row(DEPLOYMENT, bad)[1:] == ["0/1", 0, 0, "120m", "", "", "<invalid>"]


def test_daemon_set() -> None:
    assert [name for name, _, _ in columns(DAEMON_SET)] == [
        "Name",
        "Desired",
        "Current",
        "Ready",
        "Up-to-date",
        "Available",
        "Node Selector",
        "Age",
        "Containers",
        "Images",
        "Selector",
    ]
    ds = {
        "spec": {"selector": {"matchLabels": {"app": "agent"}}, "template": TEMPLATE},
        "status": {
            "desiredNumberScheduled": 5,
            "currentNumberScheduled": 4,
            "numberReady": 3,
            "updatedNumberScheduled": 2,
            "numberAvailable": 1,
        },
    }
    assert row(DAEMON_SET, ds) == [
        "x",
        5,
        4,
        3,
        2,
        1,
        "disk=ssd,zone=a",
        "120m",
        "web,log",
        "nginx:1,fluent",
        "app=agent",
    ]
    assert row(DAEMON_SET, {"spec": {"selector": {}}})[6:] == [
        "<none>",
        "120m",
        "",
        "",
        "<none>",
    ]


class TestJobs:
    def test_columns(self) -> None:
        assert [name for name, _, _ in columns(JOB)] == [
            "Name",
            "Status",
            "Completions",
            "Duration",
            "Age",
            "Containers",
            "Images",
            "Selector",
        ]

    @pytest.mark.parametrize(
        ("conditions", "deleting", "status"),
        [
            ([], False, "Running"),
            ([{"type": "Complete", "status": "True"}], False, "Complete"),
            ([{"type": "Failed", "status": "True"}], True, "Failed"),
            ([{"type": "Suspended", "status": "True"}], True, "Terminating"),
            ([{"type": "Suspended", "status": "True"}], False, "Suspended"),
            ([{"type": "FailureTarget", "status": "True"}], False, "FailureTarget"),
            ([{"type": "Complete", "status": "False"}], False, "Running"),
        ],
    )
    def test_status(self, conditions: list[Any], deleting: bool, status: str) -> None:
        meta = {**META, "deletionTimestamp": "2025-01-01T01:00:00Z"} if deleting else META
        job = {"metadata": meta, "status": {"conditions": conditions}}
        assert to_table(JOB, [job], now=NOW, list_meta={})["rows"][0]["cells"][1] == status

    @pytest.mark.parametrize(
        ("spec", "succeeded", "shown"),
        [
            ({"completions": 5, "parallelism": 2}, 3, "3/5"),
            ({"parallelism": 1}, 0, "0/1"),
            ({}, 1, "1/1"),
            ({"parallelism": 4}, 2, "2/1 of 4"),
        ],
    )
    def test_completions(self, spec: dict[str, Any], succeeded: int, shown: str) -> None:
        assert row(JOB, {"spec": spec, "status": {"succeeded": succeeded}})[2] == shown

    def test_duration(self) -> None:
        running = {"status": {"startTime": "2025-01-01T01:00:00Z"}}
        done = {
            "status": {
                "startTime": "2025-01-01T01:00:00Z",
                "completionTime": "2025-01-01T01:03:10Z",
            }
        }
        assert row(JOB, {})[3] == ""
        assert row(JOB, running)[3] == "60m"
        assert row(JOB, done)[3] == "3m10s"

    def test_wide(self) -> None:
        job = {
            "spec": {
                "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "u"}},
                "template": TEMPLATE,
            }
        }
        assert row(JOB, job)[5:] == [
            "web,log",
            "nginx:1,fluent",
            "batch.kubernetes.io/controller-uid=u",
        ]


class TestHorizontalPodAutoscalers:
    def test_columns(self) -> None:
        assert columns(HPA) == [
            ("Name", "string", 0),
            ("Reference", "string", 0),
            ("Targets", "string", 0),
            ("MinPods", "string", 0),
            ("MaxPods", "string", 0),
            ("Replicas", "string", 0),
            ("Age", "string", 0),
        ]

    def test_row(self) -> None:
        hpa = {
            "spec": {
                "scaleTargetRef": {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"},
                "minReplicas": 2,
                "maxReplicas": 10,
                "metrics": [
                    {
                        "type": "Resource",
                        "resource": {
                            "name": "cpu",
                            "target": {"type": "Utilization", "averageUtilization": 80},
                        },
                    },
                ],
            },
            "status": {
                "currentReplicas": 3,
                "currentMetrics": [
                    {
                        "type": "Resource",
                        "resource": {
                            "name": "cpu",
                            "current": {"averageUtilization": 45, "averageValue": "450m"},
                        },
                    },
                ],
            },
        }
        assert row(HPA, hpa) == ["x", "Deployment/web", "cpu: 45%/80%", "2", 10, 3, "120m"]

    def test_targets_of_every_metric_type(self) -> None:
        metrics = [
            {
                "type": "Resource",
                "resource": {
                    "name": "memory",
                    "target": {"type": "AverageValue", "averageValue": "200Mi"},
                },
            },
            {
                "type": "Pods",
                "pods": {
                    "metric": {"name": "rps"},
                    "target": {"type": "AverageValue", "averageValue": "1k"},
                },
            },
            {
                "type": "Object",
                "object": {"metric": {"name": "hits"}, "target": {"type": "Value", "value": "100"}},
            },
            {
                "type": "External",
                "external": {
                    "metric": {"name": "queue"},
                    "target": {"type": "AverageValue", "averageValue": "30"},
                },
            },
            {
                "type": "ContainerResource",
                "containerResource": {
                    "name": "cpu",
                    "container": "app",
                    "target": {"type": "Utilization"},
                },
            },
        ]
        current = [
            {
                "type": "Resource",
                "resource": {"name": "memory", "current": {"averageValue": "125829120"}},
            },
            {
                "type": "Pods",
                "pods": {"metric": {"name": "rps"}, "current": {"averageValue": "500"}},
            },
        ]
        hpa = {
            "spec": {"metrics": metrics, "scaleTargetRef": {}},
            "status": {"currentMetrics": current},
        }
        assert row(HPA, hpa)[2] == "memory: 125829120/200Mi, 500/1k + 3 more..."
        from pinnace.api.tables.autoscaling import format_metrics

        assert format_metrics({"spec": {"metrics": metrics[2:]}}) == (
            "<unknown>/100, <unknown>/30 (avg) + 1 more..."
        )
        assert format_metrics({"spec": {"metrics": metrics[4:]}}) == "cpu: <unknown>/<auto>"
        assert format_metrics({"spec": {"metrics": [{"type": "Weird"}]}}) == "<unknown type>"

    def test_no_metrics_and_no_minimum(self) -> None:
        hpa = {"spec": {"scaleTargetRef": {"kind": "ReplicaSet", "name": "rs"}, "maxReplicas": 3}}
        assert row(HPA, hpa) == ["x", "ReplicaSet/rs", "<none>", "<unset>", 3, 0, "120m"]


def test_pod_disruption_budget() -> None:
    assert columns(PDB) == [
        ("Name", "string", 0),
        ("Min Available", "string", 0),
        ("Max Unavailable", "string", 0),
        ("Allowed Disruptions", "integer", 0),
        ("Age", "string", 0),
    ]
    assert row(PDB, {"spec": {"minAvailable": 2}, "status": {"disruptionsAllowed": 1}}) == [
        "x",
        "2",
        "N/A",
        1,
        "120m",
    ]
    assert row(PDB, {"spec": {"maxUnavailable": "25%"}}) == ["x", "N/A", "25%", 0, "120m"]


def test_stateful_set() -> None:
    from pinnace.api.apps.statefulset import STATEFUL_SET

    assert columns(STATEFUL_SET) == [
        ("Name", "string", 0),
        ("Ready", "string", 0),
        ("Age", "string", 0),
        ("Containers", "string", 1),
        ("Images", "string", 1),
    ]
    sts = {"spec": {"replicas": 3, "template": TEMPLATE}, "status": {"readyReplicas": 2}}
    assert row(STATEFUL_SET, sts) == ["x", "2/3", "120m", "web,log", "nginx:1,fluent"]


def test_cron_job() -> None:
    from pinnace.api.batch.cronjob import CRON_JOB

    assert columns(CRON_JOB) == [
        ("Name", "string", 0),
        ("Schedule", "string", 0),
        ("Timezone", "string", 0),
        ("Suspend", "boolean", 0),
        ("Active", "integer", 0),
        ("Last Schedule", "string", 0),
        ("Age", "string", 0),
        ("Containers", "string", 1),
        ("Images", "string", 1),
        ("Selector", "string", 1),
    ]
    cj = {
        "spec": {"schedule": "*/1 * * * *", "suspend": False, "jobTemplate": {"spec": {}}},
        "status": {"active": [{"name": "x-1"}], "lastScheduleTime": "2025-01-01T01:59:00Z"},
    }
    assert row(CRON_JOB, cj) == [
        "x",
        "*/1 * * * *",
        "<none>",
        "False",
        1,
        "60s",
        "120m",
        "",
        "",
        "<none>",
    ]
    assert row(CRON_JOB, {"spec": {"timeZone": "Etc/UTC"}})[2:6] == [
        "Etc/UTC",
        "<unset>",
        0,
        "<none>",
    ]
