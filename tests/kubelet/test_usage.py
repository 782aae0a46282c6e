"""What simulated containers use: the usage annotations and well-known commands, CPU capped at
the limit and shared by requests, and the stats summary the eviction manager and the metrics
API read."""

from __future__ import annotations

import functools
import math
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.http.conftest import launch, stop
from tests.kubelet.conftest import PODS, SETTLE, Node, pod
from tests.support import SimulatedCluster, eventually

from pinnace.api.stats import Summary, resource_metrics_of
from pinnace.apiserver.metrics import get_node_metrics, get_pod_metrics
from pinnace.clock import Clock
from pinnace.clock.loop import VirtualEventLoop
from pinnace.cluster import ClusterOptions
from pinnace.kubelet import NodeConfig, node_configs
from pinnace.kubelet.behaviour import (
    BehaviourError,
    ContainerBehaviour,
    ContainerUsage,
    container_behaviour,
)
from pinnace.kubelet.runtime import LinuxContainerResources, Machine, SimulatedRuntime
from pinnace.kubelet.shell import command_run
from pinnace.kubelet.usage import (
    Curve,
    Started,
    first_above,
    first_above_sum,
    parse_curve,
    share_cpu,
)

MI = 1024 * 1024
GI = 1024 * MI


def resources(body: dict[str, Any], **amounts: dict[str, str]) -> dict[str, Any]:
    """Set the app container's requests and limits: resources(p, requests={...}, limits=...)."""
    body["spec"]["containers"][0]["resources"] = amounts
    return body


def annotate(body: dict[str, Any], **model: str) -> dict[str, Any]:
    """Add behaviour annotations: cpu="2" is sim.pinnace.dev/cpu: "2", cpu__app (a double
    underscore) the same for the container app only."""
    annotations = body["metadata"]["annotations"]
    for key, value in model.items():
        annotations["sim.pinnace.dev/" + key.replace("__", ".").replace("_", "-")] = value
    return body


def stats_of(node: Node, name: str) -> Any:
    uid = node.get_pod(name)["metadata"]["uid"]
    [found] = [p for p in node.agent.summary().pods if p.uid == uid]
    return found


# --- the shapes ------------------------------------------------------------------------------


def test_shapes_over_time() -> None:
    ramp = parse_curve("ramp 100Mi 600Mi 60s", "memory")
    assert [ramp.at(t) / MI for t in (0, 30, 60, 600)] == [100, 350, 600, 600]
    spike = parse_curve("spike 50Mi 400Mi at 30s for 10s", "memory")
    assert [spike.at(t) / MI for t in (0, 29.9, 30, 39.9, 40)] == [50, 50, 400, 400, 50]
    wave = parse_curve("periodic 100m 900m 1m", "cpu")
    assert [wave.at(t) / 1e6 for t in (0, 15, 30, 45, 60, 90)] == [100, 500, 900, 500, 100, 900]
    assert parse_curve("2", "cpu").at(5) == 2e9
    assert parse_curve("20", "pids").at(5) == 20


def test_when_a_curve_first_goes_above_a_limit() -> None:
    limit = 500 * MI
    assert first_above(parse_curve("ramp 100Mi 600Mi 60s", "memory"), limit) == pytest.approx(48)
    assert first_above(parse_curve("spike 0 1Gi at 30s for 1s", "memory"), limit) == 30
    assert first_above(parse_curve("periodic 0 1Gi 100s", "memory"), limit, 80) == 124.4140625
    assert first_above(parse_curve("250Mi", "memory"), 100 * MI) == 0
    assert first_above(parse_curve("ramp 0 500Mi 60s", "memory"), limit) is None
    assert first_above(Curve.constant(0), 0) is None


