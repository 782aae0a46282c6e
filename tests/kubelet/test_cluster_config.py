"""The cluster file of `pinnace up --config`: node pools read into node configurations, and
bad files refused with the field named."""

from __future__ import annotations

import pytest

from pinnace.kubelet.cluster_config import ClusterConfigError, node_configs, parse
from pinnace.kubelet.config import NODE_POOL_LABEL

HEAD = "apiVersion: pinnace.dev/v1alpha1\nkind: Cluster\n"

POOLS = (
    HEAD
    + """
nodePools:
- name: general
  count: 2
  capacity: {cpu: "8", memory: 32Gi}
  labels: {tier: general}
- name: gpu
  capacity: {cpu: 16, memory: 64Gi, nvidia.com/gpu: 4}
  taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
  images: [{names: ["nvcr.io/nvidia/cuda:12.4"], sizeBytes: 4000000000}]
  kubelet:
    kubeReserved: {cpu: 500m, memory: 1Gi}
    systemReserved: {cpu: 500m, memory: 500Mi}
    evictionHard: {memory.available: 500Mi, nodefs.available: 5%}
    evictionSoft: {memory.available: 1Gi}
    evictionSoftGracePeriod: {memory.available: 1m30s}
    evictionMaxPodGracePeriod: 60
    evictionMinimumReclaim: {memory.available: 200Mi}
    evictionPressureTransitionPeriod: 2m
    maxPods: 64
    podPidsLimit: 4096
    cpuManagerPolicy: static
    nodeStatusUpdateFrequency: 20s
    nodeLeaseDurationSeconds: 60
"""
)


def test_pools_become_numbered_nodes_with_their_shape() -> None:
    nodes = node_configs(parse(POOLS))
    assert [(n.name, n.index) for n in nodes] == [("general-1", 1), ("general-2", 2), ("gpu-1", 3)]
    general = nodes[0]
    assert general.labels == {NODE_POOL_LABEL: "general", "tier": "general"}
    # what the file leaves out is the default shape
    assert general.capacity == {
        "cpu": "8",
        "memory": "32Gi",
        "pods": "110",
        "ephemeral-storage": "100Gi",
    }
    assert general.cpu_manager_policy == "none"


def test_a_pool_with_a_max_size_is_autoscaled_between_its_sizes() -> None:
    pools = parse(HEAD + "nodePools: [{name: a, minSize: 1, maxSize: 4, cost: 0.5}, {name: b}]")
    assert [(p.min_size, p.max_size, p.cost, p.autoscaled) for p in pools] == [
        (1, 4, 0.5, True),
        (0, None, None, False),
    ]


