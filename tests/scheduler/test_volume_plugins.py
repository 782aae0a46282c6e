"""VolumeZone, VolumeRestrictions, NodeVolumeLimits and VolumeBinding with vectors from
kube-scheduler v1.32's tests beside each plugin (volume_zone_test.go,
volume_restrictions_test.go, csi_test.go, volume_binding_test.go)."""

from __future__ import annotations

from typing import Any

import pytest
from tests.scheduler.test_node_plugins import run_filter, table_of

from pinnace.clock import VirtualClock
from pinnace.scheduler import CycleState, PodInfo, Scheduler
from pinnace.scheduler.adapter import connect_offline
from pinnace.scheduler.plugins import (
    NodeVolumeLimits,
    VolumeBinding,
    VolumeRestrictions,
    VolumeZone,
    default_profile,
)
from pinnace.scheduler.plugins.volume_listers import VolumeListers

BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
CONFLICT = "node(s) had no available volume zone"


def node(name: str = "host1", **labels: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": labels},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
    }


def pod(*claims: str, name: str = "pod_1", **spec: Any) -> PodInfo:
    volumes = [{"name": c, "persistentVolumeClaim": {"claimName": c}} for c in claims]
    volumes += spec.pop("volumes", [])
    body = {"containers": [{"name": "c", "image": "pause"}], "volumes": volumes, **spec}
    return PodInfo.from_pod({"metadata": {"name": name, "namespace": "default"}, "spec": body})


def pv(name: str, labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels or {}}, "spec": spec}


def pvc(name: str, volume: str = "", **spec: Any) -> dict[str, Any]:
    notes = {"pv.kubernetes.io/bind-completed": "yes"} if volume else {}
    if volume:
        spec["volumeName"] = volume
    return {"metadata": {"name": name, "namespace": "default", "annotations": notes}, "spec": spec}


def with_listers(plugin: Any, **objects: Any) -> Any:
    plugin.volume_listers = VolumeListers.of(**objects)
    return plugin


# volumezone/volume_zone_test.go: TestSingleZone, TestMultiZone, TestWithBinding
ZONE_VOLUMES = [
    pv("Vol_1", {BETA_ZONE: "us-west1-a"}),
    pv("Vol_2", {BETA_REGION: "us-west1", "uselessLabel": "none"}),
    pv("Vol_3", {BETA_ZONE: "us-west1-c__us-west1-a"}),
    pv("Vol_Stable_1", {ZONE: "us-west1-a"}),
    pv("Vol_Stable_2", {REGION: "us-west1", "uselessLabel": "none"}),
    pv("Vol_Stable_3", {ZONE: "us-west1-a", REGION: "us-west1-a"}),
]
ZONE_CLAIMS = [pvc(f"PVC_{v['metadata']['name'][4:]}", v["metadata"]["name"]) for v in ZONE_VOLUMES]


@pytest.mark.parametrize(
    ("claim", "labels", "verdict"),
    [
        ("PVC_1", {}, ""),
        ("PVC_1", {BETA_ZONE: "us-west1-a", "uselessLabel": "none"}, ""),
        ("PVC_2", {BETA_REGION: "us-west1"}, ""),
        ("PVC_2", {BETA_REGION: "no_us-west1"}, CONFLICT),
        ("PVC_1", {BETA_ZONE: "no_us-west1-a"}, CONFLICT),
        ("PVC_Stable_1", {ZONE: "us-west1-a"}, ""),
        ("PVC_Stable_2", {REGION: "no_us-west1"}, CONFLICT),
        ("PVC_Stable_3", {ZONE: "us-west1-a"}, CONFLICT),  # the node lacks the region
        ("PVC_Stable_1", {BETA_ZONE: "us-west1-a"}, CONFLICT),  # GA on the volume only
        ("PVC_1", {ZONE: "us-west1-a"}, ""),  # beta on the volume matches GA on the node
        ("PVC_1", {ZONE: "us-west1-b"}, CONFLICT),
        ("PVC_3", {BETA_ZONE: "us-west1-a"}, ""),  # one of several zones
    ],
)
def test_volume_zone(claim: str, labels: dict[str, str], verdict: str) -> None:
    plugin = with_listers(VolumeZone(), claims=ZONE_CLAIMS, volumes=ZONE_VOLUMES)
    assert run_filter(plugin, pod(claim), table_of(node(**labels))) == [verdict]