@pytest.mark.parametrize(
    "value",
    [
        "lots",
        "ramp 1Mi 2Mi",
        "ramp 1Mi 2Mi 0s",
        "spike 1 2 at x for 1s",
        "-5Mi",
        "periodic 1 2",
        "1e400",
        "ramp 0 1e400 10s",
    ],
)
def test_an_invalid_usage_annotation_names_it(value: str) -> None:
    body = pod("bad", **{"memory.app": value})
    with pytest.raises(BehaviourError) as e:
        container_behaviour(body, "app")
    assert str(e.value).startswith(
        f'annotation sim.pinnace.dev/memory.app: invalid value "{value}"'
    )


def test_an_invalid_usage_annotation_is_a_create_container_config_error(node: Node) -> None:
    node.create_pod(pod("worse", node="node-1", memory="ramp 1Mi"))
    node.settle()
    waiting = node.get_pod("worse")["status"]["containerStatuses"][0]["state"]["waiting"]
    assert waiting["reason"] == "CreateContainerConfigError"
    assert waiting["message"].startswith(
        'annotation sim.pinnace.dev/memory: invalid value "ramp 1Mi": must be a quantity, "ramp'
    )


@pytest.mark.parametrize("key", ["cpu", "memory", "ephemeral-storage", "pids"])
def test_an_amount_too_large_for_a_counter_names_the_annotation(key: str) -> None:
    with pytest.raises(BehaviourError) as e:
        container_behaviour(annotate(pod("bad"), **{key.replace("-", "_"): "1e400"}), "app")
    why = '"1e400" is too large'
    assert str(e.value) == f'annotation sim.pinnace.dev/{key}: invalid value "1e400": {why}'


def test_an_overflowing_usage_annotation_is_a_config_error_and_the_pod_deletes(
    node: Node,
) -> None:
    node.create_pod(annotate(pod("greedy", node="node-1"), cpu="1e400"))
    node.settle()
    greedy = node.get_pod("greedy")
    waiting = greedy["status"]["containerStatuses"][0]["state"]["waiting"]
    assert waiting["reason"] == "CreateContainerConfigError"
    node.run(node.client.delete(PODS, "default", "greedy"))
    node.settle()
    assert node.run(node.client.list(PODS, "default"))["items"] == []


def test_cpu_is_shared_by_weight_and_what_one_does_not_want_goes_to_the_others() -> None:
    assert share_cpu([1, 1], [1024, 1024], 4) == [1, 1]
    assert share_cpu([4, 4], [3072, 1024], 4) == [3, 1]
    assert share_cpu([0.5, 4, 4], [2048, 1024, 1024], 4) == [0.5, 1.75, 1.75]


# --- through the node agent ------------------------------------------------------------------


def test_summary_reports_the_node_and_its_pods() -> None:
    config = NodeConfig(
        name="node-1",
        capacity={"cpu": "2", "memory": "4Gi", "pods": "10", "ephemeral-storage": "20Gi"},
        kube_reserved={"memory": "256Mi"},
        images=({"names": ["docker.io/library/nginx:1.27"], "sizeBytes": 100 * MI},),
    )
    node = Node(config)
    try:
        body = pod("web", node="node-1", memory="ramp 100Mi 300Mi 100s", pids="7", log="hello")
        node.create_pod(annotate(body, cpu="250m", ephemeral_storage="1Gi"))
        node.settle(50)
        summary = node.agent.summary()
        [web] = summary.pods
        assert (web.namespace, web.name, web.pids) == ("default", "web", 7)
        [app] = web.containers
        assert app.name == "app"
        assert app.cpu_usage_nano_cores == 250_000_000
        assert app.memory_working_set_bytes == pytest.approx(200 * MI, rel=0.02)
        assert app.rootfs_used_bytes == GI
        assert app.logs_used_bytes == len("2006-01-02T15:04:05.999999999Z stdout F hello\n")
        n = summary.node
        assert n.memory_capacity_bytes == 4 * GI
        # The reserved memory is what the system's own daemons hold.
        assert n.memory_working_set_bytes == 256 * MI + app.memory_working_set_bytes
        assert n.memory_available_bytes == 4 * GI - n.memory_working_set_bytes
        assert n.cpu_usage_nano_cores == 250_000_000
        assert n.nodefs_capacity_bytes == n.imagefs_capacity_bytes == 20 * GI
        assert n.nodefs_used_bytes == GI + app.logs_used_bytes + 100 * MI
        assert n.nodefs_inodes == 20 * GI // (16 * 1024)
        assert (n.pid_max, n.pids, n.pid_available) == (4194304, 7, 4194304 - 7)
        assert summary.time == node.client.clock.now()
    finally:
        node.close()