def test_kubelet_configuration_fields_map_onto_the_node() -> None:
    gpu = node_configs(parse(POOLS))[2]
    assert gpu.capacity["nvidia.com/gpu"] == "4"
    assert gpu.capacity["pods"] == "64"  # maxPods
    assert gpu.taints == ({"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},)
    assert gpu.images == ({"names": ["nvcr.io/nvidia/cuda:12.4"], "sizeBytes": 4000000000},)
    assert gpu.eviction_soft_grace_period == {"memory.available": 90.0}
    assert gpu.eviction_max_pod_grace_period == 60
    assert gpu.eviction_minimum_reclaim == {"memory.available": "200Mi"}
    assert gpu.eviction_pressure_transition_period == 120.0
    assert (gpu.pod_pids_limit, gpu.cpu_manager_policy) == (4096, "static")
    assert gpu.lease_duration_seconds == 60
    # an explicit update frequency is the report frequency too, as the kubelet defaults it
    assert (gpu.node_status_update_frequency, gpu.node_status_report_frequency) == (20.0, 20.0)
    allocatable = {k: str(v) for k, v in gpu.allocatable_list().items()}
    assert allocatable["cpu"] == "15"
    assert allocatable["memory"] == "63512Mi"  # 64Gi - 1Gi - 500Mi - 500Mi


def test_reserved_system_cpus_take_the_place_of_reserved_cpu() -> None:
    text = (
        HEAD
        + "nodePools: [{name: a, kubelet: "
        + '{kubeReserved: {cpu: "2", memory: 1Gi}, reservedSystemCPUs: "0,1,4"}}]'
    )
    node = node_configs(parse(text))[0]
    assert node.reserved_system_cpus == {0, 1, 4}
    assert node.kube_reserved == {"memory": "1Gi"}
    assert node.system_reserved == {"cpu": "3"}


@pytest.mark.parametrize(
    ("pools", "message"),
    [
        (
            "[{name: a}, {name: b, capacity: {cpu: x}}]",
            'nodePools[1].capacity.cpu: Invalid value: "x": quantities must match',
        ),
        (
            "[{name: a, capacity: {nvidia.com/gpu: 1500m}}]",
            "nodePools[0].capacity.nvidia.com/gpu: Invalid value: 1500m: must be an integer",
        ),
        ("[{count: 2}]", "nodePools[0].name: Required value"),
        ("[{name: a}, {name: a}]", 'nodePools[1].name: Duplicate value: "a"'),
        ("[{name: a, count: -1}]", "nodePools[0].count: Invalid value: -1"),
        ("[{name: a, replicas: 3}]", 'nodePools[0]: unknown field "replicas"'),
        ("[{name: a, kubelet: {maxPod: 3}}]", 'nodePools[0].kubelet: unknown field "maxPod"'),
        (
            "[{name: a, taints: [{key: k, effect: Sometimes}]}]",
            'nodePools[0].taints[0].effect: Unsupported value: "Sometimes"',
        ),
        (
            "[{name: a, kubelet: {evictionSoft: {memory.available: 1Gi}}}]",
            "nodePools[0].kubelet.evictionSoft[memory.available]: grace period must be "
            "specified for the soft eviction threshold memory.available",
        ),
        (
            "[{name: a, kubelet: {evictionHard: {memory.free: 1Gi}}}]",
            "nodePools[0].kubelet.evictionHard[memory.free]: unsupported eviction signal",
        ),
        (
            "[{name: a, kubelet: {evictionSoftGracePeriod: {memory.available: 90}}}]",
            "nodePools[0].kubelet.evictionSoftGracePeriod[memory.available]: Invalid value: 90",
        ),
        (
            "[{name: a, kubelet: {evictionPressureTransitionPeriod: 5 minutes}}]",
            "nodePools[0].kubelet.evictionPressureTransitionPeriod: time: unknown unit",
        ),
        (
            "[{name: a, kubelet: {cpuManagerPolicy: dynamic}}]",
            'nodePools[0].kubelet.cpuManagerPolicy: Unsupported value: "dynamic"',
        ),
        (
            "[{name: a, kubelet: {cpuManagerPolicy: static}}]",
            "nodePools[0].kubelet.cpuManagerPolicy: [cpumanager] unable to determine reserved "
            "CPU resources for static policy",
        ),
        (
            "[{name: a, kubelet: {kubeReserved: {gpu: 1}}}]",
            'nodePools[0].kubelet.kubeReserved.gpu: Unsupported value: "gpu"',
        ),
        (
            "[{name: a, capacity: {pods: 10}, kubelet: {maxPods: 20}}]",
            "nodePools[0].capacity.pods: Invalid value: 10: differs from kubelet.maxPods",
        ),
        (
            "[{name: a, labels: {tier: [x]}}]",
            "nodePools[0].labels[tier]: Invalid value",
        ),
        ("[{name: Big_Pool}]", 'nodePools[0].name: Invalid value: "Big_Pool"'),
        ("[{name: a, maxSize: 0}]", "nodePools[0].maxSize: Invalid value: 0: must be a whole"),
        ("[{name: a, minSize: -1}]", "nodePools[0].minSize: Invalid value: -1: must be a whole"),
        (
            "[{name: a, minSize: 3, maxSize: 2}]",
            "nodePools[0].maxSize: Invalid value: 2: must be at least minSize",
        ),
        ("[{name: a, cost: cheap}]", 'nodePools[0].cost: Invalid value: "cheap": must be a number'),
    ],
)
def test_a_bad_pool_is_refused_naming_the_field(pools: str, message: str) -> None:
    with pytest.raises(ClusterConfigError) as refused:
        parse(HEAD + f"nodePools: {pools}\n")
    assert str(refused.value).startswith(message)


@pytest.mark.parametrize(
    ("pools", "message"),
    [
        (
            "- name: a\n- name: b\n  capacity:\n    cpu: x\n",
            'cluster.yaml:7: nodePools[1].capacity.cpu: Invalid value: "x"',
        ),
        ("- name: a\n  replicas: 3\n", 'cluster.yaml:5: nodePools[0]: unknown field "replicas"'),
        ("- name: a\n- count: 2\n", "cluster.yaml:5: nodePools[1].name: Required value"),
        (
            "- name: a\n  kubelet:\n    evictionPressureTransitionPeriod: 5 minutes\n",
            "cluster.yaml:6: nodePools[0].kubelet.evictionPressureTransitionPeriod: time:",
        ),
        (
            "- name: a\n  kubelet:\n    evictionSoft: {memory.available: 1Gi}\n",
            "cluster.yaml:6: nodePools[0].kubelet.evictionSoft[memory.available]: grace period",
        ),
    ],
)
def test_a_bad_file_is_refused_naming_the_line_too(pools: str, message: str) -> None:
    with pytest.raises(ClusterConfigError) as refused:
        parse(HEAD + "nodePools:\n" + pools, "cluster.yaml")
    assert str(refused.value).startswith(message)


def test_a_pool_can_be_made_bigger_with_the_next_numbers() -> None:
    pool = parse(POOLS)[0]
    added = pool.numbered(3, index=7)
    assert (added.name, added.index, added.labels) == ("general-3", 7, pool.node.labels)


def test_the_kind_and_version_are_checked() -> None:
    with pytest.raises(ClusterConfigError, match=r'^kind: Unsupported value: "Config"'):
        parse("apiVersion: pinnace.dev/v1alpha1\nkind: Config\n")
    with pytest.raises(ClusterConfigError, match=r"^apiVersion: Unsupported value"):
        parse("kind: Cluster\n")
    with pytest.raises(ClusterConfigError, match=r"^<cluster file>: document 0 .*invalid YAML"):
        parse("nodePools: [\n")


def test_image_pulls_and_the_registry_are_configured() -> None:
    text = (
        HEAD
        + """
registry:
  missing: ["nginx:1.26"]
  sizes: {nginx: 200Mi, "busybox:1.36": 5M}
nodePools:
- name: a
  imagePullBandwidth: 50M
  kubelet: {serializeImagePulls: false, maxParallelImagePulls: 3}
"""
    )
    (a,) = node_configs(parse(text))
    assert a.image_pull_bandwidth == 50_000_000
    assert (a.serialize_image_pulls, a.max_parallel_image_pulls) == (False, 3)
    assert a.missing_images == ("nginx:1.26",)
    assert a.image_sizes == {
        "docker.io/library/nginx": 200 * 2**20,
        "docker.io/library/busybox:1.36": 5_000_000,
    }


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            "nodePools: [{name: a, kubelet: {maxParallelImagePulls: 2}}]",
            "nodePools[0].kubelet.maxParallelImagePulls: 2 must be 1 or unset when",
        ),
        (
            "nodePools: [{name: a, imagePullBandwidth: fast}]",
            'nodePools[0].imagePullBandwidth: Invalid value: "fast"',
        ),
        ("registry: {missing: nginx}", 'registry.missing: Invalid value: "nginx"'),
        ("registry: {mirror: x}", 'registry: unknown field "mirror"'),
    ],
)
def test_bad_image_settings_are_refused_naming_the_field(body: str, message: str) -> None:
    with pytest.raises(ClusterConfigError) as refused:
        parse(HEAD + body + "\n")
    assert str(refused.value).startswith(message)


