"""The Scenario file of the simulated mode: read into its model, files it names found next to
it, and a bad file refused with the file, the line and the field named."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from pinnace.sim.distributions import Constant, Empirical, Exponential, LogNormal, Uniform
from pinnace.sim.scenario import (
    AddNodes,
    Apply,
    Cordon,
    Delete,
    Drain,
    FailNode,
    FailZone,
    FixedRate,
    Patch,
    Poisson,
    RecoverNode,
    RecoverZone,
    Ref,
    RemoveNodes,
    Scale,
    ScenarioError,
    Step,
    Uncordon,
    load_scenario,
    parse_scenario,
)

HEAD = """\
apiVersion: sim.pinnace.dev/v1alpha1
kind: Scenario
metadata: {name: t}
spec:
  cluster:
    nodePools: [{name: a, count: 2, labels: {topology.kubernetes.io/zone: z1}}]
"""
"""Six lines: what a case adds starts at line 7."""

SCENARIO = """\
apiVersion: sim.pinnace.dev/v1alpha1
kind: Scenario
metadata:
  name: zone-loss
spec:
  seed: 7
  until: 2h
  cluster:
    nodePools:
    - name: general
      count: 2
      capacity: {cpu: "8", memory: 32Gi}
      labels: {topology.kubernetes.io/zone: zone-a}
    - name: gpu
      count: 1
      capacity: {cpu: "16", memory: 64Gi, nvidia.com/gpu: "4"}
      labels: {topology.kubernetes.io/zone: zone-b}
    schedulerConfig:
      apiVersion: kubescheduler.config.k8s.io/v1
      kind: KubeSchedulerConfiguration
      profiles:
      - schedulerName: default-scheduler
        percentageOfNodesToScore: 50
    controllerManager:
      nodeMonitorGracePeriod: 40s
      nodeEvictionRate: 0.5
      terminatedPodGCThreshold: 100
  objects:
  - apiVersion: v1
    kind: Namespace
    metadata: {name: batch}
  timeline:
  - at: 10m
    failZone: {zone: zone-a}
  - after: settled
    recoverZone: {zone: zone-a}
  - at: 20m
    addNodes: {pool: gpu, count: 2}
  - at: 20m
    drain: {node: gpu-3}
  - at: 25m
    failNode: {node: gpu-2}
  - at: 26m
    recoverNode: {node: gpu-2}
  - at: 30m
    removeNodes: {pool: gpu}
  - at: 30m
    cordon: {node: general-1}
  - at: 31m
    uncordon: {node: general-1}
  - at: 40m
    scale: {kind: Deployment, namespace: batch, name: web, replicas: 5}
  - at: 40m
    patch:
      kind: Deployment
      name: web
      type: merge
      patch: {spec: {template: {metadata: {annotations: {sim.pinnace.dev/cpu: "2"}}}}}
  - at: 50m
    delete: [{kind: Namespace, name: batch}, {apiVersion: batch/v1, kind: Job, name: j}]
  - at: 1h
    apply:
      apiVersion: scheduling.k8s.io/v1
      kind: PriorityClass
      metadata: {name: high}
      value: 1000
  workloads:
  - name: batch
    template:
      apiVersion: batch/v1
      kind: Job
      metadata: {namespace: batch}
      spec:
        template:
          spec:
            restartPolicy: Never
            containers: [{name: work, image: busybox}]
    arrivals: {poisson: {ratePerMinute: 6}}
    stop: 1h
    runTime: {lognormal: {median: 5m, sigma: 0.8}}
    usage:
      cpu: {uniform: {min: 100m, max: 2}}
      memory: {empirical: [128Mi, 256Mi, 1Gi]}
  - name: web
    template:
      apiVersion: v1
      kind: Pod
      spec: {containers: [{name: web, image: nginx}]}
    arrivals: {every: 30s}
    start: 5m
    count: 10
    runTime: {exponential: {mean: 2m}}
    usage: {cpu: 0.25, memory: 64Mi, pids: {constant: 20}}
  metrics:
    interval: 30s