def test_pool_serves_every_nodes_summary() -> None:
    options = ClusterOptions(nodes=node_configs(2), scheduler=False, controllers=False)
    cluster = SimulatedCluster(options)
    try:
        pool = cluster.plane.nodes
        body = pod("p", node="pinnace-node-2", memory="64Mi")
        cluster.run(cluster.client.create(PODS, "default", body))
        cluster.wait(SETTLE)
        summaries = pool.summaries()
        assert sorted(summaries) == ["pinnace-node-1", "pinnace-node-2"]
        assert summaries["pinnace-node-1"].pods == []
        assert summaries["pinnace-node-2"].node.memory_working_set_bytes == 64 * MI
        assert pool.agent("pinnace-node-2") is pool.agents["pinnace-node-2"]
        assert pool.agent("nope") is None
    finally:
        cluster.close()


def test_one_pods_or_one_nodes_metrics_make_the_summary_of_that_node_only() -> None:
    options = ClusterOptions(nodes=node_configs(3), scheduler=False, controllers=False)
    cluster = SimulatedCluster(options)
    try:
        pool = cluster.plane.nodes
        body = pod("p", node="pinnace-node-2", memory="64Mi")
        cluster.run(cluster.client.create(PODS, "default", body))
        cluster.wait(SETTLE)
        made: list[str] = []
        for agent in pool.agents.values():
            agent.summary = functools.partial(_made, made, agent.name, agent.summary)
        summaries = pool.summaries()
        assert sorted(summaries) == ["pinnace-node-1", "pinnace-node-2", "pinnace-node-3"]
        assert "pinnace-node-3" in summaries and "nope" not in summaries
        assert made == []
        assert summaries["pinnace-node-2"] is summaries["pinnace-node-2"]
        assert made == ["pinnace-node-2"]

        made.clear()
        metrics = cluster.run(get_pod_metrics(cluster.server, "default", "p"))
        assert metrics["containers"][0]["usage"]["memory"] == "64Mi"
        assert made == ["pinnace-node-2"]
        made.clear()
        cluster.run(get_node_metrics(cluster.server, "pinnace-node-3"))
        assert made == ["pinnace-node-3"]
    finally:
        cluster.close()


def _made(made: list[str], name: str, summary: Callable[[], Summary]) -> Summary:
    made.append(name)
    return summary()


def test_the_pools_usage_is_what_the_summaries_say() -> None:
    options = ClusterOptions(nodes=node_configs(3), scheduler=False, controllers=False)
    cluster = SimulatedCluster(options)
    try:
        pool = cluster.plane.nodes
        bodies = [
            annotate(pod("ramp", node="pinnace-node-1", cpu="1"), cpu="ramp 1 3 60s"),
            annotate(pod("rival", node="pinnace-node-1"), cpu="2", memory="ramp 10Mi 1Gi 90s"),
            pod("spike", node="pinnace-node-2", memory="spike 50Mi 400Mi at 30s for 10s"),
            pod("restarts", node="pinnace-node-2", run_seconds="25", memory="80Mi"),
            pod("done", node="pinnace-node-2", run_seconds="5", restart_policy="Never"),
        ]
        for body in bodies:
            cluster.run(cluster.client.create(PODS, "default", body))
        for _ in range(12):
            cluster.wait(7)
            summaries = pool.summaries()
            expected = {
                name: (
                    s.node.cpu_usage_nano_cores,
                    sum(c.memory_working_set_bytes for p in s.pods for c in p.containers),
                )
                for name, s in summaries.items()
                if s.pods  # a node without pods uses nothing and is left out
            }
            assert pool.usage() == expected
            # and each node's figures for the usage history, pod by pod and container by
            # container, are the summary's
            points = {n: resource_metrics_of(s) for n, s in summaries.items()}
            assert dict(pool.resource_metrics()) == points
        assert "pinnace-node-3" not in expected  # no pods there
        assert expected["pinnace-node-1"][0] > 0 and expected["pinnace-node-2"][1] > 0
    finally:
        cluster.close()