def test_volume_zone_prefilter_on_unbound_claims() -> None:
    classes = [
        {"metadata": {"name": "Class_Immediate"}},
        {"metadata": {"name": "Class_Wait"}, "volumeBindingMode": "WaitForFirstConsumer"},
    ]
    claims = [
        pvc("PVC_EmptySC"),
        pvc("PVC_NoSC", storageClassName="Class_0"),
        pvc("PVC_ImmediateSC", storageClassName="Class_Immediate"),
        pvc("PVC_WaitSC", storageClassName="Class_Wait"),
    ]
    plugin = with_listers(VolumeZone(), claims=claims, classes=classes)

    def pre_filter(claim: str) -> tuple[int, str]:
        status = plugin.pre_filter(CycleState(), pod(claim), table_of(node()))
        return status.code, status.message

    assert pre_filter("PVC_EmptySC") == (
        3,
        "PersistentVolumeClaim had no pv name and storageClass name",
    )
    assert pre_filter("PVC_NoSC") == (3, 'storageclasses.storage.k8s.io "Class_0" not found')
    assert pre_filter("PVC_ImmediateSC") == (
        3,
        'VolumeBindingMode not set for StorageClass "Class_Immediate"',
    )
    assert pre_filter("PVC_WaitSC")[0] == 5  # Skip
    assert pre_filter("missing") == (3, 'persistentvolumeclaim "missing" not found')


# volumerestrictions/volume_restrictions_test.go: TestGCEDiskConflicts, TestAWSDiskConflicts,
# TestRBDDiskConflicts, TestISCSIDiskConflicts, TestAccessModeConflicts
DISK = "node(s) had no available disk"


def on_node(table: Any, name: str, *claims: str, **spec: Any) -> None:
    placed = pod(*claims, name=name, **spec)
    table.add_pod(placed, "host1")


@pytest.mark.parametrize(
    ("existing", "incoming", "verdict"),
    [
        ({"gcePersistentDisk": {"pdName": "foo"}}, {"gcePersistentDisk": {"pdName": "bar"}}, ""),
        ({"gcePersistentDisk": {"pdName": "foo"}}, {"gcePersistentDisk": {"pdName": "foo"}}, DISK),
        (
            {"gcePersistentDisk": {"pdName": "foo", "readOnly": True}},
            {"gcePersistentDisk": {"pdName": "foo", "readOnly": True}},
            "",
        ),
        (
            {"awsElasticBlockStore": {"volumeID": "foo"}},
            {"awsElasticBlockStore": {"volumeID": "foo"}},
            DISK,
        ),
        (
            {"awsElasticBlockStore": {"volumeID": "foo"}},
            {"awsElasticBlockStore": {"volumeID": "bar"}},
            "",
        ),
        (
            {"rbd": {"monitors": ["a", "b"], "pool": "foo", "image": "bar"}},
            {"rbd": {"monitors": ["c", "a"], "pool": "foo", "image": "bar"}},
            DISK,
        ),
        (
            {"rbd": {"monitors": ["a", "b"], "pool": "foo", "image": "bar"}},
            {"rbd": {"monitors": ["c", "d"], "pool": "foo", "image": "bar"}},
            "",
        ),
        (
            {
                "iscsi": {
                    "targetPortal": "127.0.0.1:3260",
                    "iqn": "iqn.2016-12.server:storage.target01",
                }
            },
            {
                "iscsi": {
                    "targetPortal": "127.0.0.1:3260",
                    "iqn": "iqn.2016-12.server:storage.target01",
                }
            },
            DISK,
        ),
        (
            {
                "iscsi": {
                    "targetPortal": "127.0.0.1:3260",
                    "iqn": "iqn.2016-12.server:storage.target01",
                }
            },
            {
                "iscsi": {
                    "targetPortal": "127.0.0.1:3260",
                    "iqn": "iqn.2017-12.server:storage.target01",
                }
            },
            "",
        ),
    ],
)
def test_no_disk_conflict(existing: dict[str, Any], incoming: dict[str, Any], verdict: str) -> None:
    table = table_of(node())
    on_node(table, "existing", volumes=[{"name": "v", **existing}])
    plugin = with_listers(VolumeRestrictions())
    assert run_filter(plugin, pod(volumes=[{"name": "v", **incoming}]), table) == [verdict]


def test_read_write_once_pod_claim_used_by_another_pod() -> None:
    claims = [
        pvc("claim-with-rwop", accessModes=["ReadWriteOncePod"]),
        pvc("claim-with-rwx", accessModes=["ReadWriteMany"]),
    ]
    plugin = with_listers(VolumeRestrictions(), claims=claims)
    table = table_of(node(), node("host2"))
    on_node(table, "user", "claim-with-rwop", "claim-with-rwx")
    assert run_filter(plugin, pod("claim-with-rwx"), table) == ["", ""]
    rwop = (
        "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod "
        "access mode"
    )
    assert run_filter(plugin, pod("claim-with-rwop"), table) == [rwop, rwop]
    status = plugin.pre_filter(CycleState(), pod("nope"), table)
    assert (status.code, status.message) == (3, 'persistentvolumeclaim "nope" not found')


# nodevolumelimits/csi_test.go: TestCSILimits (limits from CSINode's allocatable count)
def csi_pv(name: str, driver: str = "ebs.csi.aws.com") -> dict[str, Any]:
    return pv(name, csi={"driver": driver, "volumeHandle": name})


