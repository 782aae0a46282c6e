"""The research environment's scheduler-only engine: the same episodes as the cluster engine,
step for step, where the scenario is one it runs; a clear refusal where it is not."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from tests.gym.scenarios import ZONE, pod_template, random_cluster, scenario

import pinnace.gym
from pinnace.cli.main import main
from pinnace.gym.env import NodePlacementEnv, scenario_of
from pinnace.gym.evaluate import evaluate

Policy = Callable[[np.ndarray], int]


def first_feasible(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def last_feasible(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[-1])


def trajectory(
    engine: str, spec: dict[str, Any], seed: int, policy: Policy, features: str = "requests"
) -> list[tuple[Any, ...]]:
    """Every step as the agent sees it: the pod, the time, the mask, each reward component,
    and the observation the policy chose on."""
    env = NodePlacementEnv(spec, reward="decima+packing", features=features, engine=engine)
    steps = []
    try:
        observation, info = env.reset(seed=seed)
        over = False
        while not over:
            mask = info["action_mask"]
            seen = tuple((name, array.tobytes()) for name, array in sorted(observation.items()))
            observation, _, _, over, info = env.step(policy(mask))
            components = tuple(sorted(info["reward_components"].items()))
            steps.append((info["pod"], info["time"], mask.tobytes(), components, seen))
    finally:
        env.close()
    return steps


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("policy", [first_feasible, last_feasible])
def test_random_clusters_give_the_cluster_engines_episode_step_for_step(
    seed: int, policy: Policy
) -> None:
    spec = random_cluster(seed)
    cluster = trajectory("cluster", spec, seed, policy)
    assert len(cluster) > 10
    assert trajectory("scheduler", spec, seed, policy) == cluster


def saturated(
    objects: list[dict[str, Any]] | None = None, until: str = "3m", **workload: Any
) -> dict[str, Any]:
    """Four nodes holding four pods each and pods arriving faster than they finish: the
    queue grows, and a pod is placed when one finishes."""
    pools = [{"name": "pool", "count": 4, "capacity": {"cpu": "2", "memory": "8Gi"}}]
    workloads = [
        {
            "name": "w",
            "template": pod_template("500m", "256Mi"),
            "arrivals": {"poisson": {"ratePerSecond": 1}},
            "runTime": {"exponential": {"mean": "30s"}},
            **workload,
        }
    ]
    return scenario(pools, workloads, until=until, objects=objects)


def test_a_saturated_cluster_places_each_pod_when_the_cluster_engine_does() -> None:
    cluster = trajectory("cluster", saturated(), 7, first_feasible)
    times = [t for _, t, *_ in cluster]
    assert len(cluster) > 30
    assert any(a == b for a, b in itertools.pairwise(times))  # pods placed as others end
    assert trajectory("scheduler", saturated(), 7, first_feasible) == cluster


def test_a_generator_the_api_server_refuses_makes_no_pod_on_either_engine() -> None:
    """One generator's namespace does not exist: each of its creates is refused."""
    spec = saturated(until="1m")
    lost = {**spec["spec"]["workloads"][0], "name": "lost"}
    lost["template"] = {**lost["template"], "metadata": {"namespace": "nowhere"}}
    spec["spec"]["workloads"].append(lost)
    cluster = trajectory("cluster", spec, 7, first_feasible)
    assert not [pod for pod, *_ in cluster if pod and pod.startswith("nowhere/")]
    assert trajectory("scheduler", spec, 7, first_feasible) == cluster