def test_the_pools_usage_of_steady_containers_follows_every_start_end_and_share() -> None:
    # A node whose containers all use steady amounts keeps its figures until they change: a
    # container that starts, ends or restarts changes them (and the CPU shares) at once.
    options = ClusterOptions(nodes=node_configs(1), scheduler=False, controllers=False)
    cluster = SimulatedCluster(options)
    try:
        pool = cluster.plane.nodes

        def summarised() -> dict[str, tuple[int, int]]:
            return {
                name: (
                    s.node.cpu_usage_nano_cores,
                    sum(c.memory_working_set_bytes for p in s.pods for c in p.containers),
                )
                for name, s in pool.summaries().items()
                if s.pods
            }

        bodies = [
            annotate(pod("hungry", node="pinnace-node-1", cpu="1"), cpu="1500m", memory="1Gi"),
            annotate(pod("short", node="pinnace-node-1", run_seconds="20"), cpu="3", memory="80Mi"),
            annotate(
                pod("done", node="pinnace-node-1", run_seconds="35", restart_policy="Never"),
                cpu="2",
            ),
        ]
        seen = set()
        for i, body in enumerate(bodies):
            cluster.run(cluster.client.create(PODS, "default", body))
            for _ in range(4 + 3 * i):
                cluster.wait(4)
                expected = summarised()
                assert pool.usage() == expected
                summary = pool.summaries()["pinnace-node-1"]
                assert pool.resource_metrics()["pinnace-node-1"] == resource_metrics_of(summary)
                seen.add(expected["pinnace-node-1"])
        assert len(seen) >= 3  # the figures moved with the starts, ends and restarts
    finally:
        cluster.close()


def test_cpu_is_capped_at_the_limit_and_the_excess_is_throttled(node: Node) -> None:
    # assign-cpu-resource: vish/stress asked for 2 CPUs under a 1 CPU limit uses 1 CPU.
    body = pod("cpu-demo", node="node-1")
    body["spec"]["containers"][0].update(
        image="vish/stress",
        args=["-cpus", "2"],
        resources={"limits": {"cpu": "1"}, "requests": {"cpu": "0.5"}},
    )
    node.create_pod(body)
    node.settle()
    [app] = stats_of(node, "cpu-demo").containers
    assert app.cpu_usage_nano_cores == 1_000_000_000
    assert app.cpu_throttled_nano_cores == 1_000_000_000


def test_a_contended_node_shares_cpu_by_requests(node: Node) -> None:
    # node-1 has 2 cores; three containers want 2 cores each.
    for name, request in (("big", "1500m"), ("small", "500m"), ("none", "")):
        body = annotate(pod(name, node="node-1"), cpu="2")
        if request:
            resources(body, requests={"cpu": request})
        node.create_pod(body)
    node.settle()
    used = {n: stats_of(node, n).cpu_usage_nano_cores for n in ("big", "small", "none")}
    shares = {"big": 1536, "small": 512, "none": 2}
    total = sum(shares.values())
    for name, got in used.items():
        assert got == pytest.approx(2e9 * shares[name] / total, abs=1)
    assert sum(used.values()) == pytest.approx(2e9, abs=3)
    assert node.agent.summary().node.cpu_usage_nano_cores == pytest.approx(2e9, abs=3)


# --- well-known commands -----------------------------------------------------------------------