"""


def test_a_scenario_reads_into_its_model() -> None:
    scenario = parse_scenario(SCENARIO, "scenario.yaml")
    assert (scenario.name, scenario.seed, scenario.until) == ("zone-loss", 7, 7200.0)
    cluster = scenario.cluster
    assert [n.name for n in cluster.nodes] == ["general-1", "general-2", "gpu-1"]
    assert [n.index for n in cluster.nodes] == [1, 2, 3]
    assert sorted(cluster.pools) == ["general", "gpu"]
    assert cluster.pools["gpu"].node.capacity["nvidia.com/gpu"] == "4"
    assert cluster.scheduler_config is not None
    assert cluster.scheduler_config.profiles[0].percentage_of_nodes_to_score == 50
    lifecycle = cluster.node_lifecycle
    assert (lifecycle.node_monitor_grace_period, lifecycle.node_eviction_rate) == (40.0, 0.5)
    assert lifecycle.node_monitor_period == 5.0  # left out: kube-controller-manager's default
    assert cluster.workloads.terminated_pod_gc_threshold == 100
    assert scenario.objects == [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "batch"}}
    ]
    web = Ref("apps/v1", "Deployment", "web", "batch")
    assert [(s.at, s.after, s.action) for s in scenario.timeline] == [
        (600.0, None, FailZone("zone-a")),
        (None, "settled", RecoverZone("zone-a")),
        (1200.0, None, AddNodes("gpu", 2)),
        (1200.0, None, Drain("gpu-3")),
        (1500.0, None, FailNode("gpu-2")),
        (1560.0, None, RecoverNode("gpu-2")),
        (1800.0, None, RemoveNodes("gpu", 1)),
        (1800.0, None, Cordon("general-1")),
        (1860.0, None, Uncordon("general-1")),
        (2400.0, None, Scale(web, 5)),
        (
            2400.0,
            None,
            Patch(
                Ref("apps/v1", "Deployment", "web", "default"),
                {"spec": {"template": {"metadata": {"annotations": {"sim.pinnace.dev/cpu": "2"}}}}},
                "merge",
            ),
        ),
        (
            3000.0,
            None,
            Delete(
                [
                    Ref("v1", "Namespace", "batch", None),
                    Ref("batch/v1", "Job", "j", "default"),
                ]
            ),
        ),
        (
            3600.0,
            None,
            Apply(
                [
                    {
                        "apiVersion": "scheduling.k8s.io/v1",
                        "kind": "PriorityClass",
                        "metadata": {"name": "high"},
                        "value": 1000,
                    }
                ]
            ),
        ),
    ]
    assert all(isinstance(s, Step) for s in scenario.timeline)
    batch, web_pods = scenario.workloads
    assert (batch.name, batch.namespace, batch.template["kind"]) == ("batch", "batch", "Job")
    assert batch.process == Poisson(0.1)
    assert (batch.start, batch.stop, batch.count) == (0.0, 3600.0, None)
    assert batch.run_time == LogNormal.from_median(300, 0.8)
    assert batch.usage == {
        "cpu": Uniform(0.1, 2.0),
        "memory": Empirical([128 * 2**20, 256 * 2**20, 2**30]),
    }
    assert (web_pods.namespace, web_pods.process) == ("default", FixedRate(30.0))
    assert (web_pods.start, web_pods.stop, web_pods.count) == (300.0, None, 10)
    assert web_pods.run_time == Exponential(120.0)
    assert web_pods.usage == {
        "cpu": Constant(0.25),
        "memory": Constant(64 * 2**20),
        "pids": Constant(20),
    }
    assert scenario.metrics.interval == 30.0


def test_what_is_left_out_takes_its_default() -> None:
    scenario = parse_scenario(HEAD, "scenario.yaml")
    assert (scenario.seed, scenario.until, scenario.metrics.interval) == (0, None, 60.0)
    assert (scenario.objects, scenario.timeline, scenario.workloads) == ([], [], [])
    assert scenario.cluster.scheduler_config is None


def test_the_examples_of_the_documentation_are_scenarios(tmp_path: Path) -> None:
    docs = Path(__file__).parents[2] / "docs" / "simulation.md"
    blocks = re.findall(r"```yaml\n(.*?)```", docs.read_text(), re.DOTALL)
    examples = [block for block in blocks if "kind: Scenario" in block]
    # The trace replay's example names the openb trace: here, its sample.
    (tmp_path / "traces").mkdir()
    (tmp_path / "traces" / "openb").symlink_to(Path(__file__).parent / "traces/alibaba-gpu-2023")
    assert [parse_scenario(text, base=tmp_path).name for text in examples] == [
        "node-failure",
        "node-failure",
        "zone-loss",
        "batch-day",
        "openb",  # trace replay
        "web",  # comparing variants
    ]


def test_a_mapping_reads_as_its_text_does() -> None:
    assert parse_scenario(yaml.safe_load(SCENARIO)) == parse_scenario(SCENARIO)


def test_files_are_found_next_to_the_scenario(tmp_path: Path) -> None:
    (tmp_path / "cluster.yaml").write_text(
        "apiVersion: pinnace.dev/v1alpha1\nkind: Cluster\nnodePools: [{name: big, count: 3}]\n"
    )
    (tmp_path / "scheduler.yaml").write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "percentageOfNodesToScore: 30\n"
    )
    manifests = tmp_path / "manifests"
    manifests.mkdir()
    (manifests / "a.yaml").write_text(
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: one}\n---\n"
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: two}\n"
    )
    (manifests / "pc.yaml").write_text(
        "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: p}\nvalue: 5\n"
    )
    (tmp_path / "scenario.yaml").write_text(
        HEAD.replace(
            "    nodePools: [{name: a, count: 2, labels: {topology.kubernetes.io/zone: z1}}]\n",
            "    clusterFile: cluster.yaml\n    schedulerConfig: scheduler.yaml\n",
        )
        + "  objects: [{path: manifests}]\n"
        + "  timeline:\n  - {at: 1m, apply: {path: manifests/pc.yaml}}\n"
        + "  - {at: 2m, drain: {node: big-3}}\n"
    )
    scenario = load_scenario(tmp_path / "scenario.yaml")
    assert [n.name for n in scenario.cluster.nodes] == ["big-1", "big-2", "big-3"]
    assert scenario.cluster.scheduler_config is not None
    assert scenario.cluster.scheduler_config.percentage_of_nodes_to_score == 30
    assert [o["metadata"]["name"] for o in scenario.objects] == ["one", "two", "p"]
    assert scenario.timeline[0].action == Apply(
        [
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": "p"},
                "value": 5,
            }
        ]
    )


def test_an_error_in_a_file_it_names_is_placed_in_both(tmp_path: Path) -> None:
    (tmp_path / "cluster.yaml").write_text(
        "apiVersion: pinnace.dev/v1alpha1\nkind: Cluster\nnodePools:\n- name: big\n  count: -1\n"
    )
    path = tmp_path / "scenario.yaml"
    path.write_text(
        HEAD.replace(
            "nodePools: [{name: a, count: 2, labels: {topology.kubernetes.io/zone: z1}}]",
            "clusterFile: cluster.yaml",
        )
    )
    with pytest.raises(ScenarioError) as refused:
        load_scenario(path)
    assert str(refused.value).startswith(
        f"{path}:6: spec.cluster.clusterFile: {tmp_path}/cluster.yaml:5: nodePools[0].count: "
        "Invalid value: -1"
    )


CASES = [
    # the document and its spec
    ("  replicas: 3\n", 'scenario.yaml:7: spec: unknown field "replicas"'),
    ("  seed: x\n", 'scenario.yaml:7: spec.seed: Invalid value: "x": must be a whole number'),
    ("  until: 2 hours\n", "scenario.yaml:7: spec.until: time: unknown unit"),
    ("  until: 0s\n", 'scenario.yaml:7: spec.until: Invalid value: "0s": must be greater than 0'),
    ("  metrics: {interval: -5}\n", "scenario.yaml:7: spec.metrics.interval: Invalid value: -5"),
    ("  objects: 3\n", "scenario.yaml:7: spec.objects: Invalid value: 3: must be of type array"),
    (
        "  objects:\n  - apiVersion: v1\n    kind: Pdo\n",
        'scenario.yaml:9: spec.objects[0].kind: Invalid value: "Pdo": v1: not a kind Pinnace '
        "serves",
    ),
    (
        "  objects:\n  - {apiVersion: v1, kind: Pod}\n",
        "scenario.yaml:8: spec.objects[0].metadata: Required value",
    ),
    (
        "  objects:\n  - path: missing.yaml\n",
        'scenario.yaml:8: spec.objects[0].path: the path "missing.yaml" does not exist',
    ),
    # the timeline
    (
        "  timeline:\n  - at: 10x\n    cordon: {node: a-1}\n",
        "scenario.yaml:8: spec.timeline[0].at: time: unknown unit",
    ),
    (
        "  timeline:\n  - at: 10m\n    after: settled\n    cordon: {node: a-1}\n",
        "scenario.yaml:9: spec.timeline[0].after: Forbidden: may not be set with at",
    ),
    (
        "  timeline:\n  - cordon: {node: a-1}\n",
        'scenario.yaml:8: spec.timeline[0].at: Required value: at (a time) or after: "settled"',
    ),
    (
        "  timeline:\n  - after: ready\n    cordon: {node: a-1}\n",
        'scenario.yaml:8: spec.timeline[0].after: Unsupported value: "ready": supported values: '
        '"settled"',
    ),
    (
        "  timeline:\n  - at: 1m\n",
        "scenario.yaml:8: spec.timeline[0]: Required value: one action: apply, delete,",
    ),
    (
        "  timeline:\n  - at: 1m\n    cordon: {node: a-1}\n    drain: {node: a-1}\n",
        "scenario.yaml:10: spec.timeline[0].drain: Forbidden: one action a step, and cordon",
    ),
    (
        "  timeline:\n  - at: 10m\n    cordon: {node: a-1}\n"
        "  - at: 5m\n    uncordon: {node: a-1}\n",
        'scenario.yaml:10: spec.timeline[1].at: Invalid value: "5m": is before '
        "spec.timeline[0].at: steps run in order",
    ),
    (
        "  timeline:\n  - at: 1m\n    cordon:\n      node: b-1\n",
        'scenario.yaml:10: spec.timeline[0].cordon.node: Not found: "b-1"',
    ),
    (
        "  timeline:\n  - at: 1m\n    drain: {node: a-1, force: true}\n",
        'scenario.yaml:9: spec.timeline[0].drain: unknown field "force"',
    ),
    (
        "  timeline:\n  - at: 1m\n    failZone: {zone: z2}\n",
        'scenario.yaml:9: spec.timeline[0].failZone.zone: Invalid value: "z2": no node has '
        "topology.kubernetes.io/zone=z2",
    ),
    (
        "  timeline:\n  - at: 1m\n    addNodes: {pool: gpu, count: 2}\n",
        'scenario.yaml:9: spec.timeline[0].addNodes.pool: Unsupported value: "gpu": supported '
        'values: "a"',
    ),
    (
        "  timeline:\n  - at: 1m\n    addNodes: {pool: a, count: 0}\n",
        "scenario.yaml:9: spec.timeline[0].addNodes.count: Invalid value: 0",
    ),
    (
        "  timeline:\n  - at: 1m\n    addNodes: {pool: a}\n"
        "  - at: 2m\n    removeNodes: {pool: a, count: 4}\n",
        "scenario.yaml:11: spec.timeline[1].removeNodes.count: Invalid value: 4: the pool has 3 "
        "nodes at this step",
    ),
    (
        "  timeline:\n  - at: 1m\n    scale: {kind: Pod, name: p, replicas: 2}\n",
        'scenario.yaml:9: spec.timeline[0].scale.kind: Unsupported value: "Pod": supported values: '
        '"ReplicationController", "Deployment", "ReplicaSet"',
    ),
    (
        "  timeline:\n  - at: 1m\n    scale: {kind: Deployment, name: p, replicas: -1}\n",
        "scenario.yaml:9: spec.timeline[0].scale.replicas: Invalid value: -1",
    ),
    (
        "  timeline:\n  - at: 1m\n"
        "    patch: {kind: Deployment, name: p, type: json, patch: {a: 1}}\n",
        "scenario.yaml:9: spec.timeline[0].patch.patch: Invalid value: map[a:1]: must be of type "
        "array",
    ),
    (
        "  timeline:\n  - at: 1m\n    patch: {kind: Deployment, name: p, type: apply, patch: {}}\n",
        'scenario.yaml:9: spec.timeline[0].patch.type: Unsupported value: "apply"',
    ),
    (
        "  timeline:\n  - at: 1m\n    delete: {kind: Namespace, namespace: x, name: z}\n",
        "scenario.yaml:9: spec.timeline[0].delete.namespace: Forbidden: Namespace is not "
        "namespaced",
    ),
    (
        "  timeline:\n  - at: 1m\n    delete: [{kind: Gadget, name: z}]\n",
        'scenario.yaml:9: spec.timeline[0].delete[0].kind: Invalid value: "Gadget": not a kind',
    ),
    # the cluster
    (
        "    controllerManager: {nodeMonitorGracePeriod: forever}\n",
        "scenario.yaml:7: spec.cluster.controllerManager.nodeMonitorGracePeriod: time: invalid "
        'duration "forever"',
    ),
    (
        "    controllerManager: {podEvictionTimeout: 5m}\n",
        'scenario.yaml:7: spec.cluster.controllerManager: unknown field "podEvictionTimeout"',
    ),
    (
        "    clusterFile: cluster.yaml\n",
        "scenario.yaml:7: spec.cluster.clusterFile: Forbidden: may not be set with nodePools",
    ),
    (
        "    clusterAutoscaler: {expander: cheapest}\n",
        'scenario.yaml:7: spec.cluster.clusterAutoscaler.expander: Unsupported value: "cheapest"',
    ),
    (
        "    clusterAutoscaler: {scaleDownUtilizationThreshold: 2}\n",
        "scenario.yaml:7: spec.cluster.clusterAutoscaler.scaleDownUtilizationThreshold: Invalid "
        "value: 2: must be a number from 0 to 1",
    ),
    (
        "    schedulerConfig:\n      apiVersion: kubescheduler.config.k8s.io/v1\n"
        "      kind: KubeSchedulerConfiguration\n      profiles:\n      - plugins:\n"
        "          score:\n            enabled: [{name: Nope}]\n",
        "scenario.yaml:13: spec.cluster.schedulerConfig.profiles[0].plugins.score.enabled[0].name:"
        ' Invalid value: "Nope": no such plugin',
    ),
]

WORKLOAD = (
    "  workloads:\n  - name: w\n"
    "    template: {apiVersion: v1, kind: Pod, spec: {containers: [{name: c, image: x}]}}\n"
    "    arrivals: {every: 1m}\n"
)
"""A workload generator at lines 7 to 10; a case adds its line 11."""

WORKLOAD_CASES = [
    (
        "    usage: {cpu: 2 cores}\n",
        'scenario.yaml:11: spec.workloads[0].usage.cpu: Invalid value: "2 cores": invalid quantity',
    ),
    (
        "    usage: {nvidia.com/gpu: 1}\n",
        'scenario.yaml:11: spec.workloads[0].usage: unknown field "nvidia.com/gpu"',
    ),
    (
        "    runTime: {normal: {mean: 5m}}\n",
        "scenario.yaml:11: spec.workloads[0].runTime: Invalid value: map[normal:map[mean:"
        '"5m"]]: must be one of constant, uniform, exponential, lognormal, empirical',
    ),
    (
        "    runTime: {uniform: {min: 5m, max: 1m}}\n",
        'scenario.yaml:11: spec.workloads[0].runTime.uniform: Invalid value: map[min:"5m" '
        'max:"1m"]: min must not be greater than max',
    ),
    (
        "    runTime: {uniform: {min: 5m}}\n",
        "scenario.yaml:11: spec.workloads[0].runTime.uniform.max: Required value",
    ),
    (
        "    runTime: {lognormal: {median: 5m, mu: 1, sigma: 1}}\n",
        "scenario.yaml:11: spec.workloads[0].runTime.lognormal: Invalid value: ",
    ),
    (
        "    runTime: {empirical: [1m, soon]}\n",
        'scenario.yaml:11: spec.workloads[0].runTime.empirical[1]: time: invalid duration "soon"',
    ),
    (
        "    runTime: -5\n",
        "scenario.yaml:11: spec.workloads[0].runTime: Invalid value: -5: must not",
    ),
    (
        "    stop: 0s\n",
        'scenario.yaml:11: spec.workloads[0].stop: Invalid value: "0s": must be after',
    ),
    ("    count: 0\n", "scenario.yaml:11: spec.workloads[0].count: Invalid value: 0"),
]


@pytest.mark.parametrize(
    ("text", "message"), CASES + [(WORKLOAD + t, m) for t, m in WORKLOAD_CASES]
)
def test_a_bad_scenario_is_refused_naming_the_line_and_field(text: str, message: str) -> None:
    with pytest.raises(ScenarioError) as refused:
        parse_scenario(HEAD + text, "scenario.yaml")
    assert str(refused.value).startswith(message)


@pytest.mark.parametrize(
    ("workload", "message"),
    [
        (
            "  workloads:\n  - name: w\n    template: {apiVersion: apps/v1, kind: Deployment}\n",
            'scenario.yaml:9: spec.workloads[0].template.kind: Unsupported value: "apps/v1 '
            'Deployment": supported values: "v1 Pod", "batch/v1 Job"',
        ),
        (
            "  workloads:\n  - name: w\n"
            "    template: {apiVersion: v1, kind: Pod, metadata: {name: p}}\n",
            "scenario.yaml:9: spec.workloads[0].template.metadata.name: Forbidden: each object "
            "is named <workload name>-<number>",
        ),
        (
            "  workloads:\n  - name: w\n    template: {apiVersion: v1, kind: Pod}\n",
            "scenario.yaml:8: spec.workloads[0].arrivals: Required value: poisson or every",
        ),
        (
            "  workloads:\n  - name: w\n    template: {apiVersion: v1, kind: Pod}\n"
            "    arrivals: {poisson: {ratePerMinute: 0}}\n",
            "scenario.yaml:10: spec.workloads[0].arrivals.poisson.ratePerMinute: Invalid value: 0",
        ),
        (
            "  workloads:\n  - name: w\n    template: {apiVersion: v1, kind: Pod}\n"
            "    arrivals: {poisson: {ratePerMinute: 1}, every: 1s}\n",
            "scenario.yaml:10: spec.workloads[0].arrivals: Invalid value: ",
        ),
        (
            WORKLOAD + "  - name: w\n    template: {apiVersion: v1, kind: Pod}\n"
            "    arrivals: {every: 1m}\n",
            'scenario.yaml:11: spec.workloads[1].name: Duplicate value: "w"',
        ),
        (
            "  workloads:\n  - name: Web_1\n",
            'scenario.yaml:8: spec.workloads[0].name: Invalid value: "Web_1"',
        ),
        (  # the API server would drop the misspelt field from every arrival
            "  workloads:\n  - name: w\n    arrivals: {every: 1m}\n    template:\n"
            "      apiVersion: v1\n      kind: Pod\n      spec:\n        containers:\n"
            "        - name: c\n          image: x\n          resoures: {requests: {cpu: 1}}\n",
            "scenario.yaml:17: spec.workloads[0].template.spec.containers[0]: "
            'unknown field "resoures"',
        ),
        (
            "  workloads:\n  - name: w\n    arrivals: {every: 1m}\n"
            "    template: {apiVersion: batch/v1, kind: Job, spec: {parallelism: x}}\n",
            "scenario.yaml:10: spec.workloads[0].template: json: cannot unmarshal string into "
            "Go struct field JobSpec.spec.parallelism of type int32",
        ),
    ],
)
def test_a_bad_workload_generator_is_refused(workload: str, message: str) -> None:
    with pytest.raises(ScenarioError) as refused:
        parse_scenario(HEAD + workload, "scenario.yaml")
    assert str(refused.value).startswith(message)


def test_a_bad_pool_is_placed_in_the_scenario() -> None:
    text = HEAD.replace("count: 2,", "count: 2, capacity: {cpu: x},")
    with pytest.raises(
        ScenarioError,
        match=r"^scenario.yaml:6: spec.cluster.nodePools\[0\]"
        r'.capacity.cpu: Invalid value: "x"',
    ):
        parse_scenario(text, "scenario.yaml")


def test_the_head_is_checked() -> None:
    with pytest.raises(ScenarioError, match=r'^scenario.yaml:2: kind: Unsupported value: "Config"'):
        parse_scenario(HEAD.replace("kind: Scenario", "kind: Config"), "scenario.yaml")
    with pytest.raises(ScenarioError, match=r"^scenario.yaml:3: metadata.name: Required value"):
        parse_scenario(HEAD.replace("{name: t}", "{}"), "scenario.yaml")
    with pytest.raises(ScenarioError, match=r"^scenario.yaml:4: spec.cluster: Required value"):
        parse_scenario(HEAD.split("  cluster:")[0] + "  seed: 1\n", "scenario.yaml")
    with pytest.raises(ScenarioError, match=r"^scenario.yaml: document 0 \(line 3\): invalid YAML"):
        parse_scenario("a: [\nb: c\n", "scenario.yaml")


def test_a_mapping_is_refused_naming_the_field_alone() -> None:
    with pytest.raises(ScenarioError, match=r'^<dict>: spec.seed: Invalid value: "x"') as refused:
        parse_scenario(
            {
                "apiVersion": "sim.pinnace.dev/v1alpha1",
                "kind": "Scenario",
                "metadata": {"name": "t"},
                "spec": {"seed": "x"},
            }
        )
    assert refused.value.field == "spec.seed"


def test_a_missing_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match="No such file"):
        load_scenario(tmp_path / "nothing.yaml")