def spread_and_anti_affinity() -> dict[str, Any]:
    """Pods spread over three zones (DoNotSchedule) and pods that shun each other's nodes: an
    assigned pod's every change may requeue them, so the order of the informer's deliveries
    within an instant tells."""
    pools = [
        {
            "name": f"p{zone}",
            "count": 2,
            "capacity": {"cpu": "2", "memory": "8Gi"},
            "labels": {ZONE: zone},
        }
        for zone in "abc"
    ]
    spread = pod_template("500m", "256Mi")
    spread["metadata"] = {"labels": {"app": "w"}}
    spread["spec"]["topologySpreadConstraints"] = [
        {
            "maxSkew": 1,
            "topologyKey": ZONE,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "w"}},
        }
    ]
    shy = pod_template("700m", "256Mi")
    shy["metadata"] = {"labels": {"app": "x"}}
    term = {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "x"}}}
    shy["spec"]["affinity"] = {
        "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
    }
    workloads = [
        {
            "name": "w",
            "template": spread,
            "arrivals": {"poisson": {"ratePerSecond": 1}},
            "runTime": {"exponential": {"mean": "20s"}},
        },
        {
            "name": "x",
            "template": shy,
            "arrivals": {"poisson": {"ratePerSecond": 0.3}},
            "runTime": {"exponential": {"mean": "30s"}},
        },
    ]
    return scenario(pools, workloads, until="3m")


@pytest.mark.parametrize("seed", [2, 3])
def test_spread_and_anti_affinity_as_in_the_cluster_engine(seed: int) -> None:
    spec = spread_and_anti_affinity()
    cluster = trajectory("cluster", spec, seed, first_feasible)
    assert len(cluster) > 100
    assert trajectory("scheduler", spec, seed, first_feasible) == cluster


def priority_classes(**values: int) -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name},
            "value": value,
        }
        for name, value in values.items()
    ]


def test_priority_classes_and_preemption_as_in_the_cluster_engine() -> None:
    """Low-priority pods fill the nodes for good; high-priority ones then preempt them."""
    classes = priority_classes(low=10, high=1000)
    pools = [{"name": "pool", "count": 2, "capacity": {"cpu": "2", "memory": "8Gi"}}]

    def with_class(name: str) -> dict[str, Any]:
        template = pod_template("1", "256Mi")
        template["spec"]["priorityClassName"] = name
        return template

    workloads = [
        {
            "name": "low",
            "template": with_class("low"),
            "arrivals": {"every": "1s"},
            "count": 4,
            "runTime": {"constant": "1h"},
        },
        {
            "name": "high",
            "template": with_class("high"),
            "arrivals": {"every": "10s"},
            "start": "30s",
            "count": 2,
            "runTime": {"constant": "1h"},
        },
    ]
    spec = scenario(pools, workloads, until="3m", objects=classes)
    cluster = trajectory("cluster", spec, 1, first_feasible)
    # The high ones fit nowhere: preemption nominates their nodes, where they go unasked.
    assert [pod for pod, *_ in cluster] == ["default/low-2", "default/low-3", "default/low-4", None]
    assert dict(cluster[-1][3])["evictions"] == -2  # a victim each
    assert trajectory("scheduler", spec, 1, first_feasible) == cluster


def one_node(cpu: str, *workloads: dict[str, Any], objects: Any = None) -> dict[str, Any]:
    pools = [{"name": "pool", "count": 1, "capacity": {"cpu": cpu, "memory": "8Gi"}}]
    return scenario(pools, list(workloads), until="1m", objects=objects)


def test_an_arrival_and_a_finish_at_one_instant_order_as_in_the_cluster_engine() -> None:
    """Pods arrive every second and run the node's 10 s for a command it does not know: at
    each whole second a pod arrives as another finishes; the finish reaches the scheduler
    turns of the loop after the arrival, as the node agent's status write goes through."""
    spec = one_node(
        "2", {"name": "w", "template": pod_template("900m", "512Mi"), "arrivals": {"every": "1s"}}
    )
    cluster = trajectory("cluster", spec, 1, last_feasible)
    assert len(cluster) > 10
    assert trajectory("scheduler", spec, 1, last_feasible) == cluster


def test_a_finish_and_a_back_off_at_one_instant_order_as_in_the_cluster_engine() -> None:
    spec = one_node(
        "4",
        {
            "name": "w",
            "template": pod_template("1", "64Mi"),
            "arrivals": {"poisson": {"ratePerSecond": 1}},
        },
    )
    cluster = trajectory("cluster", spec, 7, last_feasible)
    assert len(cluster) > 20
    assert trajectory("scheduler", spec, 7, last_feasible) == cluster