def test_stress_uses_what_its_workers_hold() -> None:
    vm = command_run(["stress", "--vm", "1", "--vm-bytes", "150M", "--vm-hang", "1"])
    assert vm is not None
    assert (vm.memory_bytes, vm.cpu_cores, vm.seconds, vm.pids) == (150 * MI, 0, math.inf, 2)
    assert vm.output == ["stress: info: [1] dispatching hogs: 0 cpu, 0 io, 1 vm, 0 hdd"]
    two = command_run(["sh", "-c", "stress -m 2 --vm-bytes=64m -c 1"])
    assert two is not None and (two.memory_bytes, two.cpu_cores) == (128 * MI, 1)
    assert command_run(["stress", "--vm", "1"]).memory_bytes == 256 * MI  # type: ignore[union-attr]
    timed = command_run(["stress", "--cpu", "2", "--timeout", "1m"])
    assert timed is not None and (timed.cpu_cores, timed.seconds, timed.exit_code) == (2, 60, 0)
    assert timed.output[-1] == "stress: info: [1] successful run completed in 60s"
    disk = command_run(["stress", "--hdd", "1", "--hdd-bytes", "2g"])
    assert disk is not None and disk.storage_bytes == 2 * GI
    assert command_run(["stress", "--cpus", "2"]).cpu_cores == 2  # type: ignore[union-attr]
    assert command_run(["stress", "--frobnicate"]) is None
    assert command_run(["stress", "--vm"]) is None


def test_vish_stress_runs_its_entrypoint_with_the_args() -> None:
    body = pod("cpu-demo")
    body["spec"]["containers"][0].update(image="vish/stress", args=["-cpus", "2"])
    model = container_behaviour(body, "app")
    assert model.usage.cpu.at(10) == 2e9
    assert model.run_seconds == math.inf
    body["spec"]["containers"][0].update(args=["-mem-total", "150Mi", "-cpus", "1"])
    memory = container_behaviour(body, "app").usage.memory
    assert (memory.at(0), memory.at(38.4), memory.at(60)) == (0, 150 * MI, 150 * MI)
    # -mem-alloc-sleep is a Go duration; a negative one sleeps not at all
    args = ["-mem-total", "150Mi", "-mem-alloc-sleep", "2ms"]
    body["spec"]["containers"][0].update(args=args)
    memory = container_behaviour(body, "app").usage.memory
    assert (memory.at(38.4), memory.at(76.8)) == (75 * MI, 150 * MI)
    body["spec"]["containers"][0].update(args=["-mem-total", "150Mi", "-mem-alloc-sleep=-1ms"])
    assert container_behaviour(body, "app").usage.memory.at(0) == 150 * MI


def test_annotations_win_over_the_command() -> None:
    body = annotate(pod("p"), memory="10Mi")
    body["spec"]["containers"][0]["command"] = ["stress", "--vm", "1", "--vm-bytes", "150M"]
    model = container_behaviour(body, "app")
    assert model.usage.memory.at(0) == 10 * MI
    assert model.usage.pids.at(0) == 2  # from the command


def test_a_cpu_stress_under_a_limit_gets_the_limit(node: Node) -> None:
    body = pod("hog", node="node-1")
    body["spec"]["containers"][0].update(
        command=["stress", "--cpu", "4"], resources={"limits": {"cpu": "500m"}}
    )
    node.create_pod(body)
    node.settle()
    [ctr] = stats_of(node, "hog").containers
    assert (ctr.cpu_usage_nano_cores, ctr.cpu_throttled_nano_cores) == (500_000_000, 3_500_000_000)
    assert stats_of(node, "hog").pids == 5