def test_unknown_commands_take_the_pools_outcome_or_the_clusters() -> None:
    text = (
        HEAD
        + """
unknownCommands: {runSeconds: 30}
nodePools:
- name: a
- name: b
  unknownCommands: {runSeconds: 2.5, exitCode: 1}
"""
    )
    a, b = node_configs(parse(text))
    assert (a.unknown_command_seconds, a.unknown_command_exit_code) == (30.0, None)
    assert (b.unknown_command_seconds, b.unknown_command_exit_code) == (2.5, 1)
    with pytest.raises(ClusterConfigError, match=r"^unknownCommands.exitCode: Invalid value"):
        parse(HEAD + "unknownCommands: {exitCode: 300}\n")


def test_container_log_rotation_is_configured() -> None:
    text = (
        HEAD
        + "nodePools: [{name: a, kubelet: {containerLogMaxSize: 1Mi, containerLogMaxFiles: 2}}]\n"
    )
    (a,) = node_configs(parse(text))
    assert (a.container_log_max_size, a.container_log_max_files) == (2**20, 2)
    assert (node_configs(parse(HEAD + "nodePools: [{name: b}]\n"))[0].container_log_max_size) == (
        10 * 2**20
    )
    with pytest.raises(ClusterConfigError, match=r"containerLogMaxFiles: Invalid value: 1"):
        parse(HEAD + "nodePools: [{name: a, kubelet: {containerLogMaxFiles: 1}}]\n")


def test_image_garbage_collection_and_a_separate_image_filesystem_are_configured() -> None:
    kubelet = (
        "{imageGCHighThresholdPercent: 90, imageGCLowThresholdPercent: 70,"
        " imageMinimumGCAge: 5m, imageMaximumGCAge: 168h}"
    )
    text = HEAD + f"nodePools: [{{name: a, imagefs: {{capacity: 200Gi}}, kubelet: {kubelet}}}]\n"
    (a,) = node_configs(parse(text))
    assert (a.image_gc_high_threshold_percent, a.image_gc_low_threshold_percent) == (90, 70)
    assert (a.image_minimum_gc_age, a.image_maximum_gc_age) == (300.0, 168 * 3600.0)
    assert a.imagefs_capacity == 200 * 2**30
    with pytest.raises(ClusterConfigError, match=r"must be less than imageGCHighThresholdPercent"):
        parse(HEAD + "nodePools: [{name: a, kubelet: {imageGCLowThresholdPercent: 85}}]\n")
    with pytest.raises(
        ClusterConfigError, match=r"imageGCHighThresholdPercent: Invalid value: 101"
    ):
        parse(HEAD + "nodePools: [{name: a, kubelet: {imageGCHighThresholdPercent: 101}}]\n")