def labelled(app: str, cpu: str, priority_class: str | None = None) -> dict[str, Any]:
    template = pod_template(cpu, "64Mi")
    template["metadata"] = {"labels": {"app": app}}
    if priority_class:
        template["spec"]["priorityClassName"] = priority_class
    return template


def test_a_finish_reaches_the_scheduler_before_its_instants_cycle_as_on_the_cluster_engine() -> (
    None
):
    """A pod finishes as two arrive: on the cluster engine the finish reaches the scheduler
    (three turns of the loop) before its cycle for the arrivals starts (the arrival takes three
    too): the counts the rewards take after the decision leave the finished pod out."""
    workloads = [
        {
            "name": "w0",
            "template": labelled("w0", "1100m"),
            "arrivals": {"every": "2s"},
            "start": "4s",
            "runTime": {"constant": "17s"},
        },
        {
            "name": "w1",
            "template": labelled("w1", "400m"),
            "arrivals": {"every": "2s"},
            "start": "4s",
            "runTime": {"constant": "2s"},
        },
    ]
    spec = one_node("2", *workloads)
    spec["spec"]["until"] = "20s"
    cluster = trajectory("cluster", spec, 4, first_feasible)
    assert len(cluster) > 5
    assert trajectory("scheduler", spec, 4, first_feasible) == cluster


def test_a_victim_two_preemptions_choose_is_one_eviction_as_in_the_cluster_engine() -> None:
    """Two pods arriving at one instant each preempt the same low-priority pod: the second's
    deletion finds it being deleted, and the observer counts one eviction."""
    classes = priority_classes(low=10, mid=100, high=1000)
    w1 = labelled("w1", "900m", "low")
    w1["spec"]["topologySpreadConstraints"] = [
        {
            "maxSkew": 1,
            "topologyKey": ZONE,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "w1"}},
        }
    ]
    workloads = [
        {
            "name": "w0",
            "template": labelled("w0", "1", "mid"),
            "arrivals": {"every": "2s"},
            "start": "3s",
            "runTime": {"constant": "54s"},
        },
        {
            "name": "w1",
            "template": w1,
            "arrivals": {"poisson": {"ratePerSecond": 1}},
            "start": "2s",
            "runTime": {"constant": "55s"},
        },
        {
            "name": "w2",
            "template": labelled("w2", "500m", "high"),
            "arrivals": {"poisson": {"ratePerSecond": 1}},
            "start": "4s",
            "runTime": {"constant": "3s"},
        },
    ]
    pools = [
        {"name": "p0", "count": 1, "capacity": {"cpu": "3", "memory": "8Gi"}, "labels": {ZONE: "a"}}
    ]
    spec = scenario(pools, workloads, until="15s", objects=classes)
    seed = 1
    policy = random_feasible(4242)
    cluster = trajectory("cluster", spec, seed, policy)
    assert sum(dict(step[3])["evictions"] for step in cluster) < 0
    assert trajectory("scheduler", spec, seed, random_feasible(4242)) == cluster


def random_feasible(seed: int) -> Policy:
    rng = np.random.default_rng(seed)
    return lambda mask: int(rng.choice(np.flatnonzero(mask)))


def test_preemption_picks_its_victims_by_start_time_as_in_the_cluster_engine() -> None:
    """Among victims of one priority, preemption keeps the pods started first: the running
    pods carry status.startTime."""
    classes = priority_classes(low=10, high=1000)

    def generator(
        name: str, cpu: str, start: str, count: int, cls: str | None, every: str = "1s"
    ) -> dict[str, Any]:
        template = pod_template(cpu, "64Mi")
        if cls:
            template["spec"]["priorityClassName"] = cls
        return {
            "name": name,
            "template": template,
            "arrivals": {"every": every},
            "start": start,
            "count": count,
            "runTime": {"constant": "1h"},
        }

    spec = one_node(
        "4",
        generator("b", "1", "1s", 2, "low"),
        generator("a", "2", "3s", 1, "low"),
        generator("high", "1", "10s", 1, "high"),
        generator("small", "1", "20s", 3, None, every="5s"),
        objects=classes,
    )
    cluster = trajectory("cluster", spec, 1, first_feasible)
    assert trajectory("scheduler", spec, 1, first_feasible) == cluster