def test_the_sum_of_curves_first_crosses_where_dense_sampling_says() -> None:
    rng = random.Random(5)
    shapes = [
        lambda: f"ramp {rng.randint(0, 300)}Mi {rng.randint(0, 300)}Mi {rng.randint(1, 90)}s",
        lambda: (
            f"spike {rng.randint(0, 100)}Mi {rng.randint(100, 400)}Mi "
            f"at {rng.randint(0, 60)}s for {rng.randint(1, 30)}s"
        ),
        lambda: f"periodic {rng.randint(0, 100)}Mi {rng.randint(100, 300)}Mi {rng.randint(5, 60)}s",
        lambda: f"{rng.randint(0, 200)}Mi",
    ]
    for _ in range(40):
        curves = [
            Started(parse_curve(rng.choice(shapes)(), "memory"), rng.uniform(0, 20))
            for _ in range(rng.randint(1, 8))
        ]
        limit = rng.randint(200, 1200) * MI
        since = 20.0
        found, _ = first_above_sum(curves, limit, since, 200.0)
        samples = [since + k * 0.02 for k in range(9001)]
        over = next((t for t in samples if sum(c.at(t) for c in curves) > limit + 1), None)
        if over is None:
            assert found is None or sum(c.at(found + 0.02) for c in curves) <= limit + MI
        else:
            assert found is not None and found <= over + 1e-6
            before = [t for t in samples if t < found - 0.02]
            assert all(sum(c.at(t) for c in curves) <= limit + 1 for t in before)


def test_steps_at_the_same_moment_are_taken_together() -> None:
    # One container's spike ends the moment another's begins: never above 300Mi.
    first = Started(parse_curve("spike 0 200Mi at 0s for 10s", "memory"), 0.0)
    second = Started(parse_curve("spike 0 200Mi at 10s for 10s", "memory"), 0.0)
    assert first_above_sum([first, second], 300 * MI, 0.0, math.inf) == (None, math.inf)


def test_the_search_stops_after_so_many_breakpoints_and_says_where() -> None:
    waves = [Started(parse_curve("periodic 0 10Mi 1s", "memory"), 0.0) for _ in range(10)]
    found, searched = first_above_sum(waves, GI, 0.0, math.inf)
    assert found is None
    assert 0 < searched < math.inf


def test_an_exited_container_keeps_its_disk_until_it_is_removed(node: Node) -> None:
    body = pod("batch", node="node-1", restart_policy="Never", run_seconds="5", log="done")
    node.create_pod(annotate(body, ephemeral_storage="ramp 0 2Gi 10s"))
    node.settle(10)
    assert node.get_pod("batch")["status"]["phase"] == "Succeeded"
    summary = node.agent.summary()
    assert summary.pods == []  # nothing of it runs
    log_bytes = len("2006-01-02T15:04:05.999999999Z stdout F done\n")
    node.run(node.client.delete(PODS, "default", "batch"))
    node.settle()
    freed = summary.node.nodefs_used_bytes - node.agent.summary().node.nodefs_used_bytes
    assert freed == GI + log_bytes  # what it wrote in its 5 s, and its log


def test_cpus_of_its_own_are_a_containers_alone_and_the_rest_share_what_is_left() -> None:
    loop = VirtualEventLoop()
    try:
        runtime = SimulatedRuntime(Clock(loop), "n", Machine(cpu_nano_cores=4e9))
        hungry = ContainerBehaviour(usage=ContainerUsage(cpu=Curve.constant(4e9)))
        pinned = LinuxContainerResources(
            cpu_shares=2048, cpu_limit_nano_cores=2_000_000_000, cpuset_cpus=frozenset({2, 3})
        )
        ids = [
            runtime.start_container("p", name, "app", hungry, lambda _: None, resources).id
            for name, resources in (
                ("pinned", pinned),
                ("big", LinuxContainerResources(cpu_shares=1536)),
                ("small", LinuxContainerResources(cpu_shares=512)),
            )
        ]
        stats = runtime.list_container_stats()
        got = [stats[i].cpu_usage_nano_cores for i in ids]
        assert got == [2_000_000_000, 1_500_000_000, 500_000_000]
    finally:
        loop.close()


