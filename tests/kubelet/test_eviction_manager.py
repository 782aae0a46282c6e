"""The eviction manager's decisions from hand-made stats summaries: which pod goes, when, with
what grace period and message; the pressure conditions; admission under pressure."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import pytest

from pinnace.api.stats import ContainerStats, NodeStats, PodStats, Summary
from pinnace.kubelet.config import NodeConfig
from pinnace.kubelet.eviction import EvictionManager, UsageCeiling
from pinnace.kubelet.eviction_storage import has_storage_limit
from pinnace.resources.oom import is_critical_pod
from pinnace.resources.pod import pod_requests
from pinnace.scheduler.podinfo import PodInfo

Mi = 1024 * 1024
Gi = 1024 * Mi


def pod(
    name: str,
    *,
    requests: dict[str, str] | None = None,
    limits: dict[str, str] | None = None,
    priority: int | None = None,
    grace: int | None = None,
    qos: str = "",
    **extra: Any,
) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if requests:
        resources["requests"] = requests
    if limits:
        resources["limits"] = limits
    spec: dict[str, Any] = {"containers": [{"name": "app", "image": "nginx", **extra}]}
    if resources:
        spec["containers"][0]["resources"] = resources
    if priority is not None:
        spec["priority"] = priority
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    body: dict[str, Any] = {
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": spec,
    }
    if qos:
        body["status"] = {"qosClass": qos}
    return body


@dataclass(frozen=True)
class Active:
    """A pod as the eviction manager reads it, as a node agent keeps it."""

    pod: dict[str, Any]

    @property
    def uid(self) -> str:
        return str(self.pod["metadata"]["uid"])

    @property
    def name(self) -> str:
        return str(self.pod["metadata"]["name"])

    @property
    def priority(self) -> int:
        return int(self.pod["spec"].get("priority") or 0)

    @property
    def critical(self) -> bool:
        return is_critical_pod(self.pod)

    @property
    def storage_limited(self) -> bool:
        return has_storage_limit(self.pod)

    def requested(self, resource: str) -> int:
        request = pod_requests(self.pod).get(resource)
        return 0 if request is None else request.value()

    def read_pod(self) -> dict[str, Any]:
        return self.pod

    def empty_dir_used_bytes(self) -> dict[str, int]:
        """`written` of the pod's annotations: bytes by emptyDir volume (a test's shorthand)."""
        return {k: int(v) for k, v in (self.pod["metadata"].get("written") or {}).items()}


@dataclass
class Host:
    """A kubelet whose pods use what `usage` says (memory, disk, pids per pod name)."""

    pods: list[dict[str, Any]]
    memory: dict[str, int] = field(default_factory=dict)
    disk: dict[str, int] = field(default_factory=dict)
    pids: dict[str, int] = field(default_factory=dict)
    memory_capacity: int = 4 * Gi
    disk_capacity: int = 100 * Gi
    base_disk: int = 0
    time: float = 0.0
    evicted: list[tuple[str, int, str]] = field(default_factory=list)
    events: list[tuple[str, str, str]] = field(default_factory=list)
    disruptions: list[bool] = field(default_factory=list)

    def running(self) -> list[dict[str, Any]]:
        gone = {name for name, _, _ in self.evicted}
        return [p for p in self.pods if p["metadata"]["name"] not in gone]

    def summary(self) -> Summary:
        pods = []
        for p in self.running():
            name = p["metadata"]["name"]
            app = ContainerStats(
                "app",
                memory_working_set_bytes=self.memory.get(name, 0),
                rootfs_used_bytes=self.disk.get(name, 0),
            )
            others = [  # "<pod>/<container>" in `disk` for a pod's other containers
                ContainerStats(c["name"], rootfs_used_bytes=self.disk.get(f"{name}/{c['name']}", 0))
                for c in p["spec"]["containers"][1:]
            ]
            pods.append(
                PodStats(f"uid-{name}", "default", name, [app, *others], 0, self.pids.get(name, 0))
            )
        node = NodeStats(
            memory_capacity_bytes=self.memory_capacity,
            memory_working_set_bytes=sum(p.memory_working_set_bytes for p in pods),
            nodefs_capacity_bytes=self.disk_capacity,
            nodefs_used_bytes=self.base_disk + sum(p.ephemeral_storage_bytes for p in pods),
            pid_max=1000,
            pids=sum(p.pids for p in pods),
        )
        return Summary(self.time, node, pods)

    def active_pods(self) -> list[Active]:
        return [Active(p) for p in self.running()]

    def evict_pod(self, pod: Active, grace_period: int, message: str, disruption: bool) -> None:
        self.evicted.append((pod.name, grace_period, message))
        self.disruptions.append(disruption)

    def node_event(self, event_type: str, reason: str, message: str) -> None:
        self.events.append((event_type, reason, message))


def sync(manager: EvictionManager, host: Host, at: float) -> str | None:
    """The pod the pass at `at` evicts, if any."""
    host.time = at
    evictions = manager.synchronize(at)
    assert len(evictions) <= 1
    return evictions[0].pod.read_pod()["metadata"]["name"] if evictions else None


def config(**settings: Any) -> NodeConfig:
    return NodeConfig(name="node-1", **settings)


def test_memory_pressure_evicts_best_effort_then_burstable_over_request_guaranteed_last() -> None:
    host = Host(
        [
            pod("guaranteed", requests={"memory": "1Gi"}, limits={"memory": "1Gi"}),
            pod("burstable", requests={"memory": "100Mi"}),
            pod("best-effort"),
        ],
        memory={"guaranteed": 900 * Mi, "burstable": 400 * Mi, "best-effort": 600 * Mi},
        memory_capacity=1950 * Mi,  # 50Mi available: below the default 100Mi
    )
    manager = EvictionManager(config(), host)
    order = []
    for t in range(0, 40, 10):
        name = sync(manager, host, t)
        if name:
            order.append(name)
            # each eviction frees its memory, but the node keeps shrinking below 100Mi
            host.memory_capacity = sum(host.memory[p["metadata"]["name"]] for p in host.running())
    assert order == ["best-effort", "burstable", "guaranteed"]
    assert manager.node_conditions == {"MemoryPressure"}
    assert host.events[0] == ("Warning", "EvictionThresholdMet", "Attempting to reclaim memory")


def test_usage_above_request_beats_quality_of_service_then_priority() -> None:
    host = Host(
        [
            pod("best-effort"),
            pod("burstable-low", requests={"memory": "100Mi"}, priority=0),
            pod("burstable-high", requests={"memory": "100Mi"}, priority=1000),
            pod("under-request", requests={"memory": "2Gi"}),
        ],
        memory={
            "best-effort": 100 * Mi,
            "burstable-low": 300 * Mi,
            "burstable-high": 2 * Gi,
            "under-request": 1 * Gi,
        },
        memory_capacity=3 * Gi + 400 * Mi + 50 * Mi,
    )
    manager = EvictionManager(config(), host)
    # All but one exceed their requests; of those, the lower priority ones go first (though
    # burstable-high is far more above its request), then the one furthest above its request.
    assert sync(manager, host, 0) == "burstable-low"


def test_eviction_message_names_threshold_availability_and_offending_container() -> None:
    host = Host(
        [pod("hog", requests={"memory": "100Mi"}, grace=30)],
        memory={"hog": 500 * Mi},
        memory_capacity=560 * Mi,
    )
    manager = EvictionManager(config(), host)
    assert sync(manager, host, 0) == "hog"
    _, grace, message = host.evicted[0]
    assert grace == 1  # a hard threshold gives no time, whatever the pod asks for
    assert message == (
        "The node was low on resource: memory. Threshold quantity: 100Mi, available: 60Mi. "
        "Container app was using 500Mi, request is 100Mi, has larger consumption of memory. "
    )


def test_soft_threshold_evicts_only_after_its_grace_period_held_continuously() -> None:
    host = Host(
        [pod("web", requests={"memory": "100Mi"}, grace=45)],
        memory={"web": 3 * Gi},
        memory_capacity=3 * Gi + 800 * Mi,  # 800Mi available: above 100Mi, below 1Gi
    )
    manager = EvictionManager(
        config(
            eviction_soft={"memory.available": "1Gi"},
            eviction_soft_grace_period={"memory.available": 60.0},
            eviction_max_pod_grace_period=20,
        ),
        host,
    )
    assert sync(manager, host, 0) is None
    assert manager.node_conditions == {"MemoryPressure"}  # pressure is reported at once
    assert sync(manager, host, 30) is None
    host.memory_capacity = 5 * Gi  # recovers: the clock starts again
    assert sync(manager, host, 40) is None
    host.memory_capacity = 3 * Gi + 800 * Mi
    assert sync(manager, host, 50) is None
    assert sync(manager, host, 100) is None
    assert sync(manager, host, 110) == "web"
    assert host.evicted[0][1] == 20  # the shorter of evictionMaxPodGracePeriod and the pod's


def test_soft_eviction_gives_the_pods_own_grace_period_when_no_maximum_is_set() -> None:
    host = Host([pod("web", grace=45)], memory={"web": 3 * Gi + 300 * Mi}, memory_capacity=4 * Gi)
    manager = EvictionManager(
        config(
            eviction_hard={},
            eviction_soft={"memory.available": "1Gi"},
            eviction_soft_grace_period={"memory.available": 10.0},
        ),
        host,
    )
    sync(manager, host, 0)
    assert sync(manager, host, 10) == "web"
    assert host.evicted[0][1] == 45


def test_minimum_reclaim_keeps_evicting_until_threshold_plus_reclaim() -> None:
    host = Host(
        [pod("a"), pod("b"), pod("c")],
        memory={"a": 900 * Mi, "b": 300 * Mi, "c": 100 * Mi},
        memory_capacity=1700 * Mi,  # 400Mi available
    )
    manager = EvictionManager(
        config(
            eviction_hard={"memory.available": "500Mi"},
            eviction_minimum_reclaim={"memory.available": "500Mi"},
        ),
        host,
    )
    assert sync(manager, host, 0) == "a"
    host.memory_capacity = 1100 * Mi  # 700Mi available: above 500Mi, short of 500Mi + 500Mi
    assert sync(manager, host, 10) == "b"
    host.memory_capacity = 1050 * Mi  # 950Mi available
    assert sync(manager, host, 20) == "c"
    host.pods.append(pod("d"))
    host.memory_capacity = 1001 * Mi  # 1001Mi available: the goal is reached
    assert sync(manager, host, 30) is None


def test_without_minimum_reclaim_eviction_stops_once_back_above_threshold() -> None:
    host = Host(
        [pod("a"), pod("b")], memory={"a": 900 * Mi, "b": 300 * Mi}, memory_capacity=1600 * Mi
    )
    manager = EvictionManager(config(eviction_hard={"memory.available": "500Mi"}), host)
    assert sync(manager, host, 0) == "a"
    host.memory_capacity = 1000 * Mi  # 700Mi available
    assert sync(manager, host, 10) is None


def test_pressure_condition_is_held_for_the_transition_period() -> None:
    host = Host([pod("a")], memory={"a": 4 * Gi - 50 * Mi})
    manager = EvictionManager(
        config(eviction_hard={"memory.available": "100Mi"}, eviction_pressure_transition_period=60),
        host,
    )
    sync(manager, host, 0)
    assert manager.node_conditions == {"MemoryPressure"}
    host.evicted.clear()
    host.memory = {"a": Gi}  # recovered
    assert sync(manager, host, 10) is None
    assert manager.node_conditions == {"MemoryPressure"}
    sync(manager, host, 59)
    assert manager.node_conditions == {"MemoryPressure"}
    sync(manager, host, 60)
    assert manager.node_conditions == set()


def test_stale_stats_evict_nothing() -> None:
    host = Host([pod("a"), pod("b")], memory={"a": 4 * Gi - 50 * Mi})
    manager = EvictionManager(config(), host)
    assert sync(manager, host, 0) == "a"
    host.evicted.clear()
    assert manager.synchronize(10) == []  # the summary is still the one of time 0


def test_critical_pods_are_not_evicted() -> None:
    critical = pod("critical", priority=2000001000)
    host = Host(
        [critical, pod("other", requests={"memory": "3Gi"})],
        memory={"critical": 2 * Gi, "other": 2 * Gi - 50 * Mi},
    )
    manager = EvictionManager(config(), host)
    assert sync(manager, host, 0) == "other"


def test_disk_pressure_reclaims_containers_and_images_before_evicting() -> None:
    class Reclaimer:
        def __init__(self, host: Host, frees: int) -> None:
            self.host, self.frees, self.calls = host, frees, []

        def delete_unused_containers(self) -> None:
            self.calls.append("containers")
            self.host.base_disk -= self.frees

        def delete_unused_images(self) -> None:
            self.calls.append("images")

    host = Host(
        [pod("writer")], disk={"writer": 5 * Gi}, disk_capacity=100 * Gi, base_disk=90 * Gi
    )  # 5Gi free of 100Gi: below 10%
    reclaimer = Reclaimer(host, frees=10 * Gi)
    manager = EvictionManager(config(), host, reclaimer)
    assert sync(manager, host, 0) is None
    assert reclaimer.calls == ["containers", "images"]
    assert manager.node_conditions == {"DiskPressure"}

    host.base_disk = 90 * Gi
    reclaimer.frees = 0  # nothing left to collect: the pod goes
    assert sync(manager, host, 10) == "writer"
    message = host.evicted[0][2]
    # 10% of 100Gi, in float32 as the kubelet computes it.
    assert message == (
        "The node was low on resource: ephemeral-storage. Threshold quantity: 10737418400, "
        "available: 5Gi. Container app was using 5Gi, request is 0, has larger consumption of "
        "ephemeral-storage. "
    )


def test_disk_ranking_by_use_above_ephemeral_storage_request() -> None:
    host = Host(
        [
            pod("small", requests={"ephemeral-storage": "1Gi"}),
            pod("big"),
            pod("within", requests={"ephemeral-storage": "10Gi"}),
        ],
        disk={"small": 3 * Gi, "big": 5 * Gi // 2, "within": 8 * Gi},
        base_disk=80 * Gi,  # 6.5Gi free
    )
    manager = EvictionManager(config(), host)
    # 2.5Gi above no request beats 2Gi above 1Gi; the largest user is within its request.
    assert sync(manager, host, 0) == "big"


def test_pid_pressure_evicts_lower_priority_then_most_processes() -> None:
    host = Host(
        [pod("many", priority=10), pod("some"), pod("few")],
        pids={"many": 900, "some": 40, "few": 20},
    )
    manager = EvictionManager(config(eviction_hard={"pid.available": "100"}), host)
    assert sync(manager, host, 0) == "some"
    assert manager.node_conditions == {"PIDPressure"}
    message = host.evicted[0][2]
    assert message == (
        "The node was low on resource: pids. Threshold quantity: 100, available: 40. "
    )


def best_effort_admitted(manager: EvictionManager, body: dict[str, Any]) -> tuple[bool, str]:
    result = manager.admit(body, PodInfo.from_pod(body).tolerations)
    return result.admit, result.message


@pytest.fixture
def pressed() -> tuple[EvictionManager, Host]:
    host = Host([pod("hog")], memory={"hog": 4 * Gi - 50 * Mi})
    return EvictionManager(config(), host), host


def test_memory_pressure_refuses_best_effort_pods_only(
    pressed: tuple[EvictionManager, Host],
) -> None:
    manager, host = pressed
    best_effort = pod("new", qos="BestEffort")
    assert best_effort_admitted(manager, best_effort) == (True, "")
    sync(manager, host, 0)
    result = manager.admit(best_effort, ())
    assert (result.admit, result.reason, result.message) == (
        False,
        "Evicted",
        "The node had condition: [MemoryPressure]. ",
    )
    burstable = pod("burstable", requests={"memory": "10Mi"}, qos="Burstable")
    assert best_effort_admitted(manager, burstable) == (True, "")
    tolerant = pod("tolerant", qos="BestEffort")
    tolerant["spec"]["tolerations"] = [
        {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"}
    ]
    assert best_effort_admitted(manager, tolerant) == (True, "")
    critical = pod("critical", qos="BestEffort", priority=2000000000)
    assert best_effort_admitted(manager, critical) == (True, "")


def test_disk_pressure_refuses_every_pod() -> None:
    host = Host([pod("writer")], disk={"writer": 95 * Gi})
    manager = EvictionManager(config(), host)
    sync(manager, host, 0)
    burstable = pod("burstable", requests={"memory": "10Mi"}, qos="Burstable")
    assert best_effort_admitted(manager, burstable) == (
        False,
        "The node had condition: [DiskPressure]. ",
    )


def test_a_pass_is_skipped_only_when_no_pod_could_reach_a_threshold() -> None:
    host = Host([pod("a")], memory={"a": Gi})  # 3Gi free of 4Gi; the threshold is 100Mi
    manager = EvictionManager(config(), host)
    assert not manager.may_skip(UsageCeiling())  # nothing known before the first pass
    sync(manager, host, 0)
    assert manager.may_skip(UsageCeiling(memory=3 * Gi))  # 100Mi + 3Gi - 1Gi left
    assert not manager.may_skip(UsageCeiling(memory=4 * Gi - 100 * Mi))
    assert not manager.may_skip(UsageCeiling(disk=95 * Gi))  # nodefs below 10% free
    assert manager.may_skip(UsageCeiling(pids=1000))  # no PID threshold by default
    host.memory = {"a": 4 * Gi - 50 * Mi}
    sync(manager, host, 10)
    assert not manager.may_skip(UsageCeiling())  # under pressure: every pass counts


def test_a_pod_whose_log_has_no_ceiling_is_never_skipped_on_a_node_with_disk_thresholds() -> None:
    host = Host([pod("a")], memory={"a": Gi})
    manager = EvictionManager(config(), host)
    sync(manager, host, 0)
    assert not manager.may_skip(UsageCeiling(disk=math.inf))
    assert not manager.may_skip(UsageCeiling(disk=math.nan))
    memory_only = EvictionManager(config(eviction_hard={"memory.available": "100Mi"}), host)
    sync(memory_only, host, 0)
    assert memory_only.may_skip(UsageCeiling(disk=math.inf))  # no disk threshold to meet


def test_usage_ceiling_is_the_sum_of_the_models_peaks() -> None:
    body = pod("ramp")
    body["spec"]["initContainers"] = [{"name": "init", "image": "busybox"}]
    body["metadata"]["annotations"] = {
        "sim.pinnace.dev/memory": "ramp 100Mi 600Mi 60s",
        "sim.pinnace.dev/memory.init": "50Mi",
        "sim.pinnace.dev/ephemeral-storage": "1Gi",
        "sim.pinnace.dev/pids.app": "7",
    }
    # Each container twice on disk: its running and its last exited run.
    assert UsageCeiling.of(body) == UsageCeiling(650 * Mi, 4 * Gi, 8)
    body["metadata"]["annotations"]["sim.pinnace.dev/memory"] = "lots"
    assert UsageCeiling.of(body).memory == float("inf")
    # A command that keeps printing has a log without a ceiling: its node never skips a pass.
    loop = pod("counter", command=["sh", "-c", "while true; do echo tick; sleep 1; done"])
    assert UsageCeiling.of(loop).disk == float("inf")
    assert UsageCeiling.of(loop).storage_limited == 0
    assert UsageCeiling.of(pod("once", command=["sh", "-c", "echo hi"])).disk < Gi


def test_pods_over_their_ephemeral_storage_limits_are_all_evicted_at_once() -> None:
    host = Host(
        [
            pod("pod-limit", limits={"ephemeral-storage": "1Gi"}),
            pod("container-limit", limits={"ephemeral-storage": "2Gi"}),
            pod("within", limits={"ephemeral-storage": "2Gi"}),
            pod("unlimited"),
        ],
        disk={"pod-limit": Gi + 1, "container-limit": 3 * Gi, "within": Gi, "unlimited": 50 * Gi},
    )
    # The pods have one container each, so "container-limit" is over its pod's limit too.
    manager = EvictionManager(config(eviction_hard={}), host)
    host.time = 0
    evicted = manager.synchronize(0)
    assert [(e.pod.read_pod()["metadata"]["name"], e.grace_period) for e in evicted] == [
        ("pod-limit", 1),
        ("container-limit", 1),
    ]
    assert [m for _, _, m in host.evicted] == [
        "Pod ephemeral local storage usage exceeds the total limit of containers 1Gi. ",
        "Pod ephemeral local storage usage exceeds the total limit of containers 2Gi. ",
    ]
    assert host.disruptions == [False, False]  # no DisruptionTarget for these
    assert manager.node_conditions == set()


def test_a_container_over_its_own_limit_is_named() -> None:
    body = pod("two", limits={"ephemeral-storage": "1Gi"})
    body["spec"]["containers"].append(
        {"name": "roomy", "image": "busybox", "resources": {"limits": {"ephemeral-storage": "4Gi"}}}
    )
    # 1.5Gi in all: within the pod's 5Gi, over the 1Gi of the container app.
    host = Host([body], disk={"two": 3 * Gi // 2})
    manager = EvictionManager(config(eviction_hard={}), host)
    host.time = 0
    manager.synchronize(0)
    assert host.evicted[0][2] == 'Container app exceeded its local ephemeral storage limit "1Gi". '


def test_a_pod_that_may_exceed_its_storage_limit_is_never_skipped() -> None:
    limited = pod("limited", limits={"ephemeral-storage": "1Gi"})
    limited["metadata"]["annotations"] = {"sim.pinnace.dev/ephemeral-storage": "ramp 0 2Gi 60s"}
    calm = pod("calm", limits={"ephemeral-storage": "3Gi"})
    calm["metadata"]["annotations"] = {"sim.pinnace.dev/ephemeral-storage": "ramp 0 2Gi 60s"}
    assert UsageCeiling.of(limited).storage_limited == 1
    assert UsageCeiling.of(calm).storage_limited == 0
    host = Host([pod("a")])
    manager = EvictionManager(config(), host)
    sync(manager, host, 0)
    assert manager.may_skip(UsageCeiling.of(calm))
    assert not manager.may_skip(UsageCeiling.of(limited))


def test_a_pod_over_an_empty_dir_size_limit_is_evicted() -> None:
    full = pod("full")
    full["spec"]["volumes"] = [
        {"name": "scratch", "emptyDir": {}},
        {"name": "cache", "emptyDir": {"sizeLimit": "1Ki"}},
    ]
    roomy = pod("roomy")
    roomy["spec"]["volumes"] = [{"name": "cache", "emptyDir": {"sizeLimit": "1Mi"}}]
    full["metadata"]["written"] = {"scratch": 10 * Mi, "cache": 1025}
    roomy["metadata"]["written"] = {"cache": 1025}
    assert UsageCeiling.of(full).storage_limited == 1  # writes have no peak: never skipped
    host = Host([full, roomy])
    manager = EvictionManager(config(eviction_hard={}), host)
    host.time = 0
    manager.synchronize(0)
    assert host.evicted == [
        ("full", 1, 'Usage of EmptyDir volume "cache" exceeds the limit "1Ki". ')
    ]