def test_the_checker_passes_and_a_seed_gives_the_same_episode() -> None:
    env = gymnasium.make(
        pinnace.gym.ENV_ID, scenario=random_cluster(4), features="requests", engine="scheduler"
    )
    try:
        check_env(env.unwrapped, skip_render_check=True)
    finally:
        env.close()
    spec = random_cluster(5)
    assert trajectory("scheduler", spec, 3, last_feasible) == trajectory(
        "scheduler", spec, 3, last_feasible
    )


def job_template() -> dict[str, Any]:
    pod = {"spec": pod_template("100m", "64Mi")["spec"]}
    return {"apiVersion": "batch/v1", "kind": "Job", "spec": {"template": pod}}


REFUSED = {
    "timeline": (
        lambda s: s["spec"].update(timeline=[{"at": "1m", "cordon": {"node": "pool-1"}}]),
        r"spec.timeline: timeline steps needs the cluster engine \(engine='cluster'\)",
    ),
    "a deployment": (
        lambda s: s["spec"]["objects"].append(
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "d"},
                "spec": {
                    "selector": {"matchLabels": {"a": "b"}},
                    "template": {
                        "metadata": {"labels": {"a": "b"}},
                        "spec": {**pod_template("1", "1Gi")["spec"], "restartPolicy": "Always"},
                    },
                },
            }
        ),
        r"spec.objects\[0\]: a Deployment needs the cluster engine",
    ),
    "a job template": (
        lambda s: s["spec"]["workloads"][0].update(template=job_template()),
        r"spec.workloads\[0\].template: a Job template needs the cluster engine",
    ),
    "init containers": (
        lambda s: template(s)["spec"].update(initContainers=[{"name": "i", "image": "app:1"}]),
        r"spec.workloads\[0\].template.spec.initContainers: init containers",
    ),
    "a sidecar": (
        lambda s: template(s)["spec"].update(
            initContainers=[{"name": "i", "image": "app:1", "restartPolicy": "Always"}]
        ),
        r"spec.workloads\[0\].template.spec.initContainers: init containers",
    ),
    "containers ending apart": (
        lambda s: (
            template(s)["spec"]["containers"].append({"name": "side", "image": "app:1"}),
            annotate(s, {"sim.pinnace.dev/run-seconds.side": "5"}),
        ),
        r"spec.workloads\[0\].template.spec.containers: containers ending at different times",
    ),
    "restarts on failure": (
        lambda s: (
            template(s)["spec"].update(restartPolicy="OnFailure"),
            annotate(s, {"sim.pinnace.dev/exit-code": "1"}),
        ),
        r"spec.workloads\[0\].template.spec.restartPolicy: containers restarting \(OnFailure\)",
    ),
    "restarts always": (
        lambda s: template(s)["spec"].update(restartPolicy="Always"),
        r"spec.workloads\[0\].template.spec.restartPolicy: containers restarting \(Always\)",
    ),
    "an active deadline": (
        lambda s: template(s)["spec"].update(activeDeadlineSeconds=5),
        r"spec.workloads\[0\].template.spec.activeDeadlineSeconds",
    ),
    "stop-seconds": (
        lambda s: annotate(s, {"sim.pinnace.dev/stop-seconds": "20"}),
        r"annotations\[sim.pinnace.dev/stop-seconds\]: containers slow to stop",
    ),
    "a command reading its environment": (
        lambda s: template(s)["spec"]["containers"][0].update(
            command=["sh", "-c", "sleep $(T)"], env=[{"name": "T", "value": "30"}]
        ),
        r"spec.containers\[0\].command: a command that may read its environment or files",
    ),
    "a template's nodeName": (
        lambda s: template(s)["spec"].update(nodeName="pool-1"),
        r"spec.workloads\[0\].template.spec.nodeName",
    ),
    "image pull bandwidth": (
        lambda s: s["spec"]["cluster"]["nodePools"][0].update(imagePullBandwidth="1M"),
        r"spec.cluster: node pool-1's imagePullBandwidth",
    ),
    "memory usage drawn without a highest value": (
        lambda s: s["spec"]["workloads"][0].update(
            usage={"memory": {"lognormal": {"median": "100Mi", "sigma": 0.5}}}
        ),
        r"spec.workloads\[0\].usage.memory: memory usage without a highest value",
    ),
    "memory usage drawn above the request": (
        lambda s: s["spec"]["workloads"][0].update(
            usage={"memory": {"uniform": {"min": "100Mi", "max": "300Mi"}}}
        ),
        r"spec.containers\[0\]: memory usage above the container's memory request",
    ),
    "memory usage annotated above the request": (
        lambda s: annotate(s, {"sim.pinnace.dev/memory.app": "spike 10Mi 1Gi at 5s for 1s"}),
        r"spec.containers\[0\]: memory usage above the container's memory request",
    ),
    "ephemeral-storage usage": (
        lambda s: annotate(s, {"sim.pinnace.dev/ephemeral-storage": "1Gi"}),
        r"ephemeral-storage usage \(evictions\)",
    ),
    "a soft memory eviction threshold": (
        lambda s: s["spec"]["cluster"]["nodePools"][0].update(
            kubelet={
                "evictionSoft": {"memory.available": "1Gi"},
                "evictionSoftGracePeriod": {"memory.available": "1m30s"},
            }
        ),
        r"node pool-1's kubelet.evictionSoft memory.available",
    ),
    "a readiness probe": (
        lambda s: template(s)["spec"]["containers"][0].update(
            readinessProbe={"exec": {"command": ["true"]}}
        ),
        r"spec.containers\[0\].readinessProbe: probes",
    ),
    "pods at 0 s in a namespace the scenario creates": (
        lambda s: (
            s["spec"]["objects"].append(
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}
            ),
            s["spec"]["workloads"][0].update(arrivals={"every": "5s"}),
            template(s).setdefault("metadata", {}).update(namespace="team"),
        ),
        r"spec.workloads\[0\].start: pods arriving at 0s in namespace team",
    ),
}