def test_reclaim_removes_finished_pods_containers_and_unused_images(node: Node) -> None:
    done = pod("batch", node="node-1", restart_policy="Never", run_seconds="5")
    done["spec"]["containers"][0]["image"] = "busybox:1.36"
    node.create_pod(annotate(done, ephemeral_storage="1Gi"))
    crashing = pod("crash", node="node-1", run_seconds="1", exit_code="1")
    node.create_pod(annotate(crashing, ephemeral_storage="100Mi"))
    node.settle(130)  # the images have been on the node for imageMinimumGCAge (2 minutes)
    images = [i["names"][-1] for i in node.agent.node["status"]["images"]]  # type: ignore[index]
    assert "docker.io/library/busybox:1.36" in images
    before = node.agent.summary().node.nodefs_used_bytes
    gc = node.agent.eviction.reclaimer
    assert gc is not None
    gc.delete_unused_containers()
    gc.delete_unused_images()
    after = node.agent.summary().node
    # The finished pod's writable layer and its image are gone; the crash-looping pod keeps
    # its last exited run (kubectl logs --previous) and its image.
    busybox = next(
        i["sizeBytes"]
        for i in node.agent.node["status"]["images"]  # type: ignore[index]
        if i["names"][-1] == "docker.io/library/busybox:1.36"
    )
    assert after.nodefs_used_bytes == before - GI - busybox
    node.settle(10)
    images = [i["names"][-1] for i in node.agent.node["status"]["images"]]  # type: ignore[index]
    assert images == ["docker.io/library/nginx:1.27"]


def test_exclusive_cpus_of_the_static_policy_are_not_shared() -> None:
    config = NodeConfig(
        name="node-1",
        capacity={"cpu": "4", "memory": "8Gi", "pods": "10"},
        cpu_manager_policy="static",
    )
    node = Node(config)
    try:
        pinned = annotate(pod("pinned", node="node-1"), cpu="500m")
        amounts = {"cpu": "2", "memory": "1Gi"}
        pinned["spec"]["containers"][0]["resources"] = {"requests": amounts, "limits": amounts}
        node.create_pod(pinned)
        node.create_pod(annotate(pod("greedy", node="node-1"), cpu="4"))
        node.settle()
        # The pinned pod idles on its 2 CPUs; the other gets only the 2 of the shared pool.
        assert stats_of(node, "pinned").cpu_usage_nano_cores == 500_000_000
        assert stats_of(node, "greedy").cpu_usage_nano_cores == 2_000_000_000
    finally:
        node.close()


DOCS_DEMOS = """\
apiVersion: v1
kind: Pod
metadata:
  name: cpu-demo
spec:
  containers:
  - name: cpu-demo-ctr
    image: vish/stress
    resources:
      limits:
        cpu: "1"
      requests:
        cpu: "0.5"
    args:
    - -cpus
    - "2"
---
apiVersion: v1
kind: Pod
metadata:
  name: memory-demo
spec:
  containers:
  - name: memory-demo-ctr
    image: polinux/stress
    resources:
      requests:
        memory: "100Mi"
      limits:
        memory: "200Mi"
    command: ["stress"]
    args: ["--vm", "1", "--vm-bytes", "150M", "--vm-hang", "1"]
"""


def test_kubectl_top_shows_the_docs_cpu_and_memory_demos_using_what_the_docs_say(
    tmp_path: Path,
) -> None:
    cluster = launch(tmp_path, flags=("--nodes", "1"))
    try:
        cluster.ok("apply", "-f", "-", stdin=DOCS_DEMOS)

        def top() -> dict[str, tuple[str, str]]:
            done = cluster.kubectl("top", "pod", "--no-headers")
            rows = [line.split() for line in done.stdout.splitlines()]
            found = {row[0]: (row[1], row[2]) for row in rows if len(row) == 3}
            return found if len(found) == 2 else {}

        usage = eventually(top)
        # cpu-demo wants 2 CPUs and is held to its limit of 1; memory-demo holds 150 MiB.
        assert usage == {"cpu-demo": ("1000m", "0Mi"), "memory-demo": ("0m", "150Mi")}
    finally:
        stop(cluster)