def test_csi_volume_limits() -> None:
    volumes = [csi_pv(f"vol-{i}") for i in range(4)] + [csi_pv("gce-0", "pd.csi.storage.gke.io")]
    claims = [pvc(f"claim-{i}", f"vol-{i}") for i in range(4)] + [pvc("gce", "gce-0")]
    csi_node = {
        "metadata": {"name": "host1"},
        "spec": {
            "drivers": [{"name": "ebs.csi.aws.com", "nodeID": "host1", "allocatable": {"count": 2}}]
        },
    }
    plugin = with_listers(NodeVolumeLimits(), claims=claims, volumes=volumes, csi_nodes=[csi_node])
    table = table_of(node(), node("host2"))
    on_node(table, "two", "claim-0", "claim-1")
    exceed = "node(s) exceed max volume count"
    assert run_filter(plugin, pod("claim-2"), table) == [exceed, ""]  # host2 has no CSINode
    assert run_filter(plugin, pod("claim-1"), table) == ["", ""]  # already attached there
    assert run_filter(plugin, pod("gce"), table) == ["", ""]  # another driver, no limit
    assert run_filter(plugin, pod(), table) == ["", ""]  # Skip


# volumebinding/volume_binding_test.go: PreFilter and Filter
def test_volume_binding_prefilter_and_filter() -> None:
    classes = [
        {"metadata": {"name": "immediate"}, "provisioner": "p", "volumeBindingMode": "Immediate"},
        {
            "metadata": {"name": "wait"},
            "provisioner": "p",
            "volumeBindingMode": "WaitForFirstConsumer",
        },
        {
            "metadata": {"name": "static"},
            "provisioner": "kubernetes.io/no-provisioner",
            "volumeBindingMode": "WaitForFirstConsumer",
        },
    ]
    affinity = {
        "required": {
            "nodeSelectorTerms": [
                {
                    "matchExpressions": [
                        {"key": "kubernetes.io/hostname", "operator": "In", "values": ["host1"]}
                    ]
                }
            ]
        }
    }
    volumes = [
        pv(
            "pv-a",
            capacity={"storage": "1Gi"},
            accessModes=["ReadWriteOnce"],
            nodeAffinity=affinity,
        ),
        {
            **pv(
                "pv-local",
                capacity={"storage": "5Gi"},
                accessModes=["ReadWriteOnce"],
                storageClassName="static",
                nodeAffinity=affinity,
            ),
            "status": {"phase": "Available"},
        },
    ]
    claims = [
        pvc("bound", "pv-a"),
        pvc("immediate-unbound", storageClassName="immediate"),
        pvc(
            "wait-unbound",
            storageClassName="wait",
            accessModes=["ReadWriteOnce"],
            resources={"requests": {"storage": "1Gi"}},
        ),
        pvc(
            "static-unbound",
            storageClassName="static",
            accessModes=["ReadWriteOnce"],
            resources={"requests": {"storage": "1Gi"}},
        ),
        pvc("bound-to-nothing", "pv-gone"),
    ]
    plugin = with_listers(VolumeBinding(), claims=claims, volumes=volumes, classes=classes)
    table = table_of(
        node("host1", **{"kubernetes.io/hostname": "host1"}),
        node("host2", **{"kubernetes.io/hostname": "host2"}),
    )

    def pre_filter(*names: str) -> tuple[int, str]:
        status = plugin.pre_filter(CycleState(), pod(*names), table)
        return status.code, status.message

    assert pre_filter()[0] == 5  # Skip: no claims
    assert pre_filter("missing") == (3, 'persistentvolumeclaim "missing" not found')
    assert pre_filter("immediate-unbound") == (
        3,
        "pod has unbound immediate PersistentVolumeClaims",
    )
    assert run_filter(plugin, pod("bound"), table) == [
        "",
        "node(s) had volume node affinity conflict",
    ]
    assert run_filter(plugin, pod("wait-unbound"), table) == ["", ""]  # provisioned anywhere
    assert run_filter(plugin, pod("static-unbound"), table) == [
        "",
        "node(s) didn't find available persistent volumes to bind",
    ]
    assert (
        run_filter(plugin, pod("bound-to-nothing"), table)
        == ["node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"] * 2
    )


def test_a_core_apart_from_the_api_without_volume_state_places_pods_with_claims() -> None:
    """A plan or an autoscaler simulation has no claims to read: the volume plugins check
    nothing there, rather than finding every claim missing."""
    with VirtualClock() as clock:
        core = Scheduler([default_profile(lambda binding: None)], clock)
        core.add_node(node())
        connect_offline(core)
        core.add_pod(pod("www-web-0").pod)
        (result,) = core.schedule_pending()
    assert result.node_name == "host1"