def template(spec: dict[str, Any]) -> dict[str, Any]:
    return spec["spec"]["workloads"][0]["template"]  # type: ignore[no-any-return]


def annotate(spec: dict[str, Any], annotations: dict[str, str]) -> None:
    template(spec).setdefault("metadata", {}).setdefault("annotations", {}).update(annotations)


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_what_the_engine_cannot_run_is_refused_naming_the_field(case: str) -> None:
    change, message = REFUSED[case]
    spec = saturated()
    change(spec)
    env = NodePlacementEnv(spec, features="requests", engine="scheduler")
    with pytest.raises(ValueError, match=message):
        env.reset(seed=1)
    env.close()


def test_an_unknown_engine_is_refused_at_once() -> None:
    with pytest.raises(ValueError, match="engine 'fast': must be one of cluster, scheduler"):
        NodePlacementEnv(saturated(), features="requests", engine="fast")


def test_a_failed_pods_condition_moves_it_in_the_queue_as_on_the_cluster_engine() -> None:
    """Pods failing on small nodes, each failure's PodScheduled condition patched when its
    message changes: the patch's echo re-files a pod waiting out its backoff behind those that
    failed with it, which decides who goes first when their backoffs end together."""
    pools = [
        {"name": "p0", "count": 3, "capacity": {"cpu": "1", "memory": "8Gi"}},
        {"name": "p1", "count": 2, "capacity": {"cpu": "2", "memory": "4Gi"}},
    ]
    every = {"arrivals": {"every": "7s"}}
    workloads = [
        {"name": "w0", "template": pod_template("100m", "768Mi"), **every},
        {
            "name": "w1",
            "template": pod_template("300m", "640Mi"),
            "arrivals": {"poisson": {"ratePerSecond": 0.3}},
            "runTime": {"exponential": {"mean": "40s"}},
        },
        {"name": "w2", "template": pod_template("200m", "384Mi"), **every},
    ]
    workloads[0]["runTime"] = {"constant": "45s"}
    workloads[2]["runTime"] = {"constant": "60s"}
    spec = scenario(pools, workloads, until="6m")
    cluster = trajectory("cluster", spec, 102, last_feasible)
    assert len(cluster) > 200
    assert trajectory("scheduler", spec, 102, last_feasible) == cluster


def pulled_by_full_name() -> dict[str, Any]:
    """Pods of an image named as the nodes list it once pulled (ImageLocality matches it), some
    kept to one tier: the other pods' scores favour that tier's nodes once they hold it."""
    pools = [
        {
            "name": tier,
            "count": 2,
            "capacity": {"cpu": "8", "memory": "32Gi"},
            "labels": {"t": tier},
        }
        for tier in "ab"
    ]
    kept, free = (
        pod_template("100m", "128Mi", node_selector={"t": "a"}),
        pod_template("100m", "128Mi"),
    )
    for template in (kept, free):
        template["spec"]["containers"][0]["image"] = "docker.io/library/perl:5"
    workloads = [
        {"name": "kept", "template": kept, "arrivals": {"poisson": {"ratePerMinute": 30}}},
        {"name": "free", "template": free, "arrivals": {"poisson": {"ratePerMinute": 10}}},
    ]
    for workload in workloads:
        workload["runTime"] = {"constant": "3m"}
    return scenario(pools, workloads, until="4m")


def test_images_the_nodes_list_are_refused_only_where_the_scores_choose() -> None:
    """The node agents' status updates listing a pulled image are not modelled: ImageLocality
    would score otherwise where the scheduler's Score plugins choose. An agent's decisions
    read no score: its episode is the cluster engine's."""
    spec = pulled_by_full_name()
    with pytest.raises(ValueError, match=r"containers\[0\].image: docker.io/library/perl:5"):
        evaluate(scenario_of(spec), ["default"], seed=1, engine="scheduler")
    cluster = trajectory("cluster", spec, 1, last_feasible)
    assert trajectory("scheduler", spec, 1, last_feasible) == cluster


def test_a_plugin_reading_a_custom_metric_is_refused() -> None:
    """Its load is what the pods serve on custom.metrics.k8s.io, which this engine has not."""
    args = {"metricProvider": {"type": "CustomMetrics", "metric": "rps", "nodeCapacity": "100"}}
    spec = trimaran(saturated(), "TargetLoadPacking", args)
    env = NodePlacementEnv(spec, features="requests", engine="scheduler")
    with pytest.raises(ValueError, match=r"a plugin reading a custom metric .* needs the cluster"):
        env.reset(seed=1)
    env.close()


def trimaran(spec: dict[str, Any], plugin: str, args: dict[str, Any]) -> dict[str, Any]:
    """`spec` scheduling with the Trimaran Score `plugin` given `args`."""
    spec["spec"]["cluster"]["schedulerConfig"] = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {
                "plugins": {"score": {"enabled": [{"name": plugin}]}},
                "pluginConfig": [{"name": plugin, "args": args}],
            }
        ],
    }
    return spec


def cpu_hungry(every: str, usage: dict[str, Any], *, limit: str | None = None) -> dict[str, Any]:
    """Pods of two containers arriving every `every` on two 2-core nodes, the app using `usage`
    (a distribution), capped at `limit`, the sidecar a periodic curve: the cores are shared
    out when the pods want more than they have, and samples fall at the instants pods finish."""
    template = pod_template("500m", "256Mi")
    (app,) = template["spec"]["containers"]
    if limit is not None:
        app["resources"]["limits"] = {"cpu": limit}
    template["spec"]["containers"].append(
        {"name": "side", "image": "side:1", "resources": {"requests": {"cpu": "100m"}}}
    )
    template["metadata"] = {"annotations": {"sim.pinnace.dev/cpu.side": "periodic 0 1 90s"}}
    pools = [{"name": "pool", "count": 2, "capacity": {"cpu": "2", "memory": "8Gi"}}]
    workload = {
        "name": "w",
        "template": template,
        "arrivals": {"every": every},
        "runTime": {"constant": "60s"},
        "usage": {"cpu": usage},
    }
    return scenario(pools, [workload], until="6m")


def memory_within_requests() -> dict[str, Any]:
    """`cpu_hungry`'s pods, the app's memory drawn up to its request and the sidecar's rising
    to its own, on nodes whose system reservations hold memory too."""
    spec = cpu_hungry("10s", {"uniform": {"min": "100m", "max": "1500m"}})
    (workload,) = spec["spec"]["workloads"]
    workload["usage"]["memory"] = {"uniform": {"min": "64Mi", "max": "256Mi"}}
    side = workload["template"]["spec"]["containers"][1]
    side["resources"]["requests"]["memory"] = "128Mi"
    workload["template"]["metadata"]["annotations"]["sim.pinnace.dev/memory.side"] = (
        "ramp 16Mi 128Mi 30s"
    )
    (pool,) = spec["spec"]["cluster"]["nodePools"]
    pool["kubelet"] = {"systemReserved": {"memory": "200Mi"}}
    return spec


USAGE_CASES = {
    "memory within the requests, observed": (memory_within_requests(), "usage"),
    "observed, samples at finishes": (
        cpu_hungry("10s", {"uniform": {"min": "100m", "max": "2"}}),
        "both",
    ),
    "observed alone, limits": (
        cpu_hungry("15s", {"constant": "1500m"}, limit="700m"),
        "usage",
    ),
    "TargetLoadPacking": (
        trimaran(
            cpu_hungry("7s", {"lognormal": {"median": "500m", "sigma": 0.8}}),
            "TargetLoadPacking",
            {"usageSampleInterval": "10s", "usageWindow": "1m"},
        ),
        "requests",
    ),
    "LoadVariationRiskBalancing, observed": (
        trimaran(
            cpu_hungry("10s", {"uniform": {"min": "100m", "max": "1500m"}}),
            "LoadVariationRiskBalancing",
            {"usageSampleInterval": "15s", "usageWindow": "5m"},
        ),
        "both",
    ),
}


@pytest.mark.parametrize("case", sorted(USAGE_CASES))
@pytest.mark.parametrize("policy", [first_feasible, last_feasible])
def test_cpu_usage_is_sampled_as_on_the_cluster_engine(case: str, policy: Policy) -> None:
    """The nodes' CPU usage, as the scheduler samples it for the observation and the Trimaran
    plugins: the same observations, masks and rewards, step for step."""
    spec, features = USAGE_CASES[case]
    cluster = trajectory("cluster", spec, 5, policy, features)
    assert len(cluster) > 20
    assert trajectory("scheduler", spec, 5, policy, features) == cluster


def test_the_placement_example_gives_the_same_evaluation_on_both_engines(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """examples/research/placement.yaml, as its header runs it: preemption evicting batch
    pods, and TargetLoadPacking on the pods' CPU usage, as on the cluster engine."""
    example = str(Path(__file__).parents[2] / "examples" / "research" / "placement.yaml")
    argv = ["gym", "evaluate", example, "--json", "--policy", "default"]
    argv += ["--policy", "target-load-packing"]
    assert main([*argv, "--engine", "scheduler"]) == 0
    quick = json.loads(capsys.readouterr().out)
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out) == quick
    assert quick["default"]["components"]["evictions"]["mean"] < 0
